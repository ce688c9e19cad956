// One executor process of the timers benchmark: hosts `timers.fire` and records,
// per call, the timer (delay) id, the occurrence id and lateness = now - due (ms): the due moment
// the delay was meant for (its input's `due`, as bench/timers/set-delays.ts sets it), else scheduled.due.
// Prints {"ready":true}, then {"handled":n} every 100 ms, and on SIGTERM one line
// {"calls":[[timerId, occurrenceId, latenessMs], ...], "stalls":[[Date.now(), ms], ...]}, the stalls being
// the turns of its event loop that held a 10 ms timer back more than 10 ms.
// Usage: node --import tsx bench/timers/executor.ts URL
import { runExecutor } from "../../sdk/ts/src/executor.js";
import { timersPlugin } from "./plugin.js";
import { stallProbe } from "./stall-probe.js";

const [url] = process.argv.slice(2);
const calls: [string, string, number][] = [];
const executor = runExecutor({
  url,
  plugins: [
    timersPlugin(
      (ctx) =>
        void calls.push([
          ctx.scheduled!.timerId,
          ctx.scheduled!.occurrenceId,
          Date.now() - (typeof ctx.input.due === "number" ? ctx.input.due : ctx.scheduled!.due.getTime()),
        ]),
    ),
  ],
  credits: 512,
  onError: () => {},
});
await executor.ready;
process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
const timer = setInterval(() => process.stdout.write(`${JSON.stringify({ handled: calls.length })}\n`), 100);
const probe = stallProbe(10, 10); // turns of this event loop that held a 10 ms timer back more than 10 ms
process.on("SIGTERM", () => {
  clearInterval(timer);
  process.stdout.write(`${JSON.stringify({ calls, stalls: probe.stop() })}\n`, () => process.exit(0));
});
