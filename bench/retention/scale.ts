// A removal at scale and the hot path (not a test): `npm run bench:retention:scale`
// (BENCH_STORE=postgres: on PostgreSQL).
//
// BENCH_EVENTS (default 10,000,000) `rbench.filler` events of about 200 bytes, committed two hours
// before the owner's simulated start, are written straight into a store no owner runs on, through
// the store's own schema and migrations and the import path `chronolog import` uses
// (store/log-import.ts), BENCH_PRELOAD_BATCH (default 20,000) a transaction, with random ids
// (UUIDv4, as a client may give them: each removed id is a page of the id indexes of its own) or,
// with BENCH_IDS=owner, time-ordered ones (UUIDv7, as the owner gives them). That store is the
// template of every run: each run starts an owner (bench/retention/owner.ts, a child process) on a
// copy of it (SQLite: the data file copied; PostgreSQL: CREATE DATABASE ... TEMPLATE).
// Runs alternate A, B, A, B (BENCH_ROUNDS rounds, default 2):
//   A: the owner with `{types: "rbench.filler", max_age_ms: 1 h}`: its pass at start removes every
//      preloaded event (the default batches and 1,000,000 removed ids kept);
//   B: the same store, no rule.
// Once the owner has counted its log (it counts it at start, before any pass), windows of the live
// workload run: each is BENCH_WINDOW_S (default 10) s of single emits of `rbench.probe` at
// BENCH_RATE (default 200) a second in an open loop, handled by an executor's processor in this
// process (emit → handler p50/p99, as bench/compare's live W6), then BENCH_PUBLISH_S (default 5) s
// of emits of `rbench.published` flat out, 256 in flight, through the client's Publish stream
// (events/s acknowledged, as W5's producer). A's windows run until its pass has ended (at most
// BENCH_MAX_S, default 3,600 s); B runs as many windows as the A before it.
// Printed per run: the windows' figures and, over all its windows, emit → handler p50/p99, Publish
// events/s and the owner's event-loop delay p99 and max (prom-client's, over each window: the
// highest of the windows), on SQLite the WAL's MB written a second and the checkpoints the owner's
// thread finished itself, with their time (chronolog_wal_*), and the free pages returned to the disk in the
// checkpoint thread, with its steps (chronolog_space_return_*); for A the removal's events, time (from the count's end to the pass's
// end), rate and longest unit by kind, and the store's size on disk before and after (SQLite: the
// data file and its WAL; PostgreSQL: the events partitions with their indexes and TOAST). On
// PostgreSQL the partitions hold BENCH_SPAN seqs (default 1,000,000, the default span).
// BENCH_OWNER_NODE_ARGS: node flags for the owners (e.g. `--cpu-prof --cpu-prof-dir=prof`).
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { v7 as uuidv7 } from "uuid";
import { createClient, type ChronologClient } from "../../sdk/ts/src/client.js";
import { runExecutor } from "../../sdk/ts/src/executor.js";
import { definePlugin } from "../../sdk/ts/src/plugin.js";
import { postgresLogImport, sqliteLogImport, type ImportedEvent, type LogImport } from "../../server/src/store/log-import.js";
import { migratePostgres } from "../../server/src/store/postgres/migrate.js";
import { connectNative, endNative } from "../../server/src/store/postgres/pg-db.js";
import { openStore } from "../../server/src/store/sqlite/open.js";
import { scrapeMetrics, writePlugins } from "../lib/owner.js";
import { benchStore, storeArgs, storeDescription } from "../lib/postgres.js";
import { pct } from "../lib/proc.js";
import { storeBytes } from "../lib/store-size.js";

const repo = new URL("../../", import.meta.url).pathname;
const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const events = env("BENCH_EVENTS", 10_000_000);
const preloadBatch = env("BENCH_PRELOAD_BATCH", 20_000);
const rounds = env("BENCH_ROUNDS", 2);
const rate = env("BENCH_RATE", 200);
const windowMs = env("BENCH_WINDOW_S", 10) * 1000;
const publishMs = env("BENCH_PUBLISH_S", 5) * 1000;
const maxMs = env("BENCH_MAX_S", 3_600) * 1000;
const span = env("BENCH_SPAN", 1_000_000);
const newId = process.env.BENCH_IDS === "owner" ? () => uuidv7() : randomUUID;
const HOUR = 3_600_000;
/** The owner's simulated start (bench/retention/owner.ts): the preloaded events are two hours older. */
const simulatedStart = Date.UTC(2026, 2, 2, 12);
/** The token of the owner's one principal (bench/retention/owner.ts). */
const token = "retention-bench-token-0123456789";
const filler = JSON.stringify({ text: "x".repeat(160) });

/** Emit → handler latencies of the probes handled, ms. */
const handled: number[] = [];
const plugin = definePlugin({
  name: "rbench",
  events: { "rbench.filler": { allow: ["*"] }, "rbench.probe": { allow: ["*"] }, "rbench.published": { allow: ["*"] } },
  processors: {
    seen: {
      on: "rbench.probe",
      concurrency: 64,
      start: "beginning",
      run: (ctx) => void handled.push(performance.timeOrigin + performance.now() - (ctx.data.sent as number)),
    },
  },
});

const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");
const seconds = (ms: number) => `${(ms / 1000).toFixed(0)} s`;

/** The template store: an SQLite data folder, or a PostgreSQL database's URL. */
type Template = { dataDir: string } | { url: string };

/** Writes the preloaded events into `target`, `preloadBatch` a transaction. */
async function preload(target: LogImport): Promise<void> {
  const at = simulatedStart - 2 * HOUR;
  for (let seq = 1; seq <= events; ) {
    const batch: ImportedEvent[] = [];
    for (const end = Math.min(events, seq + preloadBatch - 1); seq <= end; seq++)
      batch.push({ seq, id: newId(), type: "rbench.filler", data: filler, cause: "", actor: null, at: at + Math.floor(seq / 1000), trace: null });
    await target.append(batch, batch[0].seq - 1);
  }
}

async function makeTemplate(dir: string): Promise<Template> {
  if (benchStore === "sqlite") {
    const dataDir = join(dir, "template");
    const store = openStore({ dataDir });
    try {
      await preload(sqliteLogImport(store));
    } finally {
      await store.close();
    }
    return { dataDir };
  }
  const [, url] = await storeArgs(join(dir, "template"));
  const pg = connectNative(url, "chronolog bench");
  try {
    migratePostgres(pg);
    // Partitions of `span` seqs from the first on (the log is empty), as bench/retention/owner.ts sets them.
    for (const { name } of pg.querySync("SELECT name FROM event_partitions") as { name: string }[]) pg.querySync(`DROP TABLE ${name}`);
    pg.querySync("DELETE FROM event_partitions");
    pg.querySync(`UPDATE event_partitioning SET span = ${Number(span)}`);
    pg.querySync("SELECT chronolog_event_room(1)");
    await preload(postgresLogImport(pg));
  } finally {
    endNative(pg);
  }
  return { url };
}

let copies = 0;

/** A copy of the template for one run. */
function copyOf(template: Template, dir: string): Template {
  copies++;
  if ("dataDir" in template) {
    const dataDir = join(dir, `run-${copies}`);
    mkdirSync(dataDir);
    execFileSync("cp", [join(template.dataDir, "chronolog.db"), join(dataDir, "chronolog.db")]);
    return { dataDir };
  }
  const source = new URL(template.url);
  const name = `${source.pathname.slice(1)}_run${copies}`;
  const admin = new URL(template.url);
  admin.pathname = "/postgres";
  const pg = connectNative(admin.toString(), "chronolog bench");
  try {
    pg.querySync(`CREATE DATABASE ${name} TEMPLATE ${source.pathname.slice(1)}`);
  } finally {
    endNative(pg);
  }
  const url = new URL(template.url);
  url.pathname = `/${name}`;
  return { url: url.toString() };
}

function dropCopy(store: Template): void {
  if ("dataDir" in store) return rmSync(store.dataDir, { recursive: true, force: true });
  const url = new URL(store.url);
  const name = url.pathname.slice(1);
  url.pathname = "/postgres";
  const pg = connectNative(url.toString(), "chronolog bench");
  try {
    pg.querySync(`DROP DATABASE IF EXISTS ${name}`);
  } finally {
    endNative(pg);
  }
}

interface Pass {
  removedEvents: number;
  batches: number;
  longestUnitMs: number;
  longestUnits?: Record<string, number>;
}

interface Child {
  process: ChildProcess;
  url: string;
  passes: Pass[];
  stop(): Promise<void>;
}

async function startChild(store: Template, dir: string, withRule: boolean): Promise<Child> {
  const plugins = join(dir, `plugins-${copies}`);
  writePlugins(plugins, [plugin]);
  const retention = withRule ? { rules: [{ types: "rbench.filler", max_age_ms: HOUR }], interval_ms: HOUR } : undefined;
  const options = {
    dataDir: "dataDir" in store ? store.dataDir : join(dir, `data-${copies}`),
    pluginsDir: plugins,
    retention,
    ...("url" in store ? { store: store.url } : {}),
  };
  const nodeArgs = process.env.BENCH_OWNER_NODE_ARGS?.split(" ").filter(Boolean) ?? []; // e.g. --cpu-prof --cpu-prof-dir=...
  const child = spawn(
    process.execPath,
    [...nodeArgs, "--conditions=chronolog-source", "--import", "tsx", "bench/retention/owner.ts", JSON.stringify(options)],
    {
      cwd: repo,
      stdio: ["pipe", "pipe", "inherit"],
    },
  );
  const passes: Pass[] = [];
  let stopped: (() => void) | undefined;
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on("line", (line) => {
      const message = JSON.parse(line);
      if (message.url) resolve(message.url);
      else if (message.pass) passes.push(message.pass);
      else if (message.stopped) stopped?.();
    });
    child.once("exit", (code) => reject(new Error(`the owner exited ${code}`)));
  });
  return {
    process: child,
    url,
    passes,
    async stop() {
      const exited = new Promise((r) => child.once("exit", r));
      await new Promise<void>((resolve) => {
        stopped = resolve;
        child.stdin!.write(`${JSON.stringify({ stop: true })}\n`);
      });
      await exited;
    },
  };
}

/** Values of the owner's metrics this benchmark reads (the event-loop delay's since the last scrape). */
async function scrape(url: string) {
  const value = await scrapeMetrics(url, token);
  return {
    loopP99Ms: value("nodejs_eventloop_lag_p99_seconds") * 1000,
    loopMaxMs: value("nodejs_eventloop_lag_max_seconds") * 1000,
    removed: value("chronolog_log_removed_events_total"),
    events: value("chronolog_log_events"),
    filler: value('chronolog_log_events{type="rbench.filler"}'),
    walFrames: value("chronolog_wal_frames_written_total"),
    writerCheckpoints: value('chronolog_wal_checkpoints_total{by="writer"}'),
    writerMs: value("chronolog_wal_writer_checkpoint_seconds_total") * 1000,
    returnedPages: value("chronolog_space_returned_pages_total"),
    returnSteps: value("chronolog_space_return_steps_total"),
    returnMs: value("chronolog_space_return_seconds_total") * 1000,
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits until the owner has counted its log (every preloaded event counted or removed). */
async function counted(url: string): Promise<void> {
  for (;;) {
    const m = await scrape(url);
    if (m.filler + m.removed >= events) return;
    await sleep(200);
  }
}

interface Window {
  handlerMs: number[];
  sent: number;
  publishRate: number;
  loopP99Ms: number;
  loopMaxMs: number;
  removed: number;
  /** SQLite: MB written to the WAL, and the checkpoints the owner's thread finished itself with their time (ms). */
  walMb: number;
  writerCheckpoints: number;
  writerMs: number;
  /** SQLite: free pages returned to the disk in the checkpoint thread, its steps and their time there (ms). */
  returnedPages: number;
  returnSteps: number;
  returnMs: number;
  seconds: number;
}

/** One window: `rate` probes a second for `windowMs` (an open loop), then emits flat out for `publishMs`. */
async function window(client: ChronologClient, url: string): Promise<Window> {
  const before = await scrape(url);
  const windowStarted = performance.now();
  const from = handled.length;
  let sent = 0;
  const started = performance.now();
  const sends: Promise<unknown>[] = [];
  while (performance.now() - started < windowMs) {
    const due = Math.floor(((performance.now() - started) / 1000) * rate);
    for (; sent < due; sent++) sends.push(client.emit("rbench.probe", { sent: performance.timeOrigin + performance.now() }).catch(() => undefined));
    await sleep(5);
  }
  await Promise.all(sends);
  const deadline = Date.now() + 30_000;
  while (handled.length < from + sent && Date.now() < deadline) await sleep(10);
  const handlerMs = handled.slice(from, from + sent);
  while (handlerMs.length < sent) handlerMs.push(Infinity); // not handled within 30 s: late without bound
  let published = 0;
  const end = performance.now() + publishMs;
  const publishStarted = performance.now();
  await Promise.all(
    Array.from({ length: 256 }, async () => {
      while (performance.now() < end) {
        await client.emit("rbench.published", { n: published });
        published++;
      }
    }),
  );
  const publishRate = published / ((performance.now() - publishStarted) / 1000);
  const after = await scrape(url);
  return {
    ...{ handlerMs, sent, publishRate, loopP99Ms: after.loopP99Ms, loopMaxMs: after.loopMaxMs, removed: after.removed - before.removed },
    ...{ walMb: ((after.walFrames - before.walFrames) * 4096) / 1e6, writerCheckpoints: after.writerCheckpoints - before.writerCheckpoints },
    ...{ writerMs: after.writerMs - before.writerMs, seconds: (performance.now() - windowStarted) / 1000 },
    ...{
      returnedPages: after.returnedPages - before.returnedPages,
      returnSteps: after.returnSteps - before.returnSteps,
      returnMs: after.returnMs - before.returnMs,
    },
  };
}

function describe(w: Window): string {
  const sorted = [...w.handlerMs].sort((a, b) => a - b);
  return (
    `emit → handler p50 ${pct(sorted, 50).toFixed(1)} / p99 ${pct(sorted, 99).toFixed(1)} ms (${w.sent}), Publish ${Math.round(w.publishRate)}/s, ` +
    `loop p99 ${w.loopP99Ms.toFixed(1)} / max ${w.loopMaxMs.toFixed(1)} ms; ${w.removed} removed meanwhile` +
    (benchStore === "sqlite"
      ? `; WAL ${(w.walMb / w.seconds).toFixed(1)} MB/s, ${w.writerCheckpoints} checkpoints on the owner's thread (${w.writerMs.toFixed(0)} ms)` +
        (w.returnSteps > 0
          ? `; ${w.returnedPages} free pages returned in ${w.returnSteps} steps in the checkpoint thread (${(w.returnMs / w.returnSteps).toFixed(2)} ms a step)`
          : "")
      : "")
  );
}

interface Run {
  label: string;
  windows: Window[];
}

function summary(run: Run): string {
  const sum = (key: "walMb" | "seconds" | "writerCheckpoints" | "writerMs") => run.windows.reduce((s, w) => s + w[key], 0);
  const all = run.windows.flatMap((w) => w.handlerMs).sort((a, b) => a - b);
  const publish = run.windows.map((w) => w.publishRate).sort((a, b) => a - b);
  return (
    `${run.label}: ${run.windows.length} windows, emit → handler p50 ${pct(all, 50).toFixed(1)} / p99 ${pct(all, 99).toFixed(1)} ms (${all.length} probes), ` +
    `Publish median ${Math.round(pct(publish, 50))}/s (${Math.round(publish[0])} to ${Math.round(publish[publish.length - 1])}), ` +
    `loop p99 ${Math.max(...run.windows.map((w) => w.loopP99Ms)).toFixed(1)} / max ${Math.max(...run.windows.map((w) => w.loopMaxMs)).toFixed(1)} ms` +
    (benchStore === "sqlite"
      ? `; WAL ${(sum("walMb") / sum("seconds")).toFixed(1)} MB/s, ${sum("writerCheckpoints")} checkpoints on the owner's thread (${sum("writerMs").toFixed(0)} ms)`
      : "")
  );
}

/** One run on a copy of `template`: A (with the rule) runs until its pass ended; B runs `windows` windows. */
async function run(template: Template, dir: string, withRule: boolean, windows: number): Promise<Run> {
  const label = withRule ? `A (rule) #${Math.ceil((copies + 1) / 2)}` : `B (no rule) #${Math.ceil((copies + 1) / 2)}`;
  const store = copyOf(template, dir);
  const sizeBefore = storeBytes(store);
  console.log(`  ${label}: load average ${load()}, ${mb(sizeBefore)} on disk`);
  const child = await startChild(store, dir, withRule);
  handled.length = 0;
  const result: Run = { label, windows: [] };
  let eventsAtEnd = 0;
  try {
    const executor = runExecutor({ url: child.url, token, plugins: [plugin], credits: 512, onError: () => undefined });
    await executor.ready;
    try {
      const client = createClient({ url: child.url, token });
      const countStarted = performance.now();
      await counted(child.url);
      const countedAt = performance.now();
      console.log(`    the owner counted its log in ${seconds(countedAt - countStarted)} after serving`);
      for (;;) {
        const w = await window(client, child.url);
        result.windows.push(w);
        console.log(`    ${String(result.windows.length).padStart(3)}: ${describe(w)}`);
        if (withRule ? child.passes.length > 0 || performance.now() - countedAt > maxMs : result.windows.length >= windows) break;
      }
      if (withRule) {
        const pass = child.passes[0];
        const tookMs = performance.now() - countedAt;
        if (pass) {
          const units = Object.entries(pass.longestUnits ?? {})
            .map(([kind, ms]) => `${kind} ${ms.toFixed(1)}`)
            .join(", ");
          console.log(
            `    removal: ${pass.removedEvents.toLocaleString("en")} events within ${seconds(tookMs)} of the count's end ` +
              `(at least ${Math.round(pass.removedEvents / (tookMs / 1000))} events/s), ${pass.batches} units, longest ${pass.longestUnitMs.toFixed(1)} ms (${units})`,
          );
        } else console.log(`    removal: not ended after ${seconds(tookMs)}: ${(await scrape(child.url)).removed} events removed`);
      }
      eventsAtEnd = (await scrape(child.url)).events;
    } finally {
      await executor.stop(0);
    }
  } finally {
    await child.stop();
  }
  // The windows' emits stay in the log: the size after counts them.
  if (withRule)
    console.log(
      `    on disk: ${mb(sizeBefore)} before, ${mb(storeBytes(store))} after, the log then holding ${eventsAtEnd.toLocaleString("en")} events (the windows' emits)`,
    );
  console.log(`    ${summary(result)}; load average ${load()}`);
  dropCopy(store);
  return result;
}

// Stopped (Ctrl-C): exit so the PostgreSQL server started for the run is stopped (bench/lib/postgres.ts).
for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => process.exit(130));
console.log(`bench/retention/scale: ${new Date().toISOString()}, load average before: ${load()}`);
console.log(`  ${storeDescription()}; ${process.env.BENCH_IDS === "owner" ? "time-ordered ids (UUIDv7)" : "random ids (UUIDv4)"}`);
const dir = mkdtempSync(join(tmpdir(), "chronolog-rscale-"));
try {
  const t0 = performance.now();
  const template = await makeTemplate(dir);
  const preloadMs = performance.now() - t0;
  console.log(
    `  preloaded ${events.toLocaleString("en")} events in ${seconds(preloadMs)} (${Math.round(events / (preloadMs / 1000))} events/s), ` +
      `${mb(storeBytes(template))} on disk${benchStore === "postgres" ? `, partitions of ${span.toLocaleString("en")} seqs` : ""}; load average ${load()}`,
  );
  console.log(`  windows: ${windowMs / 1000} s of ${rate} probes/s, then ${publishMs / 1000} s of Publish flat out (256 in flight)`);
  const runs: Run[] = [];
  for (let round = 0; round < rounds; round++) {
    const a = await run(template, dir, true, 0);
    runs.push(a, await run(template, dir, false, a.windows.length));
  }
  console.log("\nsummary:");
  for (const r of runs) console.log(`  ${summary(r)}`);
  if ("url" in template) dropCopy(template);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
console.log(`\nload average after: ${load()}`);
process.exit(0);
