import type { TimerKind, TimerRecord } from "./timer-records.js";
import { defer, dialectOf, sqlFor, type BatchReads, type Db } from "./sql.js";
import type { BatchRead, ReadAhead } from "./read-ahead.js";
import { limitedStatement } from "./limited.js";
import { overdueFromJson, overdueToJson, pausedFromJson, policyFromJson, policyToJson, specFromJson, specToJson } from "./timer-json.js";

// The statements on `timers`: set, read, advance, remove and list timers (TimerStatements).

/**
 * The columns a timer is read with, in the order of {@link TimerCells}. Timers are read as raw
 * rows (arrays): better-sqlite3 builds a row object through V8's slow property path, ~9 µs for
 * a timer's 19 columns against ~4 µs as an array (a claim reads one per call).
 */
export const timerColumns =
  "id, kind, action, input, spec, next_due_ms, actor, plugin, schedule, overdue, chain_depth, occurrences, region, disabled, retry_delays_ms, policy, paused, created_at, updated_at, cancel_on, trace";

/** A timer's row as read with {@link timerColumns}; JSON columns as text, `paused` JSON {note, at_ms, held_due_ms} or null. */
export type TimerCells = [
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
  cancelOn: string | null,
  trace: string | null,
];

export function timerFromCells(cells: TimerCells): TimerRecord {
  const [
    id,
    kind,
    action,
    input,
    spec,
    nextDueMs,
    actor,
    plugin,
    schedule,
    overdue,
    chainDepth,
    occurrences,
    region,
    disabled,
    retryDelaysMs,
    policy,
    paused,
    createdAt,
    updatedAt,
    cancelOn,
    trace,
  ] = cells;
  const timer: TimerRecord = {
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
    ...(cancelOn === null ? {} : { cancelOn: JSON.parse(cancelOn) }),
    createdAt,
    updatedAt,
  };
  if (trace) timer.trace = trace;
  return timer;
}

/**
 * PostgreSQL's: the timers' rows read for the committer's running batch, by id: each as its
 * {@link TimerCells}, or null when no timer has the id. Read ahead by id (TimerStatements.prefetch)
 * and with the cancel keys (TimerCancelStatements), so a unit's {@link TimerStatements.get} of
 * them waits for no round trip. Every statement that changes a timer's row inside the committer
 * keeps the row it makes ({@link changeKept}) or forgets it; a write it cannot follow row by
 * row forgets them all (the retention of spent timers). Undefined where reads are not round trips.
 */
export function keptTimerRows(db: Db): BatchReads | undefined {
  return db.readAhead ? db.readForBatch?.("timers") : undefined;
}

/** Keeps in `kept` the rows of `ids` read as `rows` (objects with the columns of {@link timerColumns}); null for an id without one. */
export function keepTimerRows(kept: BatchReads, ids: string[], rows: unknown[]): void {
  const found = new Set<string>();
  for (const row of rows as Record<string, unknown>[]) {
    const cells = timerColumnNames.map((column) => row[column]) as TimerCells;
    found.add(cells[0]);
    kept.remember(cells[0], cells);
  }
  for (const id of ids) if (!found.has(id)) kept.remember(id, null);
}

/** The kept row of timer `id` made `change(cells)` (a copy); nothing when none is kept (not read, or no timer). */
export function changeKept(kept: BatchReads | undefined, id: string, change: (cells: TimerCells) => TimerCells): void {
  const cells = kept?.recalled(id) as TimerCells | null | undefined;
  if (cells) kept!.remember(id, change([...cells] as TimerCells));
}

/** The names of {@link timerColumns}, in order. */
const timerColumnNames = timerColumns.split(", ");

/** `cells` moved to `nextDueMs` with `called` more occurrences at `nowMs` (TimerStatements.advance). */
function advanced(cells: TimerCells, nextDueMs: number | null, called: number, nowMs: number): TimerCells {
  cells[5] = nextDueMs;
  cells[11] += called;
  cells[18] = nowMs;
  return cells;
}

/**
 * Keeps the row a put of `row` makes when the one before it is known (its pause state stays, and
 * its occurrences unless `how.anew`), or there was none (`how.made`: an id the owner just made);
 * else forgets it.
 */
function keepPut(kept: BatchReads | undefined, row: Record<string, unknown> & { id: string; now: number }, how: { anew?: boolean; made?: boolean }): void {
  if (!kept) return;
  const before = how.made ? null : (kept.recalled(row.id) as TimerCells | null | undefined);
  if (before === undefined) return kept.forget(row.id);
  const cells: TimerCells = [
    row.id,
    row.kind as TimerKind,
    row.action as string,
    row.input as string,
    row.spec as string,
    row.nextDueMs as number | null,
    row.actor as string | null,
    row.plugin as string,
    row.schedule as string,
    row.overdue as string,
    row.chainDepth as number,
    before === null || how.anew ? 0 : before[11],
    row.region as number,
    row.disabled as number,
    row.retryDelaysMs as string,
    row.policy as string,
    before === null ? null : before[16],
    row.now, // the upsert sets created_at too
    row.now,
    row.cancelOn as string | null,
    row.trace as string | null,
  ];
  kept.remember(row.id, cells);
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

/** What {@link TimerStatements.put} sets: a timer but its occurrence count, times and pause state, which the store keeps. */
export type TimerPut = Omit<TimerRecord, "occurrences" | "createdAt" | "updatedAt">;

/**
 * The statements on `timers`. Reads may run anywhere; writes only inside a committer unit, in the
 * same unit as the `timer.*` event they go with (a unit that throws undoes them). None writes
 * events. Times are ms since the epoch, UTC, passed in. {@link put}, {@link advance} and a
 * {@link remove} of a timer kept for the batch ({@link keptTimerRows}) are deferred on PostgreSQL
 * (SqlStatement.defer): a fault in them fails the batch there.
 */
export interface TimerStatements extends ReadAhead {
  /** The timer `id`, or undefined when there is none. */
  get(id: string): TimerRecord | undefined;
  /**
   * Before a committer batch's units run (Committer.submit's `readAhead`): reads the timers of
   * `ids` at once and without blocking the event loop, and keeps them for the batch
   * ({@link keptTimerRows}), so the batch's {@link get} of those costs no round trip. Undefined when
   * nothing is read (SQLite: its reads are not round trips). `assumeAbsent`: reads nothing, takes
   * none of them to exist, and guards the batch's commit with that (Db.guardAbsent), as
   * EventStatements.prefetch does. As {@link ReadAhead.batchRead} (not when `assumeAbsent`), the
   * same read goes in one round trip with the batch's other reads.
   */
  prefetch(ids: string[], assumeAbsent: boolean): Promise<void> | undefined;
  /**
   * Sets timer `timer.id`: inserts it (occurrences 0, created and changed at `nowMs`), or replaces
   * every field of the existing one, its schedule policy included, but its occurrence count (the
   * id's history goes on; `how.anew`: counted from 0 again, a new timer under the id) and its
   * pause state (`timer.paused` is not written: TimerControlStatements.setPaused). `how.made`: the
   * owner made the id just now, so no timer has it (a batch keeps the row it inserts, as it keeps
   * those it read: keptTimerRows).
   */
  put(timer: TimerPut, nowMs: number, how?: { anew?: boolean; made?: boolean }): void;
  /** Every declared schedule (kind `declared`), by plugin and schedule name. */
  declared(): TimerRecord[];
  /** Deletes timer `id`; false when there was none. */
  remove(id: string): boolean;
  /**
   * The smallest next due moment of any timer (the clock's target), or null when none is pending;
   * a timer with a `cancel_on` counts `cancellableLagMs` later (the clock's lookahead: it rings for
   * such a timer at its moment, when its claim may be made).
   */
  earliestDue(cancellableLagMs?: number): number | null;
  /** How many timers have a next due moment (not spent, disabled, paused or another region's). */
  pendingCount(): number;
  /**
   * Up to `limit` timers due at or before `nowMs`, by next due moment, then id; those with a
   * `cancel_on` only when due at or before `cancellableByMs` too (default `nowMs`): a claim takes
   * them at their moment, not ahead of it (time/cancel-on.ts).
   */
  due(nowMs: number, limit: number, cancellableByMs?: number): TimerRecord[];
  /** How many timers are due by `nowMs`, counting up to `limit`. */
  dueCount(nowMs: number, limit: number): number;
  /** Moves timer `id` to `nextDueMs` (null: spent) and adds `called` (0 or 1) to its occurrences; nothing when there is no such timer. */
  advance(id: string, nextDueMs: number | null, called: number, nowMs: number): void;
  /** {@link advance} of several timers, in one statement on PostgreSQL (a claim's). */
  advanceMany(moves: { id: string; nextDueMs: number | null; called: number }[], nowMs: number): void;
  /**
   * A page of up to `limit` timers in ListTimers order: those with a next due moment by (next due,
   * id), then those without (spent, disabled, paused) by (last change, id); `after` null starts at
   * the beginning, else the page starts after that timer; `kind` "" means all kinds.
   */
  list(after: TimerCursor | null, kind: TimerKind | "", limit: number): TimerRecord[];
}

/** ListTimers' pages: the timers with a next due moment after a (due, id), of a kind ("" all). */
const listScheduledSql = `SELECT ${timerColumns} FROM timers WHERE next_due_ms IS NOT NULL AND (next_due_ms, id) > (?, ?) AND (? = '' OR kind = ?) ORDER BY next_due_ms, id LIMIT ?`;
/** ListTimers' pages past the pending timers: those without a next due moment after an (updated_at, id). */
const listSpentSql = `SELECT ${timerColumns} FROM timers WHERE next_due_ms IS NULL AND (updated_at, id) > (?, ?) AND (? = '' OR kind = ?) ORDER BY updated_at, id LIMIT ?`;
/** Counted on the `timers_by_due` index, which holds only the pending timers. */
const pendingCountSql = "SELECT count(*) AS n FROM timers WHERE next_due_ms IS NOT NULL";

/** Ids read per statement by {@link TimerStatements.prefetch}. */
const prefetchChunk = 5_000;

/** The timers table's statements on `db`. */
export function timerStatements(db: Db): TimerStatements {
  const get = db.prepare(`SELECT ${timerColumns} FROM timers WHERE id = ?`).raw();
  const putColumns =
    "id, kind, action, input, spec, next_due_ms, actor, plugin, schedule, overdue, chain_depth, region, disabled, retry_delays_ms, policy, cancel_on, created_at, updated_at, trace";
  const putValues =
    "@id, @kind, @action, @input, @spec, @nextDueMs, @actor, @plugin, @schedule, @overdue, @chainDepth, @region, @disabled, @retryDelaysMs, @policy, @cancelOn, @now, @now, @trace";
  const putUpsert = `ON CONFLICT (id) DO UPDATE SET kind = excluded.kind, action = excluded.action, input = excluded.input, spec = excluded.spec,
       next_due_ms = excluded.next_due_ms, actor = excluded.actor, plugin = excluded.plugin, schedule = excluded.schedule,
       overdue = excluded.overdue, chain_depth = excluded.chain_depth, region = excluded.region, disabled = excluded.disabled,
       retry_delays_ms = excluded.retry_delays_ms, policy = excluded.policy, cancel_on = excluded.cancel_on, created_at = excluded.created_at, updated_at = excluded.updated_at, trace = excluded.trace`;
  const putWith = (upsert: string) =>
    db.prepare(
      sqlFor(db, {
        sqlite: `INSERT INTO timers (rowid, ${putColumns}) VALUES (@rowid, ${putValues}) ${upsert}`,
        postgres: `INSERT INTO timers (${putColumns}) VALUES (${putValues}) ${upsert}`, // no rowid to place rows by: the timers_by_due index orders them
      }),
    );
  const goesOn = putWith(putUpsert);
  const anewPut = putWith(`${putUpsert}, occurrences = 0`);
  const declared = db.prepare(`SELECT ${timerColumns} FROM timers WHERE kind = 'declared' ORDER BY plugin, schedule`).raw();
  const remove = db.prepare("DELETE FROM timers WHERE id = ?");
  const earliest = db.prepare(
    "SELECT next_due_ms, cancel_on IS NOT NULL AS cancellable FROM timers WHERE next_due_ms IS NOT NULL ORDER BY next_due_ms LIMIT 1",
  );
  const pendingCount = db.prepare(pendingCountSql);
  const due = limitedStatement(
    db,
    `SELECT ${timerColumns} FROM timers WHERE next_due_ms <= ? AND (cancel_on IS NULL OR next_due_ms <= ?) ORDER BY next_due_ms, id LIMIT ?`,
    { raw: true },
  );
  const dueCount = limitedStatement(db, dueCountSql);
  const advance = db.prepare("UPDATE timers SET next_due_ms = ?, occurrences = occurrences + ?, updated_at = ? WHERE id = ?");
  // PostgreSQL: the moves of many timers in one statement (a claim's), given as JSON.
  const advanceMany =
    dialectOf(db) === "postgres"
      ? db.prepare(
          `UPDATE timers AS t SET next_due_ms = m.next_due_ms, occurrences = t.occurrences + m.called, updated_at = ?
           FROM jsonb_to_recordset(?::jsonb) AS m(id text, next_due_ms bigint, called integer) WHERE t.id = m.id`,
        )
      : undefined;
  const listScheduled = limitedStatement(db, listScheduledSql, { raw: true });
  const listSpent = limitedStatement(db, listSpentSql, { raw: true });
  // PostgreSQL: the timers' rows the running batch read ahead (keptTimerRows); each statement
  // below that changes a row keeps what it makes of it, or forgets it.
  const kept = keptTimerRows(db);
  const byIds = `SELECT ${timerColumns} FROM timers WHERE id IN (SELECT jsonb_array_elements_text(?::jsonb))`;
  const anyOfIds = "SELECT 1 FROM timers WHERE id IN (SELECT jsonb_array_elements_text(?::jsonb))";
  return {
    get(id: string): TimerRecord | undefined {
      const recalled = kept?.recalled(id) as TimerCells | null | undefined;
      if (recalled !== undefined) return recalled === null ? undefined : timerFromCells(recalled);
      const cells = get.get(id) as TimerCells | undefined;
      return cells && timerFromCells(cells);
    },
    batchRead(ids: string[], assumeAbsent?: boolean): BatchRead | undefined {
      if (!kept || assumeAbsent || ids.length > prefetchChunk) return undefined;
      return { sql: byIds, params: [JSON.stringify([...new Set(ids)])], take: (rows) => keepTimerRows(kept, ids, rows) };
    },
    prefetch(ids: string[], assumeAbsent: boolean): Promise<void> | undefined {
      const readAhead = db.readAhead?.bind(db);
      if (!kept || !readAhead) return undefined;
      const chunks = Array.from({ length: Math.ceil(ids.length / prefetchChunk) }, (_, i) => ids.slice(i * prefetchChunk, (i + 1) * prefetchChunk));
      if (assumeAbsent && db.guardAbsent) {
        for (const chunk of chunks) db.guardAbsent(anyOfIds, [JSON.stringify(chunk)]);
        for (const id of ids) kept.remember(id, null);
        return undefined;
      }
      return (async () => {
        for (const chunk of chunks) keepTimerRows(kept, chunk, await readAhead(byIds, [JSON.stringify(chunk)]));
      })();
    },
    put(timer: TimerPut, nowMs: number, how: { anew?: boolean; made?: boolean } = {}): void {
      const put = how.anew ? anewPut : goesOn;
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
        cancelOn: timer.cancelOn?.length ? JSON.stringify(timer.cancelOn) : null,
        trace: timer.trace ?? null,
        now: nowMs,
      };
      if (dialectOf(db) === "postgres") {
        keepPut(kept, row, how);
        return defer(put, row); // no rowid to place: an insert of a new id, or an update by id
      }
      try {
        put.run(row);
      } catch (e) {
        if (!(e instanceof Error && "code" in e && e.code === "SQLITE_CONSTRAINT_ROWID") || row.rowid === null) throw e;
        put.run({ ...row, rowid: null }); // its place was taken (another one-shot due the same ms): SQLite picks one
      }
    },
    // The `timers_declared` index.
    declared(): TimerRecord[] {
      return (declared.all() as TimerCells[]).map(timerFromCells);
    },
    remove(id: string): boolean {
      const recalled = kept?.recalled(id);
      if (recalled === undefined) {
        const removed = remove.run(id).changes === 1;
        kept?.remember(id, null);
        return removed;
      }
      if (recalled === null) return false;
      defer(remove, id);
      kept?.remember(id, null);
      return true;
    },
    earliestDue(cancellableLagMs = 0): number | null {
      const row = earliest.get() as { next_due_ms: number; cancellable: number | boolean } | undefined;
      return row ? Number(row.next_due_ms) + (row.cancellable ? cancellableLagMs : 0) : null;
    },
    // Counted on the `timers_by_due` index, which holds only those.
    pendingCount(): number {
      return (pendingCount.get() as { n: number }).n;
    },
    due(nowMs: number, limit: number, cancellableByMs = nowMs): TimerRecord[] {
      return (due(limit).all(nowMs, cancellableByMs) as TimerCells[]).map(timerFromCells);
    },
    dueCount(nowMs: number, limit: number): number {
      return (dueCount(limit).get(nowMs) as { n: number }).n;
    },
    advance(id: string, nextDueMs: number | null, called: number, nowMs: number): void {
      defer(advance, nextDueMs, called, nowMs, id);
      changeKept(kept, id, (cells) => advanced(cells, nextDueMs, called, nowMs));
    },
    advanceMany(moves: { id: string; nextDueMs: number | null; called: number }[], nowMs: number): void {
      if (moves.length === 0) return;
      for (const m of moves) changeKept(kept, m.id, (cells) => advanced(cells, m.nextDueMs, m.called, nowMs));
      if (!advanceMany) for (const m of moves) advance.run(m.nextDueMs, m.called, nowMs, m.id);
      else defer(advanceMany, nowMs, JSON.stringify(moves.map((m) => ({ id: m.id, next_due_ms: m.nextDueMs, called: m.called }))));
    },
    // Pending ones on `timers_by_due`, then the others on `timers_unscheduled`.
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

/**
 * The timers as the RPCs and /metrics read them, outside the committer: on PostgreSQL on a
 * connection of its own without blocking the event loop ({@link Db.readAsync}); on SQLite the
 * statements' reads, at once.
 */
export interface TimerRowReads {
  /** As {@link TimerStatements.get}. */
  get(id: string): Promise<TimerRecord | undefined>;
  /** As {@link TimerStatements.list}. */
  list(after: TimerCursor | null, kind: TimerKind | "", limit: number): Promise<TimerRecord[]>;
  /** As {@link TimerStatements.pendingCount}. */
  pendingCount(): Promise<number>;
  /** As {@link TimerStatements.dueCount}. */
  dueCount(nowMs: number, limit: number): Promise<number>;
  /**
   * The clock's target: the earliest next due moment of a timer, or next try of an occurrence
   * waiting for one (null: none). At once where reads are not round trips (SQLite), else a promise.
   * A timer with a `cancel_on` counts `cancellableLagMs` later, as in {@link TimerStatements.earliestDue}.
   */
  earliestDue(cancellableLagMs?: number): number | null | Promise<number | null>;
}

/** The clock's target on PostgreSQL, in one read (each `min` on its table's partial index). */
const earliestDueSql = `SELECT min(m) AS due FROM (
  SELECT m FROM (SELECT next_due_ms + CASE WHEN cancel_on IS NULL THEN 0 ELSE ? END AS m FROM timers WHERE next_due_ms IS NOT NULL ORDER BY next_due_ms LIMIT 1) AS timer
  UNION ALL SELECT min(next_attempt_ms) FROM timer_occurrences WHERE status = 'retry_wait') AS targets`;
/** Counted on the `timers_by_due` index. */
const dueCountSql = "SELECT count(*) AS n FROM (SELECT 1 FROM timers WHERE next_due_ms <= ? LIMIT ?) AS due";

/**
 * The timers' reads for RPCs and the clock on `db`; `statements` (and `retries`, the occurrences'
 * earliest retry: none without) read them where the database's reads are not round trips.
 */
export function timerRowReads(db: Db, statements: TimerStatements, retries: { earliestRetry(): number | null } = { earliestRetry: () => null }): TimerRowReads {
  const readAsync = db.readAsync?.bind(db);
  if (!readAsync) {
    return {
      get: async (id) => statements.get(id),
      list: async (after, kind, limit) => statements.list(after, kind, limit),
      pendingCount: async () => statements.pendingCount(),
      dueCount: async (nowMs, limit) => statements.dueCount(nowMs, limit),
      earliestDue: (cancellableLagMs = 0) => {
        const [timer, retry] = [statements.earliestDue(cancellableLagMs), retries.earliestRetry()];
        return timer === null ? retry : retry === null ? timer : Math.min(timer, retry);
      },
    };
  }
  const cells = async (sql: string, params: unknown[]) =>
    ((await readAsync(sql, params)) as Record<string, unknown>[]).map((row) => timerFromCells(Object.values(row) as TimerCells));
  return {
    async get(id) {
      return (await cells(`SELECT ${timerColumns} FROM timers WHERE id = ?`, [id]))[0];
    },
    async list(after, kind, limit) {
      const rows: TimerRecord[] = [];
      if (!after || after.dueMs !== null) {
        rows.push(...(await cells(listScheduledSql, [after?.dueMs ?? -Number.MAX_SAFE_INTEGER, after?.id ?? "", kind, kind, limit])));
      }
      if (rows.length < limit) {
        const tail = after && after.dueMs === null ? after : { updatedAt: -Number.MAX_SAFE_INTEGER, id: "" };
        rows.push(...(await cells(listSpentSql, [tail.updatedAt, tail.id, kind, kind, limit - rows.length])));
      }
      return rows;
    },
    async pendingCount() {
      return ((await readAsync(pendingCountSql, [])) as { n: number }[])[0].n;
    },
    async dueCount(nowMs, limit) {
      return ((await readAsync(dueCountSql, [nowMs, limit])) as { n: number }[])[0].n;
    },
    async earliestDue(cancellableLagMs = 0) {
      const due = ((await readAsync(earliestDueSql, [cancellableLagMs])) as { due: number | string | null }[])[0].due;
      return due === null ? null : Number(due);
    },
  };
}
