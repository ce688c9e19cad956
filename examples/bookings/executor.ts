// Runs the bookings executor: `node --import tsx examples/bookings/executor.ts [URL]`.
// Registers the plugin with its hello, hosts the processor and the action,
// and reconnects if the owner restarts. Stop with Ctrl-C. An owner that
// refuses it for good (an unknown token, a principal whose role may not host,
// a hello it rejects) makes it print the owner's message and exit with status 1.
import { runExecutor } from "../../sdk/ts/src/executor.js";
import { bookings } from "./plugin.js";

const url = process.argv[2] ?? process.env.CHRONOLOG_URL ?? "http://127.0.0.1:50051";
const executor = runExecutor({ url, token: process.env.CHRONOLOG_TOKEN, plugins: [bookings], credits: 16 });
// ready and done reject with the owner's error when it refuses the stream for good; the executor already printed it.
executor.done.catch(() => process.exit(1));
await executor.ready.catch(() => process.exit(1));
console.error(`bookings executor connected to ${url}`);
process.once("SIGINT", () => void executor.stop().then(() => process.exit(0)));
process.once("SIGTERM", () => void executor.stop().then(() => process.exit(0)));
