import type { Db } from "../sql.js";
import type { Store, UpgradeListener } from "../store.js";
import { HeadFollower, type HeadFollowerOptions } from "./head-follower.js";
import { Lease, type LeaseOptions } from "./lease.js";
import { migratePostgres } from "./migrate.js";
import type { NativeClient } from "./native-client.js";
import { AsyncReader } from "./async-reader.js";
import { connectNative, endNative, PgDb } from "./pg-db.js";
import { pgTransactions, type FencedError } from "./transactions.js";

/** A PostgreSQL URL (`postgres://` or `postgresql://`). */
export function isPostgresUrl(value: string): boolean {
  return /^postgres(ql)?:\/\//i.test(value);
}

/** `url` without its password, to name the database in messages and logs. */
export function shownUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    if (parsed.searchParams.has("password")) parsed.searchParams.set("password", "***");
    return parsed.toString();
  } catch {
    return "(an unparsable URL)";
  }
}

/**
 * Checks `url` names a PostgreSQL database; throws a clear error for what is not one (an SQLite
 * data folder given where the URL goes, a typo).
 */
export function checkPostgresUrl(url: string): void {
  if (!isPostgresUrl(url)) {
    // Echoed with any password=... masked (libpq's key=value form would carry one).
    const shown = url.replace(/(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)/gi, "$1***");
    throw new Error(
      `--store takes a PostgreSQL URL such as postgres://user:password@host:5432/chronolog, not ${JSON.stringify(shown)} (the embedded SQLite store's folder is given with --data)`,
    );
  }
  if (!URL.canParse(url)) throw new Error(`--store ${JSON.stringify(shownUrl(url))} is not a valid URL`);
}

/** Connects to `url` as `chronolog <instanceId> <role>`; a failure names the database, not its password. */
function connect(url: string, instanceId: string, role: string): NativeClient {
  try {
    return connectNative(url, `chronolog ${instanceId} ${role}`);
  } catch (e) {
    throw new Error(`cannot connect to PostgreSQL at ${shownUrl(url)}: ${(e as Error).message.trim()}`);
  }
}

/** A standby's reads of the store: a read-only connection ({@link PostgresDatabase.openReads}). */
export interface ReadStore {
  db: Db;
  /** The round trips the owner's thread waited for on it (connection `reader`). */
  waits(): { connection: string; count: number; ms: number }[];
  /** Its reads that did not block the owner's thread, and their round trips. */
  asyncReads(): { reads: number; roundTrips: number };
  close(): void;
}

/** A PostgreSQL database an owner connected to and migrated, before it leads. */
export interface PostgresDatabase {
  lease: Lease;
  /**
   * A standby's reads: a connection of its own on which PostgreSQL refuses every write
   * (`default_transaction_read_only`), behind the store's Db; `onLost` is told when a statement
   * finds it gone.
   */
  openReads(onLost: (error: Error) => void): ReadStore;
  /** Follows the leader's commits on a connection of its own (head-follower.ts); call `start`. */
  followHead(options: Omit<HeadFollowerOptions, "connect">): HeadFollower;
  /**
   * Opens the store for the leader of `lease.term`; `onFenced` is told when a write finds another
   * owner leads, `onLost` when a statement finds its connection gone.
   */
  open(onFenced: (error: FencedError) => void, onLost: (error: Error) => void): Store;
  /** Checks the store's connection, once opened (a broken one is told to `open`'s `onLost`). */
  probe(): void;
  /** Closes what is open (the lease's connection, and the store's when opened). */
  close(): void;
}

/**
 * Connects to the database at `url`, applies its pending migrations, runs `check` on it (reads
 * only: e.g. that the owner's plugin folder registers there) and prepares the lease.
 */
export function connectPostgres(url: string, lease: LeaseOptions, onUpgrade?: UpgradeListener, check?: (db: Db) => void): PostgresDatabase {
  checkPostgresUrl(url);
  const leaseClient = connect(url, lease.instanceId, "lease");
  try {
    migratePostgres(leaseClient, onUpgrade);
    check?.(new PgDb(leaseClient, leaseClient));
  } catch (e) {
    endNative(leaseClient);
    throw e;
  }
  let first: NativeClient | undefined = leaseClient;
  const held = new Lease(() => {
    const client = first ?? connect(url, lease.instanceId, "lease");
    first = undefined;
    return client;
  }, lease);
  let db: PgDb | undefined;
  return {
    lease: held,
    openReads(onLost) {
      const readOnly = (role: string) => {
        const client = connect(url, lease.instanceId, role);
        try {
          client.querySync("SET default_transaction_read_only = on");
        } catch (e) {
          endNative(client);
          throw e;
        }
        return client;
      };
      const client = readOnly("reads");
      let asyncReader: AsyncReader;
      try {
        asyncReader = new AsyncReader(readOnly("async"));
      } catch (e) {
        endNative(client);
        throw e;
      }
      asyncReader.onLost = onLost;
      // One connection in both of PgDb's places: nothing runs a batch on it (no committer), so every statement reads.
      const reads = new PgDb(client, client, asyncReader);
      reads.onLost = onLost;
      return {
        db: reads,
        waits: () => [{ connection: "reader", ...reads.waits.writer }],
        asyncReads: () => asyncReader.counts,
        close: () => reads.close(),
      };
    },
    followHead(options) {
      return new HeadFollower({ ...options, connect: () => connect(url, lease.instanceId, "follower") });
    },
    open(onFenced, onLost) {
      const writer = connect(url, lease.instanceId, "writer");
      const reader = connect(url, lease.instanceId, "reader");
      const asyncReader = new AsyncReader(connect(url, lease.instanceId, "async"));
      writer.querySync("SET synchronous_commit = on; SET idle_in_transaction_session_timeout = 0");
      db = new PgDb(writer, reader, asyncReader);
      asyncReader.onLost = onLost;
      db.onLost = onLost;
      const opened = db;
      return {
        dialect: "postgres",
        db: opened,
        transactions: pgTransactions(opened, () => held.term, onFenced),
        committed: () => undefined,
        waits: () => Object.entries(opened.waits).map(([connection, { count, ms }]) => ({ connection, count, ms })),
        asyncReads: () => asyncReader.counts,
        close: async () => opened.close(),
      };
    },
    probe() {
      try {
        db?.probe();
      } catch {
        // told to onLost
      }
    },
    close() {
      db?.close();
      held.close();
    },
  };
}
