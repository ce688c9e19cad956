// An executor process for the takeover tests, hosting the takeover plugin on the owner at URL.
// Usage: node --import tsx test/helpers/takeover-executor.ts URL[,URL...] (it follows the leader among them)
import { runExecutor } from "../../sdk/ts/src/executor.js";
import { takeoverPlugin } from "./takeover-plugin.js";

const [url] = process.argv.slice(2);
runExecutor({ url, plugins: [takeoverPlugin], credits: 16, maxBackoffMs: 200, onError: () => {} });
