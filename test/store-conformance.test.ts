// The store boundary, the same cases on SQLite and PostgreSQL (test/helpers/stores.ts: both stores
// in this process; PostgreSQL's when the test server runs, CHRONOLOG_TEST_STORE=postgres): the
// committer's transactions on each store (a unit that throws undoes only itself, a slice that
// fails to commit, nothing answered before it is durable, the head kept across a reopen), the
// events table's statements (EventStatements), and PostgreSQL's fence (a store whose lease term
// was taken writes nothing more). The other statement groups: store-conformance-statements.test.ts.
//
// @module-tag postgres

import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../server/src/clock.js";
import { stepEach, type CommitInfo, type Tx } from "../server/src/store/committer.js";
import { connectPostgres } from "../server/src/store/postgres/open.js";
import { FencedError } from "../server/src/store/postgres/transactions.js";
import { eventReads } from "../server/src/store/events.js";
import { timerStatements } from "../server/src/store/timers.js";
import type { Transactions } from "../server/src/store/transactions.js";
import { defaultSchedulePolicy } from "../server/src/store/timer-records.js";
import { closeTestStores, openTestStore, storeKinds, testEvent as event, type TestStore } from "./helpers/stores.js";
import { until } from "./helpers/until.js";

afterEach(closeTestStores);

/** The ids of the events in the log, in seq order, as a connection of its own reads them. */
const logged = (t: TestStore) => t.query("SELECT seq, id FROM events ORDER BY seq").map((r) => ({ seq: Number(r.seq), id: r.id }));

/** Holds the thread for `ms` (a unit longer than a slice). */
function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

/** `transactions` whose sync resolves only once the test releases it, oldest first. */
function gatedSync(transactions: Transactions): Transactions & { readonly waiting: number; release(): void } {
  const held: (() => void)[] = [];
  return {
    ...transactions,
    sync: () => new Promise<void>((resolve, reject) => held.push(() => transactions.sync().then(resolve, reject))),
    get waiting() {
      return held.length;
    },
    release: () => held.shift()?.(),
  };
}

const timer = (id: string, dueMs: number) => ({
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

describe.each(storeKinds)("the committer's transactions on %s", (kind) => {
  it("tells its listeners the events a commit appended, in seq order, without those of units undone", async () => {
    const t = await openTestStore(kind);
    const committer = t.committer();
    const told: string[][] = [];
    committer.onCommit((info) => told.push(info.events.map((e) => `${e.seq}:${e.id}`)));
    const units = [
      committer.submit((tx) => tx.append(event("a"))),
      committer.submit((tx) => {
        tx.append(event("undone-1"));
        tx.append(event("undone-2"));
        throw new Error("the unit fails");
      }),
      committer.submit((tx) => tx.append(event("b"))),
    ];
    await Promise.allSettled(units);
    await committer.submit((tx) => tx.append(event("c")));
    expect(told).toEqual([["1:a", "2:b"], ["3:c"]]);
  });

  it("commits units submitted together in one batch: dense seqs from 1, one commit time, each caller answered once it is in the log", async () => {
    const t = await openTestStore(kind);
    const committer = t.committer();
    const commits: CommitInfo[] = [];
    committer.onCommit((info) => commits.push(info));
    const ids = Array.from({ length: 20 }, (_, i) => `e${i}`);
    const seen: boolean[] = [];
    const records = await Promise.all(
      ids.map((id) => committer.submit((tx) => tx.append(event(id))).then((r) => (seen.push(logged(t).some((e) => e.id === id)), r))),
    );
    expect(records.map((r) => r.seq)).toEqual(ids.map((_, i) => i + 1));
    expect(new Set(records.map((r) => r.at))).toEqual(new Set([Date.UTC(2026, 0, 1)]));
    expect(seen).toEqual(ids.map(() => true));
    expect(commits).toEqual([expect.objectContaining({ head: 20, batchSize: 20 })]);
    expect(committer.head).toBe(20);
  });

  it("undoes only the unit that throws, its appends and its other writes; the others commit and seqs stay dense", async () => {
    const t = await openTestStore(kind);
    const committer = t.committer();
    const timers = timerStatements(t.store.db);
    const outcomes = await Promise.allSettled([
      committer.submit((tx) => tx.append(event("a"))),
      committer.submit((tx) => {
        timers.put(timer("undone", 5), tx.now);
        tx.append(event("b1"));
        tx.append(event("b2"));
        throw new Error("b changed its mind");
      }),
      committer.submit((tx) => (timers.put(timer("kept", 6), tx.now), tx.append(event("c")))),
      committer.submit((tx) => [tx.append(event("d1")), tx.append(event("d2"))]),
      committer.submit((tx) => {
        tx.append(event("last"));
        throw new Error("the batch's last unit");
      }),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "fulfilled", "fulfilled", "rejected"]);
    expect((outcomes[1] as PromiseRejectedResult).reason.message).toBe("b changed its mind");
    expect(logged(t)).toEqual([
      { seq: 1, id: "a" },
      { seq: 2, id: "c" },
      { seq: 3, id: "d1" },
      { seq: 4, id: "d2" },
    ]);
    expect(t.query("SELECT id FROM timers ORDER BY id")).toEqual([{ id: "kept" }]);
    expect([committer.head, t.events.head()]).toEqual([4, 4]);
    expect((await committer.submit((tx) => tx.append(event("next")))).seq).toBe(5); // no gap after the failed last unit
  });

  it("answers no caller, moves no head and tells no listener before the batch's sync resolved; the next batch waits meanwhile", async () => {
    const t = await openTestStore(kind);
    const gate = gatedSync(t.store.transactions);
    const committer = t.committer({ transactions: gate });
    const heard: number[] = [];
    committer.onCommit((info) => heard.push(info.head));
    let answered = 0;
    const first = committer.submit((tx) => tx.append(event("a"))).then(() => answered++);
    await until(() => gate.waiting === 1, "the first batch's sync");
    const later = [committer.submit((tx) => tx.append(event("b"))), committer.submit((tx) => tx.append(event("c")))].map((p) => p.then(() => answered++));
    await new Promise((r) => setTimeout(r, 20));
    expect([answered, committer.head, heard]).toEqual([0, 0, []]);
    expect(logged(t).filter((e) => e.id !== "a")).toEqual([]); // b and c wait for a's sync
    gate.release();
    await first;
    expect([answered, committer.head, heard]).toEqual([1, 1, [1]]);
    await until(() => gate.waiting === 1, "the second batch's sync");
    gate.release();
    await Promise.all(later);
    expect([answered, committer.head, heard]).toEqual([3, 3, [1, 3]]);
    expect(logged(t).map((e) => e.id)).toEqual(["a", "b", "c"]);
  });

  it("runs a unit in steps across turns of the event loop and commits it as one unit: all its steps, or none when one throws", async () => {
    const t = await openTestStore(kind);
    const committer = t.committer();
    const timers = timerStatements(t.store.db);
    let ticks = 0;
    const ticking = setInterval(() => ticks++, 1);
    /** The ticks counted when each step ran. */
    const seen: number[] = [];
    const ids = (prefix: string) => Array.from({ length: 20 }, (_, i) => `${prefix}${i}`);
    const steps = (prefix: string, failAt?: number) => (tx: Tx) =>
      stepEach(ids(prefix), (id, i) => {
        busy(1); // 20 steps hold the thread far longer than a slice
        seen.push(ticks);
        if (i === failAt) throw new Error("a late step fails");
        timers.put(timer(id, 5), tx.now);
        return tx.append(event(id)).seq;
      });
    const settled = await Promise.allSettled([
      committer.submit((tx) => tx.append(event("before"))),
      committer.submitInSteps(steps("kept")),
      committer.submitInSteps(steps("undone", 19)),
      committer.submit((tx) => tx.append(event("after"))),
    ]);
    clearInterval(ticking);
    expect(settled.map((s) => s.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled"]);
    expect((settled[1] as PromiseFulfilledResult<number[]>).value).toEqual(ids("kept").map((_, i) => i + 2));
    expect(seen.at(-1)).toBeGreaterThan(seen[0]); // timers fired while the units ran
    expect(logged(t).map((e) => e.id)).toEqual(["before", ...ids("kept"), "after"]);
    const stored = t.query("SELECT id FROM timers ORDER BY id").map((r) => r.id);
    expect(stored).toEqual([...ids("kept")].sort());
  });

  it("prepares a statement in the pipeline that first sends it (no round trip of its own on PostgreSQL), and again after a pipeline that did not run it", async () => {
    const t = await openTestStore(kind);
    const committer = t.committer();
    const timers = timerStatements(t.store.db);
    const waited = () => (t.store.waits?.() ?? []).reduce((n, w) => n + w.count, 0);
    await committer.submit((tx) => tx.append(event("a")));
    const before = waited();
    // The batch takes "a" to be new: its guard fails first, so the Parse of the timers' statement queued after it never runs; run again reading, it is sent again.
    const found = await committer.submit(
      (tx) => {
        timers.put(timer("t1", 5), tx.now);
        return tx.events.findById("a")?.seq ?? tx.append(event("a")).seq;
      },
      { lookups: ["a"], pure: true },
    );
    expect(found).toBe(1);
    await committer.submit((tx) => (timers.put(timer("t2", 6), tx.now), tx.append(event("b")).seq));
    // The guard's statement was prepared in the batch whose transaction its failure aborted: it stays prepared.
    await committer.submit((tx) => tx.append(event("c")).seq, { lookups: ["c"], pure: true });
    expect(t.query("SELECT id FROM timers ORDER BY id").map((r) => r.id)).toEqual(["t1", "t2"]);
    expect(logged(t).map((e) => e.id)).toEqual(["a", "b", "c"]);
    if (kind === "postgres") expect(waited() - before).toBeLessThanOrEqual(1); // the run again's read of "a"; no PREPARE of its own
  });

  it("a slice that fails to commit answers none of its units, nor those after it, and none of theirs is in the log", async () => {
    const t = await openTestStore(kind);
    // A deferred foreign key is checked at COMMIT only: a unit breaking it makes its slice's COMMIT fail.
    t.store.db.exec("CREATE TABLE parent (id INTEGER PRIMARY KEY); CREATE TABLE child (parent INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)");
    const fatal: unknown[] = [];
    const committer = t.committer({ onFatal: (e) => fatal.push(e) });
    const settled = await Promise.allSettled([
      committer.submit((tx) => (busy(3), tx.append(event("ok0")))), // longer than a slice: its slice ends with it
      committer.submit((tx) => (tx.db.prepare("INSERT INTO child (parent) VALUES (42)").run(), tx.append(event("broken")))),
      committer.submit((tx) => tx.append(event("after"))),
    ]);
    const answered = settled.flatMap((s, i) => (s.status === "fulfilled" ? [["ok0", "broken", "after"][i]] : []));
    expect(settled.slice(1).map((s) => s.status)).toEqual(["rejected", "rejected"]);
    expect(String((settled[1] as PromiseRejectedResult).reason)).toMatch(/FOREIGN KEY|foreign key/);
    expect(logged(t).map((e) => e.id)).toEqual(answered); // what was answered is in the log, nothing else
    if (kind === "sqlite") {
      // Each slice is a transaction of its own: the one before stays durable and answered; the log goes on without a gap.
      expect(answered).toEqual(["ok0"]);
      expect(fatal).toEqual([]);
      expect((await committer.submit((tx) => tx.append(event("next")))).seq).toBe(2);
    } else {
      // One transaction spans the batch's slices: its COMMIT failing fails the whole batch, and the owner stops.
      expect(answered).toEqual([]);
      expect(fatal).toHaveLength(1);
    }
  });

  it("stops (onFatal) and writes nothing when the next seq is taken: another writer on the same database", async () => {
    const t = await openTestStore(kind);
    const fatal: unknown[] = [];
    const stale = t.committer({ onFatal: (e) => fatal.push(e) }); // its head is 0
    await t.committer().submit((tx) => tx.append(event("by-the-other")));
    await expect(stale.submit((tx) => tx.append(event("mine")))).rejects.toThrow(/events\.seq|events(_\d+)?_pkey/);
    expect(fatal).toHaveLength(1);
    expect(logged(t)).toEqual([{ seq: 1, id: "by-the-other" }]);
  });

  it("keeps commit times non-decreasing when the clock goes back; calls its listeners before answering; work submitted while a batch settles goes into the next", async () => {
    const t = await openTestStore(kind);
    const clock = new ManualClock(Date.UTC(2026, 5, 1, 12));
    const committer = t.committer({}, clock);
    const order: string[] = [];
    committer.onCommit((info) => order.push(`commit ${info.batchSize}`));
    const first = await Promise.all([
      committer.submit((tx) => tx.append(event("t1"))).then((r) => (order.push("t1"), r)),
      committer.submit((tx) => tx.append(event("t2"))).then(() => order.push("t2")),
    ]);
    expect(order).toEqual(["commit 2", "t1", "t2"]);
    clock.set(Date.UTC(2026, 5, 1, 11));
    const second = await committer
      .submit((tx) => tx.append(event("t3")))
      .then((r) => committer.submit((tx) => tx.append(event("t4"))).then((next) => [r, next]));
    expect(first[0].at).toBe(Date.UTC(2026, 5, 1, 12));
    expect(second.map((r) => [r.seq, r.at])).toEqual([
      [3, first[0].at],
      [4, first[0].at],
    ]);
    expect(order.slice(3)).toEqual(["commit 1", "commit 1"]);
  });

  it("continues the log from the stored head when the store is opened again", async () => {
    const t = await openTestStore(kind);
    await t.committer().submit((tx) => [tx.append(event("one")), tx.append(event("two"))]);
    const again = await t.reopen();
    const committer = again.committer();
    expect(committer.head).toBe(2);
    expect((await committer.submit((tx) => tx.append(event("three")))).seq).toBe(3);
    expect(logged(again).map((e) => e.id)).toEqual(["one", "two", "three"]);
  });
});

describe.each(storeKinds)("the events table on %s (EventStatements)", (kind) => {
  it("finds events by id, reads them in seq order after a seq, tells the head and the first seq at or after a moment", async () => {
    const t = await openTestStore(kind);
    const clock = new ManualClock(1_000);
    const committer = t.committer({}, clock);
    const actor = { id: "u-1", for: "team", in: "space:a", via: "web" };
    await committer.submit((tx) => [
      tx.append({ ...event("a", { n: 1, nested: { list: [1, "two", null] } }), actor }),
      tx.append({ ...event("b"), cause: "a" }),
    ]);
    clock.set(2_000);
    await committer.submit((tx) => tx.append(event("c", { n: 3 })));
    const { events } = t;
    expect(events.findById("a")).toEqual({
      seq: 1,
      id: "a",
      type: "test.happened",
      data: { n: 1, nested: { list: [1, "two", null] } },
      cause: "",
      actor,
      at: 1_000,
    });
    expect(events.findById("b")).toMatchObject({ seq: 2, cause: "a", actor: null });
    expect(events.findById("nope")).toBeUndefined();
    expect(events.readAfter(0, 10).map((e) => e.id)).toEqual(["a", "b", "c"]);
    expect(events.readAfter(1, 1).map((e) => e.id)).toEqual(["b"]);
    expect(events.readAfter(3, 10)).toEqual([]);
    expect(events.head()).toBe(3);
    expect([events.firstAtOrAfter(0), events.firstAtOrAfter(1_000), events.firstAtOrAfter(1_001), events.firstAtOrAfter(2_001)]).toEqual([1, 1, 3, undefined]);
  });

  it("inside a unit finds what the batch appended, with or without the ids read ahead (prefetch)", async () => {
    const t = await openTestStore(kind);
    const committer = t.committer();
    await committer.submit((tx) => tx.append(event("old")));
    const looked = await Promise.all([
      committer.submit((tx) => (tx.append(event("new")), [tx.events.findById("new")?.seq, tx.events.findById("old")?.seq])),
      committer.submit((tx) => [tx.events.findById("new")?.seq, tx.events.findById("old")?.seq, tx.events.findById("never")], {
        lookups: ["new", "old", "never"],
      }),
    ]);
    expect(looked).toEqual([
      [2, 1],
      [2, 1, undefined],
    ]);
    const ahead = t.events.prefetch(["old"]);
    expect(ahead === undefined).toBe(kind === "sqlite"); // SQLite's lookups are no round trips: nothing is read ahead
    await ahead;
  });

  it("a budgeted read stops after the event that reaches its byte budget, at its row limit, or at the events of the types asked", async () => {
    const t = await openTestStore(kind);
    const pad = "x".repeat(10_000);
    await t.committer().submit((tx) => {
      for (let i = 0; i < 6; i++) tx.append({ ...event(`big-${i}`, { pad }), type: i % 2 === 0 ? "even.happened" : "odd.happened" });
    });
    const read = t.events.readWithin(0, 512, 25_000);
    expect(read.events.map((e) => e.id)).toEqual(["big-0", "big-1", "big-2"]); // the third brings it past 25,000 bytes
    expect(read.cut).toBe(true);
    expect(read.bytes).toBeGreaterThanOrEqual(30_000);
    expect(t.events.readWithin(0, 1, 1).events.map((e) => e.id)).toEqual(["big-0"]); // at least one
    expect(t.events.readWithin(0, 2, 1_000_000)).toMatchObject({ cut: true, events: [{ id: "big-0" }, { id: "big-1" }] });
    expect(t.events.readWithin(0, 512, 1_000_000, ["odd.happened"])).toMatchObject({ cut: false, events: [{ id: "big-1" }, { id: "big-3" }, { id: "big-5" }] });
    expect(t.events.readWithin(4, 512, 1_000_000)).toMatchObject({ cut: false, events: [{ id: "big-4" }, { id: "big-5" }] });
    expect(t.events.readWithin(6, 512, 1_000_000)).toEqual({ events: [], bytes: 0, cut: false });
  });

  it("the RPCs' reads (eventReads) read what the statements read; on PostgreSQL without a round trip the owner's thread waits for, reads asked for together in one", async () => {
    const t = await openTestStore(kind);
    const pad = "x".repeat(10_000);
    await t.committer().submit((tx) => {
      for (let i = 0; i < 6; i++) tx.append({ ...event(`big-${i}`, { pad, i }), type: i % 2 === 0 ? "even.happened" : "odd.happened" });
    });
    const reads = eventReads(t.store.db, t.events);
    const waited = () => (t.store.waits?.() ?? []).reduce((n, w) => n + w.count, 0);
    const before = waited();
    const shapes = [
      [0, 512, 25_000],
      [0, 1, 1],
      [0, 2, 1_000_000],
      [0, 512, 1_000_000, ["odd.happened"]],
      [4, 512, 1_000_000],
      [6, 512, 1_000_000],
    ] as const;
    const read = await Promise.all(shapes.map(([after, limit, bytes, types]) => reads.readWithin(after, limit, bytes, types ? [...types] : undefined)));
    const found = await Promise.all([reads.findById("big-3"), reads.findById("none")]);
    expect(waited()).toBe(before);
    const plain = (r: { events: { id: string; seq: number; data: unknown }[]; bytes: number; cut: boolean }) => ({
      ...r,
      events: r.events.map((e) => ({ id: e.id, seq: e.seq, data: e.data })),
    });
    expect(read.map(plain)).toEqual(
      shapes.map(([after, limit, bytes, types]) => plain(t.events.readWithin(after, limit, bytes, types ? [...types] : undefined))),
    );
    expect(found[0]).toMatchObject({ id: "big-3", seq: 4, type: "odd.happened", data: { pad, i: 3 } });
    expect(found[1]).toBeUndefined();
    const counts = t.store.asyncReads?.();
    if (kind === "postgres") {
      expect(counts?.reads).toBe(8);
      expect(counts?.roundTrips).toBeLessThan(8); // the first read goes alone, those asked for meanwhile together
    } else expect(counts).toBeUndefined();
    // A read that fails fails alone: the reads after it in the same round trip are answered.
    if (kind === "postgres") {
      const readAsync = t.store.db.readAsync!.bind(t.store.db);
      const outcomes = await Promise.allSettled([
        readAsync("SELECT 1 AS n", []),
        readAsync("SELECT 1/0 AS n", []),
        readAsync("SELECT 2 AS n", []),
        readAsync("SELECT 3 AS n", []),
      ]);
      expect(outcomes.map((o) => (o.status === "fulfilled" ? o.value : String(o.reason)))).toEqual([
        [{ n: 1 }],
        expect.stringMatching(/division by zero/),
        [{ n: 2 }],
        [{ n: 3 }],
      ]);
    }
  });

  it("the database refuses to update, delete (or truncate) an event, on any connection; appends go on", async () => {
    const t = await openTestStore(kind);
    const committer = t.committer();
    await committer.submit((tx) => tx.append(event("a", { n: 1 })));
    expect(() => t.query("UPDATE events SET data = '{}' WHERE seq = 1")).toThrow(/the log is immutable: events cannot be updated/);
    expect(() => t.query("DELETE FROM events WHERE seq = 1")).toThrow(/the log is immutable: events cannot be deleted/);
    if (kind === "postgres") expect(() => t.query("TRUNCATE events")).toThrow(/the log is immutable/); // SQLite has no TRUNCATE: a DELETE of every event is refused below
    await expect(committer.submit((tx) => tx.db.prepare("DELETE FROM events").run())).rejects.toThrow(/the log is immutable/);
    await committer.submit((tx) => tx.append(event("b")));
    expect(logged(t).map((e) => e.id)).toEqual(["a", "b"]);
  });
});

describe.runIf(storeKinds.includes("postgres"))("PostgreSQL's fence", () => {
  it("a store whose lease term was taken writes nothing more: its commits fail with FencedError, told once per batch; a batch that writes nothing still answers", async () => {
    const t = await openTestStore("postgres");
    const fatal: unknown[] = [];
    const committer = t.committer({ onFatal: (e) => fatal.push(e) });
    await committer.submit((tx) => tx.append(event("before")));
    const term = t.database!.lease.term;
    t.query("UPDATE chronolog_lease SET term = term + 1 WHERE id = 1"); // another owner's takeover, its connection kept
    const error = await committer.submit((tx) => tx.append(event("after"))).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FencedError);
    expect(error).toMatchObject({ term, leaseTerm: term + 1 });
    expect(t.told.fenced).toEqual([error]);
    expect(fatal).toEqual([error]);
    await expect(committer.submit((tx) => timerStatements(tx.db).put(timer("late", 1), tx.now))).rejects.toBeInstanceOf(FencedError);
    expect(await committer.submit((tx) => tx.events.findById("before")?.seq)).toBe(1); // reads commit nothing: nothing to fence
    expect(logged(t).map((e) => e.id)).toEqual(["before"]);
    expect(t.query("SELECT id FROM timers")).toEqual([]);
  });

  it("after another owner took over the expired lease, the deposed store commits nothing more", async () => {
    const t = await openTestStore("postgres", { leaseMs: 300 });
    const fatal: unknown[] = [];
    const committer = t.committer({ onFatal: (e) => fatal.push(e) });
    await committer.submit((tx) => tx.append(event("before")));
    await new Promise((r) => setTimeout(r, 400)); // the lease expires: nothing renews it here
    const other = connectPostgres(t.url!, { instanceId: `other-${process.pid}`, advertiseUrl: "http://127.0.0.1:2", leaseMs: 30_000 });
    try {
      expect(await other.lease.tryTake()).toMatchObject({ leading: true });
      // The takeover ended this store's connections: whether its COMMIT finds one gone or the term
      // taken, the batch fails and the owner is told (it steps down).
      await expect(committer.submit((tx) => tx.append(event("deposed")))).rejects.toBeDefined();
      expect(fatal).toHaveLength(1);
      expect(logged(t).map((e) => e.id)).toEqual(["before"]);
    } finally {
      other.close();
    }
  });
});
