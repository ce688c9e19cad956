// SQLite's store, against a real SQLite file in a temp folder: the committer's batch spacing and
// slices, the data folder, WAL fsync and checkpoints, migrations, the owner lock, rowids of
// one-shot timers, queries with a limit. What both stores do alike is tested on each in
// store-conformance.test.ts and store-conformance-statements.test.ts.

import Database from "better-sqlite3";
import { readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Code } from "@connectrpc/connect";
import { ManualClock, type Clock } from "../server/src/clock.js";
import { toConnectError } from "../server/src/rpc/interceptors.js";
import { Committer, type CommitInfo } from "../server/src/store/committer.js";
import { openStore, type SqliteStore as Store } from "../server/src/store/sqlite/open.js";
import { eventStatements } from "../server/src/store/events.js";
import { limitedStatement } from "../server/src/store/limited.js";
import { callStatements } from "../server/src/store/calls.js";
import { occurrenceStatements } from "../server/src/store/occurrences.js";
import { timerStatements } from "../server/src/store/timers.js";
import { defaultSchedulePolicy } from "../server/src/store/timer-records.js";
import { Checkpointer, type WriteTurn } from "../server/src/store/sqlite/checkpointer.js";
import { sqliteTransactions } from "../server/src/store/sqlite/transactions.js";
import { noSync, WalSync } from "../server/src/store/sqlite/wal-sync.js";
import { until } from "./helpers/until.js";
import { tempDir } from "./helpers/owner.js";

const opened: Store[] = [];
const dirs: string[] = [];

afterEach(async () => {
  for (const store of opened.splice(0)) {
    try {
      await store.close();
    } catch {
      /* already closed by the test */
    }
  }
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function folder(): string {
  const dir = tempDir("chronolog-store-");
  dirs.push(dir);
  return dir;
}

function open(dataDir: string, synchronous?: "FULL" | "NORMAL"): Store {
  const store = openStore({ dataDir, synchronous });
  opened.push(store);
  return store;
}

function committerOn(store: Store, clock: Clock = new ManualClock(Date.UTC(2026, 0, 1))) {
  const events = eventStatements(store.db);
  const committer = new Committer(store.db, clock, events, { transactions: store.transactions });
  const commits: CommitInfo[] = [];
  committer.onCommit((info) => commits.push(info));
  return { committer, events, commits };
}

const event = (id: string, data: Record<string, unknown> = {}) => ({ id, type: "test.happened", data, cause: "", actor: null });

const migrationVersions = readdirSync(new URL("../server/src/store/sqlite/migrations/", import.meta.url))
  .filter((f) => /^\d{4}_.+\.sql$/.test(f))
  .map((f) => Number(f.slice(0, 4)));
const latestMigration = Math.max(...migrationVersions);

describe("group commit", () => {
  it("under load (a batch of 16 units or more) the next batch starts the spacing (5 ms; 300 here) after it, gathering what comes meanwhile; after a small batch the next unit commits at once", {
    tags: ["serial"],
  }, async () => {
    const store = open(folder());
    // No fsync (synchronous=NORMAL's path): a batch ends at once, so the spacing is what holds units back.
    const committer = new Committer(store.db, new ManualClock(0), eventStatements(store.db), {
      transactions: sqliteTransactions(store.db, noSync),
      batchSpacingMs: 300,
    });
    const commits: CommitInfo[] = [];
    committer.onCommit((info) => commits.push(info));
    const turn = () => new Promise((r) => setImmediate(r));
    /** Submits one unit per event-loop turn, `n` of them, and waits for all. */
    const trickle = async (prefix: string, n: number) => {
      const pending: Promise<unknown>[] = [];
      for (let i = 0; i < n; i++) {
        pending.push(committer.submit((tx) => tx.append(event(`${prefix}${i}`))));
        await turn();
      }
      await Promise.all(pending);
    };
    await Promise.all(Array.from({ length: 16 }, (_, i) => committer.submit((tx) => tx.append(event(`load${i}`)))));
    const afterLoad = commits.length;
    const start = performance.now();
    await trickle("a", 3);
    expect(commits.slice(afterLoad).map((c) => c.batchSize)).toEqual([3]); // held together by the spacing
    expect(performance.now() - start).toBeGreaterThanOrEqual(250);
    await new Promise((r) => setTimeout(r, 10));
    const lone = performance.now();
    await committer.submit((tx) => tx.append(event("lone")));
    expect(performance.now() - lone).toBeLessThan(250); // a small batch spaces nothing
  });

  it("under load a batch of deferrable units only waits the longer spacing (10 ms; 600 here); an urgent unit arriving meanwhile brings it forward to the short one", {
    tags: ["serial"],
  }, async () => {
    const store = open(folder());
    const committer = new Committer(store.db, new ManualClock(0), eventStatements(store.db), {
      transactions: sqliteTransactions(store.db, noSync),
      batchSpacingMs: 150,
      deferredSpacingMs: 600,
    });
    const load = () => Promise.all(Array.from({ length: 16 }, (_, i) => committer.submit((tx) => tx.append(event(`load${i}-${performance.now()}`)))));
    await load();
    let start = performance.now();
    await committer.submit((tx) => tx.append(event("deferred-1")), { deferrable: true });
    const deferredWait = performance.now() - start;
    expect(deferredWait).toBeGreaterThanOrEqual(550);
    await load();
    start = performance.now();
    const deferred = committer.submit((tx) => tx.append(event("deferred-2")), { deferrable: true }).then(() => performance.now() - start);
    await new Promise((r) => setTimeout(r, 50));
    const urgent = committer.submit((tx) => tx.append(event("urgent"))).then(() => performance.now() - start);
    const [deferredMs, urgentMs] = await Promise.all([deferred, urgent]);
    expect(urgentMs).toBeGreaterThanOrEqual(100);
    expect(urgentMs).toBeLessThan(450); // the short spacing, not the long one
    expect(Math.abs(deferredMs - urgentMs)).toBeLessThan(20); // in the same batch
  });

  it("runs a batch longer than a slice (2 ms) in slices, letting a timer run between them, and makes it durable as one batch", {
    tags: ["serial"],
  }, async () => {
    const { committer, commits } = committerOn(open(folder()));
    const order: string[] = [];
    const busy = (ms: number) => {
      const until = performance.now() + ms;
      while (performance.now() < until);
    };
    const results = Array.from({ length: 10 }, (_, i) =>
      committer.submit((tx) => {
        if (i === 0) setTimeout(() => order.push("timer"), 0); // armed inside the batch: it can only run once a slice yields
        busy(1);
        order.push(`unit ${i}`);
        return tx.append(event(`s${i}`));
      }),
    );
    const records = await Promise.all(results);
    const timerAt = order.indexOf("timer");
    expect(timerAt).toBeGreaterThan(0); // after the first slice...
    expect(timerAt).toBeLessThan(10); // ...not after the whole batch
    expect(records.map((r) => r.seq)).toEqual(Array.from({ length: 10 }, (_, i) => i + 1));
    expect(commits).toEqual([expect.objectContaining({ head: 10, batchSize: 10 })]); // one fsync, one notice
  });
});

// SQLite's own settings, migrations and files: a PostgreSQL store has none of them.
describe("SQLite settings", () => {
  it("makes missing data folders, and names the folder it cannot make instead of spinning (Node's recursive mkdir loops under /proc)", () => {
    const nested = join(folder(), "a", "b");
    open(nested);
    expect(readdirSync(nested)).toContain("chronolog.db");
    expect(() => openStore({ dataDir: "/proc/chronolog-nope/data" })).toThrow(/cannot create the data folder \/proc\/chronolog-nope/);
    expect(() => openStore({ dataDir: join(nested, "chronolog.db", "x") })).toThrow(/cannot use the data folder .*chronolog\.db\/x: ENOTDIR/);
    expect(() => openStore({ dataDir: "" })).toThrow(/the data folder is empty/);
  });

  it("by default fsyncs the WAL itself (WalSync) with SQLite at synchronous=NORMAL", () => {
    const store = open(folder());
    expect(store.db.pragma("journal_mode", { simple: true })).toBe("wal");
    expect(store.db.pragma("synchronous", { simple: true })).toBe(1); // NORMAL: COMMIT does not fsync
    expect(store.durability).toBeInstanceOf(WalSync);
  });

  it("checkpoints in a worker thread, not in the writer's commits", async () => {
    const dataDir = folder();
    const store = open(dataDir);
    expect(store.db.pragma("wal_autocheckpoint", { simple: true })).toBe(0);
    const { committer } = committerOn(store);
    await Promise.all(Array.from({ length: 2_000 }, (_, i) => committer.submit((tx) => tx.append(event(`e${i}`, { pad: "x".repeat(400) })))));
    const walFrames = () => (store.db.pragma("wal_checkpoint(PASSIVE)") as { log: number }[])[0].log;
    const result = await store.checkpointer.checkpoint();
    expect(result.log).toBeGreaterThan(100); // the writer left every frame in the WAL
    expect(result.checkpointed).toBe(result.log); // the worker copied them all
    expect(walFrames()).toBe(result.log);
    // What the metrics read: the WAL as the worker's checkpoint saw it, none finished on the owner's thread.
    const wal = store.checkpointer.state();
    expect(wal).toMatchObject({ frames: result.log, backlog: 0, writerCheckpoints: 0, writerMs: 0 });
    expect(wal.framesWritten).toBeGreaterThanOrEqual(result.log);
    expect(wal.workerCheckpoints).toBeGreaterThanOrEqual(1);
    await store.close();
    const again = open(dataDir);
    expect(eventStatements(again.db).findById("e1999")?.seq).toBe(2_000);
  });

  it("restarts a WAL written without pause once past its bound: the worker catches up, then the owner's thread finishes", async () => {
    const store = open(folder());
    // A checkpointer with a bound of 64 frames beside the store's own (idle: nothing tells it of these commits).
    const failures: unknown[] = [];
    const checkpointer = new Checkpointer(store.db, join(store.dataDir, "chronolog.db"), (e) => failures.push(e), 64);
    store.db.exec("CREATE TABLE scratch (k INTEGER PRIMARY KEY, v TEXT)");
    const insert = store.db.prepare("INSERT INTO scratch (v) VALUES (?)");
    const write = store.db.transaction(() => {
      for (let i = 0; i < 8; i++) insert.run("x".repeat(4_000)); // 8 frames and more a commit
    });
    let writing = true;
    const writer = (async () => {
      while (writing) {
        write.immediate();
        checkpointer.committed();
        await new Promise((r) => setTimeout(r, 2));
      }
    })();
    try {
      await until(() => checkpointer.state().writerCheckpoints >= 3, "three finishes on the owner's thread", 30_000);
    } finally {
      writing = false;
      await writer;
    }
    const state = checkpointer.state();
    expect(failures).toEqual([]);
    expect(state.workerCheckpoints).toBeGreaterThan(state.writerCheckpoints);
    expect(state.framesWritten).toBeGreaterThan(3 * 64);
    // What the last writes left past the bound is finished too: a later commit starts the WAL over.
    await until(async () => {
      write.immediate();
      return (await checkpointer.checkpoint()).log < 64;
    }, "the WAL started over");
    await checkpointer.close();
  });

  it("returns free pages to the disk on the worker's connection, in a turn between two of the committer's batches", async () => {
    const store = open(folder());
    const { committer, commits } = committerOn(store);
    store.db.exec("CREATE TABLE scratch (k INTEGER PRIMARY KEY, v TEXT)");
    const insert = store.db.prepare("INSERT INTO scratch (v) VALUES (?)");
    store.db.transaction(() => {
      for (let i = 0; i < 2_000; i++) insert.run("x".repeat(3_000));
    })();
    store.db.exec("DELETE FROM scratch");
    const file = join(store.dataDir, "chronolog.db");
    await store.checkpointer.checkpoint(); // the file on disk holds every page, free ones too
    const sizeBefore = statSync(file).size;
    const pages = () => ({ free: Number(store.db.pragma("freelist_count", { simple: true })), total: Number(store.db.pragma("page_count", { simple: true })) });
    const before = pages();
    expect(before.free).toBeGreaterThan(1_000);
    // A batch runs (it waits for its fsync) when the step asks for its turn; a unit submitted during the step waits for its end.
    const first = committer.submit((tx) => tx.append(event("before")));
    await new Promise((resolve) => setImmediate(resolve));
    let committedAtStep = -1;
    let stepRunning = false;
    let ranDuringStep: boolean | undefined;
    let later: Promise<unknown> | undefined;
    const turn: WriteTurn = (write) =>
      committer.outside(async () => {
        committedAtStep = commits.length;
        stepRunning = true;
        later = committer.submit((tx) => {
          ranDuringStep = stepRunning;
          return tx.append(event("after"));
        });
        try {
          return await write();
        } finally {
          stepRunning = false;
        }
      });
    const step = await store.checkpointer.returnPages(500, turn);
    await Promise.all([first, later]);
    expect(committedAtStep).toBe(1);
    expect(ranDuringStep).toBe(false);
    expect(commits).toHaveLength(2);
    // The owner's connection sees the file 500 pages shorter (and a pointer-map page, when one is left empty), those pages no longer free.
    expect(step.pages).toBe(500);
    const after = pages();
    expect(after.total).toBeLessThanOrEqual(before.total - 500);
    expect(after.total).toBeGreaterThanOrEqual(before.total - 502);
    expect(after.free).toBeLessThanOrEqual(before.free - 500);
    expect(step.free).toBeLessThanOrEqual(before.free - 500);
    expect(store.checkpointer.state()).toMatchObject({ pagesReturned: 500, returnSteps: 1 });
    // Its frames are checkpointed like the owner's: the file on disk shrinks by those pages.
    await until(async () => {
      const result = await store.checkpointer.checkpoint();
      return result.checkpointed === result.log && statSync(file).size <= sizeBefore - 500 * 4096;
    }, "the data file shrunk");
  });

  it("gives the caller of a write outside the batches its error, and goes on committing", async () => {
    const store = open(folder());
    const { committer } = committerOn(store);
    await expect(committer.outside(() => Promise.reject(new Error("the other connection failed")))).rejects.toThrow(/the other connection failed/);
    await expect(committer.outside(() => Promise.resolve("done"))).resolves.toBe("done");
    expect((await committer.submit((tx) => tx.append(event("later")))).seq).toBe(1);
    await committer.stop();
    await expect(committer.outside(() => Promise.resolve("late"))).rejects.toThrow(/stopping/);
  });

  it("does not fsync at all when NORMAL is asked", () => {
    const store = open(folder(), "NORMAL");
    expect(store.db.pragma("synchronous", { simple: true })).toBe(1);
    expect(store.durability).toBe(noSync);
  });

  it("fails every caller, now and later, when the fsync fails", async () => {
    const store = open(folder());
    const broken = new WalSync(join(store.dataDir, "no-such.db"));
    const failures: unknown[] = [];
    const committer = new Committer(store.db, new ManualClock(0), eventStatements(store.db), {
      transactions: sqliteTransactions(store.db, broken),
      onFatal: (e) => failures.push(e),
    });
    await expect(committer.submit((tx) => tx.append(event("a")))).rejects.toThrow(/ENOENT/);
    await expect(committer.submit((tx) => tx.append(event("b")))).rejects.toThrow(/ENOENT/);
    expect(failures).toHaveLength(2);
    expect(committer.head).toBe(0);
  });

  it("refuses a data folder whose schema is newer than its migrations (written by a newer owner), FAILED_PRECONDITION, and leaves it as it was", async () => {
    const dataDir = folder();
    const first = open(dataDir);
    first.db.pragma(`user_version = ${latestMigration + 1}`);
    await first.close();
    expect(() => openStore({ dataDir })).toThrow(
      expect.objectContaining({
        kind: "failed_precondition",
        message: expect.stringMatching(`schema is version ${latestMigration + 1}, newer than this owner's ${latestMigration}`),
      }),
    );
    const raw = new Database(join(dataDir, "chronolog.db"));
    expect(raw.pragma("user_version", { simple: true })).toBe(latestMigration + 1);
    raw.pragma(`user_version = ${latestMigration}`);
    raw.close();
    expect(eventStatements(open(dataDir).db).head()).toBe(0); // the refused open let go of its lock and database
  });

  it("applies migrations once: reopening is idempotent and keeps the data", async () => {
    const dataDir = folder();
    const first = open(dataDir);
    expect(first.db.pragma("user_version", { simple: true })).toBe(latestMigration);
    const tables = () => (first.db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as { name: string }[]).map((t) => t.name);
    const tablesBefore = tables();
    expect(tablesBefore).toEqual(expect.arrayContaining(["events", "plugins", "plugin_revisions"]));
    await committerOn(first).committer.submit((tx) => tx.append(event("kept")));
    await first.close();

    for (let i = 0; i < 3; i++) {
      const again = open(dataDir);
      expect(again.db.pragma("user_version", { simple: true })).toBe(latestMigration);
      expect((again.db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as { name: string }[]).map((t) => t.name)).toEqual(
        tablesBefore,
      );
      expect(eventStatements(again.db).findById("kept")?.seq).toBe(1);
      await again.close();
    }
  });
});

// Written against SQLite (json_each, its statement cache).
describe("queries with a limit", () => {
  it("have the limit written into their SQL (a bound LIMIT is compiled again at every execution), one statement per limit kept, others prepared each time; a bad limit or SQL is refused", () => {
    const store = open(folder());
    const limited = limitedStatement(store.db, "SELECT value FROM json_each(?) ORDER BY value LIMIT ?", { raw: true });
    const numbers = JSON.stringify([5, 3, 9, 1, 7]);
    expect(limited(2).all(numbers)).toEqual([[1], [3]]);
    expect(limited(0).all(numbers)).toEqual([]);
    expect((limited(2) as unknown as { source: string }).source).toBe("SELECT value FROM json_each(?) ORDER BY value LIMIT 2");
    expect(limited(2)).toBe(limited(2));
    for (let n = 3; n < 20; n++) limited(n);
    expect(limited(19)).not.toBe(limited(19)); // past the 16 kept
    expect(limited(19).all(numbers)).toHaveLength(5);
    expect(limitedStatement(store.db, "SELECT count(*) AS n FROM (SELECT 1 FROM json_each(?) LIMIT ?)")(3).get(numbers)).toEqual({ n: 3 });
    expect(() => limited(-1)).toThrow(RangeError);
    expect(() => limited(2.5)).toThrow(/non-negative integer/);
    expect(() => limitedStatement(store.db, "SELECT 1")).toThrow(/one "LIMIT \?"/);
  });
});

// SQLite's rowids place one-shot timers in due order; PostgreSQL has no rowid (its timers_by_due index orders them).
describe("where timer rows are stored", () => {
  const oneShot = (id: string, dueMs: number) => ({
    id,
    kind: "delay" as const,
    action: "p.a",
    input: {},
    spec: { kind: "at" as const, atMs: dueMs },
    nextDueMs: dueMs,
    actor: null,
    plugin: "",
    schedule: "",
    overdue: { kind: "unbounded" as const },
    chainDepth: 0,
    region: 0,
    disabled: false,
    retryDelaysMs: [],
    policy: defaultSchedulePolicy,
    paused: null,
  });

  it("one-shots lie in due order whatever order they were set in; one due the same ms as another 1,024 puts before, or past the year 2255, still gets a row", () => {
    const store = open(folder());
    const timers = timerStatements(store.db);
    const t0 = 1_800_000_000_000;
    for (let i = 0; i < 200; i++) timers.put(oneShot(`random-${i}`, t0 + ((i * 7919) % 200) * 1_000), 1);
    const byRow = store.db.prepare("SELECT next_due_ms FROM timers ORDER BY rowid").all() as { next_due_ms: number }[];
    expect(byRow.map((r) => r.next_due_ms)).toEqual(byRow.map((r) => r.next_due_ms).sort((a, b) => a - b));
    for (let i = 0; i < 1_030; i++) timers.put(oneShot(`same-ms-${i}`, t0), 1); // the counter wraps: places taken
    timers.put(oneShot("far", 9_000_000_000_000), 1);
    const count = store.db.prepare("SELECT count(*) AS n FROM timers").get() as { n: number };
    expect(count.n).toBe(200 + 1_030 + 1);
    timers.put({ ...oneShot("random-0", t0 + 5), input: { again: true } }, 2); // set again: updated in place
    expect(timers.get("random-0")).toMatchObject({ nextDueMs: t0 + 5, input: { again: true } });
  });

  it("migration 0011 upgrades a folder where an older owner's maintenance SQL made an index named timers_unscheduled", async () => {
    const dataDir = folder();
    const first = open(dataDir);
    first.db.exec(`DROP INDEX timers_unscheduled; CREATE INDEX timers_unscheduled ON timers (kind);
      DROP INDEX timers_by_due; CREATE INDEX timers_by_due ON timers (next_due_ms, id); ALTER TABLE documents DROP COLUMN space;
      DROP TRIGGER timer_cancels_gone; ALTER TABLE timers DROP COLUMN cancel_on; DROP TABLE timer_cancels; DROP TABLE timer_cancel_shapes; DROP TABLE event_streams;
      ALTER TABLE events DROP COLUMN trace; ALTER TABLE action_calls DROP COLUMN trace; ALTER TABLE timers DROP COLUMN trace; DROP TABLE log_retention; DROP TABLE removed_events; DROP INDEX events_by_cause; PRAGMA user_version = 10;`); // as schema 10 plus the operator's index
    await first.close();
    const store = open(dataDir);
    expect(store.db.pragma("user_version", { simple: true })).toBe(latestMigration);
    const sql = (name: string) => (store.db.prepare("SELECT sql FROM sqlite_master WHERE name = ?").get(name) as { sql: string }).sql;
    expect(sql("timers_unscheduled")).toMatch(/\(updated_at, id\) WHERE next_due_ms IS NULL/);
    expect(sql("timers_by_due")).toMatch(/WHERE next_due_ms IS NOT NULL/);
  });
});

/** A data folder at schema `version`: the migrations up to it, as an owner of that version left it. */
function folderAt(version: number): string {
  const dataDir = folder();
  const raw = new Database(join(dataDir, "chronolog.db"));
  for (const file of readdirSync(new URL("../server/src/store/sqlite/migrations/", import.meta.url)).sort()) {
    if (Number(file.slice(0, 4)) <= version) raw.exec(readFileSync(new URL(`../server/src/store/sqlite/migrations/${file}`, import.meta.url), "utf8"));
  }
  raw.pragma(`user_version = ${version}`);
  raw.close();
  return dataDir;
}

// An SQLite migration (PostgreSQL's schema starts at pg-migrations/0001).
describe("migration 0012: no IN lists in the constraints a call's writes check", () => {
  /** The INSERT and UPDATE statements of `factories` that build an ephemeral b-tree at each execution (OpenEphemeral). */
  function ephemeralWrites(db: Store["db"], factories: ((db: Store["db"]) => unknown)[]): string[] {
    const seen: string[] = [];
    const prepare = db.prepare.bind(db);
    const spy = Object.assign(Object.create(db), { prepare: (sql: string) => (seen.push(sql), prepare(sql)) });
    for (const make of factories) make(spy);
    return seen
      .filter((sql) => /^\s*(INSERT|UPDATE)/.test(sql))
      .filter((sql) => {
        const ops = prepare(`EXPLAIN ${sql}`).all(...Array((sql.match(/\?/g) ?? []).length).fill(null)) as { opcode: string }[];
        return ops.some((op) => op.opcode === "OpenEphemeral");
      });
  }

  it("a folder at schema 11 keeps its calls and occurrences (rowids too); statuses are still checked; a call's inserts and updates build no ephemeral b-tree", async () => {
    const dataDir = folderAt(11);
    const old = new Database(join(dataDir, "chronolog.db"));
    old.exec(`INSERT INTO action_calls (rowid, call_id, action, input_hash, actor, recorded, state, attempt, output, error, updated_at)
        VALUES (7, 'c1', 'p.a', 'h', NULL, 1, 'completed', 1, NULL, '', 5), (9, 'c2', 'p.a', 'h', '{"id":"u"}', 0, 'failed', 2, '{}', 'boom', 6);
      INSERT INTO timer_occurrences (rowid, id, timer_id, due_ms, action, input, actor, overdue, status, attempts, next_attempt_ms, call_id, lateness_ms, error, claimed_at, updated_at, origin)
        VALUES (3, 'o1', 't1', 100, 'p.a', '{}', NULL, '{}', 'retry_wait', 1, 200, 'o1', 4, 'e', 100, 101, 'trigger'),
               (4, 'o2', 't1', 300, 'p.a', '{}', NULL, '{}', 'completed', 1, NULL, 'o2', 2, '', 300, 302, 'schedule');`);
    // The columns of schema 11 (later migrations add action_calls.trace, 0016, and limit_keys, 0020).
    const rows = (db: Database.Database) => [
      (db.prepare("SELECT rowid, * FROM action_calls ORDER BY rowid").all() as Record<string, unknown>[]).map(({ trace: _, limit_keys: __, ...row }) => row),
      db.prepare("SELECT rowid, * FROM timer_occurrences ORDER BY rowid").all(),
    ];
    const before = rows(old);
    old.exec("ALTER TABLE action_calls ADD COLUMN trace TEXT; ALTER TABLE action_calls ADD COLUMN limit_keys TEXT"); // what today's statements write, for the check only
    expect(ephemeralWrites(old, [callStatements, occurrenceStatements]).length).toBeGreaterThan(0); // what 0012 removes
    old.exec("ALTER TABLE action_calls DROP COLUMN trace; ALTER TABLE action_calls DROP COLUMN limit_keys");
    old.close();

    const store = open(dataDir);
    expect(store.db.pragma("user_version", { simple: true })).toBe(latestMigration);
    expect(rows(store.db)).toEqual(before);
    expect(ephemeralWrites(store.db, [callStatements, occurrenceStatements])).toEqual([]);
    expect(() => store.db.exec("UPDATE action_calls SET state = 'done' WHERE call_id = 'c1'")).toThrow(/CHECK constraint failed/);
    expect(() => store.db.exec("UPDATE timer_occurrences SET status = 'done' WHERE id = 'o1'")).toThrow(/CHECK constraint failed/);
    expect(() => store.db.exec("UPDATE timer_occurrences SET origin = 'cron' WHERE id = 'o1'")).toThrow(/CHECK constraint failed/);
    // The partial indexes hold what they held: o1 is active and waiting for its retry, o2 ended.
    expect(
      occurrenceStatements(store.db)
        .dueRetries(1_000, 10)
        .map((o) => o.id),
    ).toEqual(["o1"]);
    expect(
      store.db
        .prepare("SELECT id FROM timer_occurrences INDEXED BY timer_occurrences_ended WHERE (status = 'completed' OR status = 'failed' OR status = 'skipped')")
        .all(),
    ).toEqual([{ id: "o2" }]);
  });

  it("what an operator's maintenance SQL built on the rebuilt tables survives: a view, foreign keys (with and without ON DELETE CASCADE, or that SQLite cannot check), indexes", async () => {
    const dataDir = folderAt(11);
    const old = new Database(join(dataDir, "chronolog.db"));
    old.exec(`INSERT INTO action_calls (call_id, action, input_hash, actor, recorded, state, attempt, updated_at) VALUES ('c1', 'p.a', 'h', NULL, 1, 'failed', 1, 5);
      INSERT INTO timer_occurrences (id, timer_id, due_ms, action, input, actor, overdue, status, call_id, claimed_at, updated_at) VALUES ('o1', 't1', 100, 'p.a', '{}', NULL, '{}', 'completed', 'o1', 100, 101);
      CREATE VIEW op_failed AS SELECT call_id FROM action_calls WHERE state = 'failed';
      CREATE TABLE op_refunds (call_id TEXT NOT NULL REFERENCES action_calls (call_id), amount REAL);
      CREATE TABLE op_notes (call_id TEXT REFERENCES action_calls (call_id) ON DELETE CASCADE, note TEXT);
      INSERT INTO op_refunds VALUES ('c1', 12.5); INSERT INTO op_notes VALUES ('c1', 'kept');
      CREATE INDEX op_calls_by_action ON action_calls (action, updated_at);
      CREATE INDEX op_occurrences_by_timer ON timer_occurrences (timer_id, due_ms);
      CREATE TABLE op_region (code TEXT, name TEXT); CREATE TABLE op_site (id TEXT PRIMARY KEY, region TEXT REFERENCES op_region (code));
      CREATE TABLE op_by_action (action TEXT REFERENCES action_calls (action));`); // foreign keys SQLite cannot check (parent keys not unique)
    old.close();
    const upgrades: unknown[] = [];
    const store = openStore({ dataDir, onUpgrade: (u) => upgrades.push(u) });
    opened.push(store);
    expect(upgrades).toEqual([
      // (Numbers may have gaps: every migration file above 12.)
      {
        from: 11,
        to: latestMigration,
        files: [expect.stringMatching(/^0012_/), ...Array(migrationVersions.filter((v) => v > 12).length).fill(expect.any(String))],
      },
    ]);
    expect(store.db.prepare("SELECT * FROM op_failed").all()).toEqual([{ call_id: "c1" }]);
    expect(store.db.prepare("SELECT call_id, amount FROM op_refunds").all()).toEqual([{ call_id: "c1", amount: 12.5 }]);
    expect(store.db.prepare("SELECT call_id, note FROM op_notes").all()).toEqual([{ call_id: "c1", note: "kept" }]);
    const indexes = (
      store.db.prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND name LIKE 'op_%' ORDER BY name").all() as { name: string }[]
    ).map((r) => r.name);
    expect(indexes).toEqual(["op_calls_by_action", "op_occurrences_by_timer"]);
    expect(store.db.pragma("foreign_keys", { simple: true })).toBe(1); // back on after the migrations
    expect(() => store.db.exec("INSERT INTO op_refunds VALUES ('nope', 1)")).toThrow(/FOREIGN KEY constraint failed/);
  });

  it("reads the tables a migration rebuilds from its statements, not its comments (0009's comment says DROP TABLE)", async () => {
    const dataDir = folderAt(8);
    const old = new Database(join(dataDir, "chronolog.db"));
    old.exec(`CREATE TABLE "and" (x); CREATE INDEX op_and_x ON "and" (x);`);
    old.close();
    const store = open(dataDir);
    expect(store.db.pragma("user_version", { simple: true })).toBe(latestMigration);
    expect(store.db.prepare("SELECT name FROM sqlite_schema WHERE name = 'op_and_x'").all()).toEqual([{ name: "op_and_x" }]);
  });
});

// owner.lock guards an SQLite data folder; PostgreSQL owners elect a leader by the lease.
describe("owner lock", () => {
  it("refuses a second open of a folder in use and frees it on close", async () => {
    const dataDir = folder();
    const first = open(dataDir);
    expect(() => openStore({ dataDir })).toThrow(/in use by another Chronolog owner \(pid \d+\)/);
    await first.close();
    const second = open(dataDir);
    expect(second.db.pragma("journal_mode", { simple: true })).toBe("wal");
  });

  it("takes owner.lock again when it is deleted while the store is open; a second open is then refused", async () => {
    const dataDir = folder();
    const retaken: string[] = [];
    const lost: Error[] = [];
    const store = openStore({ dataDir, lockCheckIntervalMs: 50, onLockRetaken: (m) => retaken.push(m), onLockLost: (e) => lost.push(e) });
    opened.push(store);
    rmSync(join(dataDir, "owner.lock"));
    rmSync(join(dataDir, "owner.pid"));
    await until(() => retaken.length === 1, "lock taken again");
    expect(retaken[0]).toMatch(/owner\.lock of data folder .* was deleted or replaced .* took the lock again \(never delete owner\.lock while an owner runs\)/);
    expect(readFileSync(join(dataDir, "owner.pid"), "utf8")).toBe(`${process.pid}\n`);
    expect(() => openStore({ dataDir })).toThrow(/in use by another Chronolog owner/);
    expect(lost).toEqual([]);
  });

  it("tells the first store it lost the folder when another took a new owner.lock, and stops watching", async () => {
    const dataDir = folder();
    const lost: Error[] = [];
    const first = openStore({ dataDir, lockCheckIntervalMs: 50, onLockLost: (e) => lost.push(e) });
    opened.push(first);
    rmSync(join(dataDir, "owner.lock"));
    const second = open(dataDir); // synchronously, before the first's watchdog runs: the lock was missing, the second takes a new one
    await until(() => lost.length === 1, "the first told");
    expect(lost[0].message).toMatch(
      new RegExp(
        `owner\\.lock of data folder ${dataDir} was deleted or replaced while this owner ran and another Chronolog owner holds it now; this owner stops`,
      ),
    ); // owner.pid names this process: not shown as the other
    await new Promise((r) => setTimeout(r, 200));
    expect(lost).toHaveLength(1); // told once; the watchdog stopped
    await second.close();
  });
});

// SQLITE_FULL: PostgreSQL's disk is the server's.
describe("a full disk", () => {
  it("is UNAVAILABLE with a message saying so (SQLITE_FULL rolls the whole commit back), not INTERNAL", () => {
    const full = Object.assign(new Error("database or disk is full"), { code: "SQLITE_FULL" });
    const error = toConnectError(full);
    expect([error.code, error.rawMessage]).toEqual([Code.Unavailable, "the owner's disk is full: nothing was written; retry once space is freed"]);
    expect(toConnectError(new Error("boom")).code).toBe(Code.Internal);
  });
});

// An SQLite migration (PostgreSQL's schema starts at pg-migrations/0001).
describe("migration 0013: documents get the space of the actor that created them", () => {
  it("a folder at schema 12 keeps its documents; each takes the space of its latest created event, others none", async () => {
    const dataDir = folderAt(12);
    const old = new Database(join(dataDir, "chronolog.db"));
    const created = (seq: number, type: string, id: string, actor: string | null) =>
      old
        .prepare("INSERT INTO events (seq, id, type, data, cause, actor, at) VALUES (?, ?, ?, ?, '', ?, 1)")
        .run(seq, `e${seq}`, type, JSON.stringify({ _id: id, doc: { _id: id } }), actor);
    created(1, "note.created", "n1", '{"id":"u","for":"","in":"space:a","via":""}');
    created(2, "note.created", "n2", null);
    created(3, "note.created", "n3", '{"id":"u","for":"","in":"space:a","via":""}');
    created(4, "note.deleted", "n3", null);
    created(5, "note.created", "n3", '{"id":"u","for":"","in":"space:b","via":""}'); // made again, in space b
    created(6, "memo.created", "n1", '{"id":"u","for":"","in":"space:c","via":""}'); // another collection's n1
    const doc = old.prepare("INSERT INTO documents (collection, id, doc) VALUES (?, ?, ?)");
    for (const [collection, id] of [
      ["note", "n1"],
      ["note", "n2"],
      ["note", "n3"],
      ["ledger", "r1"],
    ])
      doc.run(collection, id, JSON.stringify({ _id: id }));
    old.close();

    const store = open(dataDir);
    expect(store.db.pragma("user_version", { simple: true })).toBe(latestMigration);
    expect(store.db.prepare("SELECT collection, id, doc, space FROM documents ORDER BY collection, id").all()).toEqual([
      { collection: "ledger", id: "r1", doc: '{"_id":"r1"}', space: "" },
      { collection: "note", id: "n1", doc: '{"_id":"n1"}', space: "space:a" },
      { collection: "note", id: "n2", doc: '{"_id":"n2"}', space: "" },
      { collection: "note", id: "n3", doc: '{"_id":"n3"}', space: "space:b" },
    ]);
  });
});
