import type { Transactions } from "../transactions.js";
import type { PgDb } from "./pg-db.js";

/** Thrown when the lease was taken by another owner: this one may not write again. */
export class FencedError extends Error {
  constructor(readonly term: number, readonly leaseTerm: number | undefined) {
    super(leaseTerm === undefined ? `the lease row is gone: this owner (term ${term}) may not write` : `another owner leads now (term ${leaseTerm}, this owner's was ${term}): this owner may not write again`);
  }
}

/**
 * PostgreSQL's: one transaction per batch on the writer connection, open across the batch's slices
 * (statements cost a round trip each, so slices only give the event loop back), fenced by the
 * lease: it begins with the lease row read `FOR KEY SHARE` and its term compared with this
 * owner's, so a takeover (whose UPDATE of the term, a key, locks the row FOR UPDATE) waits for it,
 * while this owner's renewals (which change only the expiry) do not; once a standby took the
 * lease no transaction of this owner gets past its first statement. Its COMMIT, which waits for the WAL
 * flush (`synchronous_commit = on`), is sent without blocking the event loop by {@link sync}.
 * A unit's savepoint is set only before its first write (PgDb.beforeWrite) and released with the
 * next one; events appended are held and inserted at the slice's end in multi-row INSERTs
 * (DeferredInserts), so an emit costs the round trip of its id lookup only.
 */
export function pgTransactions(db: PgDb, term: () => number, onFenced: (error: FencedError) => void): Transactions {
  let open = false;
  /** A slice failed outside its units: the batch's transaction is gone and its sync must fail. */
  let lost: unknown;
  /** Where the deferred events ended when the running unit began. */
  let unitMark = 0;
  const writer = db.writer;
  const fence = () => {
    const rows = writer.querySync("BEGIN; SELECT term FROM chronolog_lease WHERE id = 1 FOR KEY SHARE");
    const leaseTerm = rows[0]?.term as number | undefined;
    if (leaseTerm !== term()) throw new FencedError(term(), leaseTerm);
  };
  return {
    begin() {
      db.writing = true;
      if (open) return;
      lost = undefined;
      try {
        fence();
      } catch (error) {
        lost = error;
        if (error instanceof FencedError) onFenced(error);
        throw error;
      }
      open = true;
    },
    commitSlice() {
      db.deferredEvents?.flush(writer); // still writing: on the transaction
      db.writing = false;
    },
    rollback() {
      db.writing = false;
      lost ??= new Error("a slice of the batch failed: its transaction was rolled back");
      db.deferredEvents?.clear();
      try {
        if (writer.getTransactionStatus() !== "I") writer.querySync("ROLLBACK");
      } catch {
        // The connection is gone: the server rolled the transaction back (the batch's sync fails).
      }
      open = false;
      db.savepoint = "none";
      db.releasePending = false;
    },
    savepoint() {
      // Set lazily, before the unit's first write (PgDb.beforeWrite).
      db.savepoint = "none";
      unitMark = db.deferredEvents?.mark() ?? 0;
    },
    release() {
      if (db.savepoint === "set") db.releasePending = true;
      db.savepoint = "none";
    },
    rollbackTo() {
      db.deferredEvents?.discardTo(unitMark);
      if (db.savepoint === "set") writer.querySync("ROLLBACK TO unit; RELEASE unit");
      db.savepoint = "none";
    },
    sync() {
      const failure = lost;
      lost = undefined;
      db.releasePending = false;
      if (!open) return failure === undefined ? Promise.resolve() : Promise.reject(failure);
      open = false;
      // A statement that failed outside a savepoint left the transaction aborted: its COMMIT would
      // answer ROLLBACK without an error, so it is rolled back and the batch fails.
      const aborted = failure === undefined && writer.getTransactionStatus() === "E" ? new Error("a statement failed outside a unit's savepoint: the batch's transaction was aborted") : undefined;
      const error = failure ?? aborted;
      return new Promise<void>((resolve, reject) => {
        writer.query(error === undefined ? "COMMIT" : "ROLLBACK", (e) => (e ? reject(e) : error === undefined ? resolve() : reject(error)));
      });
    },
  };
}
