import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Tests start real owner processes and bind ports: one file at a time keeps
    // timings honest on a 2-core machine.
    fileParallelism: false,
    // CHRONOLOG_TEST_STORE=postgres: owners run on a PostgreSQL server started for the run.
    globalSetup: ["test/helpers/postgres-global.ts"],
  },
});
