// Runs the tests with vitest and ends with one plain line `N passed, N failed` (read by CI); exits
// non-zero on any failure. docs/testing.md tells how the tiers work.
//
// - `npm test`: the full run. Both tiers of vitest.config.ts (fast: files in parallel; then
//   serial: one file at a time), then the suites tagged `postgres` again with every owner on a
//   PostgreSQL server started for the run (CHRONOLOG_TEST_STORE=postgres). Then the slowest files.
// - With arguments, only what they select, once (on PostgreSQL with CHRONOLOG_TEST_STORE=postgres):
//   `npm test -- test/log.test.ts`, `npm run test:fast` (= `--project fast`).
//
// Tests make their data folders under os.tmpdir(): each vitest run gets a TMPDIR of its own (for
// vitest and every process a test starts), removed at its end, so runs leave nothing in /tmp.
// The global setups build dist/main.js when stale and start the PostgreSQL server (vitest.config.ts).
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";

const repo = new URL("../", import.meta.url).pathname;
let passed = 0;
let failed = 0;
/** Tests that ran in no tier (their filter, a skipIf, a missing tool), keyed by file and name. */
const skipped = new Set();
/** Seconds per file and pass, for the slowest files. */
const durations = [];

/** Runs vitest with `args` and `env`, adds its counts and timings; returns its JSON report (or null) and whether it passed. */
function run(args, env = {}, label = "") {
  const runDir = mkdtempSync(join(tmpdir(), "chronolog-tests-"));
  const report = join(runDir, "vitest-report.json");
  const result = spawnSync(
    process.execPath,
    ["node_modules/vitest/vitest.mjs", "run", "--reporter=default", "--reporter=json", `--outputFile.json=${report}`, ...args],
    { cwd: repo, stdio: "inherit", env: { ...process.env, ...env, TMPDIR: runDir } },
  );
  let json = null;
  try {
    json = JSON.parse(readFileSync(report, "utf8"));
  } catch {
    failed += 1; // no report: vitest itself failed (its config, a global setup)
  }
  rmSync(runDir, { recursive: true, force: true });
  if (json) {
    passed += json.numPassedTests;
    failed += json.numFailedTests + (json.numRuntimeErrorTests ?? 0);
    if (json.success === false && json.numFailedTests + (json.numRuntimeErrorTests ?? 0) === 0) failed += 1; // a suite that failed to load counts
    // A file in both tiers appears twice, each running its own tests and skipping the other's.
    const ran = new Set();
    const seconds = new Map();
    for (const file of json.testResults) {
      const name = relative(repo, file.name);
      seconds.set(name, (seconds.get(name) ?? 0) + (file.endTime - file.startTime) / 1000);
      for (const test of file.assertionResults) {
        const key = `${label}${name} > ${test.fullName}`;
        if (test.status === "passed" || test.status === "failed") ran.add(key);
        else skipped.add(key);
      }
    }
    for (const key of ran) skipped.delete(key);
    for (const [name, s] of seconds) durations.push({ name: label ? `${name} (${label})` : name, seconds: s });
  }
  return { json, ok: result.status === 0 };
}

/** The test files whose opening comment tags them `tag` (vitest's `@module-tag`). */
function taggedFiles(tag) {
  const pattern = new RegExp(`(\\/\\/|\\*)\\s*@module-tag\\s+${tag}\\b`);
  return readdirSync(join(repo, "test"))
    .filter((name) => name.endsWith(".test.ts") && pattern.test(readFileSync(join(repo, "test", name), "utf8")))
    .map((name) => `test/${name}`);
}

const extra = process.argv.slice(2);
let { ok } = run(extra);
if (extra.length === 0) {
  const onPostgres = taggedFiles("postgres");
  console.log(`\nthe suites tagged postgres, again with every owner on PostgreSQL: ${onPostgres.join(" ")}`);
  // Every helper that opens a store names its suite here in this pass (test/helpers/store-tags.ts).
  const seenDir = mkdtempSync(join(tmpdir(), "chronolog-pg-suites-"));
  const seenFile = join(seenDir, "suites");
  const second = run(onPostgres, { CHRONOLOG_TEST_STORE: "postgres", CHRONOLOG_TEST_PG_SUITES: seenFile }, "PostgreSQL");
  ok = second.ok && ok;
  const seen = new Set(
    existsSync(seenFile)
      ? readFileSync(seenFile, "utf8")
          .split("\n")
          .filter(Boolean)
          .map((f) => relative(repo, f))
      : [],
  );
  rmSync(seenDir, { recursive: true, force: true });
  // A suite tagged postgres whose tests ran there but never opened a PostgreSQL database tested nothing new.
  const ranThere = new Set(
    (second.json?.testResults ?? [])
      .filter((f) => f.assertionResults.some((t) => t.status === "passed" || t.status === "failed"))
      .map((f) => relative(repo, f.name)),
  );
  for (const file of onPostgres.filter((f) => ranThere.has(f) && !seen.has(f))) {
    console.log(`${file} is tagged postgres but opened no PostgreSQL database: tag it sqlite-only (test/helpers/store-tags.ts)`);
    failed += 1;
  }
}
if (durations.length > 0) {
  console.log("\nslowest files (seconds):");
  for (const { name, seconds } of durations.sort((a, b) => b.seconds - a.seconds).slice(0, 10)) console.log(`${seconds.toFixed(1).padStart(7)}  ${name}`);
}
// Suites that need .venv, .tools/grpcurl or Chromium skip themselves outside CI when those are missing (.ci/run installs them).
if (skipped.size > 0)
  console.log(`${skipped.size} skipped (filtered out, or their suite needs a .venv, .tools/grpcurl or Chromium that is missing: .ci/run installs them)`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(ok && failed === 0 ? 0 : 1);
