// The PostgreSQL store's own behaviour, on the test server (CHRONOLOG_TEST_STORE=postgres): its
// connections' names, the lease row's locks (a renewal never waits behind the leader's own write
// transaction; a takeover's term update does), renewals from their own thread while the owner's is
// held up, merged writes' runs sent as one statement, reads cut at their byte budget by the server, statements prepared once per connection,
// and clients ended and collected at once. What it does as SQLite's store does is tested on both
// in store-conformance*.test.ts.
//
// @module-tag postgres

import { execFile, spawn } from "node:child_process";
import { createConnection, createServer, type Socket } from "node:net";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../server/src/clock.js";
import { Committer } from "../server/src/store/committer.js";
import { eventStatements } from "../server/src/store/events.js";
import { connectPostgres, type PostgresDatabase } from "../server/src/store/postgres/open.js";
import { LeaseRenewer } from "../server/src/store/postgres/lease-renewer.js";
import type { NativeClient } from "../server/src/store/postgres/native-client.js";
import { connectNative, endNative } from "../server/src/store/postgres/pg-db.js";
import { defer, prepareMerged, type Db, type SqlStatement } from "../server/src/store/sql.js";
import type { Store } from "../server/src/store/store.js";
import { onPostgres, tempDir, testDatabase } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

const run = promisify(execFile);
const repo = new URL("../", import.meta.url).pathname;
const opened: { close(): void }[] = [];
afterEach(() => {
  for (const o of opened.splice(0)) o.close();
});

/** A migrated database of its own, its lease taken by `instanceId`, and its store open. */
async function leader(instanceId = "lead1") {
  const url = testDatabase(tempDir("chronolog-pg-store-"));
  const database: PostgresDatabase = connectPostgres(url, { instanceId, advertiseUrl: "http://127.0.0.1:1", leaseMs: 3_000 });
  opened.push(database);
  expect(await database.lease.tryTake()).toMatchObject({ leading: true });
  const store: Store = database.open(
    () => undefined,
    () => undefined,
  );
  return { url, database, store, other: connection(url) };
}

function connection(url: string): NativeClient {
  const client = connectNative(url, "chronolog tests");
  opened.push({ close: () => endNative(client) });
  return client;
}

const event = (id: string, data: Record<string, unknown> = {}) => ({ id, type: "test.happened", data, cause: "", actor: null });

/** Rejects when `promise` is not settled within `ms`. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([promise, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what}: not settled within ${ms} ms`)), ms))]);
}

describe.runIf(onPostgres)("the PostgreSQL store", () => {
  it("names its connections `chronolog <instance> <role>` as given (spaces are not written as '+')", async () => {
    const { other } = await leader("named1");
    const names = other
      .querySync("SELECT application_name AS name FROM pg_stat_activity WHERE application_name LIKE 'chronolog named1 %' ORDER BY 1")
      .map((r) => r.name);
    expect(names).toEqual(["chronolog named1 async", "chronolog named1 lease", "chronolog named1 reader", "chronolog named1 writer"]);
  });

  /** A renewer of `database`'s lease (taken), renewing every 200 ms, and what it reported. */
  function renewerOf(url: string, database: PostgresDatabase, instanceId = "lead1") {
    const told = { taken: 0, errors: [] as string[] };
    const renewer = new LeaseRenewer({
      url,
      applicationName: `chronolog ${instanceId} lease`,
      leaseMs: 600,
      term: database.lease.term,
      takenAt: database.lease.takenAt,
      onTaken: () => told.taken++,
      onError: (message) => told.errors.push(message),
    });
    opened.push({ close: () => void renewer.close() });
    return { renewer, told };
  }

  it("a renewal does not wait for the leader's open write transaction; an update of the term (a takeover's) does", async () => {
    const { url, database, other } = await leader();
    const { renewer, told } = renewerOf(url, database);
    const writer = connection(url);
    writer.querySync("BEGIN"); // a batch's transaction past its fence, which holds the lease row FOR KEY SHARE
    writer.querySync("SELECT 1 / (CASE WHEN (SELECT term FROM chronolog_lease WHERE id = 1 FOR KEY SHARE) = $1 THEN 1 ELSE 0 END)", [
      String(database.lease.term),
    ]);
    try {
      const before = process.hrtime.bigint();
      await until(() => renewer.ageMs() < Number(process.hrtime.bigint() - before) / 1e6 - 300, "a renewal sent after the transaction began held");
      other.querySync("SET statement_timeout = 300");
      expect(() => other.querySync("UPDATE chronolog_lease SET term = term + 1 WHERE id = 1")).toThrow(/statement timeout/);
    } finally {
      writer.querySync("ROLLBACK");
    }
    other.querySync("UPDATE chronolog_lease SET term = term + 1 WHERE id = 1"); // once the transaction ended
    // The thread marks the lease taken in shared memory, then tells the owner's thread: wait for what it is told.
    await until(() => told.taken > 0, "the renewer told its term is gone");
    expect([told.taken, renewer.taken]).toEqual([1, true]);
  });

  it("ends the process when the lease is lost while the owner's thread is stuck (its own step-down would never run), saying why", {
    tags: ["serial"],
  }, async () => {
    const url = testDatabase(tempDir("chronolog-pg-stuck-"));
    connectPostgres(url, { instanceId: "migrate", advertiseUrl: "http://127.0.0.1:1", leaseMs: 1_000 }).close(); // migrated
    const child = spawn(process.execPath, ["--conditions=chronolog-source", "--import", "tsx", "test/helpers/stuck-leader.ts", url], {
      cwd: repo,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const exited = new Promise<NodeJS.Signals | number | null>((resolve) => child.once("exit", (code, signal) => resolve(signal ?? code)));
    let stdout = "";
    let stderr = "";
    child.stdout!.on("data", (chunk) => (stdout += chunk));
    child.stderr!.on("data", (chunk) => (stderr += chunk));
    try {
      await until(() => stdout.startsWith("stuck"), "the leader stuck", 30_000);
      const other = connection(url);
      other.querySync("UPDATE chronolog_lease SET term = term + 1 WHERE id = 1"); // another owner takes it
      const takenAt = performance.now();
      expect(await exited).toBe("SIGKILL");
      expect(performance.now() - takenAt).toBeLessThan(10_000); // a renewal (a third of the lease), then a second of silence
      expect(stderr).toMatch(
        /"msg":"stepping down: another owner took the lease, and the owner's thread has not answered for \d+ ms \(waiting on a database that does not answer\?\): the process ends"/,
      );
    } finally {
      child.kill("SIGKILL");
    }
  });

  it("renews from its own thread while the owner's thread is held up (a statement waiting on the database, a burst of work)", {
    tags: ["serial"],
  }, async () => {
    const { url, database } = await leader();
    const { renewer, told } = renewerOf(url, database);
    const heldUntil = performance.now() + 2_000; // over three leases
    while (performance.now() < heldUntil); // the owner's thread does nothing else meanwhile
    expect(renewer.ageMs()).toBeLessThan(1_500); // renewals were sent, and held, while it was held up
    expect(renewer.taken).toBe(false);
    expect(told.errors).toEqual([]);
  });

  it("closes while a renewal is still connecting: the connection it then gets is ended and the thread exits", async () => {
    const { url, database } = await leader();
    // A proxy to the server that holds each connection back until the test lets it through.
    const target = new URL(url);
    const held: (() => void)[] = [];
    const sockets: Socket[] = [];
    const proxy = createServer((socket) => {
      sockets.push(socket);
      socket.pause();
      held.push(() => {
        const upstream = createConnection(Number(target.port), target.hostname);
        sockets.push(upstream);
        socket.pipe(upstream).pipe(socket);
        socket.resume();
      });
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    opened.push({ close: () => (sockets.forEach((s) => s.destroy()), proxy.close()) });
    const viaProxy = new URL(url);
    viaProxy.port = String((proxy.address() as { port: number }).port);
    const { renewer } = renewerOf(viaProxy.toString(), database);
    await until(() => held.length === 1, "the first renewal connecting"); // a third of the lease (200 ms) after the start
    const closed = renewer.close();
    held[0](); // the connection is made after the close was asked for
    await within(closed, 5_000, "the renewer's close");
  });

  it("a unit's queued writes are undone with it, whether its savepoint was sent or not; a queued write failing after its unit answered fails the batch", async () => {
    const { store, other } = await leader();
    other.querySync("CREATE TABLE scratch (k text PRIMARY KEY, v integer NOT NULL)");
    const fatal: unknown[] = [];
    const committer = new Committer(store.db, new ManualClock(Date.UTC(2026, 0, 1)), eventStatements(store.db), {
      transactions: store.transactions,
      onFatal: (e) => fatal.push(e),
    });
    const put = store.db.prepare("INSERT INTO scratch (k, v) VALUES (?, ?)");
    const read = store.db.prepare("SELECT v FROM scratch WHERE k = ?").pluck();
    const boom = () => {
      throw new Error("the unit fails");
    };
    const units = [
      committer.submit(() => defer(put, "kept-1", 1)),
      committer.submit(() => (defer(put, "dropped-unsent", 1), boom())), // its savepoint never sent
      committer.submit(() => (read.get("kept-1"), defer(put, "dropped-read-first", 1), boom())), // a read before its first write
      committer.submit(() => (defer(put, "dropped-sent", 1), read.get("dropped-sent"), defer(put, "dropped-after", 2), boom())), // its savepoint sent with the read
      committer.submit(() => read.get("kept-1") as number), // sees the batch's own queued write
      committer.submit(() => defer(put, "kept-2", 2)),
    ];
    const outcomes = await Promise.allSettled(units);
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "rejected", "rejected", "fulfilled", "fulfilled"]);
    expect((outcomes[4] as PromiseFulfilledResult<number>).value).toBe(1);
    expect(other.querySync("SELECT k FROM scratch ORDER BY k").map((r) => r.k)).toEqual(["kept-1", "kept-2"]);
    expect(fatal).toEqual([]);

    // A deferred write that fails when sent (a key taken): its unit answered already, so the batch cannot commit.
    const broken = await Promise.allSettled([committer.submit(() => defer(put, "kept-1", 9)), committer.submit(() => defer(put, "never", 1))]);
    expect(broken.map((o) => o.status)).toEqual(["rejected", "rejected"]);
    expect(fatal).toHaveLength(1);
    expect(other.querySync("SELECT k FROM scratch ORDER BY k").map((r) => r.k)).toEqual(["kept-1", "kept-2"]);
  });

  it("a merged write's runs keep each row's order of writes, go out before another write or a read, and leave with a unit that throws", async () => {
    const { store, other } = await leader();
    other.querySync("CREATE TABLE scratch (k text PRIMARY KEY, v integer NOT NULL, log text NOT NULL DEFAULT '')");
    const fatal: unknown[] = [];
    const committer = new Committer(store.db, new ManualClock(Date.UTC(2026, 0, 1)), eventStatements(store.db), {
      transactions: store.transactions,
      onFatal: (e) => fatal.push(e),
    });
    const insert = prepareMerged(store.db, "INSERT INTO scratch (k, v) VALUES (?, ?)", {
      table: "scratch",
      names: ["k", "v"],
      key: "k",
      sql: "INSERT INTO scratch (k, v) SELECT k, v FROM jsonb_to_recordset(?::jsonb) AS m(k text, v integer)",
    });
    // Each run appends its value to the row's log: the order of a row's updates shows in it.
    const update = prepareMerged(store.db, "UPDATE scratch SET v = ?, log = log || ? WHERE k = ?", {
      table: "scratch",
      names: ["v", "tag", "k"],
      key: "k",
      sql: `WITH changed AS (UPDATE scratch AS s SET v = m.v, log = s.log || m.tag FROM jsonb_to_recordset(?::jsonb) AS m(v integer, tag text, k text) WHERE s.k = m.k RETURNING 1)
            SELECT 1 / (CASE WHEN count(*) = jsonb_array_length($1::jsonb) THEN 1 ELSE 0 END) FROM changed`,
    });
    const plain = store.db.prepare("INSERT INTO scratch (k, v) VALUES (?, ?)");
    const read = store.db.prepare("SELECT v FROM scratch WHERE k = ?").pluck();
    const boom = () => {
      throw new Error("the unit fails");
    };
    const units = [
      committer.submit(() => (defer(insert, "a", 1), defer(insert, "b", 1))),
      committer.submit(() => (defer(update, 2, "x", "a"), defer(update, 3, "y", "a"))), // the same key twice: in order
      committer.submit(() => (defer(insert, "dropped", 1), boom())), // held only: dropped with its unit
      committer.submit(() => (defer(insert, "c", 1), defer(update, 5, "z", "b"))),
      committer.submit(() => (defer(insert, "dropped-2", 1), defer(plain, "dropped-3", 1), boom())), // the held rows of earlier units go out, not its own
      committer.submit(() => read.get("c") as number), // a read sees what is held
      committer.submit(() => (defer(update, 7, "w", "c"), read.get("c"), boom())), // sent with the read, then undone
      committer.submit(() => (defer(plain, "d", 4), defer(update, 6, "v", "d"))),
    ];
    const outcomes = await Promise.allSettled(units);
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled", "rejected", "fulfilled", "rejected", "fulfilled"]);
    expect((outcomes[5] as PromiseFulfilledResult<number>).value).toBe(1);
    expect(other.querySync("SELECT k, v, log FROM scratch ORDER BY k")).toEqual([
      { k: "a", v: 3, log: "xy" },
      { k: "b", v: 5, log: "z" },
      { k: "c", v: 1, log: "" },
      { k: "d", v: 6, log: "v" },
    ]);
    expect(fatal).toEqual([]);

    // A merged update that finds a row missing fails its batch, as its single run does.
    const broken = await Promise.allSettled([committer.submit(() => defer(update, 9, "q", "a")), committer.submit(() => defer(update, 9, "q", "missing"))]);
    expect(broken.map((o) => o.status)).toEqual(["rejected", "rejected"]);
    expect(other.querySync("SELECT v FROM scratch WHERE k = 'a'")).toEqual([{ v: 3 }]);
  });

  it("a batch of pure units takes the ids it looks up to be new; when one is in the log, nothing of the batch commits and it runs again, reading them", async () => {
    const { store, other } = await leader();
    const fatal: unknown[] = [];
    const events = eventStatements(store.db);
    const committer = new Committer(store.db, new ManualClock(Date.UTC(2026, 0, 1)), events, {
      transactions: store.transactions,
      onFatal: (e) => fatal.push(e),
    });
    /** An emit's unit: the stored event for `id`, else `id` appended. */
    const emit = (id: string) =>
      committer.submit((tx) => (tx.events.findById(id) ? `existing ${id}` : `new ${tx.append(event(id)).seq}`), { lookups: [id], pure: true });
    expect(await Promise.all([emit("a"), emit("b")])).toEqual(["new 1", "new 2"]);
    const runs = [emit("c"), emit("a"), emit("d"), emit("c")]; // "a" is in the log; "c" twice in the batch
    expect(await Promise.all(runs)).toEqual(["new 3", "existing a", "new 4", "existing c"]);
    expect(other.querySync("SELECT seq, id FROM events ORDER BY seq").map((r) => `${r.seq} ${r.id}`)).toEqual(["1 a", "2 b", "3 c", "4 d"]);
    expect(fatal).toEqual([]);
  });

  it("a budgeted read fetches only the events its byte budget takes, however many its chunk allows", async () => {
    const { store } = await leader();
    const committer = new Committer(store.db, new ManualClock(Date.UTC(2026, 0, 1)), eventStatements(store.db), { transactions: store.transactions });
    const pad = "x".repeat(100_000);
    await committer.submit((tx) => {
      for (let i = 0; i < 20; i++) tx.append(event(`big-${i}`, { pad }));
    });
    const fetched: number[] = [];
    const counting: Db & { dialect: "postgres" } = {
      dialect: "postgres",
      inTransaction: false,
      exec: (sql) => store.db.exec(sql),
      prepare(sql): SqlStatement {
        const stmt = store.db.prepare(sql);
        const all = stmt.all.bind(stmt);
        stmt.all = (...params) => {
          const rows = all(...params);
          fetched.push(rows.length);
          return rows;
        };
        return stmt;
      },
    };
    const read = eventStatements(counting).readWithin(0, 512, 250_000);
    expect(read.events.map((e) => e.id)).toEqual(["big-0", "big-1", "big-2"]); // 300 KB: the third brings it past 250 KB
    expect(read.cut).toBe(true);
    expect(fetched.at(-1)).toBe(3);
    const byType = eventStatements(counting).readWithin(0, 512, 250_000, ["test.happened"]);
    expect(byType.events).toHaveLength(3);
    expect(fetched.at(-1)).toBe(3);
    expect(eventStatements(store.db).readWithin(18, 512, 250_000)).toMatchObject({ cut: false, events: [{ id: "big-18" }, { id: "big-19" }] });
  });

  it("a client ended and garbage-collected at once does not abort the process (libuv closes its socket watcher later)", { tags: ["serial"] }, async () => {
    const url = testDatabase(tempDir("chronolog-pg-store-"));
    const { stdout } = await run(process.execPath, ["--expose-gc", "--import", "tsx", "test/helpers/end-and-collect.ts", url], { cwd: repo });
    expect(stdout).toBe("ended and collected 100 clients\n");
  });

  it("a statement's SQL is prepared once per connection, however many statements of it are made", async () => {
    const { store } = await leader();
    const count = () => (store.db.prepare("SELECT count(*) AS n FROM pg_prepared_statements").get() as { n: number }).n;
    const before = count();
    for (let i = 0; i < 5; i++) expect(store.db.prepare("SELECT ? AS one").get(1)).toEqual({ one: "1" });
    expect(count()).toBe(before + 1);
  });
});
