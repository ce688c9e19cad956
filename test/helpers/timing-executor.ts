// A real executor process for the delivery-timing tests, hosting plugin `timing`.
// Usage: node --import tsx test/helpers/timing-executor.ts URL
// Prints one JSON line per handler start and end on stdout: {ev, work, key, attempt, pid, t, aborted?}.
import { runExecutor } from "../../sdk/ts/src/executor.js";
import { definePlugin } from "../../sdk/ts/src/plugin.js";

const [url] = process.argv.slice(2);

function log(line: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify({ ...line, pid: process.pid, t: Date.now() })}\n`);
}

/** Sleeps `ms` whatever the signal says (a handler that does not pass its signal on); returns the abort reason seen, if any. */
async function sleepIgnoring(ms: number, signal: AbortSignal): Promise<string | null> {
  let reason: string | null = null;
  signal.addEventListener("abort", () => (reason = signal.reason instanceof Error ? signal.reason.message : String(signal.reason)), { once: true });
  await new Promise((r) => setTimeout(r, ms));
  return reason;
}

/** How long the slow handlers take on each try: 2.5 s on the first, 1.5 s on the second, then at once. */
const slowMs = (attempt: number) => (attempt === 1 ? 2_500 : attempt === 2 ? 1_500 : 0);

const timing = definePlugin({
  name: "timing",
  events: { "job.run": { allow: ["*"] }, "job.slow": { allow: ["*"] }, "job.late": { allow: ["*"] } },
  processors: {
    // Kills its executor on an event with data.poison; other events take 300 ms.
    jobs: {
      on: "job.run",
      key: "data.key",
      concurrency: 8,
      start: "beginning",
      retryDelaysMs: [20, 40],
      async run(ctx) {
        const work = `${ctx.event.seq}`;
        log({ ev: "start", work, key: ctx.key, attempt: ctx.attempt });
        if (ctx.data.poison) process.exit(1);
        await new Promise((r) => setTimeout(r, 300));
        log({ ev: "end", work, key: ctx.key, attempt: ctx.attempt });
      },
    },
    // Slower than its ack timeout on the first two tries; never fails.
    slow: {
      on: "job.slow",
      key: "data.key",
      concurrency: 4,
      start: "beginning",
      ackTimeoutMs: 1_000,
      timeoutGraceMs: 5_000,
      retryDelaysMs: [100, 100],
      async run(ctx) {
        const work = `${ctx.event.seq}`;
        log({ ev: "start", work, key: ctx.key, attempt: ctx.attempt });
        const aborted = await sleepIgnoring(slowMs(ctx.attempt), ctx.signal);
        log({ ev: "end", work, key: ctx.key, attempt: ctx.attempt, aborted });
      },
    },
    // The same handler with the default grace (the ack timeout): its first try outlives timeout plus grace.
    late: {
      on: "job.late",
      key: "data.key",
      concurrency: 4,
      start: "beginning",
      ackTimeoutMs: 1_000,
      retryDelaysMs: [100, 100],
      async run(ctx) {
        const work = `${ctx.event.seq}`;
        log({ ev: "start", work, key: ctx.key, attempt: ctx.attempt });
        const aborted = await sleepIgnoring(slowMs(ctx.attempt), ctx.signal);
        log({ ev: "end", work, key: ctx.key, attempt: ctx.attempt, aborted });
      },
    },
  },
  actions: {
    // Slower than its timeout on the first two runs; answers anyway.
    slow: {
      allow: ["*"],
      timeoutMs: 1_000,
      timeoutGraceMs: 5_000,
      async run(ctx) {
        log({ ev: "start", work: ctx.callId, key: ctx.callId, attempt: ctx.attempt });
        const aborted = await sleepIgnoring(slowMs(ctx.attempt), ctx.signal);
        log({ ev: "end", work: ctx.callId, key: ctx.callId, attempt: ctx.attempt, aborted });
        return { attempt: ctx.attempt };
      },
    },
  },
});

const executor = runExecutor({ url, plugins: [timing], credits: 8, maxBackoffMs: 200, onError: () => {} });
await executor.ready;
process.stderr.write("executor ready\n");
