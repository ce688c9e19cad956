// Runs the bookings executor: `node --import tsx examples/bookings/executor.ts [URL]`.
// Registers the plugin with its hello, hosts the processor and the action,
// and reconnects if the owner restarts. Stop with Ctrl-C.
import { runExecutor } from "../../sdk/ts/src/executor.js";
import { bookings } from "./plugin.js";

const url = process.argv[2] ?? process.env.CHRONOLOG_URL ?? "http://127.0.0.1:50051";
const executor = runExecutor({ url, token: process.env.CHRONOLOG_TOKEN, plugins: [bookings], credits: 16 });
await executor.ready;
console.error(`bookings executor connected to ${url}`);
process.once("SIGINT", () => void executor.stop().then(() => process.exit(0)));
process.once("SIGTERM", () => void executor.stop().then(() => process.exit(0)));
