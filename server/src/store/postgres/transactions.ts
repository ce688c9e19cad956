import type { Transactions } from "../transactions.js";
import { notifyHead } from "./head-follower.js";
import type { PgDb } from "./pg-db.js";

/** Thrown when the lease was taken by another owner: this one may not write again. */
export class FencedError extends Error {
  constructor(
    readonly term: number,
    readonly leaseTerm: number | undefined,
  ) {
    super(
      leaseTerm === undefined
        ? `the lease row is gone: this owner (term ${term}) may not write`
        : `another owner leads now (term ${leaseTerm}, this owner's was ${term}): this owner may not write again`,
    );
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
 * PostgreSQL's: one transaction per batch on the writer connection, open across the batch's
 * slices. What the units write is queued as far as it can wait (BatchWriter: the BEGIN, the
 * savepoints, deferred writes, the events appended) and sent with the next statement a unit needs
 * an answer from, or at the end of each slice but the last in one pipeline that does not block the
 * event loop; the last slice's go with the fence and the COMMIT in one pipeline too ({@link sync}).
 * A batch of emits (their lookups read ahead by EventStatements.prefetch) so costs the event loop
 * no round trip at all. The COMMIT waits for the WAL flush (`synchronous_commit = on`).
 */
export function pgTransactions(db: PgDb, term: () => number, onFenced: (error: FencedError) => void): Transactions {
  const batch = db.batch;
  /** A slice failed outside its units: the batch's transaction is gone and its sync must fail. */
  let lost: unknown;
  /** Where the deferred events ended when the running unit began. */
  let unitMark = 0;
  return {
    begin() {
      batch.writing = true;
    },
    // Between a unit's steps, statements go to the reader (they see what is committed), not into the batch.
    pause() {
      batch.writing = false;
    },
    resume() {
      batch.writing = true;
    },
    commitSlice(last) {
      batch.writing = false;
      if (last) return; // its commands go with the COMMIT (sync)
      const commands = batch.take();
      if (commands.length > 0) return db.pipeline(commands).then(() => undefined);
    },
    rollback(runAgain) {
      if (!runAgain) lost ??= batch.broken ?? new Error("a slice of the batch failed: its transaction was rolled back");
      try {
        if (db.writer.getTransactionStatus() !== "I") db.writer.querySync("ROLLBACK");
      } catch {
        // The connection is gone: the server rolled the transaction back (the batch's sync fails).
      }
      batch.reset();
    },
    savepoint() {
      batch.unitStarted();
      unitMark = db.deferredEvents?.mark() ?? 0;
    },
    release() {
      batch.unitEnded();
    },
    rollbackTo() {
      db.deferredEvents?.discardTo(unitMark);
      batch.unitFailed();
    },
    async sync() {
      // A queued write that failed, or a slice that failed, aborted the batch's transaction.
      const error = lost ?? batch.broken;
      lost = undefined;
      const commands = error === undefined ? batch.take() : [];
      const begun = batch.begun || db.writer.getTransactionStatus() !== "I";
      batch.reset();
      if (error !== undefined) {
        if (begun) await db.pipeline([{ text: "ROLLBACK" }]).catch(() => undefined);
        throw error;
      }
      if (!begun) {
        // The batch wrote nothing; its units may still have answered from what it took to be
        // absent (a retried emit refused by its stream's version): its guards are checked all the same.
        const guards = commands.filter((c) => c.guard);
        if (guards.length > 0) await db.pipeline(guards);
        return;
      }
      try {
        // The head's notification wakes standbys' watches (head-follower.ts): delivered once the COMMIT is.
        await db.pipeline([
          ...commands,
          { text: notifyHead, name: db.statementName(notifyHead, 0) },
          { text: fence, values: [String(term())] },
          { text: "COMMIT" },
        ]);
      } catch (e) {
        // A failed statement left the COMMIT after it unrun: the transaction is rolled back.
        if (db.writer.getTransactionStatus() !== "I") await db.pipeline([{ text: "ROLLBACK" }]).catch(() => undefined);
        if ((e as { sqlState?: string }).sqlState !== fencedState) throw e;
        const [row] = await db.pipeline([{ text: "SELECT term FROM chronolog_lease WHERE id = 1" }]).then(
          (r) => r[0],
          () => [],
        );
        const fenced = new FencedError(term(), row === undefined ? undefined : Number(row.term));
        onFenced(fenced);
        throw fenced;
      }
    },
  };
}
