// Delivery benchmark (not a test): `npm run bench:deliver`.
//
// An owner, a producer and 2 executor processes. 100,000 events over 1,000
// keys; the processor acks at once. Prints deliveries/s end to end and the
// p50/p99 of commit-to-handler latency, and the owner's peak RSS, for:
//   backlog: the events are in the log before the executors start (deliveries/s from the first
//            delivery handled to the last);
//   live:    the executors run while the producer emits.
// Then (BENCH_BIG=1, default) the RSS check: 1,000,000 events in the log,
// executors started afterwards; the owner's RSS is sampled while they drain.
//
// Knobs: BENCH_EVENTS=100000, BENCH_KEYS=1000, BENCH_BIG_EVENTS=1000000, BENCH_BIG=0 to skip,
// BENCH_OWNER_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" to profile the owner
// (BENCH_EXECUTOR_NODE_ARGS likewise for the executors); BENCH_DATA_JSON=0: deliveries carry
// event data as a Struct (default: JSON text). BENCH_EXECUTOR=python: the executors are the
// Python SDK's (executor.py, with .venv's python) instead of the TypeScript one.
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { createClient, type ChronologClient } from "../../sdk/ts/src/client.js";
import { startOwner as startOwner_, stopOwner, type Owner } from "../lib/owner.js";
import { pct, rssMiB } from "../lib/proc.js";
import { benchPlugin } from "./plugin.js";

const repo = new URL("../../", import.meta.url).pathname;
const eventsCount = Number(process.env.BENCH_EVENTS ?? 100_000);
const keys = Number(process.env.BENCH_KEYS ?? 1_000);
const bigCount = Number(process.env.BENCH_BIG_EVENTS ?? 1_000_000);
const big = process.env.BENCH_BIG !== "0";

const ownerOptions = { plugins: [benchPlugin()], nodeArgs: process.env.BENCH_OWNER_NODE_ARGS?.split(" ").filter(Boolean) ?? [] };
const startOwner = () => startOwner_(ownerOptions);

interface ExecutorProcess {
  child: ChildProcess;
  handled: number;
  latencies: number[];
  /** Epoch ms of its first and last delivery handled (known once it stopped). */
  firstAt: number;
  lastAt: number;
  ready: Promise<void>;
  finished: Promise<void>;
}

function startExecutor(url: string): ExecutorProcess {
  const nodeArgs = process.env.BENCH_EXECUTOR_NODE_ARGS?.split(" ").filter(Boolean) ?? [];
  const [command, args] =
    process.env.BENCH_EXECUTOR === "python"
      ? [`${repo}.venv/bin/python`, ["bench/deliver/executor.py", url]]
      : [process.execPath, [...nodeArgs, "--conditions=chronolog-source", "--import", "tsx", "bench/deliver/executor.ts", url]];
  const env = { ...process.env, PYTHONPATH: `${repo}sdk/python` };
  const child = spawn(command, args, { cwd: repo, env, stdio: ["ignore", "pipe", "inherit"] });
  const p = { child, handled: 0, latencies: [] as number[] } as ExecutorProcess;
  let markReady!: () => void;
  p.ready = new Promise((r) => (markReady = r));
  p.finished = new Promise((r) => child.once("exit", () => r()));
  createInterface({ input: child.stdout! }).on("line", (line) => {
    const m = JSON.parse(line);
    if (m.ready) markReady();
    if (m.handled !== undefined) p.handled = m.handled;
    if (m.latencies) [p.latencies, p.firstAt, p.lastAt] = [m.latencies, m.firstAt, m.lastAt];
  });
  return p;
}

async function produce(client: ChronologClient, count: number, offset = 0): Promise<void> {
  const batch = 1000;
  for (let i = 0; i < count; i += batch) {
    const n = Math.min(batch, count - i);
    await client.emitBatch(
      Array.from({ length: n }, (_, j) => ({ type: "bench.placed", data: { key: `k${(offset + i + j) % keys}`, n: offset + i + j, note: "x".repeat(120) } })),
    );
  }
}

async function drain(owner: Owner, executors: ExecutorProcess[], total: number, onSample?: () => void): Promise<{ seconds: number; peakRss: number }> {
  const started = performance.now();
  let peakRss = 0;
  while (executors.reduce((n, e) => n + e.handled, 0) < total) {
    await new Promise((r) => setTimeout(r, 50));
    peakRss = Math.max(peakRss, rssMiB(owner.child.pid!));
    onSample?.();
  }
  return { seconds: (performance.now() - started) / 1000, peakRss };
}

/** Stops the executors and the owner: the latencies, sorted, and the seconds from the first delivery handled to the last. */
async function stopAll(owner: Owner, executors: ExecutorProcess[]): Promise<{ latencies: number[]; handlingSeconds: number }> {
  for (const e of executors) e.child.kill("SIGTERM");
  await Promise.all(executors.map((e) => e.finished));
  await stopOwner(owner);
  const handlingSeconds = (Math.max(...executors.map((e) => e.lastAt)) - Math.min(...executors.map((e) => e.firstAt))) / 1000;
  return { latencies: executors.flatMap((e) => e.latencies).sort((a, b) => a - b), handlingSeconds };
}

const rows: string[] = [];
function row(mode: string, total: number, seconds: number, latencies: number[], peakRss: number): void {
  rows.push(
    `${mode.padEnd(10)} ${String(total).padStart(9)} ${(total / seconds).toFixed(0).padStart(14)} ${pct(latencies, 50).toFixed(1).padStart(8)} ${pct(latencies, 99).toFixed(1).padStart(8)} ${peakRss.toFixed(0).padStart(14)}`,
  );
  console.log(rows.at(-1));
}

console.log(`delivery benchmark: ${eventsCount} events over ${keys} keys, 2 executor processes, processor concurrency 1024, credits 512 each`);
console.log(
  `${"mode".padEnd(10)} ${"events".padStart(9)} ${"deliveries/s".padStart(14)} ${"p50 ms".padStart(8)} ${"p99 ms".padStart(8)} ${"owner RSS MiB".padStart(14)}`,
);

{
  const owner = await startOwner();
  const client = createClient({ url: owner.url });
  await produce(client, eventsCount);
  const executors = [startExecutor(owner.url), startExecutor(owner.url)];
  await Promise.all(executors.map((e) => e.ready));
  const result = await drain(owner, executors, eventsCount);
  const { latencies, handlingSeconds } = await stopAll(owner, executors);
  // From the first delivery handled to the last: the executors' start (a second or more) is not the owner's.
  row("backlog", eventsCount, handlingSeconds, latencies, result.peakRss);
}
{
  const owner = await startOwner();
  const client = createClient({ url: owner.url });
  const executors = [startExecutor(owner.url), startExecutor(owner.url)];
  await Promise.all(executors.map((e) => e.ready));
  const producing = produce(client, eventsCount);
  const result = await drain(owner, executors, eventsCount);
  await producing;
  const { latencies } = await stopAll(owner, executors);
  row("live", eventsCount, result.seconds, latencies, result.peakRss);
}
if (big) {
  const owner = await startOwner();
  const client = createClient({ url: owner.url });
  await produce(client, bigCount);
  const before = rssMiB(owner.child.pid!);
  const executors = [startExecutor(owner.url), startExecutor(owner.url)];
  const samples: number[] = [];
  const result = await drain(owner, executors, bigCount, () => samples.push(rssMiB(owner.child.pid!)));
  const { latencies, handlingSeconds } = await stopAll(owner, executors);
  row("backlog-1M", bigCount, handlingSeconds, latencies, result.peakRss);
  const q = (f: number) => samples[Math.floor(f * (samples.length - 1))];
  console.log(
    `owner RSS during the 1M drain: before ${before.toFixed(0)} MiB; at 10% ${q(0.1).toFixed(0)}, 50% ${q(0.5).toFixed(0)}, 90% ${q(0.9).toFixed(0)}, peak ${result.peakRss.toFixed(0)} MiB`,
  );
}
