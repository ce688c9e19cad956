// What pending cancellable timers cost an emit, end to end (not a test): `npm run bench:cancel-on:emit`.
//
// Two owners (the bundle, SQLite, synchronous=FULL) side by side: one with no timer, one with
// BENCH_PENDING (default 100,000) delays due in 1-24 h, each cancelled by a `compare.order` whose
// `data.order` matches its input, so every emit of the load looks its key up in the cancel index
// and finds no timer. A load generator in its own process (bench/emit/load.ts: unary Emit over
// grpc-js, BENCH_CALLERS in flight, default 256) measures the two in alternating windows,
// BENCH_ROUNDS rounds (default 4, each in the other order than the one before), BENCH_SECONDS each
// (default 5, after 1 s of warm-up); the idle owner waits meanwhile. Prints per window events/s
// and the owner's CPU per event (user + system from /proc over warm-up and window, divided by the
// events of both), then the medians and the ratio with timers to without.
import { fork } from "node:child_process";
import { join } from "node:path";
import { createClient } from "../../sdk/ts/src/client.js";
import type { DelaySpec } from "../../sdk/ts/src/time-requests.js";
import { comparePlugin, INGEST_TYPE } from "../compare/plugin.js";
import type { LoadRequest, LoadResult } from "../emit/load.js";
import { buildBundle, startOwner, stopOwner, type Owner } from "../lib/owner.js";
import { cpuMs, sleep } from "../lib/proc.js";
import { timersPlugin } from "../timers/plugin.js";

const repo = new URL("../../", import.meta.url).pathname;
const pending = Number(process.env.BENCH_PENDING ?? 100_000);
const rounds = Number(process.env.BENCH_ROUNDS ?? 4);
const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const callers = Number(process.env.BENCH_CALLERS ?? 256);
const warmupMs = 1_000;

/** Arms `count` cancellable delays due in 1-24 h on the owner at `url`, 1,000 per DelayBatch. */
async function armCancellable(url: string, count: number): Promise<void> {
  const client = createClient({ url });
  const now = Date.now();
  for (let from = 0; from < count; from += 1_000) {
    const delays: DelaySpec[] = Array.from({ length: Math.min(1_000, count - from) }, (_, k) => ({
      action: "timers.fire",
      input: { order: `pending-${from + k}` },
      when: { at: now + 3_600_000 + Math.floor(((from + k) / count) * 23 * 3_600_000) },
      overdue: "unbounded",
      cancelOn: [{ type: INGEST_TYPE, match: { "data.order": "input.order" } }],
    }));
    await client.delayBatch(delays);
  }
}

function startGenerator(): Promise<{ run(req: LoadRequest): Promise<LoadResult>; close(): void }> {
  const child = fork(join(repo, "bench/emit/load.ts"), [], {
    execArgv: ["--conditions=chronolog-source", "--import", "tsx"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  return new Promise((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`load generator exited (${code})`)));
    child.once("message", () =>
      resolve({
        run: (req) =>
          new Promise((done, failed) => {
            child.once("message", (m: { ok: boolean; result?: LoadResult; error?: string }) => (m.ok ? done(m.result!) : failed(new Error(m.error))));
            child.send(req);
          }),
        close: () => child.kill(),
      }),
    );
  });
}

buildBundle();
const plugins = [comparePlugin(), timersPlugin()];
const owners: Record<"none" | "pending", Owner> = {
  none: await startOwner({ plugins, entry: "bundle", serveArgs: ["--synchronous", "FULL"] }),
  pending: await startOwner({ plugins, entry: "bundle", serveArgs: ["--synchronous", "FULL"] }),
};
const t0 = performance.now();
await armCancellable(owners.pending.url, pending);
console.log(`${pending.toLocaleString("en-US")} cancellable delays armed in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
await sleep(10_000); // the arming's WAL checkpointed before the first window
const generator = await startGenerator();
const results: Record<"none" | "pending", { perSecond: number; cpuUs: number }[]> = { none: [], pending: [] };
for (let r = 0; r < rounds; r++)
  for (const which of r % 2 === 0 ? (["none", "pending"] as const) : (["pending", "none"] as const)) {
    const owner = owners[which];
    const cpu0 = cpuMs(owner.child.pid!);
    const result = await generator.run({
      url: owner.url,
      client: "grpc-js",
      connections: 4,
      callers,
      mode: "unary",
      batchSize: 1,
      eventType: INGEST_TYPE,
      warmupMs,
      durationMs: seconds * 1000,
    });
    const cpu = cpuMs(owner.child.pid!) - cpu0;
    if (result.errors > 0) console.log(`  ${result.errors} errors, first: ${result.firstError}`);
    // The warm-up's events at the window's rate: the CPU covers both.
    const cpuUs = (cpu * 1000) / (result.eventsPerSec * ((seconds * 1000 + warmupMs) / 1000));
    results[which].push({ perSecond: result.eventsPerSec, cpuUs });
    console.log(
      `round ${r + 1}, ${which === "none" ? "no timer" : `${pending} pending cancellable`}: ${result.eventsPerSec.toFixed(0)} events/s, owner CPU ${cpuUs.toFixed(1)} µs per event, p50 ${result.p50.toFixed(2)} ms`,
    );
  }
generator.close();
await Promise.all([stopOwner(owners.none), stopOwner(owners.pending)]);
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const m = (which: "none" | "pending") => ({ perSecond: median(results[which].map((x) => x.perSecond)), cpuUs: median(results[which].map((x) => x.cpuUs)) });
const none = m("none");
const withTimers = m("pending");
console.log(`no timer: median ${none.perSecond.toFixed(0)} events/s, owner CPU ${none.cpuUs.toFixed(1)} µs per event`);
console.log(`${pending} pending cancellable: median ${withTimers.perSecond.toFixed(0)} events/s, owner CPU ${withTimers.cpuUs.toFixed(1)} µs per event`);
console.log(
  `with timers / without: events/s ${(withTimers.perSecond / none.perSecond).toFixed(3)}, CPU per event ${(withTimers.cpuUs / none.cpuUs).toFixed(3)}`,
);
