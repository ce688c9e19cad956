import type { Transactions } from "../transactions.js";
import type { PgDb } from "./pg-db.js";

/** Thrown when the lease was taken by another owner: this one may not write again. */
export class FencedError extends Error {
  constructor(readonly term: number, readonly leaseTerm: number | undefined) {
    super(leaseTerm === undefined ? `the lease row is gone: this owner (term ${term}) may not write` : `another owner leads now (term ${leaseTerm}, this owner's was ${term}): this owner may not write again`);
  }
}

/**
 * The fence, sent just before a batch's COMMIT in the same transaction: it takes the lease row
 * `FOR KEY SHARE` and fails (division by zero, SQLSTATE 22012) unless its term is this owner's,
 * so the COMMIT after it rolls back. A takeover, whose UPDATE of the term (a key) locks the row
 * FOR UPDATE, waits for a transaction past its fence, while this owner's renewals (which change
 * only the expiry) do not; once a standby took the lease no transaction of this owner commits.
 */
const fence = "SELECT 1 / (CASE WHEN (SELECT term FROM chronolog_lease WHERE id = 1 FOR KEY SHARE) = $1 THEN 1 ELSE 0 END) AS fenced";
const fencedState = "22012";

/**
 * PostgreSQL's: one transaction per batch on the writer connection, open across the batch's slices
 * (statements cost a round trip each, so slices only give the event loop back). It begins with the
 * batch's first write (PgDb.begun): a unit's first write sets its savepoint, beginning the
 * transaction in the same round trip (PgDb.beforeWrite); events appended are held
 * (DeferredInserts) and inserted at the end of each slice but the last, in multi-row INSERTs sent
 * in one pipeline without blocking the event loop; the last slice's go with the fence and the
 * COMMIT in one pipeline too ({@link sync}). A batch of emits (their lookups read ahead by
 * EventStatements.prefetch) so costs the event loop no round trip at all. The COMMIT waits for the
 * WAL flush (`synchronous_commit = on`).
 */
export function pgTransactions(db: PgDb, term: () => number, onFenced: (error: FencedError) => void): Transactions {
  /** A slice failed outside its units: the batch's transaction is gone and its sync must fail. */
  let lost: unknown;
  /** Where the deferred events ended when the running unit began. */
  let unitMark = 0;
  const writer = db.writer;
  /** The held events' inserts, after a BEGIN when the transaction has not begun. */
  const inserts = () => {
    const queries: { text: string; values?: unknown[] }[] = db.deferredEvents?.takeInserts() ?? [];
    if (queries.length > 0 && !db.begun) {
      queries.unshift({ text: "BEGIN" });
      db.begun = true;
    }
    return queries;
  };
  const reset = () => {
    db.writing = false;
    db.begun = false;
    db.savepoint = "none";
    db.releasePending = false;
    db.deferredEvents?.clear();
  };
  return {
    begin() {
      db.writing = true;
    },
    commitSlice(last) {
      db.writing = false;
      if (last) return; // its inserts go with the COMMIT (sync)
      const queries = inserts();
      if (queries.length > 0) return db.pipeline(queries).then(() => undefined);
    },
    rollback() {
      lost ??= new Error("a slice of the batch failed: its transaction was rolled back");
      try {
        if (writer.getTransactionStatus() !== "I") writer.querySync("ROLLBACK");
      } catch {
        // The connection is gone: the server rolled the transaction back (the batch's sync fails).
      }
      reset();
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
    async sync() {
      const failure = lost;
      lost = undefined;
      // A statement that failed outside a savepoint left the transaction aborted: its COMMIT would
      // answer ROLLBACK without an error, so it is rolled back and the batch fails.
      const aborted = failure === undefined && writer.getTransactionStatus() === "E" ? new Error("a statement failed outside a unit's savepoint: the batch's transaction was aborted") : undefined;
      const error = failure ?? aborted;
      const queries = error === undefined ? inserts() : [];
      const begun = db.begun;
      reset();
      if (error !== undefined) {
        if (begun) await db.pipeline([{ text: "ROLLBACK" }]).catch(() => undefined);
        throw error;
      }
      if (!begun) return; // the batch wrote nothing
      try {
        await db.pipeline([...queries, { text: fence, values: [String(term())] }, { text: "COMMIT" }]);
      } catch (e) {
        if ((e as { sqlstate?: string }).sqlstate !== fencedState) throw e;
        const [row] = await db.pipeline([{ text: "SELECT term FROM chronolog_lease WHERE id = 1" }]).then((r) => r[0], () => []);
        const fenced = new FencedError(term(), row === undefined ? undefined : Number(row.term));
        onFenced(fenced);
        throw fenced;
      }
    },
  };
}
