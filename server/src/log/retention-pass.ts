/** What one pass did: tests and the log read it. */
export interface RetentionPass {
  removedEvents: number;
  removedBytes: number;
  /** Events a rule wanted removed but that stay, by holder (`processor:<name>`, `failed_delivery:<name>`, `timer`, `action_call`, `document`, `cause`, `archive`). */
  held: Record<string, number>;
  /** Removal batches committed, and the longest one's commit (ms, its wait in the committer's queue and the sync included). */
  batches: number;
  longestBatchMs: number;
  /** The longest time a batch's unit held the committer (a removal, or a step returning free pages), ms: what other commits waited for it. */
  longestUnitMs: number;
  /** The longest unit of each kind, ms: `batch` (a removal by rows), `ids` (a dropped partition's ids kept), `drop`, `summary` (a partition's summary stored), `vacuum` (free pages returned to the disk, SQLite). */
  longestUnits: Record<string, number>;
  /** PostgreSQL: partitions whose summary the pass read from their events (one GROUP BY each); those stored were not read. */
  summariesRead: number;
  /** False when a batch failed or the owner stopped mid-way (the next pass goes on). */
  complete: boolean;
}
