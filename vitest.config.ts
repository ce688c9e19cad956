// Two tiers (docs/testing.md):
// - fast: every test that can run beside others, files in parallel: units, and owners in this
//   process on a free port and a data folder of their own. `npm run test:fast`.
// - serial: tests tagged `serial`, one file at a time after the fast tier, so nothing else loads
//   the machine meanwhile: they start processes (owners, CLI commands, executors, browsers, a
//   PostgreSQL server), bind a fixed port, or assert on wall-clock durations that a busy machine
//   stretches. A file is tagged whole in its opening comment (`// @module-tag serial`), or a
//   describe or test is (`{ tags: ["serial"] }`): then the file runs in both tiers, each running
//   its own tests. A file that imports node:child_process must carry the tag somewhere.
// `npm test` (test/run.mjs) runs both, then the suites tagged `postgres` again on PostgreSQL.
import { readdirSync, readFileSync } from "node:fs";
import { defaultServerConditions } from "vite";
import { defineConfig } from "vitest/config";

const testFiles = readdirSync(new URL("test/", import.meta.url))
  .filter((name) => name.endsWith(".test.ts"))
  .map((name) => ({ path: `test/${name}`, source: readFileSync(new URL(`test/${name}`, import.meta.url), "utf8") }));
/** Tagged serial whole (vitest's module tag), or in part (a describe's or a test's tags). */
const wholly = (source: string) => /(\/\/|\*)\s*@module-tag\s+serial\b/.test(source);
const inPart = (source: string) => /tags:\s*\[[^\]]*"serial"/.test(source);
const untagged = testFiles.filter((f) => /from "node:child_process"/.test(f.source) && !wholly(f.source) && !inPart(f.source));
if (untagged.length > 0)
  throw new Error(
    `${untagged.map((f) => f.path).join(", ")}: these start processes (node:child_process) but nothing in them is tagged serial (see vitest.config.ts)`,
  );

export default defineConfig({
  // "@chronolog/sdk/gen/..." from the SDK's TypeScript sources (its package's chronolog-source condition).
  // Without "module": @opentelemetry/api's build for it imports without file extensions, which Node refuses.
  ssr: { resolve: { conditions: ["chronolog-source", ...defaultServerConditions.filter((c) => c !== "module")] } },
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    tags: [
      { name: "serial", description: "starts processes, binds a fixed port or asserts on wall-clock durations: runs alone, after the fast tier" },
      { name: "postgres", description: "its owners follow CHRONOLOG_TEST_STORE: the full run runs it again on PostgreSQL (test/helpers/store-tags.ts)" },
      { name: "sqlite-only", description: "opens stores, on SQLite only (test/helpers/store-tags.ts)" },
    ],
    // dist/main.js built for the processes tests start; with CHRONOLOG_TEST_STORE=postgres, a PostgreSQL server for the run.
    globalSetup: ["test/helpers/bundle-global.ts", "test/helpers/postgres-global.ts"],
    projects: [
      {
        extends: true,
        test: {
          name: "fast",
          include: testFiles.filter((f) => !wholly(f.source)).map((f) => f.path),
          tagsFilter: ["!serial"],
          // Owners in tests wait on fsyncs, timers and sockets more than on the CPU: more workers than cores.
          maxWorkers: 3,
          provide: { tier: "fast" },
        },
      },
      {
        extends: true,
        test: {
          name: "serial",
          include: testFiles.filter((f) => wholly(f.source) || inPart(f.source)).map((f) => f.path),
          tagsFilter: ["serial"],
          fileParallelism: false,
          sequence: { groupOrder: 1 },
          provide: { tier: "serial" },
        },
      },
    ],
  },
});
