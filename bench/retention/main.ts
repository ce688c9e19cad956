// Retention's targets (not a test): `npm run bench:retention` (BENCH_STORE=postgres: on PostgreSQL).
//
// The owner runs in a child process on a ManualClock (bench/retention/owner.ts) that this script
// moves; an executor in this process runs processor `rbench.seen` on `rbench.probe` events, which
// carry the time they were sent: emit → handler is the handler's time minus that.
//
// a. Size under a max_age rule over a compressed clock: per simulated second, one EmitBatch of
//    BENCH_RATE (default 100) `rbench.filler` events of about 200 bytes and one probe, then the
//    clock moves a second; BENCH_HOURS (default 3) simulated hours. Once with
//    `{types: "rbench.*", max_age_ms: 1 h}` (a pass each simulated minute), once without a rule.
//    Prints the store's size on disk every simulated 15 min (SQLite: the data file and its WAL;
//    PostgreSQL: pg_total_relation_size over the events partitions), the final size against the
//    size at one hour (one hour's worth: nothing is removable before), and emit → handler p50/p99
//    of both runs. BENCH_PACE=N: at most N filler events a second of real time (2,000: retention
//    has as much real time for each event as at the target's rate; default: as fast as it goes). The owner keeps the ids of the newest 500 × BENCH_RATE removed events for
//    GetEvent (BENCH_REMOVED_IDS_KEPT): the default 1,000,000's share of an hour at 2,000/s, about
//    100 bytes each on disk. On PostgreSQL the partitions hold 500 × BENCH_RATE seqs, the default span's
//    share of an hour at 2,000 events/s (BENCH_SPAN to change it).
// b. A large removal and the hot path: BENCH_REMOVE_EVENTS (default 1,000,000) filler events
//    preloaded (EmitBatch of 500, 4 in flight), then windows of BENCH_WINDOW_S (default 20) s of
//    BENCH_EMITTERS (default 8) loops of single emits of probes: emit rate, ack p50/p99, emit →
//    handler p50/p99 and the owner's event-loop delay p99 (prom-client's, over the window). Windows:
//    before, then the clock jumps 2 h (every filler event becomes removable under a 1 h max_age
//    rule) and windows run while the removal runs, then one after it ended. On PostgreSQL the
//    partitions hold 100,000 seqs (BENCH_REMOVE_SPAN). Windows during the removal stop after
//    BENCH_REMOVE_MAX_S (default 300) s, the removal ended or not.
// BENCH_PARTS=a or b runs one part.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { createClient, type ChronologClient } from "../../sdk/ts/src/client.js";
import { runExecutor } from "../../sdk/ts/src/executor.js";
import { definePlugin } from "../../sdk/ts/src/plugin.js";
import { scrapeMetrics, writePlugins } from "../lib/owner.js";
import { benchStore, storeArgs, storeDescription } from "../lib/postgres.js";
import { pct } from "../lib/proc.js";
import { fileBytes, storeBytes } from "../lib/store-size.js";

const repo = new URL("../../", import.meta.url).pathname;
const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const rate = env("BENCH_RATE", 100);
const hours = env("BENCH_HOURS", 3);
const span = env("BENCH_SPAN", 500 * rate);
const pace = env("BENCH_PACE", 0);
const removedIdsKept = env("BENCH_REMOVED_IDS_KEPT", 500 * rate);
const removeEvents = env("BENCH_REMOVE_EVENTS", 1_000_000);
const removeSpan = env("BENCH_REMOVE_SPAN", 100_000);
const removeMaxMs = env("BENCH_REMOVE_MAX_S", 300) * 1000;
const windowMs = env("BENCH_WINDOW_S", 20) * 1000;
const emitters = env("BENCH_EMITTERS", 8);
const parts = process.env.BENCH_PARTS ?? "ab";
const HOUR = 3_600_000;
const MINUTE = 60_000;
/** The token of the owner's one principal (bench/retention/owner.ts). */
const token = "retention-bench-token-0123456789";
const filler = { text: "x".repeat(160) };

/** Emit → handler latencies of the probes handled, ms. */
const handled: number[] = [];
const plugin = definePlugin({
  name: "rbench",
  events: { "rbench.filler": { allow: ["*"] }, "rbench.probe": { allow: ["*"] } },
  processors: {
    seen: {
      on: "rbench.probe",
      concurrency: 64,
      start: "beginning",
      run: (ctx) => void handled.push(performance.timeOrigin + performance.now() - (ctx.data.sent as number)),
    },
  },
});

interface Child {
  process: ChildProcess;
  url: string;
  dir: string;
  /** The SQLite data folder, or the PostgreSQL URL. */
  store: { dataDir: string } | { url: string };
  /** Sends a command and resolves with the answer. */
  send(command: object): Promise<unknown>;
  passes: { removedEvents: number; complete: boolean; longestUnitMs: number; longestUnits?: Record<string, number> }[];
}

async function startChild(retention: object | undefined, spanSeqs: number): Promise<Child> {
  const dir = mkdtempSync(join(tmpdir(), "chronolog-rbench-"));
  writePlugins(join(dir, "plugins"), [plugin]);
  const dataDir = join(dir, "data");
  const args = await storeArgs(dataDir);
  const storeUrl = args[0] === "--store" ? args[1] : undefined;
  const options = { dataDir, pluginsDir: join(dir, "plugins"), retention, ...(storeUrl ? { store: storeUrl, spanSeqs } : {}) };
  const child = spawn(process.execPath, ["--conditions=chronolog-source", "--import", "tsx", "bench/retention/owner.ts", JSON.stringify(options)], {
    cwd: repo,
    stdio: ["pipe", "pipe", "inherit"],
  });
  const waiting: ((line: unknown) => void)[] = [];
  const passes: Child["passes"] = [];
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on("line", (line) => {
      const message = JSON.parse(line);
      if (message.url) resolve(message.url);
      else if (message.pass) passes.push(message.pass);
      else waiting.shift()?.(message);
    });
    child.once("exit", (code) => reject(new Error(`the owner exited ${code}`)));
  });
  const send = (command: object) =>
    new Promise((resolve) => {
      waiting.push(resolve);
      child.stdin!.write(`${JSON.stringify(command)}\n`);
    });
  return { process: child, url, dir, store: storeUrl ? { url: storeUrl } : { dataDir }, send, passes };
}

async function stopChild(child: Child): Promise<void> {
  const exited = new Promise((r) => child.process.once("exit", r));
  await child.send({ stop: true });
  await exited;
  rmSync(child.dir, { recursive: true, force: true });
}

/** Values of the owner's metrics this benchmark reads (the event-loop delay's since the last scrape). */
async function scrape(url: string): Promise<{ loopP99Ms: number; removed: number; firstSeq: number }> {
  const value = await scrapeMetrics(url, token);
  return {
    loopP99Ms: value("nodejs_eventloop_lag_p99_seconds") * 1000,
    removed: value("chronolog_log_removed_events_total"),
    firstSeq: value("chronolog_log_first_seq"),
  };
}

const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;
const ms = (sorted: number[], p: number) => `${pct(sorted, p).toFixed(1)}`;

async function withExecutor<T>(url: string, body: (client: ChronologClient) => Promise<T>): Promise<T> {
  const executor = runExecutor({ url, token, plugins: [plugin], credits: 512, onError: () => undefined });
  await executor.ready;
  try {
    return await body(createClient({ url, token }));
  } finally {
    await executor.stop(0);
  }
}

/** Waits until `count` probes were handled (or 60 s passed). */
async function probesHandled(count: number): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (handled.length < count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
}

/** Part a, one run: returns the sizes every 15 simulated minutes and the probes' latencies (all, and after the first hour). */
async function sizeRun(withRule: boolean): Promise<{ sizes: number[]; latencies: number[]; late: number[]; seconds: number; firstSeq: number }> {
  const retention = withRule ? { rules: [{ types: "rbench.*", max_age_ms: HOUR }], interval_ms: MINUTE, removed_ids_kept: removedIdsKept } : undefined;
  const child = await startChild(retention, span);
  handled.length = 0;
  const started = performance.now();
  try {
    return await withExecutor(child.url, async (client) => {
      const sizes: number[] = [];
      let probes = 0;
      let firstHour = 0;
      const batch = Array.from({ length: rate }, () => ({ type: "rbench.filler", data: filler }));
      for (let second = 1; second <= hours * 3600; second++) {
        await client.emitBatch(batch);
        void client.emit("rbench.probe", { sent: performance.timeOrigin + performance.now() });
        probes += 1;
        await child.send({ advance: 1000 });
        const ahead = (second * rate * 1000) / pace - (performance.now() - started);
        if (pace > 0 && ahead > 0) await new Promise((r) => setTimeout(r, ahead));
        if (second === 3600) firstHour = probes;
        if (second % 900 === 0) {
          await probesHandled(probes);
          sizes.push(storeBytes(child.store));
          const m = await scrape(child.url);
          const wal = "dataDir" in child.store ? ` (WAL ${mb(fileBytes(join(child.store.dataDir, "chronolog.db-wal")))})` : "";
          console.log(`    ${String(second / 60).padStart(3)} min: ${mb(sizes[sizes.length - 1])}${wal}, first seq ${m.firstSeq}, removed ${m.removed}`);
        }
      }
      await probesHandled(probes);
      const latencies = [...handled].sort((a, b) => a - b);
      const late = handled.slice(firstHour).sort((a, b) => a - b);
      return { sizes, latencies, late, seconds: (performance.now() - started) / 1000, firstSeq: (await scrape(child.url)).firstSeq };
    });
  } finally {
    await stopChild(child);
  }
}

async function partA(): Promise<void> {
  console.log(
    `\na. ${hours} simulated hours at ${rate} events a simulated second (${(hours * 3600 * rate).toLocaleString("en")} filler events, ` +
      `${rate / 20}% of 2,000/s) and a probe a second${pace > 0 ? `, paced at ${pace} events a real second` : ""}; ${removedIdsKept.toLocaleString("en")} removed ids kept${benchStore === "postgres" ? `; partitions of ${span.toLocaleString("en")} seqs` : ""}`,
  );
  console.log("  with a max_age_ms 1 h rule on rbench.* (a pass each simulated minute):");
  const kept = await sizeRun(true);
  console.log("  without a rule:");
  const all = await sizeRun(false);
  const hourIndex = 3;
  const ratio = kept.sizes[kept.sizes.length - 1] / kept.sizes[hourIndex];
  console.log(
    `  with the rule: final ${mb(kept.sizes[kept.sizes.length - 1])} against ${mb(kept.sizes[hourIndex])} at one hour: ${ratio.toFixed(2)}× ` +
      `(largest after the first hour ${mb(Math.max(...kept.sizes.slice(hourIndex)))}); first seq at the end ${kept.firstSeq}; ${kept.seconds.toFixed(0)} s`,
  );
  console.log(`  without: final ${mb(all.sizes[all.sizes.length - 1])}; ${all.seconds.toFixed(0)} s`);
  console.log(
    `  filler events a real second: ${Math.round((hours * 3600 * rate) / kept.seconds)} with the rule, ${Math.round((hours * 3600 * rate) / all.seconds)} without`,
  );
  for (const [label, run] of [
    ["with the rule", kept],
    ["without", all],
  ] as const)
    console.log(
      `  emit → handler, ${label}: p50 ${ms(run.latencies, 50)} / p99 ${ms(run.latencies, 99)} ms (${run.latencies.length} probes); ` +
        `after the first hour p50 ${ms(run.late, 50)} / p99 ${ms(run.late, 99)} ms`,
    );
  console.log(
    `  p99 ratio, with / without: ${(pct(kept.latencies, 99) / pct(all.latencies, 99)).toFixed(2)}× overall, ${(pct(kept.late, 99) / pct(all.late, 99)).toFixed(2)}× after the first hour`,
  );
}

interface Window {
  label: string;
  rate: number;
  acks: number[];
  handlerMs: number[];
  loopP99Ms: number;
  removed: number;
}

/** One window of `emitters` loops of single probe emits. */
async function window(label: string, child: Child, client: ChronologClient): Promise<Window> {
  await probesHandled(handled.length);
  const before = await scrape(child.url);
  const from = handled.length;
  const acks: number[] = [];
  const end = performance.now() + windowMs;
  await Promise.all(
    Array.from({ length: emitters }, async () => {
      while (performance.now() < end) {
        const sent = performance.timeOrigin + performance.now();
        await client.emit("rbench.probe", { sent });
        acks.push(performance.timeOrigin + performance.now() - sent);
      }
    }),
  );
  const after = await scrape(child.url);
  await probesHandled(from + acks.length);
  const w = {
    label,
    rate: acks.length / (windowMs / 1000),
    acks: acks.sort((a, b) => a - b),
    handlerMs: handled.slice(from).sort((a, b) => a - b),
    loopP99Ms: after.loopP99Ms,
    removed: after.removed - before.removed,
  };
  console.log(
    `    ${label.padEnd(18)} ${Math.round(w.rate)} emits/s, ack p50 ${ms(w.acks, 50)} / p99 ${ms(w.acks, 99)} ms, ` +
      `emit → handler p50 ${ms(w.handlerMs, 50)} / p99 ${ms(w.handlerMs, 99)} ms, loop p99 ${w.loopP99Ms.toFixed(0)} ms; ${w.removed} events removed meanwhile`,
  );
  return w;
}

/** The longest unit of each kind, as a pass reports them. */
function unitKinds(units: Record<string, number> | undefined): string {
  const kinds = Object.entries(units ?? {});
  return kinds.length === 0 ? "" : `: ${kinds.map(([kind, ms]) => `${kind} ${ms.toFixed(1)}`).join(", ")}`;
}

async function partB(): Promise<void> {
  console.log(
    `\nb. ${removeEvents.toLocaleString("en")} filler events preloaded, then windows of ${windowMs / 1000} s of ${emitters} loops of single emits` +
      `${benchStore === "postgres" ? `; partitions of ${removeSpan.toLocaleString("en")} seqs` : ""}`,
  );
  const child = await startChild({ rules: [{ types: "rbench.filler", max_age_ms: HOUR }], interval_ms: MINUTE }, removeSpan);
  handled.length = 0;
  try {
    await withExecutor(child.url, async (client) => {
      const t0 = performance.now();
      let next = 0;
      const batch = Array.from({ length: 500 }, () => ({ type: "rbench.filler", data: filler }));
      await Promise.all(
        Array.from({ length: 4 }, async () => {
          while (next < removeEvents) {
            const n = Math.min(500, removeEvents - next);
            next += n;
            await client.emitBatch(batch.slice(0, n));
          }
        }),
      );
      const preload = (performance.now() - t0) / 1000;
      console.log(`  preloaded in ${preload.toFixed(0)} s (${Math.round(removeEvents / preload)} events/s), ${mb(storeBytes(child.store))} on disk`);
      const windows = [await window("before", child, client)];
      const passes = child.passes.length;
      await child.send({ advance: 2 * HOUR });
      const jumped = performance.now();
      // Windows until the pass the jump started has ended (the last one may end within it), at most BENCH_REMOVE_MAX_S.
      const removing: Window[] = [];
      do removing.push(await window("during removal", child, client));
      while (child.passes.length === passes && performance.now() - jumped < removeMaxMs);
      const pass = child.passes[passes];
      if (pass) {
        await new Promise((r) => setTimeout(r, 2_000));
        windows.push(await window("after", child, client));
      }
      const m = await scrape(child.url);
      console.log(
        pass
          ? `  the pass removed ${pass.removedEvents} events, ending within ${((performance.now() - jumped) / 1000).toFixed(0)} s of the jump (longest unit ${pass.longestUnitMs.toFixed(1)} ms${unitKinds(pass.longestUnits)}); first seq ${m.firstSeq}; ${mb(storeBytes(child.store))} on disk`
          : `  the pass had not ended after ${((performance.now() - jumped) / 1000).toFixed(0)} s: ${m.removed} events removed so far; first seq ${m.firstSeq}`,
      );
      const base = windows[0];
      for (const w of removing)
        console.log(
          `  during / before: emit rate ${(w.rate / base.rate).toFixed(2)}×, ack p50 ${(pct(w.acks, 50) / pct(base.acks, 50)).toFixed(2)}× p99 ${(pct(w.acks, 99) / pct(base.acks, 99)).toFixed(2)}×, ` +
            `emit → handler p99 ${(pct(w.handlerMs, 99) / pct(base.handlerMs, 99)).toFixed(2)}×; loop p99 ${w.loopP99Ms.toFixed(0)} against ${base.loopP99Ms.toFixed(0)} ms`,
        );
    });
  } finally {
    await stopChild(child);
  }
}

console.log(
  `bench/retention: ${new Date().toISOString()}, load average before: ${loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}`,
);
console.log(`  ${storeDescription()}`);
if (parts.includes("a")) await partA();
if (parts.includes("b")) await partB();
console.log(
  `\nload average after: ${loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}`,
);
process.exit(0);
