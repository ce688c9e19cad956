import { forgetOldestSql, keptMore, partitionRemovalStatements, type PartitionRemovalStatements } from "./postgres/partition-removal.js";

export type { EventPartition, PartitionRemovalStatements, PartitionSummary } from "./postgres/partition-removal.js";
import { defer, dialectOf, sqlFor, type Db } from "./sql.js";

/** An event as a retention pass weighs it. */
export interface ScannedEvent {
  seq: number;
  id: string;
  type: string;
  cause: string;
  at: number;
  /** Its stored bytes, as {@link import("./events.js").storedBytes} counts them. */
  bytes: number;
  /** Its data as stored JSON text. */
  data: string;
}

/** Events and stored bytes of one type. */
export interface TypeTotals {
  type: string;
  events: number;
  bytes: number;
}

/**
 * The statements retention runs on the log (log/retention.ts). Reads run outside the committer
 * (on PostgreSQL on a connection of their own, without blocking the event loop); {@link remove}
 * and {@link reclaim} only inside a committer unit.
 */
export interface LogRemovalStatements {
  /** Up to `limit` events of `type` after `afterSeq` (and before `beforeSeq`, if given), in seq order. */
  scanType(type: string, afterSeq: number, limit: number, beforeSeq?: number): Promise<ScannedEvent[]>;
  /** Up to `limit` events of any type after `afterSeq` (and before `beforeSeq`, if given), in seq order. */
  scanAll(afterSeq: number, limit: number, beforeSeq?: number): Promise<ScannedEvent[]>;
  /** Events and bytes by type of the events with seq in (`afterSeq`, `throughSeq`]. */
  totals(afterSeq: number, throughSeq: number): Promise<TypeTotals[]>;
  /** The lowest seq in the log (0: empty). */
  firstSeq(): Promise<number>;
  /** Of `ids`, the seqs of the events that name each as their cause. */
  effectsOf(ids: string[]): Promise<Map<string, number[]>>;
  /** The failed deliveries on record of the events with seq in [`fromSeq`, `toSeq`]: the processor of each (the first by name when several). */
  failedIn(fromSeq: number, toSeq: number): Promise<Map<number, string>>;
  /** Of `timerIds`, those of timers still pending (a next moment, paused, or an occurrence not ended). */
  pendingTimers(timerIds: string[]): Promise<Set<string>>;
  /** Of `callIds`, those of action calls still running. */
  runningCalls(callIds: string[]): Promise<Set<string>>;
  /** Of `ids`, the documents of `collection` that exist. */
  existingDocuments(collection: string, ids: string[]): Promise<Set<string>>;
  /** The seq and space (its actor's `in`) a removed event had, or undefined when no event with this id was removed (or its id was forgotten). */
  removed(id: string): Promise<{ seq: number; space: string } | undefined>;
  /** The id the removed event of this seq had, or undefined when none with this seq was removed (or its id was forgotten). */
  removedAt(seq: number): Promise<string | undefined>;
  /** Events and bytes removed since the log began. */
  removedTotals(): { events: number; bytes: number };
  /**
   * Inside a committer unit: removes the events with these seqs through the guarded path (the
   * database refuses any other DELETE), keeps their ids and seqs, and counts them. Of the ids
   * kept, the oldest past `keepIds` are forgotten (at most ten times as many as removed here plus
   * 1,000 per call: a lowered limit is reached over a few batches).
   */
  remove(seqs: number[], removedBytes: number, keepIds: number): void;
  /** PostgreSQL's: the events table's partitions, which retention drops whole (migration 0007). */
  partitions?: PartitionRemovalStatements;
  /** The data file's free and total pages, where free pages can be returned to the disk (SQLite with incremental vacuum); undefined elsewhere. */
  freePages(): { free: number; total: number } | undefined;
  /** Inside a committer unit: returns up to `pages` free pages to the disk (SQLite with incremental vacuum; elsewhere nothing). */
  reclaim(pages: number): void;
}

/** An event row's stored bytes in SQL: UTF-8 octets of data and actor, characters of the rest. */
const rowBytes = {
  sqlite: "length(CAST(data AS BLOB)) + COALESCE(length(CAST(actor AS BLOB)), 0) + length(id) + length(type) + length(cause)",
  postgres: "octet_length(data) + COALESCE(octet_length(actor), 0) + char_length(id) + char_length(type) + char_length(cause)",
};

/** The retention statements on `db`. */
export function logRemovalStatements(db: Db): LogRemovalStatements {
  const dialect = dialectOf(db);
  const bytes = rowBytes[dialect];
  const columns = `seq, id, type, cause, at, data, ${bytes} AS bytes`;
  /** A JSON array parameter as a set of values to match with IN. */
  const list = sqlFor(db, { sqlite: "(SELECT value FROM json_each(?))", postgres: "(SELECT jsonb_array_elements_text(?::jsonb))" });
  const seqList = sqlFor(db, { sqlite: "(SELECT value FROM json_each(?))", postgres: "(SELECT (jsonb_array_elements_text(?::jsonb))::bigint)" });
  const readAsync = db.readAsync?.bind(db);
  const read = async (sql: string, params: unknown[]): Promise<Record<string, unknown>[]> =>
    (readAsync ? await readAsync(sql, params) : db.prepare(sql).all(...params)) as Record<string, unknown>[];
  const toScanned = (row: Record<string, unknown>): ScannedEvent => ({
    seq: Number(row.seq),
    id: row.id as string,
    type: row.type as string,
    cause: row.cause as string,
    at: Number(row.at),
    bytes: Number(row.bytes),
    data: row.data as string,
  });
  const spaceOf = sqlFor(db, { sqlite: "COALESCE(json_extract(actor, '$.in'), '')", postgres: "COALESCE(actor::jsonb->>'in', '')" });
  // PostgreSQL: a partition's drop under way may have kept some of these ids already (PartitionRemovalStatements.keepIds).
  const keptAlready = sqlFor(db, { sqlite: "", postgres: " ON CONFLICT DO NOTHING" });
  const insertRemoved = db.prepare(`INSERT INTO removed_events (seq, id, space) SELECT seq, id, ${spaceOf} FROM events WHERE seq IN ${seqList}${keptAlready}`);
  // An id reused after its first event was removed (an Emit may reuse it): the newest removal is the one kept.
  const forgetReused = db.prepare(`DELETE FROM removed_events WHERE id IN (SELECT id FROM events WHERE seq IN ${seqList}) AND seq NOT IN ${seqList}`);
  const keptIds = db.prepare("SELECT kept_ids FROM log_retention WHERE id = 1");
  const forgetOldest = db.prepare("DELETE FROM removed_events WHERE seq IN (SELECT seq FROM removed_events ORDER BY seq LIMIT ?)");
  const deleteEvents = db.prepare(`DELETE FROM events WHERE seq IN ${seqList}`);
  const count = db.prepare("UPDATE log_retention SET removed_events = removed_events + ?, removed_bytes = removed_bytes + ?, kept_ids = ? WHERE id = 1");
  const removedTotals = db.prepare("SELECT removed_events, removed_bytes FROM log_retention WHERE id = 1");
  const guard =
    dialect === "sqlite"
      ? { open: db.prepare("UPDATE log_retention SET removing = 1 WHERE id = 1"), close: db.prepare("UPDATE log_retention SET removing = 0 WHERE id = 1") }
      : { open: db.prepare("SELECT set_config('chronolog.removing', 'on', true)"), close: db.prepare("SELECT set_config('chronolog.removing', 'off', true)") };
  const deferred = dialect === "postgres" ? deferredRemoval(db, seqList) : undefined;
  const incremental = dialect === "sqlite" && Number((db.prepare("PRAGMA auto_vacuum").get() as { auto_vacuum: number }).auto_vacuum) === 2;
  const pageCounts = incremental ? { free: db.prepare("PRAGMA freelist_count"), total: db.prepare("PRAGMA page_count") } : undefined;
  return {
    ...(dialect === "postgres" && { partitions: partitionRemovalStatements(db, bytes) }),
    async scanType(type, afterSeq, limit, beforeSeq = Number.MAX_SAFE_INTEGER) {
      const rows = await read(`SELECT ${columns} FROM events WHERE type = ? AND seq > ? AND seq < ? ORDER BY seq LIMIT ?`, [type, afterSeq, beforeSeq, limit]);
      return rows.map(toScanned);
    },
    async scanAll(afterSeq, limit, beforeSeq = Number.MAX_SAFE_INTEGER) {
      return (await read(`SELECT ${columns} FROM events WHERE seq > ? AND seq < ? ORDER BY seq LIMIT ?`, [afterSeq, beforeSeq, limit])).map(toScanned);
    },
    async totals(afterSeq, throughSeq) {
      const rows = await read(
        `SELECT type, COUNT(*) AS events, SUM(bytes) AS bytes FROM (SELECT type, ${bytes} AS bytes FROM events WHERE seq > ? AND seq <= ?) AS chunk GROUP BY type`,
        [afterSeq, throughSeq],
      );
      return rows.map((r) => ({ type: r.type as string, events: Number(r.events), bytes: Number(r.bytes) }));
    },
    async firstSeq() {
      const [row] = await read("SELECT MIN(seq) AS seq FROM events", []);
      return Number(row?.seq ?? 0);
    },
    // By the index events_by_cause (migration 0017); `cause <> ''` leaves out the many events without one.
    async effectsOf(ids) {
      const effects = new Map<string, number[]>();
      if (ids.length === 0) return effects;
      for (const row of await read(`SELECT cause, seq FROM events WHERE cause <> '' AND cause IN ${list}`, [JSON.stringify(ids)])) {
        const seqs = effects.get(row.cause as string) ?? [];
        seqs.push(Number(row.seq));
        effects.set(row.cause as string, seqs);
      }
      return effects;
    },
    async failedIn(fromSeq, toSeq) {
      const rows = await read("SELECT processor, seq FROM failed_deliveries WHERE seq >= ? AND seq <= ? ORDER BY seq, processor", [fromSeq, toSeq]);
      const failed = new Map<number, string>();
      for (const r of rows) if (!failed.has(Number(r.seq))) failed.set(Number(r.seq), r.processor as string);
      return failed;
    },
    async pendingTimers(timerIds) {
      if (timerIds.length === 0) return new Set();
      const ids = JSON.stringify(timerIds);
      const rows = await read(
        `SELECT id FROM timers WHERE id IN ${list} AND (next_due_ms IS NOT NULL OR paused IS NOT NULL)
         UNION SELECT timer_id AS id FROM timer_occurrences WHERE timer_id IN ${list} AND status IN ('pending', 'retry_wait', 'buffered')`,
        [ids, ids],
      );
      return new Set(rows.map((r) => r.id as string));
    },
    async runningCalls(callIds) {
      if (callIds.length === 0) return new Set();
      const rows = await read(`SELECT call_id FROM action_calls WHERE call_id IN ${list} AND state = 'running'`, [JSON.stringify(callIds)]);
      return new Set(rows.map((r) => r.call_id as string));
    },
    async existingDocuments(collection, ids) {
      if (ids.length === 0) return new Set();
      const rows = await read(`SELECT id FROM documents WHERE collection = ? AND id IN ${list}`, [collection, JSON.stringify(ids)]);
      return new Set(rows.map((r) => r.id as string));
    },
    async removed(id) {
      const [row] = await read("SELECT seq, space FROM removed_events WHERE id = ?", [id]);
      return row === undefined ? undefined : { seq: Number(row.seq), space: row.space as string };
    },
    async removedAt(seq) {
      const [row] = await read("SELECT id FROM removed_events WHERE seq = ?", [seq]);
      return row === undefined ? undefined : (row.id as string);
    },
    removedTotals() {
      const row = removedTotals.get() as { removed_events: number | string; removed_bytes: number | string };
      return { events: Number(row.removed_events), bytes: Number(row.removed_bytes) };
    },
    remove(seqs, removedBytes, keepIds) {
      const json = JSON.stringify(seqs);
      if (deferred) return deferred(json, seqs.length, removedBytes, keepIds);
      let kept = Number((keptIds.get() as { kept_ids: number | string }).kept_ids);
      if (keepIds > 0) {
        kept -= forgetReused.run(json, json).changes; // first: the id is unique among the kept
        kept += insertRemoved.run(json).changes;
      }
      const over = Math.min(kept - keepIds, 10 * seqs.length + 1_000);
      if (over > 0) kept -= forgetOldest.run(over).changes;
      guard.open.run();
      try {
        deleteEvents.run(json);
      } finally {
        guard.close.run();
      }
      count.run(seqs.length, removedBytes, kept);
    },
    freePages() {
      if (!pageCounts) return undefined;
      const free = Number((pageCounts.free.get() as { freelist_count: number }).freelist_count);
      return { free, total: Number((pageCounts.total.get() as { page_count: number }).page_count) };
    },
    reclaim(pages) {
      // better-sqlite3's pragma() steps the statement to its end (each step frees a page); run() would free one.
      if (incremental) (db as unknown as { pragma(sql: string): unknown }).pragma(`incremental_vacuum(${Math.max(1, Math.floor(pages))})`);
    },
  };
}

/**
 * PostgreSQL's {@link LogRemovalStatements.remove}: every statement deferred (sent with the batch's
 * commit, without blocking the owner's thread on a round trip), the count of ids kept kept right
 * in SQL. `seqList`: a JSON array parameter as a set of seqs.
 */
function deferredRemoval(db: Db, seqList: string): (json: string, events: number, removedBytes: number, keepIds: number) => void {
  // An id reused after its first event was removed (an Emit may reuse it): the newest removal is the one kept.
  const forgetReused = db.prepare(
    `WITH changed AS (DELETE FROM removed_events WHERE id IN (SELECT id FROM events WHERE seq IN ${seqList}) AND seq NOT IN ${seqList} RETURNING 1)
     UPDATE log_retention SET kept_ids = kept_ids - (SELECT COUNT(*) FROM changed) WHERE id = 1`,
  );
  // A partition's drop under way may have kept some of these ids already (PartitionRemovalStatements.keepIds).
  const insertRemoved = db.prepare(
    `WITH added AS (INSERT INTO removed_events (seq, id, space) SELECT seq, id, COALESCE(actor::jsonb->>'in', '') FROM events WHERE seq IN ${seqList}
       ON CONFLICT DO NOTHING RETURNING seq) ${keptMore("added")}`,
  );
  const forgetOldest = db.prepare(forgetOldestSql);
  const open = db.prepare("SELECT set_config('chronolog.removing', 'on', true)");
  const deleteEvents = db.prepare(`DELETE FROM events WHERE seq IN ${seqList}`);
  const close = db.prepare("SELECT set_config('chronolog.removing', 'off', true)");
  const count = db.prepare("UPDATE log_retention SET removed_events = removed_events + ?, removed_bytes = removed_bytes + ? WHERE id = 1");
  return (json, events, removedBytes, keepIds) => {
    if (keepIds > 0) {
      defer(forgetReused, json, json); // first: the id is unique among the kept
      defer(insertRemoved, json);
    }
    defer(forgetOldest, keepIds, 10 * events + 1_000);
    defer(open);
    defer(deleteEvents, json);
    defer(close);
    defer(count, events, removedBytes);
  };
}
