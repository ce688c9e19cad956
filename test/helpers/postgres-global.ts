// vitest globalSetup: with CHRONOLOG_TEST_STORE=postgres, starts one PostgreSQL server for the
// run (test/helpers/postgres-server.ts) and tells the tests its URL in CHRONOLOG_TEST_PG_URL.
import { startPostgresServer, type PostgresServer } from "./postgres-server.js";

let server: PostgresServer | undefined;

export async function setup(): Promise<void> {
  if (process.env.CHRONOLOG_TEST_STORE !== "postgres" || process.env.CHRONOLOG_TEST_PG_URL) return;
  server = await startPostgresServer();
  process.env.CHRONOLOG_TEST_PG_URL = server.url;
}

export function teardown(): void {
  server?.stop();
}
