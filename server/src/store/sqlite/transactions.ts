import type { Database } from "better-sqlite3";
import type { Transactions } from "../transactions.js";
import type { Durability } from "./wal-sync.js";

/**
 * SQLite's: every slice is a transaction of its own (`BEGIN IMMEDIATE` ... `COMMIT`, the WAL
 * written but not synced) and {@link Durability.sync} fsyncs the WAL once for them all. The
 * statements are prepared once: `db.exec` parses its SQL every time (a third of a small commit's cost).
 */
export function sqliteTransactions(db: Database, durability: Durability): Transactions {
  const begin = db.prepare("BEGIN IMMEDIATE");
  const commit = db.prepare("COMMIT");
  const rollback = db.prepare("ROLLBACK");
  const savepoint = db.prepare("SAVEPOINT unit");
  const release = db.prepare("RELEASE unit");
  const rollbackTo = db.prepare("ROLLBACK TO unit");
  return {
    begin: () => void begin.run(),
    // One connection: the statements made between a unit's steps run inside its transaction.
    pause: () => undefined,
    resume: () => undefined,
    commitSlice: () => void commit.run(),
    rollback: () => void (db.inTransaction && rollback.run()),
    savepoint: () => void savepoint.run(),
    release: () => void release.run(),
    rollbackTo: () => {
      rollbackTo.run();
      release.run();
    },
    sync: () => durability.sync(),
  };
}
