import { activeStatus, occurrenceFromRow, type OccurrenceRecord, type OccurrenceRow } from "./occurrences.js";
import type { Db } from "./sql.js";
import type { ActiveOccurrences } from "./timer-control.js";
import type { TimerRecord } from "./timer-records.js";
import { timerColumns, timerFromCells, type TimerCells } from "./timers.js";

// What a claim of due timers reads, read ahead of the committer's batch (ClaimReads).

/** A due timer as read ahead of a claim, and whether the occurrence of its next due moment was made before. */
export interface DueTimer {
  timer: TimerRecord;
  /**
   * The occurrence of (timer id, next due moment) exists: the same timer id and moment were claimed
   * before (a replaced timer). A timer owing other moments too (a catch-up) has theirs read by id
   * after this read (time/due-ahead.ts).
   */
  claimedBefore: boolean;
  /**
   * Its occurrences that have not ended, for a timer whose overlap policy is not "allow" (as
   * TimerControlStatements.activeOf counts them); zeros for the others, which need not know.
   */
  active: ActiveOccurrences;
}

/** What {@link ClaimReads.read} found. */
export interface DueAhead {
  /** As TimerStatements.due, earliest first. */
  timers: DueTimer[];
  /** As OccurrenceStatements.dueRetries, each with its timer's chain depth. */
  retries: OccurrenceRecord[];
}

/**
 * PostgreSQL's: the reads of a claim unit, sent on the committer's connection before its batch's
 * units run (Db.readAheadAll: one round trip that does not block the event loop), so the claim
 * itself reads nothing. The occurrence id of a timer's next due moment is computed as
 * time/occurrence-ids.ts computes it (its due moment in hex, then SHA-256 over the timer id and
 * the moment), to tell whether that moment was claimed before without a read in the unit; and
 * the occurrences still running or buffered of a timer whose overlap policy needs them ("skip",
 * "bufferOne"), which the claim then counts on as it writes its own.
 */
export interface ClaimReads {
  /** Up to `timerLimit` timers due by `nowMs` (one with a cancel_on by `cancellableByMs`), and up to `retryLimit` retries due by `nowMs` (none read for 0). */
  read(nowMs: number, cancellableByMs: number, timerLimit: number, retryLimit: number): Promise<DueAhead>;
}

const occurrenceIdSql =
  "lpad(to_hex(greatest(0, t.next_due_ms)), 12, '0') || left(encode(sha256(convert_to('timer-occurrence' || chr(10) || t.id || chr(10) || t.next_due_ms::text, 'UTF8')), 'hex'), 20)";
/** Its active occurrences of status `which` (`= 'buffered'` or `<> 'buffered'`), counted for a timer whose policy names an overlap (not "allow"). */
const activeSql = (which: string) =>
  `CASE WHEN (t.policy::jsonb ->> 'overlap') IS NULL THEN 0 ELSE (SELECT count(*) FROM timer_occurrences WHERE timer_id = t.id AND ${activeStatus} AND status ${which}) END`;
const dueSql = `SELECT ${timerColumns.replace(/(^|, )/g, "$1t.")},
    EXISTS (SELECT 1 FROM timer_occurrences AS o WHERE o.id = ${occurrenceIdSql})::int AS claimed_before,
    ${activeSql("<> 'buffered'")} AS running, ${activeSql("= 'buffered'")} AS buffered
  FROM timers AS t WHERE t.next_due_ms <= ? AND (t.cancel_on IS NULL OR t.next_due_ms <= ?) ORDER BY t.next_due_ms, t.id LIMIT ?`;
// With its timer's chain depth (0 once the timer is gone), which its call carries: the call reads no timer.
const retriesSql = `SELECT o.*, COALESCE(t.chain_depth, 0) AS timer_chain_depth FROM timer_occurrences AS o LEFT JOIN timers AS t ON t.id = o.timer_id
  WHERE o.status = 'retry_wait' AND o.next_attempt_ms <= ? ORDER BY o.next_attempt_ms, o.id LIMIT ?`;

/** The claim's reads on `db`; undefined where reads are not round trips (SQLite): the claim reads as it goes. */
export function claimReads(db: Db): ClaimReads | undefined {
  const readAheadAll = db.readAheadAll?.bind(db);
  if (!readAheadAll) return undefined;
  return {
    async read(nowMs, cancellableByMs, timerLimit, retryLimit) {
      const reads: [string, unknown[]][] = [[dueSql, [nowMs, cancellableByMs, timerLimit]]];
      if (retryLimit > 0) reads.push([retriesSql, [nowMs, retryLimit]]);
      const [timers, retries = []] = await readAheadAll(reads);
      return {
        timers: (timers as Record<string, unknown>[]).map((row) => {
          const { claimed_before, running, buffered, ...cells } = row;
          return {
            timer: timerFromCells(Object.values(cells) as TimerCells),
            claimedBefore: Number(claimed_before) === 1,
            active: { running: Number(running), buffered: Number(buffered) },
          };
        }),
        retries: (retries as (OccurrenceRow & { timer_chain_depth: unknown })[]).map((row) => ({
          ...occurrenceFromRow(row),
          chainDepth: Number(row.timer_chain_depth),
        })),
      };
    },
  };
}
