/**
 * How the committer opens, divides and ends its transactions on a store. A batch runs in
 * slices ({@link import("./committer.js").Committer}): each slice begins, runs its units inside
 * savepoints and ends; after the last slice, {@link sync} makes all of it durable before any
 * caller is answered.
 */
export interface Transactions {
  /** Starts a slice. */
  begin(): void;
  /**
   * The running unit yields the event loop between two of its steps, its transaction open
   * (Committer.submitInSteps): what the owner does meanwhile is not the unit's...
   */
  pause(): void;
  /** ...until it goes on. */
  resume(): void;
  /**
   * Ends a slice whose units ran (`last`: the batch's last); the next slice runs once a promise
   * it returns resolved (PostgreSQL sends the slice's held inserts without blocking the event loop).
   */
  commitSlice(last: boolean): void | Promise<void>;
  /**
   * Undoes a slice that failed outside its units (its COMMIT, say), if a transaction is open.
   * `runAgain`: the committer runs the batch again from its start, so the batch is not lost
   * (its next {@link sync} does not fail for this).
   */
  rollback(runAgain?: boolean): void;
  /** A unit's savepoint: set before the unit, released after it... */
  savepoint(): void;
  release(): void;
  /** ...or rolled back to and released when the unit throws. */
  rollbackTo(): void;
  /** Resolves once every slice ended so far is durable; rejects when it cannot be (the owner stops). */
  sync(): Promise<void>;
}
