import type { BatchRead, ReadAhead } from "./read-ahead.js";
import { defer, sqlFor, type Db } from "./sql.js";

// The statements on `timer_cancels` and `timer_cancel_shapes` (migration 0018): the index of the
// events that cancel pending timers, by (event type, match key), which time/cancel-on.ts keeps.

/** One key a timer waits on: events of `eventType` whose match key is `matchKey`. */
export interface CancelKey {
  eventType: string;
  matchKey: string;
}

/** A set of event paths some timer matches events of `eventType` on (sorted JSON array text). */
export interface CancelShape {
  eventType: string;
  paths: string;
}

/**
 * The cancel index's statements. Writes only inside a committer unit, in the unit of the timer's
 * own change; a timer's keys go with its row (a trigger deletes them with it). As a
 * {@link ReadAhead} (keys from {@link cancelKeyText}), PostgreSQL's reads the timers waiting on a
 * batch's keys in one statement before its units run, so {@link timersOn} needs no round trip for
 * them there (a key a unit of the batch adds is read again); SQLite's reads as it goes.
 */
export interface TimerCancelStatements extends ReadAhead {
  /** Whether {@link prefetch} reads anything (PostgreSQL's): else there is no need to name keys. */
  readonly readsAhead: boolean;
  /** Every shape ever used (a few rows): the owner keeps them in memory. */
  shapes(): CancelShape[];
  /** Records `shape` (nothing when it is known). */
  addShape(shape: CancelShape): void;
  /** Replaces the keys of timer `timerId` with `keys` ([]: none). */
  setKeys(timerId: string, keys: CancelKey[], hadKeys: boolean): void;
  /** The ids of the timers waiting on `key`, at most {@link keysPerRead} (read again after cancelling those). */
  timersOn(key: CancelKey): string[];
}

/** Most timer ids one {@link TimerCancelStatements.timersOn} returns. */
export const keysPerRead = 1_000;

/** `key` as one string, as {@link TimerCancelStatements.prefetch} takes keys (an event type has no line break). */
export function cancelKeyText(key: CancelKey): string {
  return `${key.eventType}\n${key.matchKey}`;
}

/** PostgreSQL's: up to {@link keysPerRead} timers waiting on each key of a JSON array of {event_type, match_key} (a key with none: one row, no timer). */
const onKeysSql = `SELECT k.event_type, k.match_key, c.timer_id
  FROM jsonb_to_recordset(?::jsonb) AS k(event_type text, match_key text)
  LEFT JOIN LATERAL (SELECT t.timer_id FROM timer_cancels AS t WHERE t.event_type = k.event_type AND t.match_key = k.match_key
    ORDER BY t.timer_id LIMIT ${keysPerRead}) AS c ON true`;

/** The cancel index's statements on `db`. */
export function timerCancelStatements(db: Db): TimerCancelStatements {
  const shapes = db.prepare("SELECT event_type, paths FROM timer_cancel_shapes");
  const addShape = db.prepare(
    sqlFor(db, {
      sqlite: "INSERT OR IGNORE INTO timer_cancel_shapes (event_type, paths) VALUES (?, ?)",
      postgres: "INSERT INTO timer_cancel_shapes (event_type, paths) VALUES (?, ?) ON CONFLICT DO NOTHING",
    }),
  );
  const insert = db.prepare(
    sqlFor(db, {
      sqlite: "INSERT OR IGNORE INTO timer_cancels (event_type, match_key, timer_id) VALUES (?, ?, ?)",
      postgres: "INSERT INTO timer_cancels (event_type, match_key, timer_id) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
    }),
  );
  const removeOf = db.prepare("DELETE FROM timer_cancels WHERE timer_id = ?");
  const on = db.prepare(`SELECT timer_id FROM timer_cancels WHERE event_type = ? AND match_key = ? ORDER BY timer_id LIMIT ${keysPerRead}`).pluck();
  // PostgreSQL: the timers read for the running batch by key (an empty list is kept until a unit
  // adds the key; a list of timers is handed out once, those timers' cancels change it).
  const readAhead = db.readAhead?.bind(db);
  const ahead = readAhead ? db.readForBatch?.("timer_cancels") : undefined;
  return {
    readsAhead: ahead !== undefined,
    batchRead(keys: string[]): BatchRead | undefined {
      if (!ahead) return undefined;
      const pairs = [...new Set(keys)].map((text) => {
        const at = text.indexOf("\n");
        return { event_type: text.slice(0, at), match_key: text.slice(at + 1) };
      });
      return {
        sql: onKeysSql,
        params: [JSON.stringify(pairs)],
        take(rows) {
          const found = new Map<string, string[]>();
          for (const row of rows as { event_type: string; match_key: string; timer_id: string | null }[]) {
            const text = cancelKeyText({ eventType: row.event_type, matchKey: row.match_key });
            const ids = found.get(text) ?? [];
            if (row.timer_id !== null) ids.push(row.timer_id);
            found.set(text, ids);
          }
          for (const [text, ids] of found) ahead.remember(text, ids);
        },
      };
    },
    prefetch(keys: string[]): Promise<void> | undefined {
      const read = this.batchRead?.(keys);
      if (!read || !readAhead) return undefined;
      return readAhead(read.sql, read.params).then(read.take);
    },
    shapes(): CancelShape[] {
      return (shapes.all() as { event_type: string; paths: string }[]).map((r) => ({ eventType: r.event_type, paths: r.paths }));
    },
    addShape(shape: CancelShape): void {
      defer(addShape, shape.eventType, shape.paths);
    },
    setKeys(timerId: string, keys: CancelKey[], hadKeys: boolean): void {
      if (hadKeys) defer(removeOf, timerId);
      for (const k of keys) {
        defer(insert, k.eventType, k.matchKey, timerId);
        ahead?.forget(cancelKeyText(k));
      }
    },
    timersOn(key: CancelKey): string[] {
      if (ahead) {
        const text = cancelKeyText(key);
        const kept = ahead.recalled(text) as string[] | undefined;
        if (kept?.length === 0) return kept;
        if (kept) {
          ahead.forget(text);
          return kept;
        }
      }
      return on.all(key.eventType, key.matchKey) as string[];
    },
  };
}
