// A PostgreSQL server for tests: initdb on a temporary data folder and pg_ctl start on a free
// loopback port, as an unprivileged user when this runs as root (PostgreSQL refuses root).
import { execFileSync } from "node:child_process";
import { chmodSync, chownSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { migratePostgres } from "../../server/src/store/postgres/migrate.js";
import { connectNative, endNative } from "../../server/src/store/postgres/pg-db.js";

/** A running test server: its admin URL (database `postgres`), and how to stop it. */
export interface PostgresServer {
  url: string;
  stop(): void;
}

function binDir(): string {
  try {
    return execFileSync("pg_config", ["--bindir"], { encoding: "utf8" }).trim();
  } catch {
    throw new Error("PostgreSQL is not installed (pg_config not found): .ci/run installs Debian's postgresql");
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
    server.on("error", reject);
  });
}

/**
 * Starts a PostgreSQL server on a new data folder; `stop()` stops it and removes the folder.
 * `durable`: fsync on, as in production (benchmarks); by default off, for the tests' speed (a
 * test kills owners, never the server).
 */
export async function startPostgresServer(options: { durable?: boolean } = {}): Promise<PostgresServer> {
  const bin = binDir();
  const asRoot = userInfo().uid === 0;
  // As root, under /tmp: the test run's own temporary folder is root's alone, and `nobody` must reach its folder.
  const root = mkdtempSync(join(asRoot ? "/tmp" : tmpdir(), "chronolog-pg-"));
  // As root: run the server as `nobody`, owner of the folder (PostgreSQL refuses to run as root).
  const run = (cmd: string, args: string[]) =>
    execFileSync(asRoot ? "runuser" : join(bin, cmd), asRoot ? ["-u", "nobody", "--", join(bin, cmd), ...args] : args, { stdio: "pipe", cwd: root });
  if (asRoot) {
    chmodSync(root, 0o755);
    chownSync(root, 65534, 65534);
  }
  const data = join(root, "data");
  // Logins over TCP need the password (scram-sha-256), as on a real server: a wrong one is refused.
  writeFileSync(join(root, "password"), "chronolog\n");
  run("initdb", [
    "-D",
    data,
    "-U",
    "chronolog",
    "--pwfile",
    join(root, "password"),
    "--auth-host=scram-sha-256",
    "--auth-local=trust",
    "-E",
    "UTF8",
    "--no-sync",
  ]);
  const port = await freePort();
  const settings = [
    `-p ${port}`,
    `-k ${root}`,
    "-c listen_addresses=127.0.0.1",
    "-c max_connections=300",
    ...(options.durable ? [] : ["-c fsync=off", "-c full_page_writes=off"]),
  ].join(" ");
  run("pg_ctl", ["-D", data, "-o", settings, "-l", join(root, "server.log"), "-w", "start"]);
  return {
    url: `postgres://chronolog:chronolog@127.0.0.1:${port}/postgres`,
    stop() {
      try {
        run("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]);
      } finally {
        rmSync(root, { recursive: true, force: true });
      }
    },
  };
}

/** The database that tests' databases are cloned from (see {@link createTemplate}). */
export const templateDatabase = "chronolog_template";

/** `url` (a server's admin URL) naming database `name` instead. */
export function databaseUrl(url: string, name: string): string {
  const database = new URL(url);
  database.pathname = `/${name}`;
  return database.toString();
}

/**
 * Creates {@link templateDatabase} on the server at `url` (its admin URL), migrated as an owner
 * migrates a new database, unless it exists: a test database is then a clone of it
 * (`CREATE DATABASE ... TEMPLATE`, milliseconds) rather than an empty one each owner migrates.
 * Connections to it are refused from then on (PostgreSQL clones a database nobody is connected to).
 */
export function createTemplate(url: string): void {
  const admin = connectNative(url, "chronolog tests");
  try {
    if (admin.querySync("SELECT 1 FROM pg_database WHERE datname = $1", [templateDatabase]).length > 0) return;
    admin.querySync(`CREATE DATABASE ${templateDatabase}`);
    const template = connectNative(databaseUrl(url, templateDatabase), "chronolog tests");
    try {
      migratePostgres(template);
    } finally {
      endNative(template);
    }
    admin.querySync(`ALTER DATABASE ${templateDatabase} WITH IS_TEMPLATE true ALLOW_CONNECTIONS false`);
  } finally {
    endNative(admin);
  }
}
