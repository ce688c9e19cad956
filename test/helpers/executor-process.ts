// A real executor process for crash tests, hosting the crash plugin.
// Usage: node --import tsx test/helpers/executor-process.ts URL [HANDLE_DELAY_MS] [HANG_ON_SEQ]
import { runExecutor } from "../../sdk/ts/src/executor.js";
import { crashPlugin } from "./crash-plugin.js";

const [url, delayArg = "2", hangArg = "0"] = process.argv.slice(2);
const executor = runExecutor({ url, plugins: [crashPlugin(Number(delayArg), Number(hangArg))], credits: 8, maxBackoffMs: 200, onError: () => {} });
await executor.ready;
process.stderr.write("executor ready\n");
