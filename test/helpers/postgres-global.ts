// vitest globalSetup: with CHRONOLOG_TEST_STORE=postgres, starts one PostgreSQL server for the
// run (test/helpers/postgres-server.ts), tells the tests its URL in CHRONOLOG_TEST_PG_URL, and
// migrates the template their databases are cloned from (testDatabase in test/helpers/owner.ts).
// vitest runs it for each project: the first one starts the server, the others find its URL.
import { createTemplate, startPostgresServer, type PostgresServer } from "./postgres-server.js";

let server: PostgresServer | undefined;

export async function setup(): Promise<void> {
  if (process.env.CHRONOLOG_TEST_STORE !== "postgres") return;
  if (!process.env.CHRONOLOG_TEST_PG_URL) {
    server = await startPostgresServer();
    process.env.CHRONOLOG_TEST_PG_URL = server.url;
  }
  createTemplate(process.env.CHRONOLOG_TEST_PG_URL);
}

export function teardown(): void {
  server?.stop();
}
