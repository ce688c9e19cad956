import type { SyncMode } from "../store/sqlite/open.js";
import { loadConfig } from "../config.js";
import { createLogger } from "../logger.js";
import { startOwner } from "../owner.js";
import { retentionMsOfDays } from "../store/sweep.js";

/** Options of `chronolog serve`. */
export interface ServeFlags {
  data: string;
  /** A PostgreSQL URL, instead of `data`. */
  store?: string;
  advertiseUrl?: string;
  leaseMs?: number;
  host: string;
  port: number;
  config?: string;
  plugins?: string;
  synchronous: string;
  logLevel: string;
  /** overrides the config's `region`. */
  region?: number;
  /** Overrides the config's `timers.lookahead_ms`, ms. */
  timerLookaheadMs?: number;
  /** Overrides the config's `actions.call_retention_days`, days. */
  callRetentionDays?: number;
}

/** `chronolog serve`: runs an owner until SIGINT or SIGTERM, then shuts down cleanly. */
export async function serveCommand(flags: ServeFlags): Promise<void> {
  const logger = createLogger(flags.logLevel);
  const synchronous = flags.synchronous.toUpperCase();
  if (synchronous !== "FULL" && synchronous !== "NORMAL") throw new Error(`--synchronous must be FULL or NORMAL, got ${flags.synchronous}`);
  // A standby waits inside startOwner: a signal meanwhile ends the wait (and the process).
  const standby = new AbortController();
  const stopStandby = () => standby.abort(new Error("stopped while standby"));
  if (flags.store !== undefined) {
    process.once("SIGINT", stopStandby);
    process.once("SIGTERM", stopStandby);
  }
  // A start whose every wait ended without an answer (nothing left to run) would end the process
  // with status 0 and no word: say so and fail instead.
  const silentEnd = () => {
    logger.fatal("the owner's start ended without serving and without an error; stopping");
    process.exit(1);
  };
  process.once("beforeExit", silentEnd);
  let owner;
  try {
    owner = await startOwner({
      dataDir: flags.data,
      store: flags.store,
      advertiseUrl: flags.advertiseUrl,
      leaseMs: flags.leaseMs,
      signal: standby.signal,
      host: flags.host,
      port: flags.port,
      synchronous: synchronous as SyncMode,
      config: flags.config ? loadConfig(flags.config) : undefined,
      pluginsDir: flags.plugins,
      region: flags.region,
      timerLookaheadMs: flags.timerLookaheadMs,
      callRetentionMs: flags.callRetentionDays === undefined ? undefined : retentionMsOfDays(flags.callRetentionDays, 0),
      logger,
    });
  } catch (e) {
    if (standby.signal.aborted) {
      logger.info("standby stopped");
      process.exit(0);
    }
    throw e;
  }
  process.off("beforeExit", silentEnd);
  process.off("SIGINT", stopStandby);
  process.off("SIGTERM", stopStandby);
  // The first SIGINT or SIGTERM stops the owner, with its grace; later ones while it stops are
  // logged, not obeyed (a second Ctrl-C used to end the process mid-grace, its callers CANCELLED).
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return logger.warn({ signal }, "owner already stopping: waiting for the grace to end (kill -9 to end it now)");
    stopping = true;
    owner.close().then(
      () => process.exit(0),
      (e) => {
        logger.error({ err: e }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
}

/** Connects to the PostgreSQL database at `url` for a command, naming it (without its password) when that fails. */
export async function connectForCommand(url: string, role: string) {
  const { checkPostgresUrl, shownUrl } = await import("../store/postgres/open.js");
  const { connectNative } = await import("../store/postgres/pg-db.js");
  checkPostgresUrl(url);
  try {
    return connectNative(url, `chronolog ${role}`);
  } catch (e) {
    throw new Error(`cannot connect to PostgreSQL at ${shownUrl(url)}: ${(e as Error).message.trim()}`);
  }
}

/** `chronolog copy-store`: copies an SQLite data folder into an empty PostgreSQL database. */
export async function copyStoreCommand(flags: { data: string; store: string }): Promise<void> {
  const { migratePostgres } = await import("../store/postgres/migrate.js");
  const { copySqliteToPostgres } = await import("../store/postgres/copy.js");
  const { openStore } = await import("../store/sqlite/open.js");
  const { existsSync } = await import("node:fs");
  const { join } = await import("node:path");
  if (!existsSync(join(flags.data, "chronolog.db"))) throw new Error(`${flags.data} is not a Chronolog data folder (no chronolog.db in it)`);
  const client = await connectForCommand(flags.store, "copy-store");
  try {
    migratePostgres(client);
    const store = openStore({ dataDir: flags.data });
    try {
      const copied = copySqliteToPostgres(store.db, client);
      for (const [table, rows] of Object.entries(copied)) console.log(`${table}: ${rows} rows`);
    } finally {
      await store.close();
    }
  } finally {
    const { endNative } = await import("../store/postgres/pg-db.js");
    endNative(client);
  }
}

/** `chronolog migrate`: applies the pending migrations of a store (SQLite folder or PostgreSQL) and exits. */
export async function migrateCommand(flags: { data: string; store?: string }): Promise<void> {
  if (flags.store !== undefined) {
    const { shownUrl } = await import("../store/postgres/open.js");
    const { endNative } = await import("../store/postgres/pg-db.js");
    const { migratePostgres } = await import("../store/postgres/migrate.js");
    const client = await connectForCommand(flags.store, "migrate");
    try {
      const { from, to } = migratePostgres(client, ({ from, to }) => console.log(`upgrading the schema from ${from} to ${to}`));
      console.log(`${shownUrl(flags.store)}: ${from === 0 ? `created the schema (version ${to})` : `schema up to date (version ${to})`}`);
    } finally {
      endNative(client);
    }
    return;
  }
  const { openStore } = await import("../store/sqlite/open.js");
  const store = openStore({ dataDir: flags.data, onUpgrade: ({ from, to }) => console.log(`upgrading the schema from ${from} to ${to}`) });
  await store.close();
  console.log(`${flags.data}: schema up to date`);
}
