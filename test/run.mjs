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

// The same tests again with every owner on PostgreSQL (a server started for the run): the
// suites of the log, delivery, actions, collections, time, the transport and the clients. The
// others test what only SQLite has (the data folder, its lock, WAL and maintenance SQL), do not
// touch the store (the bundle, the console, the packages, the benchmark harness), start their own
// PostgreSQL owners (leadership, following the leader, copy-store) or measure the timing of
// stream releases, which a busy machine moves.
const onBothStores = [
  "test/log.test.ts",
  "test/processors.test.ts",
  "test/crash-delivery.test.ts",
  "test/durability.test.ts",
  "test/collections.test.ts",
  "test/document-spaces.test.ts",
  "test/actions.test.ts",
  "test/time.test.ts",
  "test/time-under-cause.test.ts",
  "test/schedules.test.ts",
  "test/schedule-policies.test.ts",
  "test/retention.test.ts",
  "test/delay-batch.test.ts",
  "test/publish.test.ts",
  "test/executor-sdk.test.ts",
  "test/cli-client.test.ts",
  "test/cli-documents.test.ts",
  "test/bad-input.test.ts",
  "test/limits.test.ts",
  "test/principals.test.ts",
  "test/metrics.test.ts",
  "test/admin.test.ts",
  "test/store.test.ts",
  "test/postgres-store.test.ts",
  "test/store-conformance.test.ts",
  "test/store-conformance-statements.test.ts",
  "test/batch-bytes.test.ts",
  "test/call-event-ids.test.ts",
  "test/cli-admin.test.ts",
  "test/client-errors.test.ts",
  "test/clients.test.ts",
  "test/cron.test.ts",
  "test/delivery-timeouts.test.ts",
  "test/example-bookings.test.ts",
  "test/filters.test.ts",
  "test/grpc-unary.test.ts",
  "test/grpcurl.test.ts",
  "test/hardening.test.ts",
  "test/moments.test.ts",
  "test/pulses.test.ts",
  "test/python-executor.test.ts",
  "test/sdk-client-inputs.test.ts",
  "test/sdk-holds.test.ts",
  "test/sdk-watch-end.test.ts",
  "test/shutdown-and-pages.test.ts",
  "test/transport.test.ts",
  "test/watch-backpressure.test.ts",
];

let passed = 0;
let failed = 0;
let skipped = 0;
/** Runs vitest with `args` and `env`, and adds its counts. */
function run(args, env = {}) {
  const report = ".vitest-report.json";
  rmSync(report, { force: true });
  const runDir = mkdtempSync(join(tmpdir(), "chronolog-tests-"));
  const result = spawnSync(
    process.execPath,
    ["node_modules/vitest/vitest.mjs", "run", "--reporter=default", "--reporter=json", `--outputFile.json=${report}`, ...args],
    { stdio: "inherit", env: { ...process.env, ...env, TMPDIR: runDir } },
  );
  rmSync(runDir, { recursive: true, force: true });
  try {
    const json = JSON.parse(readFileSync(report, "utf8"));
    passed += json.numPassedTests;
    failed += json.numFailedTests + (json.numRuntimeErrorTests ?? 0);
    skipped += json.numPendingTests ?? 0;
    if (json.success === false && json.numFailedTests + (json.numRuntimeErrorTests ?? 0) === 0) failed += 1; // a suite that failed to load counts
  } catch {
    failed += 1;
  }
  return result.status === 0;
}

const extra = process.argv.slice(2);
let ok = run(extra);
// With arguments (a file, a filter) only what they name runs, on SQLite; CHRONOLOG_TEST_STORE=postgres
// runs them on PostgreSQL instead.
if (extra.length === 0) {
  console.log(`\nthe same suites on PostgreSQL: ${onBothStores.join(" ")}`);
  ok = run(onBothStores, { CHRONOLOG_TEST_STORE: "postgres" }) && ok;
}
// Suites that need .venv, .tools/grpcurl or Chromium skip themselves outside CI when those are missing (.ci/run installs them).
if (skipped > 0) console.log(`${skipped} skipped (filtered out, or their suite needs a .venv, .tools/grpcurl or Chromium that is missing: .ci/run installs them)`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(ok && failed === 0 ? 0 : 1);
