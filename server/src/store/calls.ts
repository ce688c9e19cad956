import type { ActorRecord } from "./events.js";
import { defer, dialectOf, prepareMerged, sqlFor, type Db, type SqlStatement } from "./sql.js";

/** A call's state in `action_calls`. */
export type CallState = "running" | "completed" | "failed";

/** A stored action call; times in ms since the epoch (UTC). */
export interface CallRow {
  callId: string;
  /** `plugin.action`. */
  action: string;
  /** sha256 (hex) of the canonical input. */
  inputHash: string;
  /** Who every attempt runs as; null = the system. */
  actor: ActorRecord | null;
  /** True when the call's action.* events are in the log. */
  recorded: boolean;
  state: CallState;
  /** The last attempt started, from 1. */
  attempt: number;
  /** Output of a completed unrecorded call; undefined otherwise (recorded calls keep it in action.completed). */
  output: Record<string, unknown> | undefined;
  /** Why the last attempt failed ("" when none did). */
  error: string;
  updatedAt: number;
  /** Trace context of the span of the call (as EventRecord.trace); absent: none recorded. */
  trace?: string;
}

interface Row {
  call_id: string;
  action: string;
  input_hash: string;
  actor: string | null;
  recorded: number;
  state: CallState;
  attempt: number;
  output: string | null;
  error: string;
  updated_at: number;
  trace: string | null;
}

function fromRow(r: Row): CallRow {
  const call: CallRow = {
    callId: r.call_id,
    action: r.action,
    inputHash: r.input_hash,
    actor: r.actor === null ? null : JSON.parse(r.actor),
    recorded: r.recorded === 1,
    state: r.state,
    attempt: r.attempt,
    output: r.output === null ? undefined : JSON.parse(r.output),
    error: r.error,
    updatedAt: r.updated_at,
  };
  if (r.trace) call.trace = r.trace;
  return call;
}

/** What {@link CallStatements.insert} starts. */
export type NewCall = Pick<CallRow, "callId" | "action" | "inputHash" | "actor" | "recorded" | "attempt" | "trace"> & {
  /** A limited action's keys, JSON [concurrency key, rate key] (see {@link LimitedCall}); absent: none. */
  limitKeys?: string;
};

/**
 * The statements on `action_calls`. Reads may run anywhere; writes only inside a committer unit,
 * in the same unit as the action.* event they go with (a unit that throws undoes them). None
 * writes events. Times are ms since the epoch, UTC, passed in.
 */
export interface CallStatements {
  /** The call `callId`, or undefined when it never started. */
  get(callId: string): CallRow | undefined;
  /**
   * Starts a new call: state `running` at `call.attempt` (1 for a first run), no output, no error.
   * The call id must be new (else {@link restart}; look it up first): a taken one fails the unit
   * on SQLite, and the batch on PostgreSQL, where the insert is deferred (SqlStatement.defer).
   */
  insert(call: NewCall, nowMs: number): void;
  /**
   * Runs a call again: state `running` at `call.attempt` (> the stored one), `recorded` as given;
   * a call with no row (the retention deleted it) is started as {@link insert} starts one. One
   * statement answering nothing (no look-up first): deferred on PostgreSQL.
   */
  startAgain(call: NewCall, nowMs: number): void;
  /**
   * Marks attempt `attempt` completed, its error cleared; `output` is stored for unrecorded calls
   * only (undefined for recorded ones). False, changing nothing, when the call is not at that attempt.
   */
  complete(callId: string, attempt: number, output: Record<string, unknown> | undefined, nowMs: number): boolean;
  /** Marks attempt `attempt` failed with `error`. False, changing nothing, when the call is not at that attempt. */
  fail(callId: string, attempt: number, error: string, nowMs: number): boolean;
  /**
   * {@link complete} for the attempt a run of this owner started and holds, whose row is at
   * that attempt: nothing is read back (on PostgreSQL the update is deferred, SqlStatement.defer),
   * and a row found otherwise is a fault that fails the unit (SQLite) or its batch (PostgreSQL).
   */
  completeHeld(callId: string, attempt: number, output: Record<string, unknown> | undefined, nowMs: number): void;
  /** {@link fail} for a held attempt, as {@link completeHeld}. */
  failHeld(callId: string, attempt: number, error: string, nowMs: number): void;
}

/** The action_calls table's statements on `db`. */
export function callStatements(db: Db): CallStatements {
  const get = db.prepare(getSql);
  const insert = prepareMerged(
    db,
    `INSERT INTO action_calls (call_id, action, input_hash, actor, recorded, state, attempt, updated_at, trace, limit_keys)
     VALUES (?, ?, ?, ?, ?, 'running', ?, ?, ?, ?)`,
    {
      table: "action_calls",
      names: ["call_id", "action", "input_hash", "actor", "recorded", "attempt", "updated_at", "trace", "limit_keys"],
      key: "call_id",
      sql: `INSERT INTO action_calls (call_id, action, input_hash, actor, recorded, state, attempt, updated_at, trace, limit_keys)
            SELECT call_id, action, input_hash, actor, recorded, 'running', attempt, updated_at, trace, limit_keys
            FROM jsonb_to_recordset(?::jsonb) AS m(call_id text, action text, input_hash text, actor text, recorded bigint, attempt bigint, updated_at bigint, trace text, limit_keys text)`,
    },
  );
  const startAgain = db.prepare(
    `INSERT INTO action_calls (call_id, action, input_hash, actor, recorded, state, attempt, updated_at, trace, limit_keys)
     VALUES (?, ?, ?, ?, ?, 'running', ?, ?, ?, ?)
     ON CONFLICT (call_id) DO UPDATE SET state = 'running', attempt = excluded.attempt, recorded = excluded.recorded, updated_at = excluded.updated_at`,
  );
  /** A new call's values in the order of the insert's columns (state aside). */
  const values = (call: NewCall, nowMs: number) => [
    call.callId,
    call.action,
    call.inputHash,
    call.actor === null ? null : JSON.stringify(call.actor),
    call.recorded ? 1 : 0,
    call.attempt,
    nowMs,
    call.trace ?? null,
    call.limitKeys ?? null,
  ];
  const completeSql = "UPDATE action_calls SET state = 'completed', output = ?, error = '', updated_at = ? WHERE call_id = ? AND attempt = ?";
  const failSql = "UPDATE action_calls SET state = 'failed', error = ?, updated_at = ? WHERE call_id = ? AND attempt = ?";
  const complete = db.prepare(completeSql);
  const failed = db.prepare(failSql);
  // PostgreSQL: the same update, failing (division by zero) unless it changed the row: deferred, it fails its batch instead.
  // A batch's runs go as one update that fails unless it changed a row for each.
  const asserted = (sql: string, names: string[], set: string) =>
    prepareMerged(db, sqlFor(db, { sqlite: sql, postgres: `WITH changed AS (${sql} RETURNING 1) SELECT 1 / count(*) FROM changed` }), {
      table: "action_calls",
      names: [...names, "call_id", "attempt"],
      key: "call_id",
      sql: `WITH changed AS (
              UPDATE action_calls AS c SET ${set}
              FROM jsonb_to_recordset(?::jsonb) AS m(${names.map((n) => `${n} ${n === "updated_at" ? "bigint" : "text"}`).join(", ")}, call_id text, attempt bigint)
              WHERE c.call_id = m.call_id AND c.attempt = m.attempt RETURNING 1)
            SELECT 1 / (CASE WHEN count(*) = jsonb_array_length($1::jsonb) THEN 1 ELSE 0 END) FROM changed`,
    });
  const completeHeld = asserted(completeSql, ["output", "updated_at"], "state = 'completed', output = m.output, error = '', updated_at = m.updated_at");
  const failHeld = asserted(failSql, ["error", "updated_at"], "state = 'failed', error = m.error, updated_at = m.updated_at");
  /** Runs a held attempt's update: SQLite's at once (a row not at that attempt is an error), PostgreSQL's deferred. */
  const held = (statement: SqlStatement, callId: string, attempt: number, ...values: unknown[]) => {
    if (dialectOf(db) === "postgres") return defer(statement, ...values, callId, attempt);
    if (statement.run(...values, callId, attempt).changes !== 1)
      throw new Error(`action call ${callId} is not at attempt ${attempt}, which this owner started`);
  };
  return {
    get(callId: string): CallRow | undefined {
      const row = get.get(callId) as Row | undefined;
      return row && fromRow(row);
    },
    insert(call: NewCall, nowMs: number): void {
      defer(insert, ...values(call, nowMs));
    },
    startAgain(call: NewCall, nowMs: number): void {
      defer(startAgain, ...values(call, nowMs));
    },
    complete(callId: string, attempt: number, output: Record<string, unknown> | undefined, nowMs: number): boolean {
      return complete.run(output === undefined ? null : JSON.stringify(output), nowMs, callId, attempt).changes === 1;
    },
    fail(callId: string, attempt: number, error: string, nowMs: number): boolean {
      return failed.run(error, nowMs, callId, attempt).changes === 1;
    },
    completeHeld(callId: string, attempt: number, output: Record<string, unknown> | undefined, nowMs: number): void {
      held(completeHeld, callId, attempt, output === undefined ? null : JSON.stringify(output), nowMs);
    },
    failHeld(callId: string, attempt: number, error: string, nowMs: number): void {
      held(failHeld, callId, attempt, error, nowMs);
    },
  };
}

/**
 * The retention sweep's statement on `action_calls` (actions/retention.ts): deletes up to `limit`
 * calls that completed or failed before `beforeMs` (their last change), oldest first, through the
 * `action_calls_finished` index (migration 0014); running calls never. Returns how many.
 */
export function finishedCallsDeleter(db: Db): (beforeMs: number, limit: number) => number {
  const finished = db.prepare(
    sqlFor(db, {
      sqlite: `DELETE FROM action_calls WHERE rowid IN (
       SELECT rowid FROM action_calls INDEXED BY action_calls_finished
       WHERE (state = 'completed' OR state = 'failed') AND updated_at < ? ORDER BY updated_at LIMIT ?)`,
      postgres: `DELETE FROM action_calls WHERE call_id IN (
       SELECT call_id FROM action_calls WHERE (state = 'completed' OR state = 'failed') AND updated_at < ? ORDER BY updated_at LIMIT ?)`,
    }),
  );
  return (beforeMs, limit) => finished.run(beforeMs, limit).changes;
}

/** A call of a limited action (one with a concurrency limit or a rate), as the owner reads them at start. */
export interface LimitedCall {
  callId: string;
  action: string;
  state: CallState;
  /** The keys it counts against: JSON [concurrency key, rate key], each a string or null (the shared key). */
  limitKeys: string;
  /** Its last change, ms: a running call's last attempt started then; an ended call's start was at or before it. */
  updatedAt: number;
}

/**
 * Reads the calls of limited actions changed at or after `sinceMs`, oldest change first, through
 * the `action_calls_limited` index (migration 0020): what the owner restores its actions' slots
 * and rate buckets from at start (actions/limits-restore.ts).
 */
export function limitedCallsReader(db: Db): (sinceMs: number) => LimitedCall[] {
  const read = db.prepare(
    "SELECT call_id, action, state, limit_keys, updated_at FROM action_calls WHERE limit_keys IS NOT NULL AND updated_at >= ? ORDER BY updated_at",
  );
  return (sinceMs) =>
    (read.all(sinceMs) as { call_id: string; action: string; state: CallState; limit_keys: string; updated_at: number | string }[]).map((r) => ({
      callId: r.call_id,
      action: r.action,
      state: r.state,
      limitKeys: r.limit_keys,
      updatedAt: Number(r.updated_at),
    }));
}

const getSql = "SELECT * FROM action_calls WHERE call_id = ?";

/**
 * {@link CallStatements.get} for requests: on PostgreSQL on the connection of its own that does
 * not block the event loop ({@link Db.readAsync}); on SQLite at once.
 */
export function callRowReads(db: Db, statements: CallStatements): (callId: string) => Promise<CallRow | undefined> {
  const readAsync = db.readAsync?.bind(db);
  if (!readAsync) return async (callId) => statements.get(callId);
  return async (callId) => {
    const [row] = (await readAsync(getSql, [callId])) as Row[];
    return row && fromRow(row);
  };
}
