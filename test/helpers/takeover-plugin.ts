import { definePlugin } from "../../sdk/ts/src/plugin.js";

/**
 * The plugin of the takeover tests: processor `takeover.track` on `job.queued` (lanes by
 * data.key) and action `takeover.ping` (what delays call). Each finished run prints one JSON
 * line before it is acknowledged: {"seq","key"} for a delivery, {"call"} for a call.
 */
export const takeoverPlugin = definePlugin({
  name: "takeover",
  events: { "job.queued": { allow: ["*"] } },
  processors: {
    track: {
      on: "job.queued",
      key: "data.key",
      concurrency: 8,
      start: "beginning",
      retryDelaysMs: [20, 40],
      async run(ctx) {
        process.stdout.write(`${JSON.stringify({ seq: Number(ctx.event.seq), key: ctx.event.data?.key })}\n`);
      },
    },
  },
  actions: {
    ping: {
      allow: ["*"],
      inputSchema: { type: "object" },
      timeoutMs: 5_000,
      async run(ctx) {
        process.stdout.write(`${JSON.stringify({ call: ctx.callId })}\n`);
        return {};
      },
    },
  },
});
