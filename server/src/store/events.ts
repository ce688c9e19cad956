import type { Db } from "./database.js";
import { limitedStatement } from "./limited.js";

/** An event as stored: `data` and `actor` parsed, times in ms since the epoch (UTC). SPEC E1. */
export interface EventRecord {
  seq: number;
  id: string;
  type: string;
  data: Record<string, unknown>;
  cause: string;
  actor: ActorRecord | null;
  at: number;
}

/** The whole actor (E2); empty strings for fields not set. */
export interface ActorRecord {
  id: string;
  for: string;
  in: string;
  via: string;
}

interface EventRow {
  seq: number;
  id: string;
  type: string;
  data: string;
  cause: string;
  actor: string | null;
  at: number;
}

function fromRow(row: EventRow): EventRecord {
  return {
    seq: row.seq,
    id: row.id,
    type: row.type,
    data: JSON.parse(row.data),
    cause: row.cause,
    actor: row.actor === null ? null : JSON.parse(row.actor),
    at: row.at,
  };
}

/**
 * The statements on the `events` table, one function each. Reads may run
 * anywhere; writes only inside a committer transaction.
 */
export function eventStatements(db: Db) {
  const insert = db.prepare(
    "INSERT INTO events (seq, id, type, data, cause, actor, at) VALUES (?, ?, ?, ?, ?, ?, ?)",
  );
  const byId = db.prepare("SELECT * FROM events WHERE id = ?");
  const after = limitedStatement(db, "SELECT * FROM events WHERE seq > ? ORDER BY seq LIMIT ?");
  const head = db.prepare("SELECT COALESCE(MAX(seq), 0) AS head FROM events");
  const firstAtOrAfter = db.prepare("SELECT MIN(seq) AS seq FROM events WHERE at >= ?");
  return {
    /** Inserts one event; the caller gives the next dense seq. Throws on a duplicate id. */
    insert(e: EventRecord): void {
      insert.run(e.seq, e.id, e.type, JSON.stringify(e.data), e.cause, e.actor === null ? null : JSON.stringify(e.actor), e.at);
    },
    /** The event with this id, or undefined. */
    findById(id: string): EventRecord | undefined {
      const row = byId.get(id) as EventRow | undefined;
      return row && fromRow(row);
    },
    /** Up to `limit` events with seq > `afterSeq`, in seq order (all types). */
    readAfter(afterSeq: number, limit: number): EventRecord[] {
      return (after(limit).all(afterSeq) as EventRow[]).map(fromRow);
    },
    /**
     * Up to `limit` events of the given types with seq > `afterSeq`, in seq
     * order; uses the (type, seq) index.
     */
    readAfterOfTypes(afterSeq: number, limit: number, types: string[]): EventRecord[] {
      const marks = types.map(() => "?").join(", ");
      const stmt = db.prepare(`SELECT * FROM events WHERE type IN (${marks}) AND seq > ? ORDER BY seq LIMIT ?`);
      return (stmt.all(...types, afterSeq, limit) as EventRow[]).map(fromRow);
    },
    /** The last seq in the log (0 when empty). */
    head(): number {
      return (head.get() as { head: number }).head;
    },
    /** The first seq committed at or after `atMs`, or undefined. */
    firstAtOrAfter(atMs: number): number | undefined {
      return (firstAtOrAfter.get(atMs) as { seq: number | null }).seq ?? undefined;
    },
  };
}

/** The statements of {@link eventStatements}. */
export type EventStatements = ReturnType<typeof eventStatements>;
