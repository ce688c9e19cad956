import type { BatchRead, ReadAhead } from "./read-ahead.js";
import { defer, sqlFor, type Db } from "./sql.js";
import { keepTimerRows, keptTimerRows, timerColumns } from "./timers.js";

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
 * batch's keys in one statement before its units run, with those timers' rows (kept for the batch:
 * keptTimerRows), so neither {@link timersOn} nor the cancel's read of the timer needs a round trip
 * there. The batch's units add to what is kept ({@link setKeys}); a timer whose keys a unit removed
 * may still be named (the caller reads the timer, which says what it waits on). The keys of a shape
 * first used in the batch ({@link addShape}) are known from the batch alone. SQLite's reads as it goes.
 */
export interface TimerCancelStatements extends ReadAhead {
  /** Whether {@link prefetch} reads anything (PostgreSQL's): else there is no need to name keys. */
  readonly readsAhead: boolean;
  /** Every shape ever used (a few rows): the owner keeps them in memory. */
  shapes(): CancelShape[];
  /**
   * Records `shape`, new to the caller (the owner keeps the shapes in memory): no timer waited on
   * a key of it before, so for the rest of the batch its keys' timers are those its units add.
   */
  addShape(shape: CancelShape): void;
  /** Replaces the keys of timer `timerId` with `keys` ([]: none). */
  setKeys(timerId: string, keys: CancelKey[], hadKeys: boolean): void;
  /**
   * The ids of the timers waiting on `key`, at most {@link keysPerRead} (read again after
   * cancelling those), in id order; inside a batch that kept the key, also timers that no longer
   * wait on it (their keys were replaced or they were removed in the batch: check the timer).
   */
  timersOn(key: CancelKey): string[];
}

/** Most timer ids one {@link TimerCancelStatements.timersOn} returns. */
export const keysPerRead = 1_000;

/** `key` as one string, as {@link TimerCancelStatements.prefetch} takes keys (an event type has no line break). */
export function cancelKeyText(key: CancelKey): string {
  return `${key.eventType}\n${key.matchKey}`;
}

/**
 * PostgreSQL's: up to {@link keysPerRead} timers waiting on each key of a JSON array of
 * {event_type, match_key}, with their rows (a key with none: one row, no timer).
 */
const onKeysSql = `SELECT k.event_type, k.match_key, c.timer_id, ${timerColumns
  .split(", ")
  .map((column) => `tm.${column}`)
  .join(", ")}
  FROM jsonb_to_recordset(?::jsonb) AS k(event_type text, match_key text)
  LEFT JOIN LATERAL (SELECT t.timer_id FROM timer_cancels AS t WHERE t.event_type = k.event_type AND t.match_key = k.match_key
    ORDER BY t.timer_id LIMIT ${keysPerRead}) AS c ON true
  LEFT JOIN timers AS tm ON tm.id = c.timer_id`;

/** Where the batch keeps that a shape is new in it (cf. {@link cancelKeyText}: a match key is a JSON object, a shape's paths an array). */
function shapeText(eventType: string, paths: string): string {
  return `${eventType}\n${paths}`;
}

/** The shape of `key`: its match key's paths, sorted, as JSON. */
function shapeOfKey(key: CancelKey): string {
  return JSON.stringify(Object.keys(JSON.parse(key.matchKey) as object).sort());
}

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
  // PostgreSQL: the timers read for the running batch by key, with what its units add (a list cut
  // at keysPerRead is handed out once, then read), and the shapes new in the batch.
  const readAhead = db.readAhead?.bind(db);
  const ahead = readAhead ? db.readForBatch?.("timer_cancels") : undefined;
  const timerRows = keptTimerRows(db);
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
          const timers: string[] = [];
          const timerFound: unknown[] = [];
          for (const row of rows as { event_type: string; match_key: string; timer_id: string | null; id: string | null }[]) {
            const text = cancelKeyText({ eventType: row.event_type, matchKey: row.match_key });
            const ids = found.get(text) ?? [];
            if (row.timer_id !== null) {
              ids.push(row.timer_id);
              timers.push(row.timer_id);
              if (row.id !== null) timerFound.push(row);
            }
            found.set(text, ids);
          }
          for (const [text, ids] of found) ahead.remember(text, ids);
          if (timerRows) keepTimerRows(timerRows, timers, timerFound);
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
      ahead?.remember(shapeText(shape.eventType, shape.paths), true);
    },
    setKeys(timerId: string, keys: CancelKey[], hadKeys: boolean): void {
      if (hadKeys) defer(removeOf, timerId);
      for (const k of keys) {
        defer(insert, k.eventType, k.matchKey, timerId);
        if (!ahead) continue;
        // What the batch keeps of the key gains the timer: a whole list (read, or of a shape new in the batch) stays whole.
        const text = cancelKeyText(k);
        const kept = ahead.recalled(text) as string[] | undefined;
        const ids = kept ?? (ahead.recalled(shapeText(k.eventType, shapeOfKey(k))) ? [] : undefined);
        if (!ids || ids.includes(timerId)) continue;
        if (ids.length + 1 >= keysPerRead) ahead.forget(text);
        else ahead.remember(text, [...ids, timerId].sort());
      }
    },
    timersOn(key: CancelKey): string[] {
      if (ahead) {
        const text = cancelKeyText(key);
        const kept = ahead.recalled(text) as string[] | undefined;
        if (kept && kept.length < keysPerRead) return kept; // the whole list
        if (kept) {
          ahead.forget(text); // its first keysPerRead: handed out once, then read
          return kept;
        }
        if (ahead.recalled(shapeText(key.eventType, shapeOfKey(key)))) return [];
      }
      return on.all(key.eventType, key.matchKey) as string[];
    },
  };
}
