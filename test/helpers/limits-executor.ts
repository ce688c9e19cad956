// A real executor process hosting the limits plugin (test/helpers/limits-plugin.ts).
// Usage: node --import tsx test/helpers/limits-executor.ts URL [RUN_MS]
import { runExecutor } from "../../sdk/ts/src/executor.js";
import { limitsPlugin } from "./limits-plugin.js";

const [url, runArg = "150"] = process.argv.slice(2);
const executor = runExecutor({ url, plugins: [limitsPlugin(Number(runArg))], credits: 8, maxBackoffMs: 200, onError: () => {} });
await executor.ready;
process.stderr.write("executor ready\n");
