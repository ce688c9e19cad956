import { execFile } from "node:child_process";
import { chronologArgs, startingProcess } from "./chronolog.js";

const repo = new URL("../../", import.meta.url).pathname;

/**
 * Runs the CLI (the bundle, see helpers/chronolog.ts: `node dist/main.js ...args`) without
 * blocking this process's event loop (an in-process owner serves from it);
 * resolves with its exit code and output. `stdin`: written to its standard input, then closed.
 */
export function cli(args: string[], stdin?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  startingProcess("a CLI process");
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [...chronologArgs, ...args], { cwd: repo }, (error, stdout, stderr) => {
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr });
    });
    if (stdin !== undefined) child.stdin?.end(stdin);
  });
}
