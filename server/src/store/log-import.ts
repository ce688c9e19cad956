import { DeferredInserts } from "./postgres/deferred-inserts.js";
import type { NativeClient } from "./postgres/native-client.js";
import { refuseLiveLeader } from "./postgres/offline.js";
import type { SqliteStore } from "./sqlite/open.js";

/** An event as an archive gives it back: every column of the log's row, data and actor as their stored JSON text. */
export interface ImportedEvent {
  seq: number;
  id: string;
  type: string;
  data: string;
  cause: string;
  /** JSON `{id, for, in, via}`, or null: the system. */
  actor: string | null;
  /** Commit time, ms since the epoch (UTC). */
  at: number;
  /** Its trace context as stored (traceparent, then a space and tracestate when there is one), or null. */
  trace: string | null;
}

/** The log's events: how many, and the first and last seq (0 and 0 when it is empty). */
export interface LogExtent {
  events: number;
  first: number;
  last: number;
}

/**
 * Writes archived events into the log of a store no owner runs on (`chronolog import`), under
 * the seqs, ids and commit times they had: the one path that writes given seqs, and only offline,
 * so no API lets a caller write history. Each {@link append} is one transaction.
 */
export interface LogImport {
  extent(): LogExtent;
  /** The id of the event at `seq`, or undefined when the log has none there. */
  idAt(seq: number): string | undefined;
  /**
   * Appends `events` (in seq order, each seq above `after`) in one transaction, durable once it
   * resolves, provided the log's last seq is still `after`; all of them or none.
   */
  append(events: ImportedEvent[], after: number): Promise<void>;
}

const columns = ["seq", "id", "type", "data", "cause", "actor", "at", "trace"];
const insertSql = `INSERT INTO events (${columns.join(", ")}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`;
const extentSql = "SELECT COUNT(*) AS events, COALESCE(MIN(seq), 0) AS first, COALESCE(MAX(seq), 0) AS last FROM events";
const rowOf = (e: ImportedEvent) => [e.seq, e.id, e.type, e.data, e.cause, e.actor, e.at, e.trace];

function extentOf(row: Record<string, unknown>): LogExtent {
  return { events: Number(row.events), first: Number(row.first), last: Number(row.last) };
}

function headMoved(after: number, last: number): Error {
  return new Error(`the log's last seq is ${last}, not ${after} as it was: something else writes to it (is an owner running on it?)`);
}

/** The log import of an SQLite data folder opened by the command (so it holds the folder's owner lock). */
export function sqliteLogImport(store: SqliteStore): LogImport {
  const db = store.db;
  const extent = db.prepare(extentSql);
  const idAt = db.prepare("SELECT id FROM events WHERE seq = ?").pluck();
  const insert = db.prepare(insertSql);
  const append = db.transaction((events: ImportedEvent[], after: number) => {
    const { last } = extentOf(extent.get() as Record<string, unknown>);
    if (last !== after) throw headMoved(after, last);
    for (const e of events) insert.run(...rowOf(e));
  });
  return {
    extent: () => extentOf(extent.get() as Record<string, unknown>),
    idAt: (seq) => idAt.get(seq) as string | undefined,
    async append(events, after) {
      append.immediate(events, after);
      await store.durability.sync();
    },
  };
}

/**
 * The log import of a PostgreSQL database (connected and migrated by the command). Each append's
 * transaction first locks the lease row and refuses when an owner leads the database; an owner
 * taking the lease meanwhile waits for the transaction to end.
 */
export function postgresLogImport(pg: NativeClient): LogImport {
  return {
    extent: () => extentOf(pg.querySync(extentSql)[0]),
    idAt: (seq) => pg.querySync("SELECT id FROM events WHERE seq = $1", [seq])[0]?.id as string | undefined,
    async append(events, after) {
      pg.querySync("BEGIN");
      try {
        refuseLiveLeader(pg);
        const { last } = extentOf(pg.querySync(extentSql)[0]);
        if (last !== after) throw headMoved(after, last);
        // The events table's partitions (migration 0007) through the last seq, first.
        if (events.length > 0) pg.querySync("SELECT chronolog_event_room($1)", [events[events.length - 1].seq]);
        const rows = new DeferredInserts("events", columns, 1);
        for (const e of events) rows.add(rowOf(e));
        for (const insert of rows.takeInserts()) pg.querySync(insert.text, insert.values);
        pg.querySync("COMMIT");
      } catch (e) {
        pg.querySync("ROLLBACK");
        throw e;
      }
    },
  };
}
