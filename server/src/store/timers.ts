import type { DstPolicy } from "../time/cron.js";
import { defaultSchedulePolicy, type Overdue, type PauseState, type SchedulePolicy, type TimerKind, type TimerRecord, type TimerSpec } from "../time/timers.js";
import { sqlFor, type Db } from "./sql.js";
import { limitedStatement } from "./limited.js";
import type { ActorRecord } from "./events.js";

// The statements on `timers` and `timer_occurrences`, one function each.
// Reads may run anywhere; writes only inside a committer unit, in the same unit as the
// `timer.*` event they go with. None of them writes events. Times are ms since the
// epoch, UTC, passed in (STYLE 9).

/**
 * The columns a timer is read with, in the order of {@link TimerCells}. Timers are read as raw
 * rows (arrays): better-sqlite3 builds a row object through V8's slow property path, ~9 µs for
 * a timer's 19 columns against ~4 µs as an array (a claim reads one per call).
 */
const timerColumns = "id, kind, action, input, spec, next_due_ms, actor, plugin, schedule, overdue, chain_depth, occurrences, region, disabled, retry_delays_ms, policy, paused, created_at, updated_at";

/** A timer's row as read with {@link timerColumns}; JSON columns as text, `paused` JSON {note, at_ms, held_due_ms} or null. */
type TimerCells = [
  id: string,
  kind: TimerKind,
  action: string,
  input: string,
  spec: string,
  nextDueMs: number | null,
  actor: string | null,
  plugin: string,
  schedule: string,
  overdue: string,
  chainDepth: number,
  occurrences: number,
  region: number,
  disabled: number,
  retryDelaysMs: string,
  policy: string | null,
  paused: string | null,
  createdAt: number,
  updatedAt: number,
];

/** A spec's stored JSON form: `{"at": ms}`, `{"cron": expr, "zone": iana}` or `{"every_ms": ms}`. */
export function specToJson(spec: TimerSpec): Record<string, unknown> {
  switch (spec.kind) {
    case "at":
      return { at: spec.atMs };
    case "cron":
      return { cron: spec.expression, zone: spec.zone, ...dstToJson(spec.dst) };
    case "every":
      return { every_ms: spec.everyMs };
  }
}

function specFromJson(json: Record<string, unknown>): TimerSpec {
  if (typeof json.at === "number") return { kind: "at", atMs: json.at };
  if (typeof json.cron === "string") return { kind: "cron", expression: json.cron, zone: String(json.zone ?? ""), ...dstFromJson(json) };
  return { kind: "every", everyMs: Number(json.every_ms) };
}

/** An overdue bound's stored JSON form, as in the proto: `{"unbounded": true}`, `{"max_lateness_ms": n}`, `{"on_time_or_never": true}`. */
export function overdueToJson(overdue: Overdue): Record<string, unknown> {
  switch (overdue.kind) {
    case "unbounded":
      return { unbounded: true };
    case "max":
      return { max_lateness_ms: overdue.maxLatenessMs };
    case "onTimeOrNever":
      return { on_time_or_never: true };
  }
}

function overdueFromJson(json: Record<string, unknown>): Overdue {
  if (typeof json.max_lateness_ms === "number") return { kind: "max", maxLatenessMs: json.max_lateness_ms };
  if (json.on_time_or_never) return { kind: "onTimeOrNever" };
  return { kind: "unbounded" };
}

function timerFromCells(cells: TimerCells): TimerRecord {
  const [id, kind, action, input, spec, nextDueMs, actor, plugin, schedule, overdue, chainDepth, occurrences, region, disabled, retryDelaysMs, policy, paused, createdAt, updatedAt] = cells;
  return {
    id,
    kind,
    action,
    input: JSON.parse(input),
    spec: specFromJson(JSON.parse(spec)),
    nextDueMs,
    actor: actor === null ? null : JSON.parse(actor),
    plugin,
    schedule,
    overdue: overdueFromJson(JSON.parse(overdue)),
    chainDepth,
    occurrences,
    region,
    disabled: disabled === 1,
    retryDelaysMs: JSON.parse(retryDelaysMs),
    policy: policyFromJson(JSON.parse(policy ?? "{}")),
    paused: pausedFromJson(paused),
    createdAt,
    updatedAt,
  };
}

/** A counter that keeps one-shots due in the same ms apart in {@link placeByDue}. */
let placeSeq = 0;

/**
 * The rowid a new one-shot timer (a delay, an `at` timer) is stored under: its due moment times
 * 1,024 plus a counter, so the rows of timers due together sit on neighbouring pages and a burst's
 * claims (which read and update them in due order) touch a few pages instead of one scattered page
 * each. Null (SQLite's next rowid) for recurring timers and those without a next due moment; an
 * existing row keeps its rowid when set again (the upsert updates it in place); a place already
 * taken (two one-shots due the same ms, 1,024 puts apart) falls back to SQLite's next rowid.
 */
function placeByDue(timer: Pick<TimerRecord, "spec" | "nextDueMs">): number | null {
  if (timer.spec.kind !== "at" || timer.nextDueMs === null) return null;
  placeSeq = (placeSeq + 1) & 1023;
  const rowid = Math.max(0, timer.nextDueMs) * 1024 + placeSeq;
  return Number.isSafeInteger(rowid) ? rowid : null; // due after the year 2255: SQLite's next rowid
}

/**
 * Where a ListTimers page starts: after this (next due, id), or in the tail of timers without a
 * next due moment (`dueMs` null: spent, disabled, paused) after this (last change, id).
 */
export type TimerCursor =
  | { dueMs: number; id: string }
  /** `updatedAt`: the tail's order, `updated_at` in ms since the epoch. */
  | { dueMs: null; id: string; updatedAt: number };

/** The statements on `timers`. */
export function timerStatements(db: Db) {
  const get = db.prepare(`SELECT ${timerColumns} FROM timers WHERE id = ?`).raw();
  const putColumns = "id, kind, action, input, spec, next_due_ms, actor, plugin, schedule, overdue, chain_depth, region, disabled, retry_delays_ms, policy, created_at, updated_at";
  const putValues = "@id, @kind, @action, @input, @spec, @nextDueMs, @actor, @plugin, @schedule, @overdue, @chainDepth, @region, @disabled, @retryDelaysMs, @policy, @now, @now";
  const putUpsert = `ON CONFLICT (id) DO UPDATE SET kind = excluded.kind, action = excluded.action, input = excluded.input, spec = excluded.spec,
       next_due_ms = excluded.next_due_ms, actor = excluded.actor, plugin = excluded.plugin, schedule = excluded.schedule,
       overdue = excluded.overdue, chain_depth = excluded.chain_depth, region = excluded.region, disabled = excluded.disabled,
       retry_delays_ms = excluded.retry_delays_ms, policy = excluded.policy, created_at = excluded.created_at, updated_at = excluded.updated_at`;
  const put = db.prepare(
    sqlFor(db, {
      sqlite: `INSERT INTO timers (rowid, ${putColumns}) VALUES (@rowid, ${putValues}) ${putUpsert}`,
      postgres: `INSERT INTO timers (${putColumns}) VALUES (${putValues}) ${putUpsert}`, // no rowid to place rows by: the timers_by_due index orders them
    }),
  );
  const declared = db.prepare(`SELECT ${timerColumns} FROM timers WHERE kind = 'declared' ORDER BY plugin, schedule`).raw();
  const remove = db.prepare("DELETE FROM timers WHERE id = ?");
  const earliest = db.prepare("SELECT next_due_ms FROM timers WHERE next_due_ms IS NOT NULL ORDER BY next_due_ms LIMIT 1");
  const pendingCount = db.prepare("SELECT count(*) AS n FROM timers WHERE next_due_ms IS NOT NULL");
  const due = limitedStatement(db, `SELECT ${timerColumns} FROM timers WHERE next_due_ms <= ? ORDER BY next_due_ms, id LIMIT ?`, { raw: true });
  const dueCount = limitedStatement(
    db,
    sqlFor(db, {
      sqlite: "SELECT count(*) AS n FROM (SELECT 1 FROM timers WHERE next_due_ms <= ? LIMIT ?)",
      postgres: "SELECT count(*) AS n FROM (SELECT 1 FROM timers WHERE next_due_ms <= ? LIMIT ?) AS due", // a subquery in FROM needs a name
    }),
  );
  const advance = db.prepare("UPDATE timers SET next_due_ms = ?, occurrences = occurrences + ?, updated_at = ? WHERE id = ?");
  const listScheduled = limitedStatement(
    db,
    `SELECT ${timerColumns} FROM timers WHERE next_due_ms IS NOT NULL AND (next_due_ms, id) > (?, ?) AND (? = '' OR kind = ?) ORDER BY next_due_ms, id LIMIT ?`,
    { raw: true },
  );
  const listSpent = limitedStatement(
    db,
    `SELECT ${timerColumns} FROM timers WHERE next_due_ms IS NULL AND (updated_at, id) > (?, ?) AND (? = '' OR kind = ?) ORDER BY updated_at, id LIMIT ?`,
    { raw: true },
  );
  return {
    /** The timer `id`, or undefined. */
    get(id: string): TimerRecord | undefined {
      const cells = get.get(id) as TimerCells | undefined;
      return cells && timerFromCells(cells);
    },
    /**
     * Sets timer `timer.id`: inserts it, or replaces every field of the existing one,
     * its schedule policy included, but its occurrence count (the id's history goes on)
     * and its pause state (TimerControlStatements.setPaused).
     */
    put(timer: Omit<TimerRecord, "occurrences" | "createdAt" | "updatedAt">, nowMs: number): void {
      const row = {
        ...timer,
        rowid: placeByDue(timer),
        input: JSON.stringify(timer.input),
        spec: JSON.stringify(specToJson(timer.spec)),
        actor: timer.actor === null ? null : JSON.stringify(timer.actor),
        overdue: JSON.stringify(overdueToJson(timer.overdue)),
        disabled: timer.disabled ? 1 : 0,
        retryDelaysMs: JSON.stringify(timer.retryDelaysMs),
        policy: JSON.stringify(policyToJson(timer.policy)),
        now: nowMs,
      };
      try {
        put.run(row);
      } catch (e) {
        if (!(e instanceof Error && "code" in e && e.code === "SQLITE_CONSTRAINT_ROWID") || row.rowid === null) throw e;
        put.run({ ...row, rowid: null }); // its place was taken (another one-shot due the same ms): SQLite picks one
      }
    },
    /** Every declared schedule, by plugin and schedule name (the `timers_declared` index). */
    declared(): TimerRecord[] {
      return (declared.all() as TimerCells[]).map(timerFromCells);
    },
    /** Deletes timer `id`; false when there was none. */
    remove(id: string): boolean {
      return remove.run(id).changes === 1;
    },
    /** The smallest next due moment of any timer (the clock's target), or null when none is pending. */
    earliestDue(): number | null {
      const row = earliest.get() as { next_due_ms: number } | undefined;
      return row ? row.next_due_ms : null;
    },
    /** Timers with a next due moment (not spent, disabled or another region's); counted on the `timers_by_due` index (which holds only those). */
    pendingCount(): number {
      return (pendingCount.get() as { n: number }).n;
    },
    /** Up to `limit` timers due at or before `nowMs`, earliest first. */
    due(nowMs: number, limit: number): TimerRecord[] {
      return (due(limit).all(nowMs) as TimerCells[]).map(timerFromCells);
    },
    /** How many timers are due by `nowMs` (ms since the epoch), counting up to `limit`. */
    dueCount(nowMs: number, limit: number): number {
      return (dueCount(limit).get(nowMs) as { n: number }).n;
    },
    /** Moves timer `id` to `nextDueMs` (null: spent) and adds `called` (0 or 1) to its occurrences. */
    advance(id: string, nextDueMs: number | null, called: number, nowMs: number): void {
      advance.run(nextDueMs, called, nowMs, id);
    },
    /**
     * A page of timers in ListTimers order: pending ones by (next due, id) on
     * `timers_by_due`, then those without a next due moment (spent, disabled, paused) by (last
     * change, id) on `timers_unscheduled`; `after` null starts at the beginning; `kind` "" means all kinds.
     */
    list(after: TimerCursor | null, kind: TimerKind | "", limit: number): TimerRecord[] {
      const rows: TimerCells[] = [];
      if (!after || after.dueMs !== null) {
        rows.push(...(listScheduled(limit).all(after?.dueMs ?? -Number.MAX_SAFE_INTEGER, after?.id ?? "", kind, kind) as TimerCells[]));
      }
      if (rows.length < limit) {
        const tail = after && after.dueMs === null ? after : { updatedAt: -Number.MAX_SAFE_INTEGER, id: "" };
        rows.push(...(listSpent(limit - rows.length).all(tail.updatedAt, tail.id, kind, kind) as TimerCells[]));
      }
      return rows.map(timerFromCells);
    },
  };
}

/** The statements of {@link timerStatements}. */
export type TimerStatements = ReturnType<typeof timerStatements>;

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
}

interface OccurrenceRow {
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

function occurrenceFromRow(r: OccurrenceRow): OccurrenceRecord {
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
const activeStatus = "(status = 'pending' OR status = 'retry_wait' OR status = 'buffered')";
const endedStatus = "(status = 'completed' OR status = 'failed' OR status = 'skipped')";

const occurrenceColumns = "id, timer_id, due_ms, action, input, actor, overdue, retry_delays_ms, status, call_id, lateness_ms, error, claimed_at, updated_at, next_attempt_ms, origin";
const occurrenceMarks = "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?";

/** The statements on `timer_occurrences`. */
export function occurrenceStatements(db: Db) {
  const insert = db.prepare(
    sqlFor(db, {
      sqlite: `INSERT OR IGNORE INTO timer_occurrences (${occurrenceColumns}) VALUES (${occurrenceMarks})`,
      postgres: `INSERT INTO timer_occurrences (${occurrenceColumns}) VALUES (${occurrenceMarks}) ON CONFLICT DO NOTHING`,
    }),
  ); // positional, not named: a claim inserts one per call, and binding 16 named values from an object costs twice as much
  const skip = db.prepare("UPDATE timer_occurrences SET status = 'skipped', lateness_ms = ?, error = ?, updated_at = ? WHERE id = ? AND status = 'pending'");
  // The lateness kept is the first call's; later tries are retries, not late calls.
  const finish = db.prepare(
    `UPDATE timer_occurrences SET status = ?, next_attempt_ms = ?, lateness_ms = CASE WHEN attempts = 0 THEN ? ELSE lateness_ms END,
       attempts = attempts + 1, error = ?, updated_at = ? WHERE id = ? AND status = 'pending'`,
  );
  const pending = db.prepare("SELECT * FROM timer_occurrences WHERE status = 'pending' ORDER BY due_ms");
  const earliestRetry = db.prepare("SELECT next_attempt_ms FROM timer_occurrences WHERE status = 'retry_wait' ORDER BY next_attempt_ms LIMIT 1");
  const retriesDue = limitedStatement(db, "SELECT * FROM timer_occurrences WHERE status = 'retry_wait' AND next_attempt_ms <= ? ORDER BY next_attempt_ms, id LIMIT ?");
  const resume = db.prepare("UPDATE timer_occurrences SET status = 'pending', updated_at = ? WHERE id = ? AND status = 'retry_wait'");
  return {
    /**
     * Records a claimed occurrence (`pending`, or `skipped` with `latenessMs` and the reason
     * in `error`), or a triggered or backfilled one (`retry_wait` until `nextAttemptMs`).
     * False, writing nothing, when occurrence `id` already exists (the same timer id and due
     * moment were claimed before).
     */
    insert(o: NewOccurrence, nowMs: number): boolean {
      const actor = o.actor === null ? null : JSON.stringify(o.actor);
      const overdue = JSON.stringify(overdueToJson(o.overdue));
      const input = JSON.stringify(o.input);
      return insert.run(o.id, o.timerId, o.dueMs, o.action, input, actor, overdue, JSON.stringify(o.retryDelaysMs), o.status, o.id, o.latenessMs, o.error, nowMs, nowMs, o.nextAttemptMs ?? null, o.origin ?? "schedule").changes === 1;
    },
    /**
     * One call of pending occurrence `id` ended: `completed`, `failed` for good, or
     * `retry_wait` until `nextAttemptMs` (null for the others); `error` says why it failed.
     * Counts the attempt; the first call's `latenessMs` is kept. False when it was not pending.
     */
    finish(id: string, status: "completed" | "failed" | "retry_wait", latenessMs: number, error: string, nextAttemptMs: number | null, nowMs: number): boolean {
      return finish.run(status, nextAttemptMs, latenessMs, error, nowMs, id).changes === 1;
    },
    /** The earliest `next_attempt_ms` of an occurrence in `retry_wait` (the clock's other target), or null. */
    earliestRetry(): number | null {
      const row = earliestRetry.get() as { next_attempt_ms: number } | undefined;
      return row ? row.next_attempt_ms : null;
    },
    /** Up to `limit` occurrences in `retry_wait` whose next try is at or before `nowMs`, earliest first. */
    dueRetries(nowMs: number, limit: number): OccurrenceRecord[] {
      return (retriesDue(limit).all(nowMs) as OccurrenceRow[]).map(occurrenceFromRow);
    },
    /** Claims the next try of occurrence `id`: `retry_wait` → `pending` (keeping its moment). False when it was not waiting. */
    resume(id: string, nowMs: number): boolean {
      return resume.run(nowMs, id).changes === 1;
    },
    /** A pending occurrence found too late when its call was about to be made: `skipped`, with why. False when it was not pending. */
    skip(id: string, latenessMs: number, reason: string, nowMs: number): boolean {
      return skip.run(latenessMs, reason, nowMs, id).changes === 1;
    },
    /** Occurrences claimed whose call has not ended (an owner stopped or crashed meanwhile), earliest first. */
    pending(): OccurrenceRecord[] {
      return (pending.all() as OccurrenceRow[]).map(occurrenceFromRow);
    },
  };
}

/** The statements of {@link occurrenceStatements}. */
export type OccurrenceStatements = ReturnType<typeof occurrenceStatements>;

// ---- Schedule policies, DST policies, pause, trigger, backfill and overlap ----
// New statements only; the ones above are untouched. Writes run inside committer units, with
// the `timer.*` event they go with.

/** A cron spec's DST policy in stored JSON: nothing for the default (shift / first), so specs stored before read the same. */
function dstToJson(dst: DstPolicy | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (dst && dst.gap !== "shift") out.dst_gap = dst.gap;
  if (dst && dst.repeated !== "first") out.dst_repeated = dst.repeated;
  return out;
}

function dstFromJson(json: Record<string, unknown>): { dst?: DstPolicy } {
  if (json.dst_gap === undefined && json.dst_repeated === undefined) return {};
  return { dst: { gap: json.dst_gap === "skip" ? "skip" : "shift", repeated: json.dst_repeated === "last" ? "last" : json.dst_repeated === "both" ? "both" : "first" } };
}

/** A schedule policy's stored JSON form: only the fields that differ from the default (so `{}` is the default). */
export function policyToJson(policy: SchedulePolicy): Record<string, unknown> {
  const d = defaultSchedulePolicy;
  const out: Record<string, unknown> = {};
  if (policy.jitterMs !== d.jitterMs) out.jitter_ms = policy.jitterMs;
  if (policy.startMs !== null) out.start_ms = policy.startMs;
  if (policy.endMs !== null) out.end_ms = policy.endMs;
  if (policy.maxCount !== d.maxCount) out.max_count = policy.maxCount;
  if (policy.overlap !== d.overlap) out.overlap = policy.overlap;
  if (policy.catchUp !== d.catchUp) out.catch_up = policy.catchUp;
  if (policy.catchUpWindowMs !== d.catchUpWindowMs) out.catch_up_window_ms = policy.catchUpWindowMs;
  if (policy.anchorMs !== null) out.anchor_ms = policy.anchorMs;
  return out;
}

/** The schedule policy of its stored JSON form (missing fields: the default). */
function policyFromJson(json: Record<string, unknown>): SchedulePolicy {
  const num = (v: unknown, fallback: number) => (typeof v === "number" ? v : fallback);
  const overlap = json.overlap === "skip" || json.overlap === "bufferOne" ? json.overlap : "allow";
  const catchUp = json.catch_up === "allWithinWindow" || json.catch_up === "none" ? json.catch_up : "latest";
  return {
    jitterMs: num(json.jitter_ms, 0),
    startMs: typeof json.start_ms === "number" ? json.start_ms : null,
    endMs: typeof json.end_ms === "number" ? json.end_ms : null,
    maxCount: num(json.max_count, 0),
    overlap,
    catchUp,
    catchUpWindowMs: num(json.catch_up_window_ms, 0),
    anchorMs: typeof json.anchor_ms === "number" ? json.anchor_ms : null,
  };
}

function pausedFromJson(text: string | null): PauseState | null {
  if (text === null) return null;
  const json = JSON.parse(text) as Record<string, unknown>;
  return { note: String(json.note ?? ""), atMs: Number(json.at_ms), heldDueMs: typeof json.held_due_ms === "number" ? json.held_due_ms : null };
}

/** A new occurrence's row: claimed (`origin` schedule, the default), triggered or backfilled. */
type NewOccurrence = Pick<OccurrenceRecord, "id" | "timerId" | "dueMs" | "action" | "input" | "actor" | "overdue" | "retryDelaysMs" | "status" | "latenessMs" | "error"> &
  Partial<Pick<OccurrenceRecord, "nextAttemptMs" | "origin">>;

/** What an occurrence of TriggerTimer or BackfillTimer is made of. */
export type QueuedOccurrence = Pick<OccurrenceRecord, "id" | "timerId" | "dueMs" | "action" | "input" | "actor" | "overdue" | "retryDelaysMs">;

/** The occurrences of a timer that have not ended (overlap): running = pending or waiting for a (re)try; buffered = held by "buffer one". */
interface ActiveOccurrences {
  running: number;
  buffered: number;
}

/** The statements for schedule policies, pause, trigger, backfill and overlap. */
export function timerControlStatements(db: Db) {
  const setPaused = db.prepare("UPDATE timers SET paused = ?, next_due_ms = ?, updated_at = ? WHERE id = ?");
  const occurrences = occurrenceStatements(db);
  const active = db.prepare(
    `SELECT count(*) FILTER (WHERE status <> 'buffered') AS running, count(*) FILTER (WHERE status = 'buffered') AS buffered
     FROM timer_occurrences WHERE timer_id = ? AND ${activeStatus}`,
  );
  const release = db.prepare(
    `UPDATE timer_occurrences SET status = 'retry_wait', next_attempt_ms = ${sqlFor(db, { sqlite: "max", postgres: "GREATEST" })}(?, due_ms), updated_at = ?
     WHERE timer_id = ? AND ${activeStatus} AND status = 'buffered'
       AND NOT EXISTS (SELECT 1 FROM timer_occurrences WHERE timer_id = ? AND ${activeStatus} AND status <> 'buffered')`,
  );
  return {
    /** Pauses (state set) or resumes (null) timer `id` with its new next due moment (null while paused). */
    setPaused(id: string, paused: PauseState | null, nextDueMs: number | null, nowMs: number): void {
      const json = paused === null ? null : JSON.stringify({ note: paused.note, at_ms: paused.atMs, held_due_ms: paused.heldDueMs });
      setPaused.run(json, nextDueMs, nowMs, id);
    },
    /**
     * Records a triggered or backfilled occurrence waiting for its first call at
     * `nextAttemptMs` (`retry_wait`, attempts 0): the clock's retry claim makes it. False,
     * writing nothing, when occurrence `id` already exists (made before).
     */
    queue(o: QueuedOccurrence, origin: "trigger" | "backfill", nextAttemptMs: number, nowMs: number): boolean {
      return occurrences.insert({ ...o, status: "retry_wait", latenessMs: null, error: "", nextAttemptMs, origin }, nowMs);
    },
    /** The occurrences of timer `timerId` that have not ended (overlap; the `timer_occurrences_active` index). */
    activeOf(timerId: string): ActiveOccurrences {
      return active.get(timerId) as ActiveOccurrences;
    },
    /**
     * Releases timer `timerId`'s buffered occurrence (the "buffer one" overlap policy) when none of its
     * occurrences runs: `retry_wait` due at `nowMs`, or at its own moment when that is later (it
     * was buffered inside the clock's lookahead, before its moment: never made early), so the
     * clock makes it. True when released.
     */
    releaseBuffered(timerId: string, nowMs: number): boolean {
      return release.run(nowMs, nowMs, timerId, timerId).changes > 0;
    },
  };
}

/** The statements of {@link timerControlStatements}. */
export type TimerControlStatements = ReturnType<typeof timerControlStatements>;

// ---- Retention (time/retention.ts) ----
// Deletes only; writes no events (the log keeps the timers' and calls' history). Each runs in
// a committer unit of its own and deletes at most `limit` rows, oldest first, on the partial
// indexes of migrations 0008 and 0012 (their conditions are repeated word for word so SQLite uses them).

/** The statements of the retention sweep: ended occurrences and spent timers older than a cutoff. */
export function retentionStatements(db: Db) {
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
  return {
    /**
     * Deletes up to `limit` occurrences that ended (completed, failed, skipped) before
     * `beforeMs` (their last change, `updated_at`), oldest first; returns how many. Occurrences
     * pending, waiting for a (re)try or buffered are never deleted.
     */
    deleteEndedOccurrences(beforeMs: number, limit: number): number {
      return endedOccurrences.run(beforeMs, limit).changes;
    },
    /**
     * Deletes up to `limit` spent timers (no next due moment, not paused, not disabled, not
     * declared: fired one-shots and delays, recurring timers past their end or maximum count)
     * last changed before `beforeMs` and with no occurrence active (one pending, waiting for a
     * (re)try or buffered keeps its timer; ended ones go by their own age, each a snapshot of
     * what it called), oldest first; returns how many.
     */
    deleteSpentTimers(beforeMs: number, limit: number): number {
      return spentTimers.run(beforeMs, limit).changes;
    },
  };
}

/** The statements of {@link retentionStatements}. */
export type RetentionStatements = ReturnType<typeof retentionStatements>;
