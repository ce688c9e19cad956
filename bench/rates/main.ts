// Rate benchmark (not a test): `npm run bench:rates`.
//
// An owner process (tsx) and an executor in this process. For BENCH_RATE_SECONDS (default 60):
//   action:    `rates.ping` declared at rate {limit: BENCH_RATE (default 10), period_ms: 1000, burst: 1},
//              called by 32 callers in a closed loop (each call's wait is bounded by its 30 s timeout);
//   processor: `rates.work` at the same rate per key, with a backlog of events of one key in the log.
// Prints the starts per second measured over the window after the first start against the
// declared limit, and the error (the bar: within 5 %), plus the owner's rate metrics.
import { createClient } from "../../sdk/ts/src/client.js";
import { runExecutor } from "../../sdk/ts/src/executor.js";
import { definePlugin } from "../../sdk/ts/src/plugin.js";
import { startOwner, stopOwner } from "../lib/owner.js";

const seconds = Number(process.env.BENCH_RATE_SECONDS ?? 60);
const limit = Number(process.env.BENCH_RATE ?? 10);

const actionStarts: number[] = [];
const deliveryStarts: number[] = [];
const plugin = definePlugin({
  name: "rates",
  events: { "rates.job": { allow: ["*"] } },
  actions: { ping: { allow: ["*"], rate: { limit, periodMs: 1_000, burst: 1 }, run: () => void actionStarts.push(Date.now()) } },
  processors: {
    work: {
      on: "rates.job",
      concurrency: { key: "data.k", limit: 64, total: 64 },
      rate: { limit, periodMs: 1_000, key: "data.k", burst: 1 },
      start: "beginning",
      run: () => void deliveryStarts.push(Date.now()),
    },
  },
});

const owner = await startOwner({ plugins: [plugin] });
const client = createClient({ url: owner.url });
const backlog = Math.ceil(limit * seconds * 1.5);
for (let i = 0; i < backlog; i += 5_000)
  await client.emitBatch(Array.from({ length: Math.min(5_000, backlog - i) }, () => ({ type: "rates.job", data: { k: "one" } })));
const executor = runExecutor({ url: owner.url, plugins: [plugin], credits: 128, onError: () => {} });
await executor.ready;
const t0 = Date.now();
let running = true;
const callers = Array.from({ length: 32 }, async () => {
  while (running) await client.call("rates.ping", {}).catch(() => undefined);
});
await new Promise((r) => setTimeout(r, seconds * 1_000));
running = false;
const metrics = await (await fetch(`${owner.url}/metrics`)).text();
await Promise.all(callers);
await executor.stop(1_000);
await stopOwner(owner);

/** Starts per second from the first start to the window's end (the burst of 1 is the first). */
function rate(starts: number[]): number {
  const inWindow = starts.filter((t) => t <= t0 + seconds * 1_000);
  if (inWindow.length < 2) return 0;
  return (inWindow.length - 1) / ((t0 + seconds * 1_000 - inWindow[0]) / 1_000);
}
for (const [name, starts] of [
  ["action calls", actionStarts],
  ["deliveries of one key", deliveryStarts],
] as const) {
  const measured = rate(starts);
  console.log(`${name}: ${measured.toFixed(3)}/s over ${seconds} s against ${limit}/s declared: ${(((measured - limit) / limit) * 100).toFixed(2)} %`);
}
for (const line of metrics.split("\n")) if (line.startsWith("chronolog_rate_")) console.log(line);
