import { sqlFor, type Db } from "./sql.js";
import { activeStatus, endedStatus } from "./occurrences.js";
import { keptTimerRows } from "./timers.js";

// The retention of time's rows (time/retention.ts): ended occurrences and spent timers.
// Deletes only; writes no events (the log keeps the timers' and calls' history). Each runs in
// a committer unit of its own and deletes at most `limit` rows, oldest first, on the partial
// indexes of migrations 0008 and 0012 (their conditions are repeated word for word so SQLite uses them).

/** The statements of time's retention sweep: ended occurrences and spent timers older than a cutoff. Each runs in a committer unit of its own. */
export interface RetentionStatements {
  /**
   * Deletes up to `limit` occurrences that ended (completed, failed, skipped) before `beforeMs`
   * (their last change), oldest first; returns how many. Occurrences pending, waiting for a
   * (re)try or buffered are never deleted.
   */
  deleteEndedOccurrences(beforeMs: number, limit: number): number;
  /**
   * Deletes up to `limit` spent timers (no next due moment, not paused, not disabled, not
   * declared: fired one-shots and delays, recurring timers past their end or maximum count) last
   * changed before `beforeMs` and with no occurrence active (one pending, waiting for a (re)try or
   * buffered keeps its timer; ended ones go by their own age, each a snapshot of what it called),
   * oldest first; returns how many.
   */
  deleteSpentTimers(beforeMs: number, limit: number): number;
}

/** The retention statements on `db`. */
export function retentionStatements(db: Db): RetentionStatements {
  const rowKey = sqlFor(db, { sqlite: "rowid", postgres: "id" });
  const indexedBy = (index: string) => sqlFor(db, { sqlite: `INDEXED BY ${index}`, postgres: "" });
  const endedOccurrences = db.prepare(
    `DELETE FROM timer_occurrences WHERE ${rowKey} IN (
       SELECT ${rowKey} FROM timer_occurrences ${indexedBy("timer_occurrences_ended")}
       WHERE ${endedStatus} AND updated_at < ? ORDER BY updated_at LIMIT ?)`,
  );
  const spentTimers = db.prepare(
    `DELETE FROM timers WHERE ${rowKey} IN (
       SELECT t.${rowKey} FROM timers t ${indexedBy("timers_spent")}
       WHERE t.next_due_ms IS NULL AND t.paused IS NULL AND t.disabled = 0 AND t.kind <> 'declared' AND t.updated_at < ?
         AND NOT EXISTS (SELECT 1 FROM timer_occurrences WHERE timer_id = t.id AND ${activeStatus})
       ORDER BY t.updated_at LIMIT ?)`,
  );
  const kept = keptTimerRows(db);
  const keptOccurrences = db.readAhead ? db.readForBatch?.("timer_occurrences") : undefined;
  return {
    deleteEndedOccurrences(beforeMs: number, limit: number): number {
      keptOccurrences?.forgetAll(); // occurrences it cannot name: the batch asks again (OccurrenceStatements.knownExisting)
      return endedOccurrences.run(beforeMs, limit).changes;
    },
    deleteSpentTimers(beforeMs: number, limit: number): number {
      kept?.forgetAll(); // rows it cannot name: the batch reads them again
      return spentTimers.run(beforeMs, limit).changes;
    },
  };
}
