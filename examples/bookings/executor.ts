// Runs the bookings executor: `node --import tsx examples/bookings/executor.ts [URL] [--token TOKEN]` (--help).
// Registers the plugin with its hello, hosts the processor and the action,
// and reconnects if the owner restarts. Stop with Ctrl-C. An owner that
// refuses it for good (an unknown token, a principal whose role may not host,
// a hello it rejects) makes it print the owner's message and exit with status 1.
import { parseArgs } from "node:util";
import { runExecutor } from "../../sdk/ts/src/executor.js";
import { bookings } from "./plugin.js";

const usage = `usage: node --import tsx examples/bookings/executor.ts [URL] [--url URL] [--token TOKEN]

Runs the bookings executor: registers the bookings plugin and hosts its processor and actions.
  URL, --url URL   the owner's URL, or several owners' separated by commas (default: $CHRONOLOG_URL, else http://127.0.0.1:50051)
  --token TOKEN    an executor principal's token, for an owner started with a config (default: $CHRONOLOG_TOKEN)`;

let parsed;
try {
  parsed = parseArgs({ allowPositionals: true, options: { url: { type: "string" }, token: { type: "string" }, help: { type: "boolean", short: "h" } } });
} catch (e) {
  console.error(`bookings executor: ${(e as Error).message}\n\n${usage}`);
  process.exit(2);
}
if (parsed.values.help) {
  console.log(usage);
  process.exit(0);
}
const url = parsed.values.url ?? parsed.positionals[0] ?? process.env.CHRONOLOG_URL ?? "http://127.0.0.1:50051";
// Several owners (a leader and its standbys): a comma-separated list; the executor follows the leader.
if (parsed.positionals.length > (parsed.values.url ? 0 : 1) || !url.split(",").every((u) => URL.canParse(u.trim()))) {
  console.error(
    `bookings executor: expected an owner URL (http://host:port), or several separated by commas, got ${[...parsed.positionals, parsed.values.url ?? url].join(" ").trim()}\n\n${usage}`,
  );
  process.exit(2);
}
const token = parsed.values.token ?? process.env.CHRONOLOG_TOKEN;
const executor = runExecutor({ url, token, plugins: [bookings], credits: 16 });
// ready and done reject with the owner's error when it refuses the stream for good; the executor already printed it.
executor.done.catch(() => process.exit(1));
await executor.ready.catch(() => process.exit(1)); // the SDK says "connected to URL" on stderr
process.once("SIGINT", () => void executor.stop().then(() => process.exit(0)));
process.once("SIGTERM", () => void executor.stop().then(() => process.exit(0)));
