import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";

const repo = new URL("../../", import.meta.url).pathname;

/**
 * Runs the Python SDK's unittest file `file` (a path from the repository's root) with the
 * repository's venv, the SDK on PYTHONPATH: "exit 0", or the exit code with its output; and
 * unittest's summary (its stderr).
 */
export async function pythonUnittest(file: string): Promise<{ exit: string; stderr: string }> {
  const result = await promisify(execFile)(join(repo, ".venv/bin/python"), ["-m", "unittest", "-v", file], {
    cwd: repo,
    env: { ...process.env, PYTHONPATH: join(repo, "sdk/python") },
    timeout: 60_000,
  }).catch((e: { stdout: string; stderr: string; code: number }) => e);
  return { exit: "code" in result ? `exit ${result.code}:\n${result.stdout}${result.stderr}` : "exit 0", stderr: result.stderr };
}
