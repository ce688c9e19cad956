import type { Overdue } from "./timer-records.js";
import { defer, dialectOf, prepareMerged, sqlFor, type Db, type SqlStatement } from "./sql.js";
import type { BatchRead, ReadAhead } from "./read-ahead.js";
import { limitedStatement } from "./limited.js";
import type { ActorRecord } from "./events.js";
import { overdueFromJson, overdueToJson } from "./timer-json.js";

// The statements on `timer_occurrences`: what time called (or skipped) for each due moment of
// a timer, and how each call went (OccurrenceStatements).

/**
 * An occurrence's state: `pending` while a call is owed or running; `retry_wait`
 * after a failed call with tries left (until `nextAttemptMs`), or a triggered, backfilled or
 * released buffered occurrence waiting for its first call (attempts 0); `buffered` while held
 * by overlap policy "buffer one"; `completed`; `failed` once the tries are used up; `skipped`
 * when claimed too late (or by the overlap policy).
 */
export type OccurrenceStatus = "pending" | "retry_wait" | "buffered" | "completed" | "failed" | "skipped";

/** A stored occurrence: what time called (or skipped), and how it went. */
export interface OccurrenceRecord {
  /** occurrenceId(timer id, due); also the action call id. */
  id: string;
  timerId: string;
  /** The moment it was due, ms since the epoch (UTC). */
  dueMs: number;
  /** The timer's action, input, actor and lateness bound at the claim. */
  action: string;
  input: Record<string, unknown>;
  actor: ActorRecord | null;
  overdue: Overdue;
  /** The timer's waits between tries at the claim, ms. */
  retryDelaysMs: number[];
  status: OccurrenceStatus;
  /** Calls finished for it. */
  attempts: number;
  /**
   * `retry_wait`: when it is tried again, ms since the epoch (UTC); `pending` after such a wait:
   * that moment still (a restart sends the try no earlier); null otherwise.
   */
  nextAttemptMs: number | null;
  callId: string;
  /** First call time (skipped: claim time) minus due, in ms; null while the first call runs. */
  latenessMs: number | null;
  /** Why the last call failed or why it was skipped ("" otherwise). */
  error: string;
  /** The timer's chain depth, carried from the claim so the call needs no lookup; not stored (read from the timer when absent). */
  chainDepth?: number;
  /** How it was made: claimed when due ("schedule", also when absent), TriggerTimer or BackfillTimer. */
  origin?: "schedule" | "trigger" | "backfill";
  /** The trace context of the span that set its timer, carried from the claim; not stored (read from the timer when absent). */
  trace?: string;
  /** With `trace`: the timer fires once (a delay, an `at` timer), so the occurrence continues that trace rather than starting one. */
  once?: boolean;
}

export interface OccurrenceRow {
  id: string;
  timer_id: string;
  due_ms: number;
  action: string;
  input: string;
  actor: string | null;
  overdue: string;
  retry_delays_ms: string;
  status: OccurrenceStatus;
  attempts: number;
  next_attempt_ms: number | null;
  call_id: string;
  lateness_ms: number | null;
  error: string;
  /** Migration 0007: schedule | trigger | backfill. */
  origin?: "schedule" | "trigger" | "backfill";
}

export function occurrenceFromRow(r: OccurrenceRow): OccurrenceRecord {
  return {
    id: r.id,
    timerId: r.timer_id,
    dueMs: r.due_ms,
    action: r.action,
    input: JSON.parse(r.input),
    actor: r.actor === null ? null : JSON.parse(r.actor),
    overdue: overdueFromJson(JSON.parse(r.overdue)),
    retryDelaysMs: JSON.parse(r.retry_delays_ms),
    status: r.status,
    attempts: r.attempts,
    nextAttemptMs: r.next_attempt_ms,
    callId: r.call_id,
    latenessMs: r.lateness_ms,
    error: r.error,
    origin: r.origin ?? "schedule",
  };
}

/**
 * The conditions of the partial indexes `timer_occurrences_active` and `timer_occurrences_ended`
 * (migration 0012), word for word: SQLite uses a partial index only for a query that repeats its
 * condition. OR chains, not `IN (...)` lists, which SQLite evaluates through an ephemeral b-tree
 * built at every execution.
 */
export const activeStatus = "(status = 'pending' OR status = 'retry_wait' OR status = 'buffered')";
export const endedStatus = "(status = 'completed' OR status = 'failed' OR status = 'skipped')";

const occurrenceColumns =
  "id, timer_id, due_ms, action, input, actor, overdue, retry_delays_ms, status, call_id, lateness_ms, error, claimed_at, updated_at, next_attempt_ms, origin";
const occurrenceMarks = "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?";

/** Rows per statement of {@link OccurrenceStatements.insertMany} on PostgreSQL (16 parameters each). */
const insertManyRows = 256;

/** An occurrence's values in the order of {@link occurrenceColumns}. */
function occurrenceValues(o: NewOccurrence, nowMs: number): unknown[] {
  const actor = o.actor === null ? null : JSON.stringify(o.actor);
  return [
    o.id,
    o.timerId,
    o.dueMs,
    o.action,
    JSON.stringify(o.input),
    actor,
    JSON.stringify(overdueToJson(o.overdue)),
    JSON.stringify(o.retryDelaysMs),
    o.status,
    o.id,
    o.latenessMs,
    o.error,
    nowMs,
    nowMs,
    o.nextAttemptMs ?? null,
    o.origin ?? "schedule",
  ];
}

/**
 * The statements on `timer_occurrences`. Reads may run anywhere; writes only inside a committer
 * unit, with the `timer.*` event or the call they go with (a unit that throws undoes them). None
 * writes events. Times are ms since the epoch, UTC, passed in. Each change of state names the state
 * it leaves and changes nothing when the occurrence is not in it (or missing).
 */
export interface OccurrenceStatements extends ReadAhead {
  /**
   * Records a claimed occurrence (`pending`, or `skipped` with `latenessMs` and the reason in
   * `error`), or a triggered or backfilled one (`retry_wait` until `nextAttemptMs`), attempts 0.
   * False, writing nothing, when occurrence `id` exists (the same timer id and due moment were
   * claimed before).
   */
  insert(occurrence: NewOccurrence, nowMs: number): boolean;
  /**
   * Records several occurrences as {@link insert} does, in one statement on PostgreSQL (one round
   * trip); returns the ids of those it wrote (not those that existed already).
   */
  insertMany(occurrences: NewOccurrence[], nowMs: number): Set<string>;
  /**
   * {@link insertMany} of occurrences a read ahead of the batch found new (ClaimReads), answering
   * nothing: deferred on PostgreSQL (SqlStatement.defer), so no round trip.
   */
  insertKnownNew(occurrences: NewOccurrence[], nowMs: number): void;
  /**
   * One call of pending occurrence `id` ended: `completed`, `failed` for good, or `retry_wait`
   * until `nextAttemptMs` (null for the others); `error` says why it failed. Counts the attempt;
   * the first call's `latenessMs` is kept. Changes nothing when it was not pending. Deferred on
   * PostgreSQL (SqlStatement.defer).
   */
  finish(id: string, status: "completed" | "failed" | "retry_wait", latenessMs: number, error: string, nextAttemptMs: number | null, nowMs: number): void;
  /** The earliest next try of an occurrence in `retry_wait` (the clock's other target), or null when none waits. */
  earliestRetry(): number | null;
  /** Up to `limit` occurrences in `retry_wait` whose next try is at or before `nowMs`, by that moment, then id. */
  dueRetries(nowMs: number, limit: number): OccurrenceRecord[];
  /** Claims the next try of occurrence `id`: `retry_wait` → `pending`, keeping its moment. False when it was not waiting. */
  resume(id: string, nowMs: number): boolean;
  /** {@link resume} of a retry a read ahead of the batch found waiting (ClaimReads), answering nothing: deferred on PostgreSQL. */
  resumeKnownWaiting(id: string, nowMs: number): void;
  /** A pending occurrence found too late when its call was about to be made: `skipped`, with why. False when it was not pending. */
  skip(id: string, latenessMs: number, reason: string, nowMs: number): boolean;
  /** Occurrences claimed whose call has not ended (an owner stopped or crashed meanwhile), by due moment. */
  pending(): OccurrenceRecord[];
  /**
   * Whether occurrences `ids` exist, as read ahead of the running batch by id (PostgreSQL: its
   * {@link ReadAhead.batchRead}, kept for the batch, each insert in it remembered): the ids that
   * exist; undefined when one of them was not read ahead (SQLite, or forgotten: ask by writing).
   */
  knownExisting(ids: string[]): Set<string> | undefined;
  /** Whether {@link knownExisting} can answer (PostgreSQL's): else there is no need to name ids to read ahead. */
  readonly readsAhead: boolean;
}

/** The timer_occurrences table's statements on `db`. */
export function occurrenceStatements(db: Db): OccurrenceStatements {
  const insert = db.prepare(
    sqlFor(db, {
      sqlite: `INSERT OR IGNORE INTO timer_occurrences (${occurrenceColumns}) VALUES (${occurrenceMarks})`,
      postgres: `INSERT INTO timer_occurrences (${occurrenceColumns}) VALUES (${occurrenceMarks}) ON CONFLICT DO NOTHING`,
    }),
  ); // positional, not named: a claim inserts one per call, and binding 16 named values from an object costs twice as much
  const insertManyStatements = new Map<string, SqlStatement>();
  const insertManyOf = (rows: number, returning: boolean): SqlStatement => {
    const key = `${rows}${returning ? "r" : ""}`;
    let statement = insertManyStatements.get(key);
    if (!statement) {
      const values = Array.from({ length: rows }, () => `(${occurrenceMarks})`).join(", ");
      statement = db.prepare(`INSERT INTO timer_occurrences (${occurrenceColumns}) VALUES ${values} ON CONFLICT DO NOTHING${returning ? " RETURNING id" : ""}`);
      insertManyStatements.set(key, statement);
    }
    return statement;
  };
  const skip = db.prepare("UPDATE timer_occurrences SET status = 'skipped', lateness_ms = ?, error = ?, updated_at = ? WHERE id = ? AND status = 'pending'");
  // The lateness kept is the first call's; later tries are retries, not late calls.
  const finish = prepareMerged(
    db,
    `UPDATE timer_occurrences SET status = ?, next_attempt_ms = ?, lateness_ms = CASE WHEN attempts = 0 THEN ? ELSE lateness_ms END,
       attempts = attempts + 1, error = ?, updated_at = ? WHERE id = ? AND status = 'pending'`,
    {
      table: "timer_occurrences",
      names: ["status", "next_attempt_ms", "lateness_ms", "error", "updated_at", "id"],
      key: "id",
      sql: `UPDATE timer_occurrences AS o SET status = m.status, next_attempt_ms = m.next_attempt_ms,
              lateness_ms = CASE WHEN o.attempts = 0 THEN m.lateness_ms ELSE o.lateness_ms END,
              attempts = o.attempts + 1, error = m.error, updated_at = m.updated_at
            FROM jsonb_to_recordset(?::jsonb) AS m(status text, next_attempt_ms bigint, lateness_ms bigint, error text, updated_at bigint, id text)
            WHERE o.id = m.id AND o.status = 'pending'`,
    },
  );
  const pending = db.prepare("SELECT * FROM timer_occurrences WHERE status = 'pending' ORDER BY due_ms");
  const earliestRetry = db.prepare("SELECT next_attempt_ms FROM timer_occurrences WHERE status = 'retry_wait' ORDER BY next_attempt_ms LIMIT 1");
  const retriesDue = limitedStatement(
    db,
    "SELECT * FROM timer_occurrences WHERE status = 'retry_wait' AND next_attempt_ms <= ? ORDER BY next_attempt_ms, id LIMIT ?",
  );
  const resume = db.prepare("UPDATE timer_occurrences SET status = 'pending', updated_at = ? WHERE id = ? AND status = 'retry_wait'");
  // PostgreSQL: the occurrence ids the running batch read ahead (whether each existed); each insert below remembers the ids it wrote.
  const kept = db.readAhead ? db.readForBatch?.("timer_occurrences") : undefined;
  const made = (id: string) => {
    if (kept?.recalled(id) === null) kept.remember(id, true);
  };
  const byIds = "SELECT id FROM timer_occurrences WHERE id IN (SELECT jsonb_array_elements_text(?::jsonb))";
  return {
    readsAhead: kept !== undefined,
    batchRead(ids: string[]): BatchRead | undefined {
      if (!kept) return undefined;
      return {
        sql: byIds,
        params: [JSON.stringify([...new Set(ids)])],
        take(rows) {
          const found = new Set((rows as { id: string }[]).map((r) => r.id));
          for (const id of ids) kept.remember(id, found.has(id) ? true : null);
        },
      };
    },
    prefetch(ids: string[]): Promise<void> | undefined {
      const read = kept && this.batchRead?.(ids);
      const readAhead = db.readAhead?.bind(db);
      return read && readAhead ? readAhead(read.sql, read.params).then(read.take) : undefined;
    },
    knownExisting(ids: string[]): Set<string> | undefined {
      if (!kept) return undefined;
      const existing = new Set<string>();
      for (const id of ids) {
        const recalled = kept.recalled(id);
        if (recalled === undefined) return undefined;
        if (recalled !== null) existing.add(id);
      }
      return existing;
    },
    insert(o: NewOccurrence, nowMs: number): boolean {
      if (insert.run(...occurrenceValues(o, nowMs)).changes !== 1) return false;
      made(o.id);
      return true;
    },
    insertMany(list: NewOccurrence[], nowMs: number): Set<string> {
      const written = new Set<string>();
      if (dialectOf(db) === "sqlite") {
        for (const o of list) if (insert.run(...occurrenceValues(o, nowMs)).changes === 1) written.add(o.id);
        return written;
      }
      for (let from = 0; from < list.length; from += insertManyRows) {
        const chunk = list.slice(from, from + insertManyRows);
        const statement = insertManyOf(chunk.length, true);
        for (const id of statement.pluck().all(...chunk.flatMap((o) => occurrenceValues(o, nowMs))) as string[]) {
          written.add(id);
          made(id);
        }
      }
      return written;
    },
    insertKnownNew(list: NewOccurrence[], nowMs: number): void {
      if (dialectOf(db) === "sqlite") {
        for (const o of list) insert.run(...occurrenceValues(o, nowMs));
        return;
      }
      for (let from = 0; from < list.length; from += insertManyRows) {
        const chunk = list.slice(from, from + insertManyRows);
        defer(insertManyOf(chunk.length, false), ...chunk.flatMap((o) => occurrenceValues(o, nowMs)));
        for (const o of chunk) made(o.id);
      }
    },
    finish(id: string, status: "completed" | "failed" | "retry_wait", latenessMs: number, error: string, nextAttemptMs: number | null, nowMs: number): void {
      defer(finish, status, nextAttemptMs, latenessMs, error, nowMs, id);
    },
    earliestRetry(): number | null {
      const row = earliestRetry.get() as { next_attempt_ms: number } | undefined;
      return row ? row.next_attempt_ms : null;
    },
    dueRetries(nowMs: number, limit: number): OccurrenceRecord[] {
      return (retriesDue(limit).all(nowMs) as OccurrenceRow[]).map(occurrenceFromRow);
    },
    resume(id: string, nowMs: number): boolean {
      return resume.run(nowMs, id).changes === 1;
    },
    resumeKnownWaiting(id: string, nowMs: number): void {
      defer(resume, nowMs, id);
    },
    skip(id: string, latenessMs: number, reason: string, nowMs: number): boolean {
      return skip.run(latenessMs, reason, nowMs, id).changes === 1;
    },
    pending(): OccurrenceRecord[] {
      return (pending.all() as OccurrenceRow[]).map(occurrenceFromRow);
    },
  };
}

/** A new occurrence's row: claimed (`origin` schedule, the default), triggered or backfilled. */
export type NewOccurrence = Pick<
  OccurrenceRecord,
  "id" | "timerId" | "dueMs" | "action" | "input" | "actor" | "overdue" | "retryDelaysMs" | "status" | "latenessMs" | "error"
> &
  Partial<Pick<OccurrenceRecord, "nextAttemptMs" | "origin">>;
