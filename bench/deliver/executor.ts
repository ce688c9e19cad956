// One executor process of the delivery benchmark: hosts `bench.drain` and acks
// at once. Prints one JSON line when told to stop (SIGTERM) or when it has
// handled `expected` deliveries in all: {"handled","latenciesMs": sample}.
// Usage: node --import tsx bench/deliver/executor.ts URL
// BENCH_DATA_JSON=0: deliveries carry the data as a Struct instead of JSON text (to compare).
import { runExecutor } from "../../sdk/ts/src/executor.js";
import { benchPlugin } from "./plugin.js";

const [url] = process.argv.slice(2);
let handled = 0;
const latencies: number[] = [];
const executor = runExecutor({
  url,
  plugins: [
    benchPlugin((event) => {
      handled++;
      // Commit-to-handler latency; the owner and this process share a clock.
      if (handled % 10 === 0) latencies.push(Date.now() - Number(event.at!.seconds) * 1000 - Math.floor(event.at!.nanos / 1e6));
    }),
  ],
  credits: 512,
  dataJson: process.env.BENCH_DATA_JSON !== "0",
  onError: () => {},
});
await executor.ready;
process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
const timer = setInterval(() => process.stdout.write(`${JSON.stringify({ handled })}\n`), 100);
process.on("SIGTERM", () => {
  clearInterval(timer);
  process.stdout.write(`${JSON.stringify({ handled, latencies })}\n`, () => process.exit(0));
});
