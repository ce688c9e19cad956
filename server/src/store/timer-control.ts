import { defer, sqlFor, type Db } from "./sql.js";
import type { PauseState } from "./timer-records.js";
import { activeStatus, occurrenceStatements, type OccurrenceRecord } from "./occurrences.js";
import { changeKept, keptTimerRows } from "./timers.js";
import type { ReadAhead } from "./read-ahead.js";

// What the timer controls keep beside the timers' own statements: a timer's pause state, the
// occurrences TriggerTimer and BackfillTimer queue, and those the overlap policy counts and
// releases. Writes run inside committer units, with the `timer.*` event they go with.

/** What an occurrence of TriggerTimer or BackfillTimer is made of. */
export type QueuedOccurrence = Pick<OccurrenceRecord, "id" | "timerId" | "dueMs" | "action" | "input" | "actor" | "overdue" | "retryDelaysMs">;

/** The occurrences of a timer that have not ended (overlap): running = pending or waiting for a (re)try; buffered = held by "buffer one". */
export interface ActiveOccurrences {
  running: number;
  buffered: number;
}

/**
 * The statements for pause, trigger, backfill and overlap, on `timers` and `timer_occurrences`.
 * Reads may run anywhere; writes only inside a committer unit, with the `timer.*` event they go
 * with (a unit that throws undoes them). Times are ms since the epoch, UTC, passed in.
 */
export interface TimerControlStatements {
  /**
   * Pauses (state set) or resumes (null) timer `id` with its new next due moment (null while
   * paused); nothing when there is no such timer. An update by key: deferred on PostgreSQL, the
   * row kept for the batch changed with it (keptTimerRows).
   */
  setPaused(id: string, paused: PauseState | null, nextDueMs: number | null, nowMs: number): void;
  /**
   * Records a triggered occurrence waiting for its first call at `nowMs` (`retry_wait`, attempts
   * 0): the clock's retry claim makes it. Its id is new (made of a new id, or of its cause, whose
   * request run again finds its event first), so it answers nothing: deferred on PostgreSQL (one
   * that exists all the same is left as it is).
   */
  queueTriggered(occurrence: QueuedOccurrence, nowMs: number): void;
  /**
   * Records backfilled occurrences, each waiting for its first call at its own moment
   * (`retry_wait`, attempts 0, next try at its due moment); returns the ids of those it wrote,
   * not of those that existed (made before). On PostgreSQL, when their ids were read ahead of
   * the batch ({@link occurrenceIds}), the new ones are written answering nothing (deferred);
   * else a statement per 256, one round trip each.
   */
  queueBackfilled(occurrences: QueuedOccurrence[], nowMs: number): Set<string>;
  /** Where occurrence ids are read ahead of a batch (Committer.submit's `readAhead`), for {@link queueBackfilled}. */
  occurrenceIds: ReadAhead & { readonly readsAhead: boolean };
  /** The occurrences of timer `timerId` that have not ended (overlap); zeros for none. */
  activeOf(timerId: string): ActiveOccurrences;
  /**
   * Releases timer `timerId`'s buffered occurrence (the "buffer one" overlap policy) when none of
   * its occurrences runs: `retry_wait` due at `nowMs`, or at its own moment when that is later (it
   * was buffered inside the clock's lookahead, before its moment: never made early), so the clock
   * makes it; nothing when none is buffered or one still runs. Answers nothing: deferred on
   * PostgreSQL (the clock knows which timers may hold one: TimerFiring).
   */
  releaseBuffered(timerId: string, nowMs: number): void;
  /** The timers with a buffered occurrence (what the clock knows at the owner's start: TimerFiring.recover). */
  bufferingTimers(): string[];
}

/** The pause, trigger, backfill and overlap statements on `db`. */
export function timerControlStatements(db: Db): TimerControlStatements {
  const setPaused = db.prepare("UPDATE timers SET paused = ?, next_due_ms = ?, updated_at = ? WHERE id = ?");
  const occurrences = occurrenceStatements(db);
  const kept = keptTimerRows(db);
  const active = db.prepare(
    `SELECT count(*) FILTER (WHERE status <> 'buffered') AS running, count(*) FILTER (WHERE status = 'buffered') AS buffered
     FROM timer_occurrences WHERE timer_id = ? AND ${activeStatus}`,
  );
  const release = db.prepare(
    `UPDATE timer_occurrences SET status = 'retry_wait', next_attempt_ms = ${sqlFor(db, { sqlite: "max", postgres: "GREATEST" })}(?, due_ms), updated_at = ?
     WHERE timer_id = ? AND ${activeStatus} AND status = 'buffered'
       AND NOT EXISTS (SELECT 1 FROM timer_occurrences WHERE timer_id = ? AND ${activeStatus} AND status <> 'buffered')`,
  );
  const buffering = db.prepare(`SELECT DISTINCT timer_id FROM timer_occurrences WHERE ${activeStatus} AND status = 'buffered'`).pluck();
  return {
    setPaused(id: string, paused: PauseState | null, nextDueMs: number | null, nowMs: number): void {
      const json = paused === null ? null : JSON.stringify({ note: paused.note, at_ms: paused.atMs, held_due_ms: paused.heldDueMs });
      defer(setPaused, json, nextDueMs, nowMs, id);
      changeKept(kept, id, (cells) => {
        cells[16] = json;
        cells[5] = nextDueMs;
        cells[18] = nowMs;
        return cells;
      });
    },
    queueTriggered(o: QueuedOccurrence, nowMs: number): void {
      occurrences.insertKnownNew([{ ...o, status: "retry_wait", latenessMs: null, error: "", nextAttemptMs: nowMs, origin: "trigger" }], nowMs);
    },
    queueBackfilled(list: QueuedOccurrence[], nowMs: number): Set<string> {
      const rows = list.map((o) => ({ ...o, status: "retry_wait" as const, latenessMs: null, error: "", nextAttemptMs: o.dueMs, origin: "backfill" as const }));
      const existing = occurrences.knownExisting(rows.map((o) => o.id));
      if (!existing) return occurrences.insertMany(rows, nowMs);
      const fresh = rows.filter((o) => !existing.has(o.id));
      occurrences.insertKnownNew(fresh, nowMs);
      return new Set(fresh.map((o) => o.id));
    },
    occurrenceIds: occurrences,
    // On the `timer_occurrences_active` index.
    activeOf(timerId: string): ActiveOccurrences {
      return active.get(timerId) as ActiveOccurrences;
    },
    releaseBuffered(timerId: string, nowMs: number): void {
      defer(release, nowMs, nowMs, timerId, timerId);
    },
    bufferingTimers(): string[] {
      return buffering.all() as string[];
    },
  };
}
