import { dialectOf, type Db, type SqlStatement } from "./sql.js";
import { jsonText, rememberJsonText } from "./json-text.js";
import { limitedStatement } from "./limited.js";
import { eventRoom } from "./postgres/event-room.js";

/** An event as stored: `data` and `actor` parsed, times in ms since the epoch (UTC). */
export interface EventRecord {
  seq: number;
  id: string;
  type: string;
  data: Record<string, unknown>;
  cause: string;
  actor: ActorRecord | null;
  at: number;
  /**
   * The trace context of the span that made it (`traceparent`, then a space and `tracestate` when
   * one came; tracing/trace-context.ts): absent when the owner recorded no trace for it.
   */
  trace?: string;
}

/** The whole actor; empty strings for fields not set. */
export interface ActorRecord {
  id: string;
  for: string;
  in: string;
  via: string;
}

/** An events row as read. */
export interface EventRow {
  seq: number;
  id: string;
  type: string;
  data: string;
  cause: string;
  actor: string | null;
  at: number;
  trace?: string | null;
}

/** Stored sizes of the events a budgeted read returned ({@link storedBytes}). */
const sizes = new WeakMap<EventRecord, number>();

/** The bytes an event takes as stored: its data and actor as JSON (UTF-8), its id, type and cause. */
function rowBytes(row: EventRow): number {
  return Buffer.byteLength(row.data) + (row.actor === null ? 0 : Buffer.byteLength(row.actor)) + row.id.length + row.type.length + row.cause.length;
}

/**
 * The bytes `event` takes as stored (data and actor as JSON, UTF-8, plus id, type and cause):
 * what byte budgets of reads count. Known for events a budgeted read returned; computed (and
 * kept) for others.
 */
export function storedBytes(event: EventRecord): number {
  let bytes = sizes.get(event);
  if (bytes === undefined) {
    const actor = event.actor === null ? null : JSON.stringify(event.actor);
    bytes = rowBytes({ seq: event.seq, id: event.id, type: event.type, data: storedDataJson(event), cause: event.cause, actor, at: event.at });
    sizes.set(event, bytes);
  }
  return bytes;
}

/** What {@link EventStatements.readWithin} returns. */
export interface BudgetedRows {
  events: EventRecord[];
  /** Their stored bytes in all ({@link storedBytes}). */
  bytes: number;
  /** The read stopped at its row limit or byte budget: more rows may follow the last one. */
  cut: boolean;
}

/** The stored JSON text of the data of events read from the log ({@link storedDataJson}). */
const storedTexts = new WeakMap<EventRecord, string>();

/**
 * An event read from the log. Its `data` is parsed when first read: readers that only pass the
 * event on (a Watch or a delivery asking for JSON text, a processor without `where` or `key`) send
 * the stored text as it is ({@link storedDataJson}) and never parse it.
 */
export function fromRow(row: EventRow): EventRecord {
  let data: Record<string, unknown> | undefined;
  const record: EventRecord = {
    seq: row.seq,
    id: row.id,
    type: row.type,
    get data() {
      if (data === undefined) {
        data = JSON.parse(row.data) as Record<string, unknown>;
        rememberJsonText(data, row.data);
      }
      return data;
    },
    set data(value) {
      data = value;
      storedTexts.delete(record);
    },
    cause: row.cause,
    actor: row.actor === null ? null : JSON.parse(row.actor),
    at: row.at,
  };
  if (row.trace) record.trace = row.trace;
  storedTexts.set(record, row.data);
  return record;
}

/** `event`'s data as JSON text: as stored, for an event read from the log (its data not parsed for it); else stringified once. */
export function storedDataJson(event: EventRecord): string {
  return storedTexts.get(event) ?? jsonText(event.data);
}

/**
 * The statements on the `events` table, the log. Reads may run anywhere and see what is
 * committed; {@link findById} also sees what the running batch appended (the other reads may not
 * inside a unit: PostgreSQL holds a batch's appends until its slice ends). Appends run only
 * inside a committer unit ({@link import("./committer.js").Tx.append}), and a unit that throws
 * undoes its own. Events are never updated or deleted (the database refuses it).
 */
export interface EventStatements {
  /**
   * Appends `event` under the seq it carries: the committer gives the next dense seq and the
   * commit time (Tx.append). A taken id or seq is refused, on SQLite at once (the unit throws),
   * on PostgreSQL when the slice's held inserts are sent (the slice fails, its units with it):
   * callers look an id up ({@link findById}) before they append it.
   */
  insert(event: EventRecord): void;
  /** The event with this id, committed or appended in the running batch; undefined when none has it. */
  findById(id: string): EventRecord | undefined;
  /**
   * Reads the events with these ids at once, before a batch's units run, without blocking the
   * event loop, so the batch's {@link findById} of them costs no round trip each; resolves once
   * read. Undefined when the store reads nothing ahead (SQLite: its lookups are not round trips).
   * `assumeAbsent`: reads nothing, takes none of them to be in the log, and guards the batch's
   * commit with that (Db.guardAbsent): one round trip fewer for ids that are new, as an emit's
   * nearly always are; a batch that finds one runs again, reading them.
   */
  prefetch(ids: string[], assumeAbsent?: boolean): Promise<void> | undefined;
  /** Up to `limit` events with seq > `afterSeq`, in seq order (all types); [] past the head. */
  readAfter(afterSeq: number, limit: number): EventRecord[];
  /**
   * Up to `limit` events with seq > `afterSeq` in seq order, of `types` only when given, stopping
   * also after the event that brings their stored bytes ({@link storedBytes}) to `maxBytes` or
   * more: at least one event when there is one, and never more than `maxBytes` plus one event
   * held however large the events are.
   */
  readWithin(afterSeq: number, limit: number, maxBytes: number, types?: string[]): BudgetedRows;
  /**
   * The last seq committed to the log (0 when empty). Read outside the committer's units: inside
   * one, the running batch's appends may count or not (the committer keeps its own head).
   */
  head(): number;
  /** The first seq committed at or after `atMs` (ms since the epoch, UTC), or undefined when none was. */
  firstAtOrAfter(atMs: number): number | undefined;
}

/** Ids read per statement by {@link EventStatements.prefetch}. */
const prefetchChunk = 5_000;

/** The events table's statements on `db`. */
export function eventStatements(db: Db): EventStatements {
  const insert = db.prepare("INSERT INTO events (seq, id, type, data, cause, actor, at, trace) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
  // PostgreSQL: appends are held until the slice ends and inserted together (Db.deferInserts).
  const deferred = db.deferInserts?.("events", ["seq", "id", "type", "data", "cause", "actor", "at", "trace"], 1);
  // PostgreSQL: the events table's partitions are made ahead of the appends (migration 0007).
  const room = deferred && eventRoom(db);
  const byId = db.prepare("SELECT * FROM events WHERE id = ?");
  // PostgreSQL: one index probe per id (and partition), whatever the statistics say: a plain
  // `id IN (...)` may be planned as a hash join over a whole partition not analyzed yet.
  const byIds = "SELECT e.* FROM jsonb_array_elements_text(?::jsonb) AS x(id) CROSS JOIN LATERAL (SELECT * FROM events WHERE id = x.id LIMIT 1) AS e";
  const anyOfIds = "SELECT 1 FROM jsonb_array_elements_text(?::jsonb) AS x(id) CROSS JOIN LATERAL (SELECT 1 FROM events WHERE id = x.id LIMIT 1) AS e";
  const after = limitedStatement(db, "SELECT * FROM events WHERE seq > ? ORDER BY seq LIMIT ?");
  const head = db.prepare("SELECT COALESCE(MAX(seq), 0) AS head FROM events");
  const firstAtOrAfter = db.prepare("SELECT MIN(seq) AS seq FROM events WHERE at >= ?");
  const budgeted = dialectOf(db) === "postgres" ? pgBudgetedRows(db) : undefined;
  return {
    insert: deferred
      ? (e: EventRecord): void => {
          room?.before(e.seq);
          deferred.add([e.seq, e.id, e.type, jsonText(e.data), e.cause, e.actor === null ? null : JSON.stringify(e.actor), e.at, e.trace ?? null]);
        }
      : (e: EventRecord): void => {
          insert.run(e.seq, e.id, e.type, jsonText(e.data), e.cause, e.actor === null ? null : JSON.stringify(e.actor), e.at, e.trace ?? null);
        },
    findById(id: string): EventRecord | undefined {
      const held = deferred?.get(id);
      if (held)
        return fromRow({ seq: held[0], id: held[1], type: held[2], data: held[3], cause: held[4], actor: held[5], at: held[6], trace: held[7] } as EventRow);
      const recalled = deferred?.recalled(id);
      if (recalled !== undefined) return recalled === null ? undefined : fromRow(recalled as EventRow);
      const row = byId.get(id) as EventRow | undefined;
      return row && fromRow(row);
    },
    prefetch(ids: string[], assumeAbsent = false): Promise<void> | undefined {
      if (!db.readAhead || !deferred) return undefined;
      if (assumeAbsent && db.guardAbsent) {
        for (const id of ids) deferred.remember(id, null);
        for (let from = 0; from < ids.length; from += prefetchChunk) db.guardAbsent(anyOfIds, [JSON.stringify(ids.slice(from, from + prefetchChunk))]);
        return undefined;
      }
      const readAhead = db.readAhead.bind(db);
      return (async () => {
        for (let from = 0; from < ids.length; from += prefetchChunk) {
          const chunk = ids.slice(from, from + prefetchChunk);
          const rows = (await readAhead(byIds, [JSON.stringify(chunk)])) as EventRow[];
          for (const id of chunk) deferred.remember(id, null);
          for (const row of rows) deferred.remember(row.id, row);
        }
      })();
    },
    readAfter(afterSeq: number, limit: number): EventRecord[] {
      return (after(limit).all(afterSeq) as EventRow[]).map(fromRow);
    },
    // Of `types` by the (type, seq) index. SQLite fetches rows one by one, so the read holds at most
    // `maxBytes` plus one event (a chunk of large events fetched at once held them all);
    // PostgreSQL's server cuts the chunk at the budget (pgBudgetedRows).
    readWithin(afterSeq: number, limit: number, maxBytes: number, types: string[] = []): BudgetedRows {
      let rows: Iterable<EventRow>;
      if (budgeted) rows = budgeted(afterSeq, limit, maxBytes, types);
      else {
        const stmt =
          types.length > 0
            ? db.prepare(`SELECT * FROM events WHERE type IN (${types.map(() => "?").join(", ")}) AND seq > ? ORDER BY seq LIMIT ?`)
            : after(limit);
        rows = (types.length > 0 ? stmt.iterate(...types, afterSeq, limit) : stmt.iterate(afterSeq)) as IterableIterator<EventRow>;
      }
      return budgetedRows(rows, limit, maxBytes);
    },
    head(): number {
      return (head.get() as { head: number }).head;
    },
    firstAtOrAfter(atMs: number): number | undefined {
      return (firstAtOrAfter.get(atMs) as { seq: number | null }).seq ?? undefined;
    },
  };
}

/** `rows` as events, up to the one that brings their stored bytes to `maxBytes` (of a read of at most `limit`). */
export function budgetedRows(rows: Iterable<EventRow>, limit: number, maxBytes: number): BudgetedRows {
  const events: EventRecord[] = [];
  let bytes = 0;
  for (const row of rows) {
    const record = fromRow(row);
    const size = rowBytes(row);
    sizes.set(record, size);
    events.push(record);
    bytes += size;
    if (bytes >= maxBytes) break; // ends the iteration: a SQLite statement is reset
  }
  return { events, bytes, cut: events.length === limit || bytes >= maxBytes };
}

/**
 * The log as the RPCs read it (pages, an event by id), outside the committer: on PostgreSQL on a
 * connection of its own without blocking the event loop ({@link Db.readAsync}); on SQLite the
 * statements' reads, at once.
 */
export interface EventReads {
  /** As {@link EventStatements.readWithin}. */
  readWithin(afterSeq: number, limit: number, maxBytes: number, types?: string[]): Promise<BudgetedRows>;
  /** The committed event with this id; undefined when none has it. */
  findById(id: string): Promise<EventRecord | undefined>;
  /** The committed events of these seqs that the log holds, in seq order. */
  bySeqs(seqs: number[]): Promise<EventRecord[]>;
  /** As {@link EventStatements.firstAtOrAfter}. */
  firstAtOrAfter(atMs: number): Promise<number | undefined>;
}

/** Seqs read per statement by {@link EventReads.bySeqs} on PostgreSQL. */
const bySeqsChunk = 5_000;

/** The log's reads for RPCs on `db`; `statements` read it where the database's reads are not round trips. */
export function eventReads(db: Db, statements: EventStatements): EventReads {
  const readAsync = db.readAsync?.bind(db);
  if (!readAsync) {
    return {
      readWithin: async (afterSeq, limit, maxBytes, types) => statements.readWithin(afterSeq, limit, maxBytes, types),
      findById: async (id) => statements.findById(id),
      bySeqs: async (seqs) => [...new Set(seqs)].sort((a, b) => a - b).flatMap((seq) => statements.readAfter(seq - 1, 1).filter((e) => e.seq === seq)),
      firstAtOrAfter: async (atMs) => statements.firstAtOrAfter(atMs),
    };
  }
  return {
    async readWithin(afterSeq, limit, maxBytes, types = []) {
      const rows = (await readAsync(pgBudgetedSql(types.length), [...types, afterSeq, limit, Math.min(maxBytes, Number.MAX_SAFE_INTEGER)])) as EventRow[];
      return budgetedRows(rows, limit, maxBytes);
    },
    async findById(id) {
      const [row] = (await readAsync("SELECT * FROM events WHERE id = ?", [id])) as EventRow[];
      return row && fromRow(row);
    },
    async bySeqs(seqs) {
      const wanted = [...new Set(seqs)];
      const reads: Promise<unknown[]>[] = [];
      // One index probe per seq; the chunks' reads go in one pipeline.
      for (let from = 0; from < wanted.length; from += bySeqsChunk) reads.push(readAsync(bySeqsSql, [JSON.stringify(wanted.slice(from, from + bySeqsChunk))]));
      return ((await Promise.all(reads)).flat() as EventRow[]).map(fromRow).sort((a, b) => a.seq - b.seq);
    },
    async firstAtOrAfter(atMs) {
      const [row] = (await readAsync("SELECT MIN(seq) AS seq FROM events WHERE at >= ?", [atMs])) as { seq: unknown }[];
      return row?.seq === null || row?.seq === undefined ? undefined : Number(row.seq);
    },
  };
}

/** PostgreSQL's read of the events of a JSON array of seqs. */
const bySeqsSql = "SELECT e.* FROM jsonb_array_elements_text(?::jsonb) AS x(seq) CROSS JOIN LATERAL (SELECT * FROM events WHERE seq = x.seq::bigint) AS e";

/** What an event row takes as {@link rowBytes} counts it, never more: UTF-8 octets of data and actor, characters of the rest. */
const pgRowBytes = "octet_length(data) + COALESCE(octet_length(actor), 0) + char_length(id) + char_length(type) + char_length(cause)";

/**
 * PostgreSQL's rows of a budgeted read. Its driver fetches all of a statement's rows at once, so
 * the server cuts the chunk at the budget instead of the row-by-row fetch: it returns the rows
 * whose predecessors in the chunk take fewer than `maxBytes` (sizes read without fetching the
 * values), a superset of those the caller's own count keeps, which ends where SQLite's does.
 */
/** The SQL of {@link pgBudgetedRows}' read of `typeCount` types (0: all): parameters the types, `afterSeq`, `limit`, `maxBytes`. */
function pgBudgetedSql(typeCount: number): string {
  const ofTypes = typeCount > 0 ? `type IN (${Array.from({ length: typeCount }, () => "?").join(", ")}) AND ` : "";
  return `SELECT seq, id, type, data, cause, actor, at, trace FROM (
           SELECT *, sum(${pgRowBytes}) OVER (ORDER BY seq ROWS UNBOUNDED PRECEDING) - (${pgRowBytes}) AS before
           FROM events WHERE ${ofTypes}seq > ? ORDER BY seq LIMIT ?) AS chunk
         WHERE before < ? ORDER BY seq`;
}

function pgBudgetedRows(db: Db): (afterSeq: number, limit: number, maxBytes: number, types: string[]) => EventRow[] {
  const byTypeCount = new Map<number, SqlStatement>();
  return (afterSeq, limit, maxBytes, types) => {
    let stmt = byTypeCount.get(types.length);
    if (!stmt) {
      stmt = db.prepare(pgBudgetedSql(types.length));
      byTypeCount.set(types.length, stmt);
    }
    return stmt.all(...types, afterSeq, limit, Math.min(maxBytes, Number.MAX_SAFE_INTEGER)) as EventRow[];
  };
}
