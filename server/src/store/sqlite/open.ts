import Database from "better-sqlite3";
import { mkdirSync, rmSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import type { ChronologError } from "../../errors.js";
import type { Store, UpgradeListener } from "../store.js";
import { Checkpointer } from "./checkpointer.js";
import { migrate } from "./migrate.js";
import { OwnerLock } from "./owner-lock.js";
import { sqliteTransactions } from "./transactions.js";
import { noSync, WalSync, type Durability } from "./wal-sync.js";

/** A better-sqlite3 connection (what SQLite-only modules take: pragmas, checkpoints, the lock). */
export type SqliteDb = Database.Database;

/** How hard a commit waits for the disk: FULL fsyncs the WAL before acknowledging (off the event loop, {@link WalSync}). */
export type SyncMode = "FULL" | "NORMAL";

/** Options of {@link openStore}. */
export interface StoreOptions {
  /** Folder holding `chronolog.db` (created if missing). */
  dataDir: string;
  /** Default FULL: an acknowledged write survives power loss. NORMAL: survives a process crash only. */
  synchronous?: SyncMode;
  /** Told when a background WAL checkpoint fails (default: printed to stderr). */
  onCheckpointError?: (error: unknown) => void;
  /**
   * Told when `owner.lock` was deleted or replaced while the store was open and
   * another owner holds it now ({@link OwnerLock}): stop writing at once. The
   * owner logs it as fatal and exits; default: printed to stderr.
   */
  onLockLost?: (error: ChronologError) => void;
  /** Told when `owner.lock` was deleted or replaced and the store took it again (default: printed to stderr). */
  onLockRetaken?: (message: string) => void;
  /** Told before the migrations upgrade a folder that already had a schema (the owner logs it: a table rebuild can take seconds). */
  onUpgrade?: UpgradeListener;
  /** How often the watchdog checks `owner.lock`, ms (default 1,000). */
  lockCheckIntervalMs?: number;
}

/** An open data folder: the database and the lock that keeps other owners out. */
export interface SqliteStore extends Store {
  db: SqliteDb;
  dataDir: string;
  /** What the committer awaits before answering callers. */
  durability: Durability;
  /** Checkpoints the WAL in a worker thread; tell it about commits. */
  checkpointer: Checkpointer;
  /**
   * The topmost folder this open created (the data folder, or a parent it needed), if any: an
   * owner whose start fails after opening the store removes it with {@link removeCreatedFolder},
   * so a failed `serve --data /tmp/x` leaves no folder behind.
   */
  createdDir?: string;
}

/** Removes a folder an open created (`Store.createdDir`), with what the open put in it; nothing for undefined. */
export function removeCreatedFolder(createdDir: string | undefined): void {
  if (createdDir) rmSync(createdDir, { recursive: true, force: true });
}

/**
 * Opens the data folder: takes the owner lock, opens SQLite in WAL mode
 * with `synchronous=NORMAL` (FULL's fsync is done by {@link WalSync}, off the
 * event loop, unless the operator chose NORMAL), checks the pragmas took effect
 * and applies pending numbered migrations.
 * Throws FAILED_PRECONDITION when another owner holds the folder.
 */
export function openStore(options: StoreOptions): SqliteStore {
  const createdDir = makeDataDir(options.dataDir);
  let lock;
  try {
    lock = OwnerLock.take({
      dataDir: options.dataDir,
      onLost: options.onLockLost ?? ((error) => console.error(error.message)),
      onRetaken: options.onLockRetaken ?? ((message) => console.error(message)),
      checkIntervalMs: options.lockCheckIntervalMs,
    });
  } catch (e) {
    removeCreatedFolder(createdDir);
    throw e;
  }
  try {
    const dbPath = join(options.dataDir, "chronolog.db");
    const db = new Database(dbPath);
    try {
      setPragmas(db);
      migrate(db, options.onUpgrade);
      incrementalVacuum(db, dbPath);
    } catch (e) {
      db.close();
      throw e;
    }
    const durability = (options.synchronous ?? "FULL") === "FULL" ? new WalSync(dbPath) : noSync;
    const checkpointer = new Checkpointer(db, dbPath, options.onCheckpointError ?? ((error) => console.error(error)));
    return {
      dialect: "sqlite",
      db,
      transactions: sqliteTransactions(db, durability),
      committed: () => checkpointer.committed(),
      wal: () => checkpointer.state(),
      returnPages: (pages, turn) => checkpointer.returnPages(pages, turn),
      dataDir: options.dataDir,
      durability,
      checkpointer,
      createdDir,
      async close() {
        await checkpointer.close();
        durability.close();
        db.close();
        lock.close();
      },
    };
  } catch (e) {
    lock.close();
    removeCreatedFolder(createdDir);
    throw e;
  }
}

/** Files at most this large switch to incremental vacuum at open (a VACUUM of them takes well under a second). */
const vacuumSwitchMaxBytes = 64 * 1024 * 1024;

/**
 * Makes the file able to return the pages retention frees to the disk (PRAGMA incremental_vacuum,
 * in steps once much of the file is free: log/space-return.ts). A new file is made so ({@link setPragmas}); an older
 * one only through a VACUUM, which rewrites it whole: done here for a small file, and for a
 * larger one left to the operator (docs/retention.md): its freed pages are reused meanwhile.
 */
function incrementalVacuum(db: SqliteDb, dbPath: string): void {
  if (Number(db.pragma("auto_vacuum", { simple: true })) === 2 || statSync(dbPath).size > vacuumSwitchMaxBytes) return;
  db.pragma("auto_vacuum = INCREMENTAL");
  db.exec("VACUUM");
}

function setPragmas(db: SqliteDb): void {
  db.pragma("auto_vacuum = INCREMENTAL"); // a new file only: an older one keeps its mode until a VACUUM (incrementalVacuum)
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.pragma("busy_timeout = 5000");
  db.pragma(`journal_size_limit = ${64 * 1024 * 1024}`); // a restarted WAL is truncated back to 64 MiB
  db.pragma("foreign_keys = ON");
  const mode = db.pragma("journal_mode", { simple: true });
  const sync = db.pragma("synchronous", { simple: true });
  if (mode !== "wal" || sync !== 1) {
    throw new Error(`SQLite pragmas not applied: journal_mode=${mode} synchronous=${sync}, wanted wal and 1 (NORMAL)`);
  }
}

/**
 * Creates folder `dir` (not empty: "" would be the working folder) and its missing parents, one level at a time: Node's
 * `mkdirSync(dir, { recursive: true })` spins forever under a folder that refuses new entries
 * with ENOENT (`/proc/x`). Throws an Error naming the folder when one cannot be made. Returns the
 * topmost folder it created, if any.
 */
function makeDataDir(dir: string): string | undefined {
  if (dir.trim() === "") throw new Error("the data folder is empty (--data): name one");
  const absolute = resolve(dir);
  let found;
  try {
    found = statSync(absolute, { throwIfNoEntry: false });
  } catch (e) {
    throw new Error(`cannot use the data folder ${absolute}: ${(e as Error).message}`); // ENOTDIR (a path through a file), EACCES
  }
  if (found?.isDirectory()) return undefined;
  if (found) throw new Error(`cannot use the data folder ${absolute}: it is not a folder`);
  const createdParent = dirname(absolute) !== absolute ? makeDataDir(dirname(absolute)) : undefined;
  try {
    mkdirSync(absolute);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "EEXIST") return createdParent;
    removeCreatedFolder(createdParent);
    throw new Error(`cannot create the data folder ${absolute}: ${(e as Error).message}`);
  }
  return createdParent ?? absolute;
}
