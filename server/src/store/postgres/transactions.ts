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
 * A unit's savepoint release is sent with the next unit's savepoint, one round trip for both.
 */
export function pgTransactions(db: PgDb, term: () => number, onFenced: (error: FencedError) => void): Transactions {
  let open = false;
  /** A savepoint was released in intent: the next savepoint (or the COMMIT) releases it. */
  let releasePending = false;
  /** A slice failed outside its units: the batch's transaction is gone and its sync must fail. */
  let lost: unknown;
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
      db.writing = false;
    },
    rollback() {
      db.writing = false;
      lost ??= new Error("a slice of the batch failed: its transaction was rolled back");
      try {
        if (writer.getTransactionStatus() !== "I") writer.querySync("ROLLBACK");
      } catch {
        // The connection is gone: the server rolled the transaction back (the batch's sync fails).
      }
      open = false;
      releasePending = false;
    },
    savepoint() {
      writer.querySync(releasePending ? "RELEASE unit; SAVEPOINT unit" : "SAVEPOINT unit");
      releasePending = false;
    },
    release() {
      releasePending = true;
    },
    rollbackTo() {
      writer.querySync("ROLLBACK TO unit; RELEASE unit");
      releasePending = false;
    },
    sync() {
      const failure = lost;
      lost = undefined;
      releasePending = false;
      if (!open) return failure === undefined ? Promise.resolve() : Promise.reject(failure);
      open = false;
      return new Promise<void>((resolve, reject) => {
        writer.query(failure === undefined ? "COMMIT" : "ROLLBACK", (error) => (error ? reject(error) : failure === undefined ? resolve() : reject(failure)));
      });
    },
  };
}
