// The executor of the console's tests, a real process on the TS SDK hosting plugin `desk`:
// processor `desk.triage` on `ticket.opened` (fails for good when the ticket's data says
// `fail: true`, else emits `ticket.triaged` under it), action `desk.remind`, the declared
// schedule `desk.new-year` calling it (cron, Europe/Berlin, once a year: its own calls stay out
// of the tests' counts), and collection `notes`. Every delivery and every call prints one JSON
// line on stdout before it answers.
// Usage: node --import tsx test/helpers/console-executor.ts URL [TOKEN]
import { runExecutor, TerminalError } from "../../sdk/ts/src/executor.js";
import { definePlugin } from "../../sdk/ts/src/plugin.js";

const [url, token] = process.argv.slice(2);
const print = (line: object): void => void process.stdout.write(`${JSON.stringify(line)}\n`);

export const deskPlugin = definePlugin({
  name: "desk",
  events: {
    "ticket.opened": {
      allow: ["*"],
      description: "A ticket someone opened",
      schema: { type: "object", properties: { title: { type: "string" }, fail: { type: "boolean" } }, required: ["title"] },
    },
    "ticket.triaged": { allow: ["*"], schema: { type: "object" } },
  },
  processors: {
    triage: {
      on: "ticket.opened",
      start: "beginning",
      concurrency: 4,
      rate: { limit: 1_000, periodMs: 1_000 }, // never binds: the console shows a processor's limits and rate waits
      async run(ctx) {
        print({ kind: "delivery", seq: Number(ctx.event.seq), id: ctx.event.id, attempt: ctx.attempt });
        if (ctx.data.fail === true) throw new TerminalError(`ticket ${ctx.event.id} cannot be triaged`);
        await ctx.emit("ticket.triaged", { ticket: ctx.event.id });
      },
    },
  },
  actions: {
    remind: {
      allow: ["*"],
      rate: { limit: 1_000, periodMs: 1_000 }, // never binds: the console shows an action's limits and rate waits
      run(ctx, input) {
        print({ kind: "call", callId: ctx.callId, input });
        return { reminded: true };
      },
    },
  },
  collections: { notes: { allow: ["*"], schema: { type: "object", properties: { n: { type: "integer" } } } } },
  schedules: { "new-year": { action: "remind", cron: "0 3 1 1 *", zone: "Europe/Berlin", input: { what: "the yearly round" } } },
});

if (url) {
  const executor = runExecutor({ url, token: token || undefined, plugins: [deskPlugin], credits: 8, maxBackoffMs: 200, onError: () => {} });
  await executor.ready;
  process.stderr.write("executor ready\n");
}
