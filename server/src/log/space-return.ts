import type { LogRemovalStatements } from "../store/log-removal.js";

/** Share of the data file's pages free past which retention starts returning them to the disk. */
export const startShare = 0.25;
/** The share of free pages it returns them down to. */
export const stopShare = 0.125;
/** Pages one step returns at most (4 KiB each). */
export const stepPages = 128;

/**
 * When retention gives the data file's free pages back to the disk (SQLite's incremental vacuum,
 * docs/retention.md "Space on disk"). In the steady state it does not: the pages a removal frees
 * are reused by the events that keep arriving, and returning them would move pages and write
 * them to the WAL for nothing. Only once more than {@link startShare} of the file is free (a
 * large removal, a rule made stricter, ingest that slowed down) are they returned, in steps of
 * at most {@link stepPages} pages, each a committer unit paced like a removal's, until
 * {@link stopShare} of the file is free.
 */
export class SpaceReturn {
  private returning = false;

  constructor(private readonly statements: Pick<LogRemovalStatements, "freePages">) {}

  /** Pages the next step returns (0: none now). */
  next(): number {
    const space = this.statements.freePages();
    if (!space || space.total <= 0) return 0;
    const share = space.free / space.total;
    if (share > startShare) this.returning = true;
    else if (share <= stopShare) this.returning = false;
    if (!this.returning) return 0;
    // Returning r pages leaves (free - r) of (total - r) free: enough once that is at most stopShare.
    const toStop = Math.ceil((space.free - stopShare * space.total) / (1 - stopShare));
    return Math.max(1, Math.min(stepPages, toStop));
  }
}
