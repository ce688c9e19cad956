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
 * own change; a timer's keys go with its row (a trigger deletes them with it).
 */
export interface TimerCancelStatements {
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
  return {
    shapes(): CancelShape[] {
      return (shapes.all() as { event_type: string; paths: string }[]).map((r) => ({ eventType: r.event_type, paths: r.paths }));
    },
    addShape(shape: CancelShape): void {
      defer(addShape, shape.eventType, shape.paths);
    },
    setKeys(timerId: string, keys: CancelKey[], hadKeys: boolean): void {
      if (hadKeys) defer(removeOf, timerId);
      for (const k of keys) defer(insert, k.eventType, k.matchKey, timerId);
    },
    timersOn(key: CancelKey): string[] {
      return on.all(key.eventType, key.matchKey) as string[];
    },
  };
}
