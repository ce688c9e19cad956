import Database from "better-sqlite3";
import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fail, type ChronologError } from "../errors.js";
import { Checkpointer } from "./checkpointer.js";
import { OwnerLock } from "./owner-lock.js";
import { noSync, WalSync, type Durability } from "./wal-sync.js";

/** A better-sqlite3 connection. */
export type Db = Database.Database;

/** How hard a commit waits for the disk (E8): FULL fsyncs the WAL before acknowledging (off the event loop, {@link WalSync}). */
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
  /** How often the watchdog checks `owner.lock`, ms (default 1,000). */
  lockCheckIntervalMs?: number;
}

/** An open data folder: the database and the lock that keeps other owners out (O5). */
export interface Store {
  db: Db;
  dataDir: string;
  /** What the committer awaits before answering callers (E8). */
  durability: Durability;
  /** Checkpoints the WAL in a worker thread; tell it about commits. */
  checkpointer: Checkpointer;
  /** Closes the database, the checkpoint worker and the lock. */
  close(): Promise<void>;
}

const migrationsDir = new URL("./migrations/", import.meta.url);

/**
 * Opens the data folder: takes the owner lock (O5), opens SQLite in WAL mode
 * with `synchronous=NORMAL` (FULL's fsync is done by {@link WalSync}, off the
 * event loop, unless the operator chose NORMAL), checks the pragmas took effect (STYLE 15)
 * and applies pending numbered migrations.
 * Throws FAILED_PRECONDITION when another owner holds the folder.
 */
export function openStore(options: StoreOptions): Store {
  mkdirSync(options.dataDir, { recursive: true });
  const lock = OwnerLock.take({
    dataDir: options.dataDir,
    onLost: options.onLockLost ?? ((error) => console.error(error.message)),
    onRetaken: options.onLockRetaken ?? ((message) => console.error(message)),
    checkIntervalMs: options.lockCheckIntervalMs,
  });
  try {
    const dbPath = join(options.dataDir, "chronolog.db");
    const db = new Database(dbPath);
    try {
      setPragmas(db);
      migrate(db);
    } catch (e) {
      db.close();
      throw e;
    }
    const durability = (options.synchronous ?? "FULL") === "FULL" ? new WalSync(dbPath) : noSync;
    const checkpointer = new Checkpointer(db, dbPath, options.onCheckpointError ?? ((error) => console.error(error)));
    return {
      db,
      dataDir: options.dataDir,
      durability,
      checkpointer,
      async close() {
        await checkpointer.close();
        durability.close();
        db.close();
        lock.close();
      },
    };
  } catch (e) {
    lock.close();
    throw e;
  }
}

function setPragmas(db: Db): void {
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

/** The numbered migration files, `NNNN_name.sql`, in order. */
function migrationFiles(): string[] {
  return readdirSync(migrationsDir).filter((f) => /^\d{4}_.+\.sql$/.test(f)).sort();
}

/**
 * Names of the tables, indexes and triggers the owner's migrations create (and the
 * `_v6`/`_v7` rebuilds rename into place): the schema maintenance SQL may not change (O4).
 */
export function ownerSchemaNames(): Set<string> {
  const names = new Set<string>();
  for (const file of migrationFiles()) {
    const sql = readFileSync(new URL(file, migrationsDir), "utf8");
    for (const m of sql.matchAll(/CREATE\s+(?:UNIQUE\s+)?(?:TABLE|INDEX|TRIGGER)\s+(?:IF\s+NOT\s+EXISTS\s+)?([A-Za-z_][A-Za-z0-9_]*)/gi)) names.add(m[1].replace(/_v\d+$/, ""));
    for (const m of sql.matchAll(/RENAME\s+TO\s+([A-Za-z_][A-Za-z0-9_]*)/gi)) names.add(m[1]);
  }
  return names;
}

/** Applies `migrations/NNNN_*.sql` above `PRAGMA user_version`, each in its own transaction. */
function migrate(db: Db): void {
  const current = db.pragma("user_version", { simple: true }) as number;
  const files = migrationFiles();
  const known = Math.max(0, ...files.map((f) => Number(f.slice(0, 4))));
  if (current > known) {
    fail("failed_precondition", `the data folder's schema is version ${current}, newer than this owner's ${known}: a newer Chronolog wrote it (its indexes and queries may not match this one's); run that version or a newer one`);
  }
  for (const file of files) {
    const version = Number(file.slice(0, 4));
    if (version <= current) continue;
    const sql = readFileSync(new URL(file, migrationsDir), "utf8");
    db.transaction(() => {
      db.exec(sql);
      db.pragma(`user_version = ${version}`);
    })();
  }
}
