// What flow limits cost per delivery (not a test): `npm run bench:limits`.
//
// The delivery benchmark's backlog (bench/deliver: BENCH_EVENTS events, default 50,000, over 1,000
// keys, drained by 2 executor processes), its processor declared without limits (`key`, `concurrency:
// 1024`) and with them (BENCH_LIMITS=on in bench/deliver/plugin.ts: `concurrency: {limit: 1, key,
// total: 1024}` and a rate per key that never binds), the two alternated BENCH_ROUNDS times
// (default 3; each round in the other order, as the second drain of a round tends to be slower). Prints, per drain, deliveries/s and the owner's CPU per delivery (user + system
// from /proc, from the executors' start to the last delivery), then the medians: CPU time is less
// at the mercy of other work on the machine than deliveries/s.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { createClient } from "../../sdk/ts/src/client.js";
import { benchPlugin } from "../deliver/plugin.js";
import { buildBundle, startOwner, stopOwner } from "../lib/owner.js";
import { cpuMs } from "../lib/proc.js";

const repo = new URL("../../", import.meta.url).pathname;
const eventsCount = Number(process.env.BENCH_EVENTS ?? 50_000);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);

function startExecutor(url: string, limits: string) {
  const child = spawn(process.execPath, ["--conditions=chronolog-source", "--import", "tsx", "bench/deliver/executor.ts", url], {
    cwd: repo,
    env: { ...process.env, BENCH_LIMITS: limits },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const state = { child, handled: 0, ready: undefined as unknown as Promise<void>, finished: new Promise<void>((r) => child.once("exit", () => r())) };
  let markReady!: () => void;
  state.ready = new Promise((r) => (markReady = r));
  createInterface({ input: child.stdout! }).on("line", (line) => {
    const m = JSON.parse(line);
    if (m.ready) markReady();
    if (m.handled !== undefined) state.handled = m.handled;
  });
  return state;
}

async function drain(limits: "off" | "on"): Promise<{ perSecond: number; cpuUsPerDelivery: number }> {
  process.env.BENCH_LIMITS = limits; // the owner's manifest (benchPlugin reads it)
  const owner = await startOwner({ plugins: [benchPlugin()], entry: "bundle" });
  const client = createClient({ url: owner.url });
  for (let i = 0; i < eventsCount; i += 1000)
    await client.emitBatch(
      Array.from({ length: Math.min(1000, eventsCount - i) }, (_, j) => ({
        type: "bench.placed",
        data: { key: `k${(i + j) % 1000}`, n: i + j, note: "x".repeat(120) },
      })),
    );
  const executors = [startExecutor(owner.url, limits), startExecutor(owner.url, limits)];
  const cpu0 = cpuMs(owner.child.pid!);
  const t0 = performance.now();
  await Promise.all(executors.map((e) => e.ready));
  while (executors.reduce((n, e) => n + e.handled, 0) < eventsCount) await new Promise((r) => setTimeout(r, 20));
  const seconds = (performance.now() - t0) / 1000;
  const cpu = cpuMs(owner.child.pid!) - cpu0;
  for (const e of executors) e.child.kill("SIGTERM");
  await Promise.all(executors.map((e) => e.finished));
  await stopOwner(owner);
  return { perSecond: eventsCount / seconds, cpuUsPerDelivery: (cpu * 1000) / eventsCount };
}

buildBundle();
const results: Record<"off" | "on", { perSecond: number; cpuUsPerDelivery: number }[]> = { off: [], on: [] };
for (let r = 0; r < rounds; r++)
  for (const limits of r % 2 === 0 ? (["off", "on"] as const) : (["on", "off"] as const)) {
    const result = await drain(limits);
    results[limits].push(result);
    console.log(
      `round ${r + 1}, limits ${limits}: ${result.perSecond.toFixed(0)} deliveries/s, owner CPU ${result.cpuUsPerDelivery.toFixed(1)} µs per delivery`,
    );
  }
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const limits of ["off", "on"] as const)
  console.log(
    `limits ${limits}: median ${median(results[limits].map((x) => x.perSecond)).toFixed(0)} deliveries/s, owner CPU ${median(results[limits].map((x) => x.cpuUsPerDelivery)).toFixed(1)} µs per delivery`,
  );
