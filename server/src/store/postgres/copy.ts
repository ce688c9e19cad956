import type { SqliteDb } from "../sqlite/open.js";
import { DeferredInserts } from "./deferred-inserts.js";
import type { NativeClient } from "./native-client.js";
import { refuseLiveLeader } from "./offline.js";

/** The owner's tables, in the order they are copied, with their columns (the same on both stores). */
const tables: { name: string; columns: string[] }[] = [
  { name: "events", columns: ["seq", "id", "type", "data", "cause", "actor", "at", "trace"] },
  { name: "plugins", columns: ["name", "revision", "manifest", "registered_at"] },
  { name: "plugin_revisions", columns: ["name", "revision", "manifest", "registered_at"] },
  { name: "documents", columns: ["collection", "id", "doc", "space"] },
  { name: "collection_writes", columns: ["id", "collection", "doc_id", "at"] },
  { name: "cursors", columns: ["processor", "ack_floor", "paused", "updated_at"] },
  { name: "failed_deliveries", columns: ["processor", "seq", "error", "attempts", "failed_seq"] },
  {
    name: "timers",
    columns: [
      "id",
      "kind",
      "action",
      "input",
      "spec",
      "next_due_ms",
      "actor",
      "plugin",
      "schedule",
      "overdue",
      "chain_depth",
      "occurrences",
      "region",
      "created_at",
      "updated_at",
      "disabled",
      "retry_delays_ms",
      "policy",
      "paused",
      "trace",
    ],
  },
  {
    name: "action_calls",
    columns: ["call_id", "action", "input_hash", "actor", "recorded", "state", "attempt", "output", "error", "updated_at", "trace", "limit_keys"],
  },
  {
    name: "timer_occurrences",
    columns: [
      "id",
      "timer_id",
      "due_ms",
      "action",
      "input",
      "actor",
      "overdue",
      "retry_delays_ms",
      "status",
      "attempts",
      "next_attempt_ms",
      "call_id",
      "lateness_ms",
      "error",
      "claimed_at",
      "updated_at",
      "origin",
    ],
  },
  { name: "removed_events", columns: ["seq", "id", "space"] },
];

/** Rows held in memory before they are sent. */
const rowsPerFlush = 1_000;

/**
 * Copies every owner table of an SQLite data folder (opened, so no owner runs on it, and
 * migrated to the latest schema) into an empty, migrated PostgreSQL database, in one
 * transaction that also checks no owner leads the database: all of it, or nothing. Refuses a
 * database that holds events already. Returns the rows copied per table.
 */
export function copySqliteToPostgres(sqlite: SqliteDb, pg: NativeClient): Record<string, number> {
  const copied: Record<string, number> = {};
  pg.querySync("BEGIN");
  try {
    refuseLiveLeader(pg);
    if (Number(pg.querySync("SELECT count(*) AS n FROM events")[0].n) > 0)
      throw new Error("the database holds events already: copy into a new, empty database");
    // The events table's partitions (migration 0007) through the last seq, first.
    const { head } = sqlite.prepare("SELECT COALESCE(MAX(seq), 0) AS head FROM events").get() as { head: number };
    pg.querySync("SELECT chronolog_event_room($1)", [head]);
    for (const { name, columns } of tables) {
      // The same multi-row INSERTs as appended events: rows held, sent in chunks.
      const rows = new DeferredInserts(name, columns, 0);
      const send = () => {
        for (const insert of rows.takeInserts()) pg.querySync(insert.text, insert.values);
        rows.clear();
      };
      let count = 0;
      for (const row of sqlite
        .prepare(`SELECT ${columns.join(", ")} FROM ${name}`)
        .raw()
        .iterate() as IterableIterator<unknown[]>) {
        rows.add(row);
        if (++count % rowsPerFlush === 0) send();
      }
      send();
      copied[name] = count;
    }
    // What retention removed so far (the row both migrations made).
    const removed = sqlite.prepare("SELECT removed_events, removed_bytes, kept_ids FROM log_retention WHERE id = 1").get() as {
      removed_events: number;
      removed_bytes: number;
      kept_ids: number;
    };
    pg.querySync("UPDATE log_retention SET removed_events = $1, removed_bytes = $2, kept_ids = $3 WHERE id = 1", [
      String(removed.removed_events),
      String(removed.removed_bytes),
      String(removed.kept_ids),
    ]);
    pg.querySync("COMMIT");
  } catch (e) {
    pg.querySync("ROLLBACK");
    throw e;
  }
  return copied;
}
