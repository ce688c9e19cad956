// Retention of the log under kill -9 (real `chronolog serve` processes): a removal is batches of
// one transaction each, so an owner killed mid-removal leaves the log as before or after a batch
// (every seq either in the log or among the removed, never both, the counts agreeing), and the
// next owner resumes the removal. On SQLite the data file then shrinks (incremental vacuum); on
// PostgreSQL the events table is in partitions of 1,000 seqs here, and whole ones are dropped.
//
// @module-tag serial
// @module-tag postgres

import { statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { createClient } from "../sdk/ts/src/client.js";
import Database from "better-sqlite3";
import { connectNative, endNative } from "../server/src/store/postgres/pg-db.js";
import { onPostgres, queryStore, spawnOwner, tempDir, testDatabase, type OwnerProcess } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

const owners: OwnerProcess[] = [];
afterEach(() => {
  for (const o of owners.splice(0)) if (o.child.exitCode === null && o.child.signalCode === null) o.child.kill("SIGKILL");
});

const admin = { name: "admin", token: "admin-token-0123456789", role: "admin" };
const events = 20_000;
const kept = 100;

function config(dir: string, retention?: object): string {
  const path = join(dir, `config-${retention ? "retention" : "none"}.yaml`);
  writeFileSync(path, stringify({ principals: [admin], ...(retention ? { log: { retention } } : {}) }));
  return path;
}

async function start(dataDir: string, configPath: string): Promise<OwnerProcess> {
  const owner = await spawnOwner(dataDir, ["--config", configPath]);
  owners.push(owner);
  return owner;
}

/**
 * The store's view: every seq through the head either in the log or removed, the counters
 * agreeing. Never both, but on PostgreSQL mid-removal (`settled` false) in the one partition
 * whose drop was under way: its ids are kept before the unit that drops it.
 */
function expectConsistent(dataDir: string, head: number, settled: boolean): { inLog: number; removed: number } {
  const [row] = queryStore(
    dataDir,
    `SELECT (SELECT COUNT(*) FROM events) AS in_log, (SELECT COUNT(*) FROM removed_events) AS removed,
            (SELECT COUNT(*) FROM events e JOIN removed_events r ON r.seq = e.seq) AS both_,
            (SELECT removed_events FROM log_retention) AS counted, (SELECT kept_ids FROM log_retention) AS kept,
            (SELECT MAX(seq) FROM events) AS head`,
  );
  const both = Number(row.both_);
  if (settled || !onPostgres) expect(both).toBe(0);
  else if (both > 0) {
    const partitions = queryStore(
      dataDir,
      "SELECT DISTINCT p.from_seq FROM removed_events r JOIN events e ON e.seq = r.seq JOIN event_partitions p ON e.seq >= p.from_seq AND e.seq < p.to_seq",
    );
    expect(partitions).toHaveLength(1);
  }
  expect(Number(row.in_log) + Number(row.removed) - both).toBe(head);
  expect(Number(row.counted)).toBe(Number(row.removed) - both);
  expect(Number(row.kept)).toBe(Number(row.removed)); // fewer than removed_ids_kept: every removed id kept
  expect(Number(row.head)).toBe(head);
  return { inLog: Number(row.in_log), removed: Number(row.removed) - both };
}

describe("log retention under kill -9", () => {
  it("leaves the log consistent when killed mid-removal, and the next owner finishes it", async () => {
    const dataDir = tempDir();
    const dbFile = join(dataDir, "chronolog.db");
    if (onPostgres) {
      // The log is empty: its first partition goes, the next ones hold 1,000 seqs each.
      queryStore(dataDir, "UPDATE event_partitioning SET span = 1000");
      queryStore(dataDir, "DROP TABLE events_1");
      queryStore(dataDir, "DELETE FROM event_partitions");
    }
    // 1. An owner without rules takes 20,000 events.
    let owner = await start(dataDir, config(dataDir));
    const client = () => createClient({ url: owner.url, token: admin.token });
    await client().registerPlugin({ name: "notes", events: { "note.added": { allow: ["*"] } } });
    for (let from = 0; from < events; from += 1_000)
      await client().emitBatch(Array.from({ length: 1_000 }, (_, i) => ({ type: "note.added", data: { i: from + i, text: "x".repeat(200) } })));
    const head = Number((await client().log.readLog({})).headSeq);
    owner.child.kill("SIGTERM");
    await owner.exited;
    const fullSize = onPostgres ? 0 : statSync(dbFile).size;

    // 2. An owner keeping the newest 100 notes removes in batches of 50; kill -9 once some are gone.
    const retention = { rules: [{ types: "note.added", max_count: kept }], batch_events: 50, interval_ms: 1_000 };
    owner = await start(dataDir, config(dataDir, retention));
    await until(() => Number(queryStore(dataDir, "SELECT removed_events FROM log_retention")[0].removed_events) > 0, "a first removal batch", 30_000);
    owner.child.kill("SIGKILL");
    await owner.exited;
    const atKill = expectConsistent(dataDir, head, false);
    expect(atKill.removed).toBeLessThan(events - kept); // killed mid-removal
    if (!onPostgres) expect(Number(queryStore(dataDir, "SELECT removing FROM log_retention")[0].removing)).toBe(0);

    // 3. The next owner resumes: the newest 100 notes stay; the log starts at the first of them.
    owner = await start(dataDir, config(dataDir, retention));
    await until(() => Number(queryStore(dataDir, "SELECT COUNT(*) AS n FROM events WHERE type = 'note.added'")[0].n) === kept, "the removal finished", 60_000);
    const page = await client().log.readLog({ types: ["note.added"], pageSize: 1_000 });
    expect(page.events.map((e) => (e.data as { i: number }).i)).toEqual(Array.from({ length: kept }, (_, i) => events - kept + i));
    expect(Number(page.firstSeq)).toBeLessThanOrEqual(Number(page.events[0].seq));
    const removedLines = () => owner.logs.map((l) => JSON.parse(l)).filter((l) => /^log retention removed/.test(l.msg ?? ""));
    await until(() => removedLines().length > 0, "the pass's report"); // logged once its last batch committed
    const done = removedLines();
    console.log(
      `removal batches of 50 events: longest unit ${Math.max(...done.map((l) => l.longestUnitMs))} ms, longest commit (queue and sync included) ${Math.max(...done.map((l) => l.longestBatchMs))} ms`,
    );
    owner.child.kill("SIGTERM");
    await owner.exited;
    expectConsistent(dataDir, head, true);
    // An ad-hoc DELETE is still refused: retention's guarded removal is the one way out.
    expect(() => adHocDelete(dataDir)).toThrow(/the log is immutable/);
    // PostgreSQL dropped whole partitions: every full one (the head's holds the notes kept).
    if (onPostgres) expect(queryStore(dataDir, "SELECT from_seq FROM event_partitions WHERE to_seq <= ?", [head])).toEqual([]);
    // 4. SQLite returned the freed pages to the disk: the file is a fraction of what it was.
    if (!onPostgres) {
      const size = statSync(dbFile).size;
      console.log(`data file: ${fullSize} bytes with ${events} events, ${size} bytes after removing ${events - kept}`);
      expect(size).toBeLessThan(fullSize / 3);
    }
  });

  // PostgreSQL keeps a partition's ids for GetEvent in units of 2,000 before the unit that drops
  // it: killed between them, the kept ids are of events still in the log.
  it.runIf(onPostgres)("killed between keeping a partition's ids and dropping it, leaves the log consistent; the next owner drops it", async () => {
    const dataDir = tempDir();
    queryStore(dataDir, "UPDATE event_partitioning SET span = 20000");
    queryStore(dataDir, "DROP TABLE events_1");
    queryStore(dataDir, "DELETE FROM event_partitions");
    let owner = await start(dataDir, config(dataDir));
    const client = () => createClient({ url: owner.url, token: admin.token });
    await client().registerPlugin({ name: "notes", events: { "note.added": { allow: ["*"] } } });
    const total = 41_000; // partitions [1, 20001) and [20001, 40001) full, the head's keeps 1,000
    for (let from = 0; from < total; from += 1_000)
      await client().emitBatch(Array.from({ length: 1_000 }, (_, i) => ({ type: "note.added", data: { i: from + i, text: "x".repeat(100) } })));
    const head = Number((await client().log.readLog({})).headSeq);
    owner.child.kill("SIGTERM");
    await owner.exited;

    // Each partition's drop comes after 10 units keeping its ids: killed once ids are kept of
    // events still in the log.
    const retention = { rules: [{ types: "note.added", max_count: kept }], interval_ms: 1_000 };
    owner = await start(dataDir, config(dataDir, retention));
    const keptNotDropped = () => Number(queryStore(dataDir, "SELECT COUNT(*) AS n FROM removed_events r JOIN events e ON e.seq = r.seq")[0].n) > 0;
    await until(keptNotDropped, "ids kept of a partition not dropped yet", 60_000);
    owner.child.kill("SIGKILL");
    await owner.exited;
    const atKill = expectConsistent(dataDir, head, false);
    expect(atKill.inLog).toBeGreaterThan(total - 20_000); // a partition at least was not dropped

    owner = await start(dataDir, config(dataDir, retention));
    await until(() => Number(queryStore(dataDir, "SELECT COUNT(*) AS n FROM events WHERE type = 'note.added'")[0].n) === kept, "the removal finished", 60_000);
    owner.child.kill("SIGTERM");
    await owner.exited;
    const after = expectConsistent(dataDir, head, true);
    expect(after.removed).toBe(total - kept);
    expect(queryStore(dataDir, "SELECT from_seq FROM event_partitions WHERE to_seq <= 40001")).toEqual([]);
  });
});

// SQLite returns the freed pages to the disk in steps run on the checkpoint worker's connection,
// between two of the committer's batches: the owner keeps answering meanwhile, a kill -9 mid-step
// loses nothing (each step is one transaction), and the next owner returns the rest.
describe.runIf(!onPostgres)("free pages returned to the disk under kill -9", () => {
  it("keeps the owner answering while pages go back, loses nothing when killed meanwhile, and the next owner shrinks the file", {
    timeout: 300_000,
  }, async () => {
    const dataDir = tempDir();
    const dbFile = join(dataDir, "chronolog.db");
    let owner = await start(dataDir, config(dataDir));
    const client = () => createClient({ url: owner.url, token: admin.token });
    await client().registerPlugin({ name: "notes", events: { "note.added": { allow: ["*"] }, "ping.sent": { allow: ["*"] } } });
    const notes = 20_000;
    for (let from = 0; from < notes; from += 1_000)
      await client().emitBatch(Array.from({ length: 1_000 }, (_, i) => ({ type: "note.added", data: { i: from + i, text: "x".repeat(1_000) } })));
    owner.child.kill("SIGTERM");
    await owner.exited;
    const fullSize = statSync(dbFile).size;
    const pages = () => {
      const [row] = queryStore(
        dataDir,
        "SELECT (SELECT freelist_count FROM pragma_freelist_count) AS free, (SELECT page_count FROM pragma_page_count) AS total",
      );
      return { free: Number(row.free), total: Number(row.total) };
    };

    // An owner keeping the newest 100 notes, emitting pings all along: once the notes are removed
    // and some of the pages they freed went back (the file has fewer pages than it had), kill -9.
    const retention = { rules: [{ types: "note.added", max_count: kept }], interval_ms: 3_600_000 };
    owner = await start(dataDir, config(dataDir, retention));
    const acknowledged: string[] = [];
    let pinging = true;
    const pings = (async () => {
      const pinger = client();
      for (let n = 0; pinging; n++)
        try {
          acknowledged.push((await pinger.emit("ping.sent", { n })).event?.id ?? "");
        } catch {
          return; // the owner was killed
        }
    })();
    let largest = 0;
    await until(
      () => {
        const notesLeft = Number(queryStore(dataDir, "SELECT COUNT(*) AS n FROM events WHERE type = 'note.added'")[0].n);
        const { free, total } = pages();
        largest = Math.max(largest, total);
        return notesLeft === kept && total < largest && free > total / 8;
      },
      "pages going back to the disk after the removal",
      180_000,
    );
    const answeredMeanwhile = acknowledged.length;
    console.log(`killed with ${pages().free} of ${pages().total} pages free (${largest} pages at the most), ${answeredMeanwhile} pings answered`);
    owner.child.kill("SIGKILL");
    await owner.exited;
    pinging = false;
    await pings;
    expect(answeredMeanwhile).toBeGreaterThan(0);
    expect(queryStore(dataDir, "PRAGMA integrity_check")).toEqual([{ integrity_check: "ok" }]);
    const head = Number(queryStore(dataDir, "SELECT MAX(seq) AS head FROM events")[0].head);
    expectConsistent(dataDir, head, true);
    // Every acknowledged ping is in the log.
    const stored = new Set(queryStore(dataDir, "SELECT id FROM events WHERE type = 'ping.sent'").map((r) => r.id as string));
    expect(acknowledged.filter((id) => !stored.has(id))).toEqual([]);
    const atKill = pages();
    expect(atKill.free).toBeGreaterThan(atKill.total / 8); // killed before the pages were back

    // The next owner's first pass returns the rest: an eighth of the file free at most, the file a fraction of what it was.
    owner = await start(dataDir, config(dataDir, retention));
    await until(() => pages().free <= pages().total / 8, "the free pages returned", 120_000);
    expect(Number(queryStore(dataDir, "SELECT COUNT(*) AS n FROM events WHERE type = 'note.added'")[0].n)).toBe(kept);
    owner.child.kill("SIGTERM");
    await owner.exited;
    expectConsistent(dataDir, head, true);
    expect(statSync(dbFile).size).toBeLessThan(fullSize / 3);
  });
});

/** Deletes the log's first event on a connection of its own, as an operator's shell would. */
function adHocDelete(dataDir: string): void {
  if (onPostgres) {
    const client = connectNative(testDatabase(dataDir), "chronolog tests");
    try {
      client.querySync("DELETE FROM events WHERE seq = (SELECT MIN(seq) FROM events)", []);
    } finally {
      endNative(client);
    }
    return;
  }
  const db = new Database(join(dataDir, "chronolog.db"));
  try {
    db.prepare("DELETE FROM events WHERE seq = (SELECT MIN(seq) FROM events)").run();
  } finally {
    db.close();
  }
}
