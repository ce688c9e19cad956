import type { Clock } from "../clock.js";
import type { ClaimReads, DueAhead, DueTimer } from "../store/claim-reads.js";
import type { ReadAhead } from "../store/read-ahead.js";
import type { OccurrenceRecord } from "../store/occurrences.js";

/**
 * What one ring's claim units read, read ahead of their batch (Committer.submit's `readAhead`,
 * with `first`: the claims run before the batch's other units, so the rows read are the rows
 * they claim): the due timers, handed out to the units in order ({@link timers}), and the due
 * retries, to the first unit ({@link retries}). A unit given nothing (no read ahead: SQLite,
 * whose reads are not round trips) reads as it goes. A batch run again reads again.
 */
export class DueTimersAhead implements ReadAhead {
  private read: DueAhead | undefined;
  private taken = 0;

  constructor(
    private readonly reads: ClaimReads,
    private readonly clock: Clock,
    /** How far ahead of their moment timers are claimed, ms (FiringDeps.lookaheadMs). */
    private readonly lookaheadMs: number,
    /** Timers (and retries) per unit. */
    private readonly chunk: number,
  ) {}

  /** `keys`: one per claim unit in the batch. */
  prefetch(keys: string[]): Promise<void> {
    this.read = undefined;
    this.taken = 0;
    const now = this.clock.now(); // before the units' commit time: what is due by then is due by theirs
    return this.reads.read(now + this.lookaheadMs, now, keys.length * this.chunk, this.chunk).then((read) => {
      this.read = read;
    });
  }

  /** The next unit's due timers, earliest first, or undefined when nothing was read ahead. */
  timers(): DueTimer[] | undefined {
    if (!this.read) return undefined;
    const from = this.taken;
    this.taken += this.chunk;
    return this.read.timers.slice(from, this.taken);
  }

  /** The due retries, or undefined when nothing was read ahead. */
  retries(): OccurrenceRecord[] | undefined {
    return this.read?.retries;
  }
}
