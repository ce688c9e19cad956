// One executor process of the delivery benchmark: hosts `bench.drain` and acks
// at once. Prints {"ready":true}, then {"handled"} every 100 ms, and when told to stop
// (SIGTERM) {"handled","latencies","firstAt","lastAt"}: latencies in ms, from the event's
// data.sent (ms since the epoch, fractional: the producer's send time) when it has one (every
// event, those with data.warm left out), else commit-to-handler from event.at (every 10th);
// firstAt/lastAt the epoch ms of the first and last delivery handled.
// Usage: node --import tsx bench/deliver/executor.ts URL
// BENCH_DATA_JSON=0: deliveries carry the data as a Struct instead of JSON text (to compare).
import { runExecutor } from "../../sdk/ts/src/executor.js";
import { benchPlugin } from "./plugin.js";

const [url] = process.argv.slice(2);
let handled = 0;
const latencies: number[] = [];
let firstAt = 0;
let lastAt = 0;
const executor = runExecutor({
  url,
  plugins: [
    benchPlugin((event) => {
      const now = performance.timeOrigin + performance.now();
      if (handled++ === 0) firstAt = now;
      lastAt = now;
      const sent = event.data?.sent;
      // Send-to-handler latency, or commit-to-handler; the owner, producer and this process share a clock.
      if (typeof sent === "number") {
        if (event.data?.warm !== true) latencies.push(now - sent);
      } else if (handled % 10 === 0) latencies.push(Date.now() - Number(event.at!.seconds) * 1000 - Math.floor(event.at!.nanos / 1e6));
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
  process.stdout.write(`${JSON.stringify({ handled, latencies, firstAt, lastAt })}\n`, () => process.exit(0));
});
