import Database from "better-sqlite3";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { pino } from "pino";
import { createHash } from "node:crypto";
import { startOwner, type Owner, type OwnerOptions } from "../../server/src/owner.js";
import { connectNative, endNative, numberParameters } from "../../server/src/store/postgres/pg-db.js";
import { chronologArgs, startingProcess } from "./chronolog.js";
import { databaseUrl, templateDatabase } from "./postgres-server.js";
import { storeOpened } from "./store-tags.js";

/** A fresh temporary data folder. */
export function tempDir(prefix = "chronolog-test-"): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** Owners in tests run on PostgreSQL (CHRONOLOG_TEST_STORE=postgres, test/helpers/postgres-global.ts), else on SQLite. */
export const onPostgres = process.env.CHRONOLOG_TEST_STORE === "postgres";

/**
 * The PostgreSQL database standing for data folder `dataDir` on the test server, so an owner
 * restarted on the same folder finds the same database. Made when missing as a clone of the
 * run's migrated template (test/helpers/postgres-global.ts): its owner finds the schema current.
 */
export function testDatabase(dataDir: string): string {
  storeOpened();
  const admin = process.env.CHRONOLOG_TEST_PG_URL;
  if (!admin) throw new Error("CHRONOLOG_TEST_STORE=postgres without CHRONOLOG_TEST_PG_URL: run through vitest (its globalSetup starts the server)");
  const name = `t_${createHash("sha256").update(dataDir).digest("hex").slice(0, 20)}`;
  const client = connectNative(admin, "chronolog tests");
  try {
    if (client.querySync("SELECT 1 FROM pg_database WHERE datname = $1", [name]).length === 0)
      client.querySync(`CREATE DATABASE ${name} TEMPLATE ${templateDatabase}`);
  } finally {
    endNative(client);
  }
  return databaseUrl(admin, name);
}

/**
 * The rows of `sql` (`?` parameters) read from the store of data folder `dataDir` on a connection
 * of its own: its SQLite file, or its PostgreSQL test database (integers read as numbers, and
 * booleans as 1 and 0, on both).
 */
export function queryStore(dataDir: string, sql: string, params: Parameter[] = []): Record<string, unknown>[] {
  storeOpened();
  if (onPostgres) {
    const client = connectNative(databaseOf(dataDir), "chronolog tests");
    try {
      return client.querySync(
        numberParameters(sql).text,
        params.map((p) => (p === null ? null : String(p))),
      );
    } finally {
      endNative(client);
    }
  }
  const db = new Database(join(dataDir, "chronolog.db"), { readonly: true });
  try {
    return db.prepare(sql).all(...params) as Record<string, unknown>[];
  } finally {
    db.close();
  }
}

type Parameter = string | number | null;

/**
 * {@link queryStore} on the store of an owner running in this process, once the units it queued
 * before (a claim a clock's advance rang, say) had their turn to commit, answered once the commits
 * it read are durable and their callers answered (`owner.settled()`): another connection sees a
 * commit before its sync, while the owner's log, its clock and its listeners follow it only after.
 */
export async function ownerRows(
  h: { owner: { dataDir: string; settled(): Promise<void> } },
  sql: string,
  params: Parameter[] = [],
): Promise<Record<string, unknown>[]> {
  await new Promise((resolve) => setImmediate(resolve));
  const rows = queryStore(h.owner.dataDir, sql, params);
  await h.owner.settled();
  return rows;
}

const databases = new Map<string, string>();
/** {@link testDatabase}, remembered per folder. */
export function databaseOf(dataDir: string): string {
  let url = databases.get(dataDir);
  if (url === undefined) databases.set(dataDir, (url = testDatabase(dataDir)));
  return url;
}

/**
 * Starts an owner in this process on a free port (silent logs). An owner given a TimerHost (a
 * ManualClock) keeps spent timers and occurrences, and finished action calls, forever unless
 * `timerRetentionMs` (`callRetentionMs`) is passed
 * (`undefined` too: then the config or the 7-day default decides): tests on a manual clock assert
 * the one timer the owner armed, and the retention's hourly sweep would be a second. On a
 * manual clock time also claims at the due moment itself (`timerLookaheadMs` 0) unless
 * `timerLookaheadMs` is passed: those tests assert exact instants of the rules (the lookahead
 * has tests of its own).
 */
export async function startTestOwner(options: Partial<OwnerOptions> = {}): Promise<Owner & { url: string; dataDir: string }> {
  storeOpened();
  const retention = options.timers && !("timerRetentionMs" in options) ? { timerRetentionMs: 0 } : {};
  const callRetention = options.timers && !("callRetentionMs" in options) ? { callRetentionMs: 0 } : {};
  const lookahead = options.timers && !("timerLookaheadMs" in options) ? { timerLookaheadMs: 0 } : {};
  const dataDir = options.dataDir ?? tempDir();
  const store = onPostgres && !("store" in options) ? { store: testDatabase(dataDir) } : {};
  const owner = await startOwner({
    dataDir,
    ...store,
    host: "127.0.0.1",
    port: 0,
    logger: pino({ level: "silent" }),
    ...retention,
    ...callRetention,
    ...lookahead,
    ...options,
  });
  return Object.assign(owner, { url: `http://127.0.0.1:${owner.port}`, dataDir });
}

/** An owner running as a child process (for kill -9 tests). */
export interface OwnerProcess {
  child: ChildProcess;
  port: number;
  url: string;
  /** Everything the owner logged (JSON lines). */
  logs: string[];
  /** Resolves with the exit code or signal when the process ends. */
  exited: Promise<number | string>;
}

const repo = new URL("../../", import.meta.url).pathname;

/**
 * Runs `chronolog serve` (the bundle, see helpers/chronolog.ts) as a child process on `dataDir`
 * (port 0: a free one) and resolves once it logged "owner serving" (with the port). Rejects with
 * the logs if it exits first. `nodeArgs` go to node itself (e.g. a preload); `env` is added to the
 * test's environment.
 */
export function spawnOwner(
  dataDir: string,
  extraArgs: string[] = [],
  port = 0,
  nodeArgs: string[] = [],
  env: Record<string, string> = {},
): Promise<OwnerProcess> {
  startingProcess("an owner process");
  storeOpened();
  const child = spawn(
    process.execPath,
    [
      ...nodeArgs,
      ...chronologArgs,
      "serve",
      ...(extraArgs.includes("--store") ? [] : onPostgres ? ["--store", testDatabase(dataDir)] : ["--data", dataDir]),
      "--port",
      String(port),
      ...extraArgs,
    ],
    {
      cwd: repo,
      stdio: ["ignore", "ignore", "pipe"],
      env: { ...process.env, ...env },
    },
  );
  const logs: string[] = [];
  const exited = new Promise<number | string>((resolve) => child.once("exit", (code, signal) => resolve(code ?? signal ?? -1)));
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stderr! }).on("line", (line) => {
      logs.push(line);
      try {
        const entry = JSON.parse(line);
        if (entry.msg?.startsWith("owner serving")) resolve({ child, port: entry.port, url: `http://127.0.0.1:${entry.port}`, logs, exited });
      } catch {
        /* not JSON: keep it in logs */
      }
    });
    exited.then((code) => reject(new Error(`owner exited (${code}) before serving:\n${logs.join("\n")}`)));
  });
}
