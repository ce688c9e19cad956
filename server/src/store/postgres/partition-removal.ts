import { defer, type Db } from "../sql.js";

/** A partition of the events table (migration 0007): seqs in [`from`, `to`). */
export interface EventPartition {
  name: string;
  from: number;
  to: number;
}

/**
 * What retention does with the events table's partitions on PostgreSQL (log/partition-plan.ts):
 * reads outside the committer, on a connection of their own; {@link keepIds} and {@link drop}
 * only inside a committer unit.
 */
export interface PartitionRemovalStatements {
  /** The partitions, oldest first. */
  list(): Promise<EventPartition[]>;
  /** Events, bytes, highest seq and commit time by type in `partition`: one read of it (log/partition-plan.ts keeps it while the partition is full). */
  summary(partition: EventPartition): Promise<PartitionSummary>;
  /** The summaries stored (migration 0011), by partition name: those of the partitions not changed since they were read. */
  stored(): Promise<Map<string, PartitionSummary>>;
  /** Inside a committer unit: stores `partition`'s summary (read by {@link summary}). */
  store(partition: EventPartition, summary: PartitionSummary): void;
  /** Inside the committer unit that removes events with seqs in [`fromSeq`, `toSeq`] by rows: deletes the stored summaries of the partitions they are in (they are read again). */
  stale(fromSeq: number, toSeq: number): void;
  /** Whether an event after `partition` names one of its events as its cause (by the index on cause: one statement). */
  causedAfter(partition: EventPartition): Promise<boolean>;
  /**
   * Inside a committer unit, before a partition's drop: keeps the ids, seqs and spaces of its
   * events with seq in [`fromSeq`, `toSeq`) for GetEvent (those kept already stay as they are),
   * and forgets the oldest kept past `keepIds`, as LogRemovalStatements.remove does. Until the
   * drop commits, those events are in the log and among the removed ids both; GetEvent finds
   * them in the log first.
   */
  keepIds(fromSeq: number, toSeq: number, keepIds: number): void;
  /**
   * Inside a committer unit: drops `partition` (every event left in it goes, its file back to the
   * disk) when its stored summary is still there and counts `events` events (else it throws: the
   * unit writes nothing; a removal by rows deletes the summary in its own unit, so the events are
   * those retention weighed, without counting them here), and counts `events` and `bytes` as
   * removed. The DROP locks the events table until the batch commits
   * (readers wait those few ms), and waits for that lock at most {@link dropLockWaitMs} (readers
   * hold it a statement each), holding the owner's thread meanwhile: the unit fails past that
   * ({@link lockBusy} says so), and retention tries again after a pause.
   */
  drop(partition: EventPartition, events: number, bytes: number): void;
  /** Whether `error` is a drop's that waited its longest for the events table's lock. */
  lockBusy(error: unknown): boolean;
}

/** A partition's events by type: how many, their stored bytes, the highest seq and commit time among them. */
export type PartitionSummary = Map<string, { events: number; bytes: number; maxSeq: number; maxAt: number }>;

const partitionName = /^events_\d+$/;

/** How long a drop waits for the events table's lock, ms: the owner's thread waits with it. */
export const dropLockWaitMs = 20;

/** A summary as stored: `{"<type>": [events, bytes, max_seq, max_at]}`. */
function summaryText(summary: PartitionSummary): string {
  return JSON.stringify(Object.fromEntries([...summary].map(([type, s]) => [type, [s.events, s.bytes, s.maxSeq, s.maxAt]])));
}

function summaryOf(text: string): PartitionSummary {
  const types = JSON.parse(text) as Record<string, [number, number, number, number]>;
  return new Map(Object.entries(types).map(([type, [events, bytes, maxSeq, maxAt]]) => [type, { events, bytes, maxSeq, maxAt }]));
}

/**
 * Counts the rows CTE `added` (`RETURNING seq`) kept in removed_events, and lowers the watermark
 * under the lowest of them (an event removed after newer ones were: it is forgotten in seq order).
 */
export const keptMore = (added: string) =>
  `UPDATE log_retention SET kept_ids = kept_ids + (SELECT COUNT(*) FROM ${added}),
     forgotten_through = LEAST(forgotten_through, COALESCE((SELECT MIN(seq) FROM ${added}) - 1, forgotten_through)) WHERE id = 1`;

/**
 * Forgets the oldest kept ids past the first parameter (the ids to keep), at most the second a
 * statement, as one range of seqs: from above `forgotten_through` (migration 0018: the index
 * entries of the rows deleted before stay until a vacuum, and a scan from the first seq walked
 * them all) through the highest seq to forget. Two index range scans; `seq IN (...)` made the
 * planner hash-join a scan of the whole table, 180 ms a statement at a million ids kept.
 */
export const forgetOldestSql = `WITH floor AS (SELECT forgotten_through AS seq FROM log_retention WHERE id = 1),
     cut AS (SELECT MAX(seq) AS seq FROM (SELECT seq FROM removed_events WHERE seq > (SELECT seq FROM floor) ORDER BY seq
       LIMIT (SELECT GREATEST(0, LEAST(kept_ids - ?::bigint, ?::bigint)) FROM log_retention WHERE id = 1)) AS doomed),
     forgotten AS (DELETE FROM removed_events WHERE seq > (SELECT seq FROM floor) AND seq <= (SELECT seq FROM cut) RETURNING seq)
   UPDATE log_retention SET kept_ids = kept_ids - (SELECT COUNT(*) FROM forgotten),
     forgotten_through = COALESCE((SELECT MAX(seq) FROM forgotten), forgotten_through) WHERE id = 1`;

/** The partition statements on `db` (PostgreSQL, migration 0007); `rowBytes`: an event row's stored bytes in SQL. */
export function partitionRemovalStatements(db: Db, rowBytes: string): PartitionRemovalStatements {
  const read = async (sql: string, params: unknown[]) =>
    (db.readAsync ? await db.readAsync(sql, params) : db.prepare(sql).all(...params)) as Record<string, unknown>[];
  const storeSummary = db.prepare(
    "INSERT INTO event_partition_summaries (from_seq, types) VALUES (?, ?) ON CONFLICT (from_seq) DO UPDATE SET types = excluded.types",
  );
  const staleSummaries = db.prepare(
    "DELETE FROM event_partition_summaries WHERE from_seq IN (SELECT from_seq FROM event_partitions WHERE from_seq <= ? AND to_seq > ?)",
  );
  // The units' statements on the owner's thread: keepIds's writes are all deferred (sent with
  // the batch's commit, without blocking the event loop), each keeping kept_ids right in SQL; a
  // drop waits for two answers (its summary with the lock timeout set, and the DROP itself).
  // An id reused after its first event was removed: the newest removal is the one kept.
  const forgetReused = db.prepare(
    `WITH forgotten AS (DELETE FROM removed_events WHERE id IN (SELECT id FROM events WHERE seq >= ? AND seq < ?) AND (seq < ? OR seq >= ?) RETURNING 1)
     UPDATE log_retention SET kept_ids = kept_ids - (SELECT COUNT(*) FROM forgotten) WHERE id = 1`,
  );
  const keep = db.prepare(
    `WITH added AS (INSERT INTO removed_events (seq, id, space)
       SELECT seq, id, COALESCE(actor::jsonb->>'in', '') FROM events WHERE seq >= ? AND seq < ? ON CONFLICT DO NOTHING RETURNING seq)
     ${keptMore("added")}`,
  );
  const forgetOldest = db.prepare(forgetOldestSql);
  const count = db.prepare("UPDATE log_retention SET removed_events = removed_events + ?, removed_bytes = removed_bytes + ? WHERE id = 1");
  // The summary and the lock timeout set for the DROP in one round trip (the target list runs in order: the setting is read before it is set).
  const storedWithTimeout = db.prepare(
    `SELECT types, current_setting('lock_timeout') AS was, set_config('lock_timeout', '${dropLockWaitMs}ms', true) FROM event_partition_summaries WHERE from_seq = ?`,
  );
  const restoreTimeout = db.prepare("SELECT set_config('lock_timeout', ?, true)");
  const unlist = db.prepare("DELETE FROM event_partitions WHERE from_seq = ?");
  return {
    async list() {
      const rows = await read("SELECT name, from_seq, to_seq FROM event_partitions ORDER BY from_seq", []);
      return rows.map((r) => ({ name: r.name as string, from: Number(r.from_seq), to: Number(r.to_seq) }));
    },
    async summary(partition) {
      const rows = await read(
        `SELECT type, COUNT(*) AS n, SUM(${rowBytes}) AS bytes, MAX(seq) AS max_seq, MAX(at) AS max_at FROM events WHERE seq >= ? AND seq < ? GROUP BY type`,
        [partition.from, partition.to],
      );
      return new Map(rows.map((r) => [r.type as string, { events: Number(r.n), bytes: Number(r.bytes), maxSeq: Number(r.max_seq), maxAt: Number(r.max_at) }]));
    },
    async stored() {
      const rows = await read("SELECT p.name, s.types FROM event_partition_summaries s JOIN event_partitions p USING (from_seq)", []);
      return new Map(rows.map((r) => [r.name as string, summaryOf(r.types as string)]));
    },
    store(partition, summary) {
      defer(storeSummary, partition.from, summaryText(summary));
    },
    stale(fromSeq, toSeq) {
      defer(staleSummaries, toSeq, fromSeq);
    },
    async causedAfter(partition) {
      // Effects come after their causes; those with a cause are read by the index from after the partition.
      const rows = await read(
        "SELECT 1 FROM events e WHERE e.cause > '' AND e.seq >= ? AND e.cause IN (SELECT id FROM events WHERE seq >= ? AND seq < ?) LIMIT 1",
        [partition.to, partition.from, partition.to],
      );
      return rows.length > 0;
    },
    keepIds(fromSeq, toSeq, keepIds) {
      defer(forgetReused, fromSeq, toSeq, fromSeq, toSeq); // first: the id is unique among the kept
      defer(keep, fromSeq, toSeq);
      defer(forgetOldest, keepIds, 10 * (toSeq - fromSeq) + 1_000);
    },
    drop(partition, events, bytes) {
      if (!partitionName.test(partition.name)) throw new Error(`not a partition of the events table: ${JSON.stringify(partition.name)}`);
      // What retention weighed is what the partition holds (events only ever leave a full one, and
      // a removal by rows deletes its summary in its unit): else it stays.
      // A write first: the batch's transaction (and the unit's savepoint) begins before the lock timeout is set in it, with it in one round trip.
      defer(count, events, bytes);
      const row = storedWithTimeout.get(partition.from) as { types: string; was: string } | undefined;
      const n = row === undefined ? undefined : [...summaryOf(row.types).values()].reduce((sum, s) => sum + s.events, 0);
      if (row === undefined || n !== events)
        throw new Error(
          `partition ${partition.name}'s summary ${n === undefined ? "changed" : `counts ${n} events`}, not the ${events} retention weighed: it stays`,
        );
      db.prepare(`DROP TABLE ${partition.name}`).run();
      defer(restoreTimeout, row.was);
      defer(unlist, partition.from);
    },
    lockBusy(error) {
      return (error as { sqlState?: string } | undefined)?.sqlState === "55P03"; // lock_not_available: the lock timeout passed
    },
  };
}
