// Runs every test with vitest and ends with one plain line `N passed, N failed`
// (read by CI). Extra arguments go to vitest, e.g. `npm test -- test/log.test.ts`.
// Tests make their data folders under os.tmpdir(): this run points TMPDIR (for vitest and every
// process a test starts) at a folder of its own and removes it at the end, so runs leave nothing in /tmp.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildConsole } from "../scripts/build-console.mjs";

// The owner serves the built console (dist/console/, test/console.test.ts opens it): build it
// first when its sources changed, so a fresh clone's `npm ci && npm test` has it.
if (await buildConsole({ onlyIfStale: true })) console.log("built the console into dist/console/");

const report = ".vitest-report.json";
rmSync(report, { force: true });
const runDir = mkdtempSync(join(tmpdir(), "chronolog-tests-"));
const result = spawnSync(
  process.execPath,
  ["node_modules/vitest/vitest.mjs", "run", "--reporter=default", "--reporter=json", `--outputFile.json=${report}`, ...process.argv.slice(2)],
  { stdio: "inherit", env: { ...process.env, TMPDIR: runDir } },
);
rmSync(runDir, { recursive: true, force: true });
let passed = 0;
let failed = 0;
let skipped = 0;
try {
  const json = JSON.parse(readFileSync(report, "utf8"));
  passed = json.numPassedTests;
  failed = json.numFailedTests + (json.numRuntimeErrorTests ?? 0);
  skipped = json.numPendingTests ?? 0;
  if (json.success === false && failed === 0) failed = 1; // a suite that failed to load counts
} catch {
  failed = Math.max(failed, 1);
}
// Suites that need .venv, .tools/grpcurl or Chromium skip themselves outside CI when those are missing (.ci/run installs them).
if (skipped > 0) console.log(`${skipped} skipped (filtered out, or their suite needs a .venv, .tools/grpcurl or Chromium that is missing: .ci/run installs them)`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(result.status === 0 && failed === 0 ? 0 : 1);
