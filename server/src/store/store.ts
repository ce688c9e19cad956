import type { PagesReturned, WalState, WriteTurn } from "./sqlite/checkpointer.js";
import type { Db, Dialect } from "./sql.js";
import type { Transactions } from "./transactions.js";

/**
 * An open store, SQLite's ({@link import("./sqlite/open.js").openStore}) or PostgreSQL's
 * ({@link import("./postgres/open.js").openPostgresStore}): the connection the store's modules
 * read and write through, and how the committer's transactions run on it.
 */
export interface Store {
  readonly dialect: Dialect;
  db: Db;
  transactions: Transactions;
  /** Told after every commit (SQLite checkpoints its WAL in the background). */
  committed(): void;
  /**
   * The round trips the owner's thread waited for, by connection, since the store opened:
   * PostgreSQL's synchronous calls (SQLite's are not round trips: none).
   */
  waits?(): { connection: string; count: number; ms: number }[];
  /** PostgreSQL's reads that did not block the owner's thread (Db.readAsync), and the round trips they took. */
  asyncReads?(): { reads: number; roundTrips: number };
  /** SQLite's write-ahead log as its checkpoints saw it (PostgreSQL: none). */
  wal?(): WalState;
  /** SQLite's: returns up to `pages` of the data file's free pages to the disk off the owner's thread, inside `turn` (Checkpointer.returnPages). */
  returnPages?(pages: number, turn: WriteTurn): Promise<PagesReturned>;
  /** Closes the connections (and, on SQLite, the lock and checkpoint worker). */
  close(): Promise<void>;
}

/** Told before a store that already has a schema is upgraded: from and to which version, by which files. */
export type UpgradeListener = (upgrade: { from: number; to: number; files: string[] }) => void;
