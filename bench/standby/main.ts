// Reads from a standby beside the same reads from its leader (not a test): `npm run bench:standby
// [-- --events 100000 --runs 3]`.
//
// A leader and a standby (the bundle with `npm run serve`'s flags) on one PostgreSQL database of a
// server started for the run (fsync and synchronous_commit on), the log preloaded with --events
// events of ~200 bytes. Then, alternating leader and standby --runs times each (the median is
// printed, and every run):
//   - ReadLog: the whole log in pages of 1,000, one page at a time: pages/s and events/s;
//   - Watch catch-up: a Watch from the log's start until it is caught up: events/s;
// and once, with emits going to the leader (the SDK's Publish stream, 64 in flight, 10 s), one
// Watch at the leader and one at the standby at the same time: events/s each was given, and how
// long after its commit (the event's `at`) each event reached each watcher, p50/p99.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { createClient, type ChronologClient } from "../../sdk/ts/src/client.js";
import { definePlugin } from "../../sdk/ts/src/plugin.js";
import { connectNative, endNative } from "../../server/src/store/postgres/pg-db.js";
import { startPostgresServer } from "../../test/helpers/postgres-server.js";
import { buildBundle, serveFlags, writePlugins } from "../lib/owner.js";
import { freePort, pct } from "../lib/proc.js";

const repo = new URL("../../", import.meta.url).pathname;
const argv = process.argv.slice(2);
const flag = (name: string, fallback: number) => (argv.includes(name) ? Number(argv[argv.indexOf(name) + 1]) : fallback);
const eventCount = flag("--events", 100_000);
const runs = flag("--runs", 3);

const plugin = definePlugin({ name: "sbench", events: { "sbench.happened": { allow: ["*"] } } });
const payload = {
  order: "o-0000000000",
  customer: "c-00000000",
  items: [
    { sku: "sku-000001", qty: 1, price: 1999 },
    { sku: "sku-000002", qty: 2, price: 499 },
  ],
  note: "x".repeat(40),
};

/** `serve --store` as a child process, resolved once it logs `pattern`. */
async function serve(store: string, plugins: string, pattern: RegExp): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  const child = spawn(process.execPath, [...serveFlags, "dist/main.js", "serve", "--store", store, "--port", String(port), "--plugins", plugins], {
    cwd: repo,
    stdio: ["ignore", "ignore", "pipe"],
  });
  const logs: string[] = [];
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stderr! }).on("line", (line) => {
      logs.push(line);
      if (pattern.test(String((JSON.parse(line) as { msg?: string }).msg))) resolve();
    });
    child.once("exit", (code) => reject(new Error(`the owner exited ${code}: ${logs.slice(-3).join(" | ")}`)));
  });
  return { child, url: `http://127.0.0.1:${port}` };
}

/** The whole log read with ReadLog pages of 1,000: ms it took, pages read. */
async function readLog(client: ChronologClient): Promise<{ ms: number; pages: number; events: number }> {
  const started = performance.now();
  let pages = 0;
  let events = 0;
  let pageToken = "";
  do {
    const page = await client.log.readLog({ pageSize: 1000, pageToken });
    pages++;
    events += page.events.length;
    pageToken = page.nextPageToken;
  } while (pageToken !== "");
  return { ms: performance.now() - started, pages, events };
}

/** A Watch from the start until caught up: ms it took, events given. */
async function catchUp(client: ChronologClient): Promise<{ ms: number; events: number }> {
  const started = performance.now();
  const ended = new AbortController();
  let events = 0;
  for await (const item of client.log.watch({ afterSeq: 0n, dataJson: true }, { signal: ended.signal })) {
    if (item.message.case === "event") events++;
    else if (item.message.case === "caughtUp") break;
  }
  ended.abort();
  return { ms: performance.now() - started, events };
}

/** One live Watch from `afterSeq` until `until` aborts: the delays from each event's commit to its arrival, ms. */
async function live(client: ChronologClient, afterSeq: bigint, until: AbortSignal): Promise<number[]> {
  const delays: number[] = [];
  try {
    for await (const item of client.log.watch({ afterSeq, dataJson: true }, { signal: until })) {
      if (item.message.case !== "event") continue;
      const at = item.message.value.at!;
      delays.push(Date.now() - (Number(at.seconds) * 1000 + at.nanos / 1e6));
    }
  } catch (e) {
    if (!until.aborted) throw e;
  }
  return delays;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const rate = (n: number, ms: number) => Math.round(n / (ms / 1000));

buildBundle();
console.log(
  `bench/standby: ${new Date().toISOString()}, ${eventCount} events, ${runs} runs each; load average before: ${loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}`,
);
const server = await startPostgresServer({ durable: true });
const owners: ChildProcess[] = [];
try {
  const admin = connectNative(server.url, "chronolog bench");
  admin.querySync("CREATE DATABASE sbench");
  endNative(admin);
  const store = new URL(server.url);
  store.pathname = "/sbench";
  const plugins = join(mkdtempSync(join(tmpdir(), "chronolog-sbench-")), "plugins");
  writePlugins(plugins, [plugin]);
  const leader = await serve(store.toString(), plugins, /^owner serving/);
  owners.push(leader.child);
  const standby = await serve(store.toString(), plugins, /^standby/);
  owners.push(standby.child);
  const clients = { leader: createClient({ url: leader.url, failoverTimeoutMs: 0 }), standby: createClient({ url: standby.url, failoverTimeoutMs: 0 }) };

  const loading = performance.now();
  for (let n = 0; n < eventCount; n += 500) {
    await clients.leader.emitBatch(Array.from({ length: Math.min(500, eventCount - n) }, () => ({ type: "sbench.happened", data: payload })));
  }
  console.log(`preloaded ${eventCount} events in ${((performance.now() - loading) / 1000).toFixed(1)} s`);
  const head = (await clients.leader.log.readLog({ pageSize: 1 })).headSeq;
  while ((await clients.standby.log.readLog({ pageSize: 1 })).headSeq < head) await new Promise((r) => setTimeout(r, 50));

  const results = {
    leader: { read: [] as number[], pages: [] as number[], watch: [] as number[] },
    standby: { read: [] as number[], pages: [] as number[], watch: [] as number[] },
  };
  for (let run = 1; run <= runs; run++) {
    for (const who of ["leader", "standby"] as const) {
      const read = await readLog(clients[who]);
      const watched = await catchUp(clients[who]);
      results[who].read.push(rate(read.events, read.ms));
      results[who].pages.push(rate(read.pages, read.ms));
      results[who].watch.push(rate(watched.events, watched.ms));
      console.log(
        `run ${run}, ${who}: ReadLog ${rate(read.pages, read.ms)} pages/s (${rate(read.events, read.ms)} events/s); Watch catch-up ${rate(watched.events, watched.ms)} events/s`,
      );
    }
  }
  const ratio = (a: number, b: number) => (a / b).toFixed(2);
  for (const who of ["leader", "standby"] as const) {
    const r = results[who];
    console.log(`${who}: ReadLog median ${median(r.pages)} pages/s (${median(r.read)} events/s); Watch catch-up median ${median(r.watch)} events/s`);
  }
  console.log(
    `standby / leader: ReadLog ${ratio(median(results.standby.pages), median(results.leader.pages))}x, Watch catch-up ${ratio(median(results.standby.watch), median(results.leader.watch))}x`,
  );

  // Live: both watch from the head while emits go to the leader.
  const from = (await clients.leader.log.readLog({ pageSize: 1 })).headSeq;
  const stop = new AbortController();
  const watching = { leader: live(clients.leader, from, stop.signal), standby: live(clients.standby, from, stop.signal) };
  const emitter = createClient({ url: leader.url, emitVia: "stream" });
  const end = performance.now() + 10_000;
  let acked = 0;
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (performance.now() < end) {
        await emitter.emit("sbench.happened", payload);
        acked++;
      }
    }),
  );
  await new Promise((r) => setTimeout(r, 1_000)); // the last ones reach the watchers
  stop.abort();
  console.log(`live, emits to the leader (64 in flight, 10 s): ${rate(acked, 10_000)} events/s acknowledged`);
  for (const who of ["leader", "standby"] as const) {
    const delays = (await watching[who]).sort((a, b) => a - b);
    console.log(
      `  watch at the ${who}: ${delays.length} events (${rate(delays.length, 10_000)}/s), commit to watcher p50 ${pct(delays, 50).toFixed(0)} / p99 ${pct(delays, 99).toFixed(0)} ms`,
    );
  }
} finally {
  for (const child of owners) child.kill("SIGTERM");
  await Promise.all(owners.map((child) => new Promise((r) => (child.exitCode === null ? child.once("exit", r) : r(undefined)))));
  server.stop();
}
process.exit(0);
