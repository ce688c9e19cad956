import type { BatchRead, ReadAhead } from "./read-ahead.js";
import { defer, type Db, type SqlStatement } from "./sql.js";
import { fromRow, type EventRecord, type EventRow } from "./events.js";

// The statements on `event_streams` (migration 0018): which events belong to a stream, at which
// position (log/streams.ts).

/**
 * The streams' statements. {@link append} only inside a committer unit, in the unit that appends
 * the event; {@link last} inside one sees what the batch appended before. As a {@link ReadAhead}
 * (Committer.submit's `readAhead`, keys the streams' keys), PostgreSQL's reads the last positions
 * of a batch's streams in one statement before its units run, so {@link last} needs no round trip
 * there; each append then keeps its stream's new last position for the rest of the batch (undone
 * with a unit that fails). Keys of {@link eventPositionKey} read, in the same statement, where the
 * events of those ids are in their streams (a retried emit's), so {@link ofSeq} of them needs no
 * round trip either, nor of an event the batch appended. SQLite's reads as it goes.
 */
export interface StreamStatements extends ReadAhead {
  /** Whether {@link prefetch} reads anything (PostgreSQL's): else there is no need to name streams. */
  readonly readsAhead: boolean;
  /** The stream's last position, or null when it has no event. */
  last(stream: string): number | null;
  /** Puts event `seq` at `position` of `stream`. */
  append(stream: string, position: number, seq: number): void;
  /** The stream and position of event `seq`, or undefined when it is in no stream. */
  ofSeq(seq: number): { stream: string; position: number } | undefined;
}

/**
 * PostgreSQL's: the last position of each stream of a JSON array (null: none), on the (stream,
 * position) key (`seq` null); then for each event id of a second array found in the log, its seq
 * and where it is in its stream (`stream` null: in none).
 */
const lastOfSql = `SELECT k.stream, (SELECT s.position FROM event_streams AS s WHERE s.stream = k.stream ORDER BY s.position DESC LIMIT 1) AS position,
    NULL::bigint AS seq
  FROM jsonb_array_elements_text(?::jsonb) AS k(stream)
  UNION ALL
  SELECT s.stream, s.position, e.seq FROM jsonb_array_elements_text(?::jsonb) AS x(id)
    CROSS JOIN LATERAL (SELECT seq FROM events WHERE id = x.id LIMIT 1) AS e
    LEFT JOIN event_streams AS s ON s.seq = e.seq`;

/** Marks a key of {@link eventPositionKey} (a stream's key has no control character first). */
const eventKeyMark = "\u0000";

/**
 * The read-ahead key (StreamStatements as a ReadAhead) of where event `id` is in its stream, if it
 * is in the log: what the answer to a retried emit naming a stream looks up.
 */
export function eventPositionKey(id: string): string {
  return eventKeyMark + id;
}

/** Where the batch keeps the stream and position of event `seq` (null: in none). */
function seqKey(seq: number): string {
  return `${eventKeyMark}${seq}`;
}

/** The streams' statements on `db`. */
export function streamStatements(db: Db): StreamStatements {
  const last = db.prepare("SELECT position FROM event_streams WHERE stream = ? ORDER BY position DESC LIMIT 1").pluck();
  const append = db.prepare("INSERT INTO event_streams (stream, position, seq) VALUES (?, ?, ?)");
  const ofSeq = db.prepare("SELECT stream, position FROM event_streams WHERE seq = ?");
  // PostgreSQL: the last positions read for the running batch, and those its appends took.
  const readAhead = db.readAhead?.bind(db);
  const ahead = readAhead ? db.readForBatch?.("event_streams") : undefined;
  return {
    readsAhead: ahead !== undefined,
    batchRead(keys: string[], assumeAbsent?: boolean): BatchRead | undefined {
      if (!ahead) return undefined;
      const streams = new Set<string>();
      const ids = new Set<string>();
      for (const key of keys)
        if (!key.startsWith(eventKeyMark)) streams.add(key);
        else if (!assumeAbsent) ids.add(key.slice(eventKeyMark.length)); // a batch that takes its ids to be new finds none of them
      if (streams.size === 0 && ids.size === 0) return undefined;
      return {
        sql: lastOfSql,
        params: [JSON.stringify([...streams]), JSON.stringify([...ids])],
        take(rows) {
          for (const row of rows as { stream: string | null; position: number | string | null; seq: number | string | null }[]) {
            if (row.seq === null) ahead.remember(row.stream as string, row.position === null ? null : Number(row.position));
            else ahead.remember(seqKey(Number(row.seq)), row.stream === null ? null : { stream: row.stream, position: Number(row.position) });
          }
        },
      };
    },
    prefetch(keys: string[], assumeAbsent: boolean): Promise<void> | undefined {
      const read = this.batchRead?.(keys, assumeAbsent);
      if (!read || !readAhead) return undefined;
      return readAhead(read.sql, read.params).then(read.take);
    },
    last(stream: string): number | null {
      const kept = ahead?.recalled(stream);
      if (kept !== undefined) return kept as number | null;
      const position = last.get(stream) as number | string | undefined;
      return position === undefined ? null : Number(position);
    },
    append(stream: string, position: number, seq: number): void {
      defer(append, stream, position, seq);
      ahead?.remember(stream, position);
      ahead?.remember(seqKey(seq), { stream, position });
    },
    ofSeq(seq: number) {
      const kept = ahead?.recalled(seqKey(seq)) as { stream: string; position: number } | null | undefined;
      if (kept !== undefined) return kept ?? undefined;
      const row = ofSeq.get(seq) as { stream: string; position: number | string } | undefined;
      return row && { stream: row.stream, position: Number(row.position) };
    },
  };
}

/** A page of a stream as ReadStream reads it: its events with their positions, and its last position. */
export interface StreamPage {
  entries: { position: number; event: EventRecord }[];
  /** The stream's last position among durable events, or null when it has none. */
  last: number | null;
}

/**
 * A stream's pages as ReadStream reads them, outside the committer, of events up to `head` (the
 * durable seq): on PostgreSQL on a connection of its own without blocking the event loop
 * ({@link Db.readAsync}); on SQLite at once.
 */
export function streamReads(db: Db): (stream: string, from: number, backwards: boolean, limit: number, head: number) => Promise<StreamPage> {
  const entriesSql = (backwards: boolean) =>
    `SELECT s.position AS stream_position, e.* FROM event_streams s JOIN events e ON e.seq = s.seq
     WHERE s.stream = ? AND s.position ${backwards ? "<=" : ">="} ? AND s.seq <= ? ORDER BY s.position ${backwards ? "DESC" : ""} LIMIT ?`;
  const lastSql = "SELECT position FROM event_streams WHERE stream = ? AND seq <= ? ORDER BY position DESC LIMIT 1";
  const readAsync = db.readAsync?.bind(db);
  const prepared = new Map<string, SqlStatement>();
  const run = readAsync
    ? (sql: string, params: unknown[]) => readAsync(sql, params) as Promise<Record<string, unknown>[]>
    : async (sql: string, params: unknown[]) => {
        let stmt = prepared.get(sql);
        if (!stmt) prepared.set(sql, (stmt = db.prepare(sql)));
        return stmt.all(...params) as Record<string, unknown>[];
      };
  return async (stream, from, backwards, limit, head) => {
    const rows = await run(entriesSql(backwards), [stream, from, head, limit]);
    const [last] = await run(lastSql, [stream, head]);
    return {
      entries: rows.map(({ stream_position, ...row }) => ({ position: Number(stream_position), event: fromRow(row as unknown as EventRow) })),
      last: last === undefined ? null : Number(last.position),
    };
  };
}
