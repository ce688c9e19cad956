import type { Db } from "../store/sql.js";
import { RetentionSweep, type RetentionSweepOptions, type SweepResult as TablesSwept } from "../store/sweep.js";
import { retentionStatements } from "../store/timer-retention.js";

/** Default retention of spent timers and ended occurrences: 7 days, in ms. */
export const defaultTimerRetentionMs = 7 * 86_400_000;

/** What one sweep of time's rows did: ended occurrences and spent timers deleted. */
export type SweepResult = TablesSwept<"occurrences" | "timers">;

/** What {@link TimerRetention} needs. */
export interface TimerRetentionOptions extends RetentionSweepOptions {
  db: Db;
}

/**
 * Retention of time's rows: without it, `timers` keeps every fired delay and one-shot and
 * `timer_occurrences` every occurrence ever made, so a million delays a day grow both without
 * bound. The log is never touched: `timer.*` and `action.*` events keep the history
 * (`action_calls` has a retention of its own: actions/retention.ts).
 *
 * What a sweep deletes (store/timer-retention.ts, retentionStatements), oldest first:
 * 1. occurrences that ended (completed, failed for good, skipped) and last changed longer than
 *    `retentionMs` ago; pending ones, ones waiting for a (re)try and buffered ones never;
 * 2. then spent timers (no next due moment and not paused, not disabled, not declared: fired
 *    delays and `at` timers, runtime schedules past their end bound or maximum count) last
 *    changed longer than `retentionMs` ago and with no occurrence active (one pending, waiting
 *    for a retry or buffered keeps it; an ended occurrence, a snapshot of what it called, may
 *    outlive its timer until its own age deletes it). Declared schedules are
 *    never deleted: the manifest owns them, and a deleted one would come back from the next
 *    registration with its occurrence count at 0.
 *
 * How it sweeps (hourly, in chunks, off the hot path) and its failure semantics: {@link RetentionSweep}.
 * A chunk is ordered by the committer with every other unit: a timer replaced, triggered or given
 * an occurrence in an earlier unit is no longer a candidate in a later one.
 *
 * Trade-off: work retried under a cause finds what its first run did. Schedule, Unschedule,
 * Delay and CancelDelay find their event in the log (timer-replay.ts), which the sweep never touches;
 * but TriggerTimer finds its occurrence row and BackfillTimer the moments already made, so a
 * repeat after those rows were swept (a redelivery or a replayed processor cursor older than the
 * retention, a backfill over an old range) makes the occurrences again, with the same occurrence
 * and call ids: ActionCalls answers a completed call from the log, a failed or skipped one
 * runs. So the retention must stay far longer than any retry horizon: the default 7 days against
 * seconds of processor and occurrence retries. ListTimers and GetTimer no longer show swept
 * timers.
 */
export class TimerRetention extends RetentionSweep<"occurrences" | "timers"> {
  constructor(options: TimerRetentionOptions) {
    const rows = retentionStatements(options.db);
    super(options, "timer retention", "spent timers and ended occurrences", [
      { table: "timer_occurrences", key: "occurrences", remove: (beforeMs, limit) => rows.deleteEndedOccurrences(beforeMs, limit) },
      { table: "timers", key: "timers", remove: (beforeMs, limit) => rows.deleteSpentTimers(beforeMs, limit) },
    ]);
  }
}
