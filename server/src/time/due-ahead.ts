import type { Clock } from "../clock.js";
import type { ClaimReads, DueAhead, DueTimer } from "../store/claim-reads.js";
import type { ReadAhead } from "../store/read-ahead.js";
import type { OccurrenceRecord } from "../store/occurrences.js";
import { occurrenceId } from "./occurrence-ids.js";
import { owedWithin } from "./owed.js";

/**
 * How much later than the read ahead a claim may commit and still find each moment it owes read
 * ahead, ms: the moments of a timer owing more than its next due one are read up to the lookahead
 * plus this (a claim owing one beyond them asks as it writes).
 */
export const owedReadSlackMs = 1_000;

/**
 * What one ring's claim units read, read ahead of their batch (Committer.submit's `readAhead`,
 * with `first`: the claims run before the batch's other units, so the rows read are the rows
 * they claim): the due timers, handed out to the units in order ({@link timers}), and the due
 * retries, to the first unit ({@link retries}). A unit given nothing (no read ahead: SQLite,
 * whose reads are not round trips) reads as it goes. A batch run again reads again.
 *
 * A timer owing other moments than its next due one (a catch-up: the owner was away or behind,
 * or more than one moment within the lookahead) needs to know whether each moment's occurrence
 * was made before (a replaced timer, a backfill): those occurrence ids (owed.ts `owedWithin` at
 * the read's time, to the lookahead plus {@link owedReadSlackMs}) are read then, by id, into the
 * batch's occurrences (OccurrenceStatements.knownExisting), a second read on the writer before the
 * batch's units run, sent only when a timer owes such moments.
 */
export class DueTimersAhead implements ReadAhead {
  private read: DueAhead | undefined;
  private taken = 0;

  constructor(
    private readonly reads: ClaimReads,
    /** Where the owed moments' occurrence ids are read for the batch (OccurrenceStatements). */
    private readonly occurrences: Pick<ReadAhead, "prefetch">,
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
      const ids = owedIds(read.timers, now, now + this.lookaheadMs);
      const occurrences = ids.length > 0 ? this.occurrences.prefetch(ids, false) : undefined;
      if (!occurrences) this.read = read;
      else
        return occurrences.then(() => {
          this.read = read;
        });
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

/**
 * Of each of `timers` owing other moments than its next due one at `nowMs` looking ahead to
 * `horizonMs` (a timer already late: {@link owedReadSlackMs} further; whether its next due
 * moment's occurrence exists is read with the timer), the occurrence ids of the moments it owes
 * looking ahead {@link owedReadSlackMs} further: a claim committing up to that much later owes a
 * subset of them (catch-up keeps fewer, more recent moments as time goes on). A timer on time owing
 * its next due moment alone reads nothing more: the owner keeping up costs no second read.
 */
function owedIds(timers: DueTimer[], nowMs: number, horizonMs: number): string[] {
  const ids: string[] = [];
  for (const { timer } of timers) {
    // A timer already late (the owner is behind) may owe its next moment too by the claim's time: judged with the slack.
    const late = (timer.nextDueMs as number) <= nowMs;
    const { dueMs } = owedWithin(timer, nowMs, timer.cancelOn?.length ? nowMs : horizonMs + (late ? owedReadSlackMs : 0)); // as the claim looks ahead (time/fire.ts)
    if (dueMs.length === 0 || (dueMs.length === 1 && dueMs[0] === timer.nextDueMs)) continue;
    for (const due of owedWithin(timer, nowMs, horizonMs + owedReadSlackMs).dueMs) ids.push(occurrenceId(timer.id, due));
  }
  return ids;
}
