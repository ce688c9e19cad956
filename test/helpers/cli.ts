import { execFile } from "node:child_process";

const repo = new URL("../../", import.meta.url).pathname;

/**
 * Runs the CLI (`node --import tsx server/src/main.ts ...args`) without
 * blocking this process's event loop (an in-process owner serves from it);
 * resolves with its exit code and output.
 */
export function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ["--import", "tsx", "server/src/main.ts", ...args], { cwd: repo }, (error, stdout, stderr) => {
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr });
    });
  });
}
