import type { Committer } from "../store/committer.js";
import type { LogRemovalStatements } from "../store/log-removal.js";
import type { PagesReturned, WriteTurn } from "../store/sqlite/checkpointer.js";

/** Share of the data file's pages free past which retention starts returning them to the disk. */
export const startShare = 0.25;
/** The share of free pages it returns them down to. */
export const stopShare = 0.125;
/** Pages the first step returns at most (4 KiB each); the next ones as many as fit in {@link stepTargetMs}. */
export const stepPages = 32;
/** Pages one step returns at most, and at least (but for the last), however fast or slow the last was. */
export const maxStepPages = 512;
export const minStepPages = 16;
/** How long one step should take, ms: the owner's commits wait for it (the committer's turn, or its unit). */
export const stepTargetMs = 3;
/** A step grows by at most this factor over the last one. */
const growth = 1.5;

/**
 * When retention gives the data file's free pages back to the disk (SQLite's incremental vacuum,
 * docs/retention.md "Space on disk"), and how many a step returns. In the steady state it does
 * not: the pages a removal frees are reused by the events that keep arriving, and returning them
 * would move pages and write them to the WAL for nothing. Only once more than {@link startShare}
 * of the file is free (a large removal, a rule made stricter, ingest that slowed down) are they
 * returned, in steps, each paced like a removal's unit, until {@link stopShare} of the file is
 * free. A step moves the file's last pages into free ones and writes them to the WAL: its cost
 * varies with the pages moved and the disk, so its size follows the time the last ones took: as
 * many pages as fit in {@link stepTargetMs} at the last step's pace (smaller at once after a slow
 * step, half again larger after a fast one).
 */
export class SpaceReturn {
  private returning = false;
  private size = stepPages;

  constructor(private readonly statements: Pick<LogRemovalStatements, "freePages"> & Partial<Pick<LogRemovalStatements, "reclaim">>) {}

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
    return Math.max(1, Math.min(this.size, toStop));
  }

  /**
   * A step in the checkpoint worker (`returnPages`, store/sqlite/checkpointer.ts), in a turn
   * between two of the committer's batches: the owner's thread only waits for its answer, and its
   * commits for its end. Returns the pages it returned and how long it held the committer, ms.
   */
  async stepOutside(
    pages: number,
    returnPages: (pages: number, turn: WriteTurn) => Promise<PagesReturned>,
    committer: Pick<Committer, "outside">,
  ): Promise<{ returned: number; heldMs: number }> {
    let heldMs = 0;
    const step = await returnPages(pages, (write) =>
      committer.outside(async () => {
        const started = performance.now();
        try {
          return await write();
        } finally {
          heldMs = performance.now() - started;
        }
      }),
    );
    // Sized by the time the committer was held (what the owner's commits waited), not the worker's own: on a busy machine the
    // worker's thread and its answer wait for a core too.
    this.took(step.pages, Math.max(step.ms, heldMs));
    return { returned: step.pages, heldMs };
  }

  /** A step on the owner's connection, in a committer unit `unit` runs (a store without the worker); false when it returned none. */
  async stepInUnit(pages: number, unit: (work: () => void) => Promise<void>): Promise<boolean> {
    const before = this.statements.freePages()?.free ?? 0;
    let ms = 0;
    await unit(() => {
      const started = performance.now();
      this.statements.reclaim?.(pages);
      ms = performance.now() - started;
    });
    const returned = before - (this.statements.freePages()?.free ?? 0);
    this.took(returned, ms);
    return returned > 0;
  }

  /** After a step that returned `pages` pages in `ms`. */
  took(pages: number, ms: number): void {
    if (pages <= 0) return;
    const fits = ms > 0 ? Math.floor((stepTargetMs * pages) / ms) : maxStepPages;
    this.size = Math.max(minStepPages, Math.min(maxStepPages, fits, Math.ceil(this.size * growth)));
  }
}
