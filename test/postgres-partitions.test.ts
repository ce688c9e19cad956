// The events table partitioned by seq range on PostgreSQL (migration 0007): appends go on across
// the partitions the writer makes ahead, every read finds events in any partition, and retention
// drops whole partitions, so the table's size on disk falls (no dead rows left for VACUUM).
// Partitions of 100 or 1,000 seqs here (`event_partitioning.span`, set while the log is empty).
//
// @module-tag postgres

import { Code } from "@connectrpc/connect";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../server/src/clock.js";
import type { RetentionPass } from "../server/src/log/retention-pass.js";
import { migratePostgres } from "../server/src/store/postgres/migrate.js";
import { connectNative, endNative } from "../server/src/store/postgres/pg-db.js";
import { createClient } from "../sdk/ts/src/client.js";
import { expectConnectError } from "./helpers/log-snapshot.js";
import { databaseOf, onPostgres, queryStore, startTestOwner, tempDir } from "./helpers/owner.js";
import { databaseUrl } from "./helpers/postgres-server.js";
import { closeTestStores, openTestStore, testEvent } from "./helpers/stores.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
  await closeTestStores();
});

const MINUTE = 60_000;
/** An event row's stored bytes on PostgreSQL, as retention counts them (store/log-removal.ts). */
const pgRowBytes = "octet_length(data) + COALESCE(octet_length(actor), 0) + char_length(id) + char_length(type) + char_length(cause)";
const admin = { name: "admin", token: "admin-token-0123456789", role: "admin" as const };
const notes = { name: "notes", events: { "note.added": { allow: ["*"] }, "note.kept": { allow: ["*"] } } };

/** An owner on a new database whose partitions hold `span` seqs each (or on the database of `reopen`), with `retention` in its config. */
async function start(span: number, retention?: object, plugin: object = notes, reopen?: string) {
  const dataDir = reopen ?? tempDir();
  if (!reopen) {
    // The log is empty: its first partition (of the default span) goes, the next ones are made with this one.
    queryStore(dataDir, "UPDATE event_partitioning SET span = ?", [span]);
    queryStore(dataDir, "DROP TABLE events_1");
    queryStore(dataDir, "DELETE FROM event_partitions");
  }
  const clock = new ManualClock(Date.UTC(2026, 2, 2, 12));
  let passes: RetentionPass[] = [];
  const owner = await startTestOwner({
    dataDir,
    clock,
    timers: clock,
    config: { principals: [admin], ...(retention && { log: { retention: { interval_ms: MINUTE, batch_events: 500, ...retention } } }) },
  });
  owner.logRetention.onPass((p) => passes.push(p));
  let closed: Promise<void> | undefined;
  const close = () => (closed ??= owner.close());
  cleanups.push(close);
  const client = createClient({ url: owner.url, token: admin.token });
  await client.registerPlugin(plugin);
  await owner.logRetention.idle(); // the pass at start ended: what a test emits next waits for its `pass`
  const pass = async (): Promise<RetentionPass> => {
    await owner.logRetention.idle(); // the pass at start is not the next
    passes = [];
    await owner.settled();
    clock.advance(MINUTE);
    const deadline = Date.now() + 60_000;
    while (passes.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    if (passes.length === 0) throw new Error("no retention pass");
    return passes[0];
  };
  const query = (sql: string) => queryStore(dataDir, sql);
  return { owner, client, pass, query, close, dataDir };
}

/** Emits `count` notes of about 200 bytes, in batches of 500 (each crossing partitions of 100 or 1,000 seqs). */
async function emitNotes(client: ReturnType<typeof createClient>, count: number, type = "note.added"): Promise<void> {
  for (let from = 0; from < count; from += 500)
    await client.emitBatch(Array.from({ length: Math.min(500, count - from) }, (_, i) => ({ type, data: { i: from + i, text: "x".repeat(200) } })));
}

/** The partitions' total size on disk, their indexes and TOAST included (bytes), and how many there are. */
function tableSize(query: (sql: string) => Record<string, unknown>[]): { bytes: number; partitions: number } {
  const [row] = query("SELECT COALESCE(SUM(pg_total_relation_size(relid)), 0) AS bytes, COUNT(*) AS partitions FROM pg_partition_tree('events') WHERE isleaf");
  return { bytes: Number(row.bytes), partitions: Number(row.partitions) };
}

describe.runIf(onPostgres)("the events table's partitions (PostgreSQL)", () => {
  it("appends go on across the partitions made ahead; reads by seq, id, type and cause find events in any of them", async () => {
    const { client, query } = await start(100);
    await emitNotes(client, 1_000);
    for (let i = 0; i < 120; i++) await client.emit("note.kept", { i });
    const head = Number((await client.log.readLog({})).headSeq);
    expect(head).toBeGreaterThanOrEqual(1_120);
    // Every seq through the head once, in order; the partitions reach past the head and touch.
    const seqs: number[] = [];
    for (let after = 0n; ; ) {
      const page = await client.log.readLog({ afterSeq: after, pageSize: 1_000 });
      seqs.push(...page.events.map((e) => Number(e.seq)));
      if (page.events.length === 0) break;
      after = page.events.at(-1)!.seq;
    }
    expect(seqs).toEqual(Array.from({ length: head }, (_, i) => i + 1));
    const parts = query("SELECT from_seq, to_seq FROM event_partitions ORDER BY from_seq").map((r) => [Number(r.from_seq), Number(r.to_seq)]);
    expect(parts[0][0]).toBe(1);
    for (let i = 1; i < parts.length; i++) expect(parts[i][0]).toBe(parts[i - 1][1]);
    expect(parts.at(-1)![1]).toBeGreaterThan(head + 50);
    expect(parts.every(([from, to]) => to - from === 100)).toBe(true);
    // By type, by id (an event of the first partition), and an emit reusing its id answers it again.
    const kept = await client.log.readLog({ types: ["note.kept"], pageSize: 1_000 });
    expect(kept.events).toHaveLength(120);
    const first = (await client.log.readLog({ types: ["note.added"], pageSize: 1 })).events[0];
    expect((await client.log.getEvent({ id: first.id })).event?.seq).toBe(first.seq);
    const again = await client.emit("note.added", { i: 0, text: "x".repeat(200) }, { id: first.id });
    expect(again.event?.seq).toBe(first.seq);
    expect(Number((await client.log.readLog({})).headSeq)).toBe(head);
    // The log stays immutable in every partition.
    expect(() => query("DELETE FROM events WHERE seq = 150")).toThrow(/the log is immutable/);
    expect(() => query("TRUNCATE events_101")).toThrow(/the log is immutable/);
  });

  it("a unit undone with the partition it made leaves none; the next appends make it again", async () => {
    const empty = await openTestStore("postgres");
    empty.query("UPDATE event_partitioning SET span = 100");
    empty.query("DROP TABLE events_1");
    empty.query("DELETE FROM event_partitions");
    const t = await empty.reopen();
    const committer = t.committer();
    const undone = committer.submit((tx) => {
      for (let i = 0; i < 10; i++) tx.append(testEvent(`undone-${i}`));
      throw new Error("undone");
    });
    await expect(undone).rejects.toThrow("undone");
    expect(Number(t.query("SELECT COUNT(*) AS n FROM event_partitions")[0].n)).toBe(0);
    // One unit kept and one undone in the same batch, then a batch across three partitions.
    const kept = committer.submit((tx) => tx.append(testEvent("kept")));
    const undoneToo = committer.submit((tx) => {
      for (let i = 0; i < 120; i++) tx.append(testEvent(`undone-too-${i}`));
      throw new Error("undone too");
    });
    await kept;
    await expect(undoneToo).rejects.toThrow("undone too");
    await committer.submit((tx) => {
      for (let i = 0; i < 250; i++) tx.append(testEvent(`later-${i}`));
    });
    expect(Object.values(t.query("SELECT COUNT(*) AS n, MAX(seq) AS head FROM events")[0]).map(Number)).toEqual([251, 251]);
    const partitions = t.query("SELECT from_seq FROM event_partitions ORDER BY from_seq").map((r) => Number(r.from_seq));
    expect(partitions.slice(0, 3)).toEqual([1, 101, 201]);
  });

  it("retention drops whole partitions: the table's size on disk falls; what a rule lets go later waits for its partition", async () => {
    const { client, pass, query } = await start(1_000, { rules: [{ types: "note.added", max_count: 1_500 }] });
    await client.emit("note.kept", { i: 0 }); // seq 1: no rule covers it
    await emitNotes(client, 20_000);
    const before = tableSize(query);
    const head = Number((await client.log.readLog({})).headSeq);
    expect(head).toBe(20_001);
    const oldest = (await client.log.readLog({ types: ["note.added"], pageSize: 1 })).events[0];

    const result = await pass();
    const after = tableSize(query);
    console.log(
      `events table: ${before.bytes} bytes in ${before.partitions} partitions with ${head} events; ${after.bytes} bytes in ${after.partitions} after retention removed ${result.removedEvents} (longest unit ${result.longestUnitMs.toFixed(1)} ms)`,
    );
    // Notes are seqs 2..20001, the first 18,500 (through seq 18501) past max_count. Partitions
    // [1001, 2001) .. [17001, 18001) went whole; the first keeps note.kept (no rule covers
    // seq 1 stays: the notes in it were removed row by row); [18001, 19001) holds 501 notes the rule lets
    // go and 499 it keeps yet: it waits, whole; the later ones keep everything.
    expect(result.removedEvents).toBe(999 + 17 * 1_000);
    expect(after.partitions).toBe(before.partitions - 17);
    expect(after.bytes).toBeLessThan(before.bytes / 3);
    const notesLeft = Number(query("SELECT COUNT(*) AS n FROM events WHERE type = 'note.added'")[0].n);
    expect(notesLeft).toBe(2_001);
    expect(Number(query("SELECT COUNT(*) AS n FROM events WHERE seq >= 18001 AND seq < 19001")[0].n)).toBe(1_000);
    // Counted and reported as the row path does: GetEvent of a dropped event says it was removed.
    expect(Number(query("SELECT removed_events FROM log_retention")[0].removed_events)).toBe(result.removedEvents);
    await expectConnectError(client.log.getEvent({ id: oldest.id }), Code.NotFound, /removed/);
    const inDropped = query("SELECT seq FROM removed_events WHERE seq BETWEEN 1001 AND 18000");
    expect(inDropped).toHaveLength(17_000);

    // 500 more notes (through seq 19001 past max_count): the waiting partition goes whole.
    await emitNotes(client, 500);
    const next = await pass();
    expect(next.removedEvents).toBe(1_000);
    expect(Number(query("SELECT COUNT(*) AS n FROM events WHERE type = 'note.added'")[0].n)).toBe(1_501);
    expect(query("SELECT from_seq FROM event_partitions WHERE from_seq = 18001")).toHaveLength(0);
    const page = await client.log.readLog({ types: ["note.added"], pageSize: 1 });
    expect(Number(page.events[0].seq)).toBe(19_001);
  });

  it("a processor behind keeps the partitions of what it has not finished; once it moved on they are dropped whole", async () => {
    const plugin = { ...notes, processors: { reader: { on: ["note.added"] } } };
    const { client, pass, query } = await start(100, { rules: [{ types: "note.added", max_count: 50 }] }, plugin);
    await emitNotes(client, 1_000);
    const partitions = () => query("SELECT from_seq FROM event_partitions WHERE from_seq < 1001 ORDER BY from_seq").map((r) => Number(r.from_seq));
    const before = partitions();
    expect(before).toEqual([1, 101, 201, 301, 401, 501, 601, 701, 801, 901]);
    const held = await pass();
    expect(held.removedEvents).toBe(0);
    expect(held.held["processor:notes.reader"]).toBe(950);
    expect(partitions()).toEqual(before);
    // Its cursor at 500: the five partitions below it go whole, what it has not finished stays.
    await client.admin.moveCursor({ processor: "notes.reader", to: { case: "ackFloor", value: 500n } });
    const moved = await pass();
    expect(moved.removedEvents).toBe(500);
    expect(moved.held["processor:notes.reader"]).toBe(450);
    expect(partitions()).toEqual(before.slice(5));
    expect(Number(query("SELECT MIN(seq) AS seq FROM events")[0].seq)).toBe(501);
  });

  it("a restarted owner weighs the full partitions from their stored summaries, reads none of them again, and decides as before", async () => {
    const plugin = { ...notes, processors: { reader: { on: ["note.added"] } } };
    const retention = { rules: [{ types: "note.added", max_count: 50 }] };
    const first = await start(100, retention, plugin);
    await emitNotes(first.client, 1_000);
    const held = await first.pass();
    expect(held.held).toEqual({ "processor:notes.reader": 950 });
    // The nine full partitions (the head's is [901, 1001)) read once each, and stored.
    expect(held.summariesRead).toBe(9);
    const stored = () => first.query("SELECT from_seq FROM event_partition_summaries ORDER BY from_seq").map((r) => Number(r.from_seq));
    expect(stored()).toEqual([1, 101, 201, 301, 401, 501, 601, 701, 801]);
    expect((await first.pass()).summariesRead).toBe(0);
    await first.close();

    const again = await start(100, retention, plugin, first.dataDir);
    expect((await again.pass()).held).toEqual(held.held);
    // No partition was read by the restarted owner: its decisions came from the stored summaries.
    expect(again.owner.logRetention.summariesRead).toBe(0);
    // Its cursor at 500 (the move is an event: the head's partition is full now, and read): the
    // five partitions below it dropped whole, their summaries with them.
    await again.client.admin.moveCursor({ processor: "notes.reader", to: { case: "ackFloor", value: 500n } });
    const moved = await again.pass();
    expect(moved.removedEvents).toBe(500);
    expect(moved.held).toEqual({ "processor:notes.reader": 450 });
    expect(moved.summariesRead).toBe(1);
    expect(stored()).toEqual([501, 601, 701, 801, 901]);
    expect(Number(again.query("SELECT MIN(seq) AS seq FROM events")[0].seq)).toBe(501);
  });

  it("a removal by rows from a full partition deletes its stored summary in its unit: the next pass reads it again", async () => {
    const { client, pass, query } = await start(100, { rules: [{ types: "note.added", max_count: 50 }] });
    await client.emit("note.kept", { i: 0 }); // seq 1: no rule covers it, its partition is pinned
    await emitNotes(client, 999);
    const first = await pass();
    // Notes 2..950 go: 99 by rows from the first partition, 8 partitions whole, 50 by rows from the head's.
    expect(first.removedEvents).toBe(949);
    expect(first.summariesRead).toBe(9);
    const stored = () =>
      query("SELECT from_seq, types FROM event_partition_summaries ORDER BY from_seq").map((r) => [Number(r.from_seq), JSON.parse(r.types as string)]);
    expect(stored()).toEqual([]);
    const next = await pass();
    expect(next.removedEvents).toBe(0);
    expect(next.summariesRead).toBe(1);
    const [[from, types]] = stored();
    expect(from).toBe(1);
    expect(Object.keys(types)).toEqual(["note.kept"]);
    expect(types["note.kept"].slice(0, 1)).toEqual([1]);
    expect((await pass()).summariesRead).toBe(0);
  });

  it("the log-wide max_bytes drops whole partitions, oldest first, from their summaries", async () => {
    const { client, pass, query } = await start(100, { max_bytes: 150_000 });
    await emitNotes(client, 1_000);
    const bytesOf = () => Number(query(`SELECT SUM(${pgRowBytes}) AS b FROM events`)[0].b);
    const before = bytesOf();
    expect(before).toBeGreaterThan(200_000);
    const result = await pass();
    // Whole partitions of 100 events, as many as bring the log under the limit (the last one dropped overshoots it).
    expect(result.removedEvents % 100).toBe(0);
    const after = bytesOf();
    expect(after).toBeLessThanOrEqual(150_000);
    expect(after).toBeGreaterThan(150_000 - (1.05 * before) / 10);
    expect(result.longestUnits.batch).toBeUndefined(); // nothing removed by rows
    const first = result.removedEvents + 1;
    expect(query("SELECT from_seq FROM event_partitions ORDER BY from_seq LIMIT 1").map((r) => Number(r.from_seq))).toEqual([first]);
  });

  it("a drop that finds the events table's lock taken tries again after a pause, within the same pass", async () => {
    const { client, pass, query, dataDir } = await start(1_000, { rules: [{ types: "note.added", max_count: 1 }], removed_ids_kept: 0 });
    await emitNotes(client, 2_500); // two full partitions, then the head's
    // A reader holds the table (every partition) for 300 ms: longer than one drop waits for its lock, shorter than its tries.
    const reader = connectNative(databaseOf(dataDir), "chronolog tests");
    reader.querySync("BEGIN");
    reader.querySync("LOCK TABLE events IN ACCESS SHARE MODE");
    const released = new Promise<void>((resolve) =>
      setTimeout(() => {
        reader.querySync("COMMIT");
        endNative(reader);
        resolve();
      }, 300),
    );
    const result = await pass();
    await released;
    expect(result.complete).toBe(true);
    expect(query("SELECT from_seq FROM event_partitions ORDER BY from_seq LIMIT 1").map((r) => Number(r.from_seq))).toEqual([2_001]);
    expect(result.longestUnits.drop).toBeDefined();
  });

  it("with an archive, a partition is dropped only once its events are archived; an archive that cannot be written keeps them all", async () => {
    const blocked = join(tempDir(), "blocked");
    writeFileSync(blocked, "a file where the archive's folder should be");
    const stuck = await start(100, { rules: [{ types: "note.added", max_count: 50 }], archive: { dir: blocked } });
    await emitNotes(stuck.client, 1_000);
    const kept = await stuck.pass();
    expect(kept.removedEvents).toBe(0);
    expect(kept.held.archive).toBe(950);
    expect(Number(stuck.query("SELECT COUNT(*) AS n FROM events")[0].n)).toBe(1_000);

    const dir = join(tempDir(), "archive");
    const { client, pass, query } = await start(100, { rules: [{ types: "note.added", max_count: 50 }], archive: { dir, file_events: 300 } });
    await emitNotes(client, 1_000);
    const result = await pass();
    expect(result.removedEvents).toBe(950);
    expect(Number(query("SELECT MIN(seq) AS seq FROM events")[0].seq)).toBe(951);
    const manifest = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8")) as { to: number };
    expect(manifest.to).toBeGreaterThanOrEqual(950);
  });

  it("converts an unpartitioned log (migration 0007): its events copied into partitions, read as before, appended after", async () => {
    const serverUrl = process.env.CHRONOLOG_TEST_PG_URL ?? "";
    const name = `t_unpartitioned_${process.pid}`;
    const server = connectNative(serverUrl, "chronolog tests");
    try {
      server.querySync(`CREATE DATABASE ${name}`);
    } finally {
      endNative(server);
    }
    const url = databaseUrl(serverUrl, name);
    const events = 100_000;
    const pg = connectNative(url, "chronolog tests");
    try {
      // The schema as version 6 left it, and a log of 100,000 events, each the cause of the next.
      const dir = new URL("../server/src/store/postgres/pg-migrations/", import.meta.url);
      pg.querySync("CREATE TABLE chronolog_schema (version INTEGER NOT NULL)");
      for (const file of readdirSync(dir)
        .filter((f) => /^000[1-6]_/.test(f))
        .sort())
        pg.querySync(readFileSync(new URL(file, dir), "utf8"));
      pg.querySync("INSERT INTO chronolog_schema (version) VALUES (6)");
      pg.querySync(
        `INSERT INTO events (seq, id, type, data, cause, actor, at)
         SELECT g, 'e' || g, 'note.added', '{"text":"' || repeat('x', 200) || '"}', CASE WHEN g > 1 THEN 'e' || (g - 1) ELSE '' END, NULL, 1000 + g
         FROM generate_series(1, $1::bigint) AS g`,
        [String(events)],
      );
      const started = performance.now();
      expect(migratePostgres(pg).from).toBe(6);
      console.log(`migration 0007 converted ${events} events of ~250 bytes in ${Math.round(performance.now() - started)} ms`);
      const partitions = pg.querySync("SELECT name, from_seq, to_seq FROM event_partitions").map((r) => [r.name, Number(r.from_seq), Number(r.to_seq)]);
      expect(partitions).toEqual([["events_1", 1, 1_000_001]]);
      expect(pg.querySync("SELECT relname FROM pg_class WHERE relname = 'events_unpartitioned'")).toEqual([]);
    } finally {
      endNative(pg);
    }
    const owner = await startTestOwner({ store: url, config: { principals: [admin] } });
    cleanups.push(() => owner.close());
    const client = createClient({ url: owner.url, token: admin.token });
    await client.registerPlugin(notes);
    expect((await client.log.getEvent({ id: "e77777" })).event?.seq).toBe(77_777n);
    const effects = await client.log.readLog({ cause: "e77777" });
    expect(effects.events.map((e) => e.id)).toEqual(["e77778"]);
    const page = await client.log.readLog({ afterSeq: BigInt(events - 2) });
    expect(page.events.map((e) => Number(e.seq))).toEqual([events - 1, events]);
    const emitted = await client.emit("note.added", { i: 1 });
    expect(emitted.event?.seq).toBe(BigInt(events + 1));
    // An id already in the converted log is refused with other data: ids stay unique.
    await expectConnectError(client.emit("note.added", { text: "y" }, { id: "e5" }), Code.AlreadyExists, /already in the log \(seq 5/);
  });
});
