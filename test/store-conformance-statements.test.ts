// The store's statement groups but the events table's, the same cases on SQLite and PostgreSQL
// (test/helpers/stores.ts; PostgreSQL's when the test server runs, CHRONOLOG_TEST_STORE=postgres):
// timers, occurrences, the timer controls and time's retention, action calls, processor cursors,
// documents and plugins, each method as its interface in server/src/store/ promises it. Writes run
// in committer units, as the owner's do; reads outside them.
//
// @module-tag postgres

import { afterEach, describe, expect, it } from "vitest";
import { callStatements, finishedCallsDeleter } from "../server/src/store/calls.js";
import type { Tx } from "../server/src/store/committer.js";
import { claimReads } from "../server/src/store/claim-reads.js";
import { cursorStatements } from "../server/src/store/cursors.js";
import { documentReads, documentStatements } from "../server/src/store/documents.js";
import { occurrenceStatements, type NewOccurrence } from "../server/src/store/occurrences.js";
import { pluginStatements } from "../server/src/store/plugins.js";
import { timerControlStatements } from "../server/src/store/timer-control.js";
import { retentionStatements } from "../server/src/store/timer-retention.js";
import { timerRowReads, timerStatements, type TimerPut } from "../server/src/store/timers.js";
import { defaultSchedulePolicy } from "../server/src/store/timer-records.js";
import { occurrenceId } from "../server/src/time/occurrence-ids.js";
import { closeTestStores, openTestStore, storeKinds, type StoreKind, type TestStore } from "./helpers/stores.js";

afterEach(closeTestStores);

/** A store and `write`, which runs `work` in a committer unit of its own and resolves with its result once committed. */
async function opened(kind: StoreKind): Promise<TestStore & { write<T>(work: (tx: Tx) => T): Promise<T> }> {
  const t = await openTestStore(kind);
  const committer = t.committer();
  return Object.assign(t, { write: <T>(work: (tx: Tx) => T) => committer.submit(work) });
}

const control = (t: TestStore) => timerControlStatements(t.store.db);

const delay = (id: string, nextDueMs: number | null): TimerPut => ({
  id,
  kind: "delay",
  action: "p.a",
  input: {},
  spec: { kind: "at", atMs: nextDueMs ?? 0 },
  nextDueMs,
  actor: null,
  plugin: "",
  schedule: "",
  overdue: { kind: "unbounded" },
  chainDepth: 0,
  region: 0,
  disabled: false,
  retryDelaysMs: [],
  policy: defaultSchedulePolicy,
  paused: null,
});

const occurrence = (id: string, dueMs: number, status: NewOccurrence["status"] = "pending", timerId = "t1"): NewOccurrence => ({
  id,
  timerId,
  dueMs,
  action: "p.a",
  input: { n: 1 },
  actor: { id: "u", for: "", in: "space:a", via: "" },
  overdue: { kind: "max", maxLatenessMs: 5_000 },
  retryDelaysMs: [1_000],
  status,
  latenessMs: status === "skipped" ? 7 : null,
  error: status === "skipped" ? "late" : "",
});

describe.each(storeKinds)("timers on %s (TimerStatements)", (kind) => {
  it("sets a timer and reads back every field; setting it again replaces all but its occurrence count and pause; removes it", async () => {
    const t = await opened(kind);
    const timers = timerStatements(t.store.db);
    const weekly: TimerPut = {
      ...delay("weekly", 1_800_000_000_000),
      kind: "runtime",
      spec: { kind: "cron", expression: "0 9 * * 1", zone: "Europe/Berlin", dst: { gap: "skip", repeated: "both" } },
      actor: { id: "u-1", for: "team-a", in: "tenant-9", via: "web" },
      plugin: "p",
      schedule: "s",
      overdue: { kind: "max", maxLatenessMs: 60_000 },
      chainDepth: 3,
      region: 2,
      retryDelaysMs: [1_000, 5_000, 25_000],
      policy: { ...defaultSchedulePolicy, overlap: "skip", maxCount: 7, jitterMs: 250 },
      input: { nested: { list: [1, "two", null] } },
    };
    expect(timers.get("weekly")).toBeUndefined();
    await t.write(() => timers.put(weekly, 123));
    const expected = { ...weekly, occurrences: 0, createdAt: 123, updatedAt: 123 };
    expect(timers.get("weekly")).toEqual(expected);
    expect(timers.due(1_800_000_000_000, 10)).toEqual([expected]);
    expect(timers.list(null, "", 10)).toEqual([expected]);
    await t.write(() => timers.advance("weekly", 1_800_000_600_000, 1, 200));
    const paused = { note: "hold", atMs: 300, heldDueMs: 1_800_000_600_000 };
    await t.write(() => control(t).setPaused("weekly", paused, null, 300));
    await t.write(() => timers.put({ ...weekly, action: "p.b", input: {}, overdue: { kind: "onTimeOrNever" }, disabled: true, nextDueMs: null }, 400));
    expect(timers.get("weekly")).toEqual({
      ...weekly,
      action: "p.b",
      input: {},
      overdue: { kind: "onTimeOrNever" },
      disabled: true,
      nextDueMs: null,
      occurrences: 1,
      paused,
      createdAt: 400,
      updatedAt: 400,
    });
    await t.write(() => timers.advance("missing", 1, 1, 500)); // nothing to move
    expect(await t.write(() => [timers.remove("weekly"), timers.remove("weekly")])).toEqual([true, false]);
    expect(timers.get("weekly")).toBeUndefined();
  });

  it("reads timer ids ahead for a batch (readAhead): a unit finds the timers that exist and those put in the batch, whether the batch read them or took them to be absent", async () => {
    const t = await opened(kind);
    const timers = timerStatements(t.store.db);
    const committer = t.committer();
    await t.write((tx) => timers.put(delay("there", 1_000), tx.now));
    for (const pure of [false, true]) {
      // A unit puts `new-${pure}` after another looked it up in the same batch; a third looks it up again.
      const readAhead = { from: timers, keys: ["there", `new-${pure}`, "never"] };
      const seen = await Promise.all([
        committer.submit(() => ["there", `new-${pure}`, "never"].map((id) => timers.get(id)?.id ?? "-"), { readAhead, pure }),
        committer.submit((tx) => timers.put(delay(`new-${pure}`, 2_000), tx.now), { readAhead, pure }),
        committer.submit(() => ["there", `new-${pure}`, "never"].map((id) => timers.get(id)?.id ?? "-"), { readAhead, pure }),
      ]);
      expect([seen[0], seen[2]], `pure: ${pure}`).toEqual([
        ["there", "-", "-"],
        ["there", `new-${pure}`, "-"],
      ]);
    }
  });

  it("runs a batch again reading its timer ids when one it took to be absent exists, also when the batch ran in several slices", async () => {
    const t = await opened(kind);
    const timers = timerStatements(t.store.db);
    const committer = t.committer();
    await t.write((tx) => timers.put(delay("there", 1_000), tx.now));
    const readAhead = { from: timers, keys: ["there"] };
    const busy = (ms: number) => {
      const until = performance.now() + ms;
      while (performance.now() < until);
    };
    // The first unit outlasts a slice, so the batch's first slice ends (and is sent) before the rest run.
    const seen = await Promise.all([
      committer.submit(() => (busy(10), timers.get("there")?.id ?? "-"), { readAhead, pure: true }),
      committer.submit((tx) => timers.put(delay("later", 2_000), tx.now), { readAhead, pure: true }),
      committer.submit(() => timers.get("there")?.id ?? "-", { readAhead, pure: true }),
    ]);
    expect(seen[0]).toBe("there");
    expect(seen[2]).toBe("there");
    expect(timers.get("later")?.id).toBe("later");
  });

  it("reads a claim's due timers and retries (with their timers' chain depths) ahead of its batch (PostgreSQL), telling which next due moment was claimed before by the occurrence id the clock derives, and the occurrences still running or buffered of a timer whose overlap policy needs them", async () => {
    const t = await opened(kind);
    const reads = claimReads(t.store.db);
    if (kind === "sqlite") return expect(reads).toBeUndefined(); // reads are not round trips there: the claim reads as it goes
    const timers = timerStatements(t.store.db);
    const occurrences = occurrenceStatements(t.store.db);
    await t.write((tx) => {
      for (const [id, due] of [
        ["fresh", 1_000],
        ["again", 1_500],
        ["later", 9_000],
      ] as const)
        timers.put(delay(id, due), tx.now);
      timers.put({ ...delay("cancellable", 1_200), cancelOn: [{ type: "order.paid", match: {} }] }, tx.now);
      occurrences.insert(occurrence(occurrenceId("again", 1_500), 1_500, "pending", "again"), tx.now); // claimed before: the timer was set again for the same moment
      occurrences.insert({ ...occurrence("r1", 500, "retry_wait"), nextAttemptMs: 1_100 }, tx.now); // its timer gone
      timers.put({ ...delay("deep", 9_500), chainDepth: 3 }, tx.now);
      occurrences.insert({ ...occurrence("r2", 600, "retry_wait", "deep"), nextAttemptMs: 1_050 }, tx.now);
      // Overlap policies: one running (pending), one buffered, one ended; the same under "allow" is not counted.
      timers.put({ ...delay("buffering", 1_700), policy: { ...defaultSchedulePolicy, overlap: "bufferOne" } }, tx.now);
      timers.put({ ...delay("skipping", 1_800), policy: { ...defaultSchedulePolicy, overlap: "skip" } }, tx.now);
      occurrences.insert(occurrence("b-run", 100, "pending", "buffering"), tx.now);
      occurrences.insert(occurrence("b-held", 200, "buffered", "buffering"), tx.now);
      occurrences.insert(occurrence("b-done", 50, "skipped", "buffering"), tx.now);
      occurrences.insert({ ...occurrence("s-wait", 100, "retry_wait", "skipping"), nextAttemptMs: 5_000 }, tx.now);
      occurrences.insert(occurrence("f-run", 100, "pending", "fresh"), tx.now);
    });
    const read = await reads!.read(2_000, 1_100, 10, 10);
    expect(read.timers.map(({ timer, claimedBefore, active }) => [timer.id, timer.nextDueMs, claimedBefore, active])).toEqual([
      ["fresh", 1_000, false, { running: 0, buffered: 0 }], // "allow": not counted
      ["again", 1_500, true, { running: 0, buffered: 0 }],
      ["buffering", 1_700, false, { running: 1, buffered: 1 }],
      ["skipping", 1_800, false, { running: 1, buffered: 0 }],
    ]);
    expect(read.timers[0].timer).toEqual(timers.get("fresh"));
    expect(read.retries.map((o) => [o.id, o.chainDepth])).toEqual([
      ["r2", 3],
      ["r1", 0],
    ]); // with their timers' chain depths, which their calls carry
    expect(read.retries[0]).toMatchObject({ timerId: "deep", status: "retry_wait", nextAttemptMs: 1_050 });
    expect((await reads!.read(2_000, 2_000, 1, 0)).timers.map(({ timer }) => timer.id)).toEqual(["fresh"]);
    expect((await reads!.read(2_000, 2_000, 10, 0)).timers.map(({ timer }) => timer.id)).toEqual(["fresh", "cancellable", "again", "buffering", "skipping"]);
    expect((await reads!.read(2_000, 2_000, 10, 0)).retries).toEqual([]);
  });

  it("tells what is due, earliest first (then by id), how many, the earliest due moment, how many are pending, and the declared schedules by plugin and name", async () => {
    const t = await opened(kind);
    const timers = timerStatements(t.store.db);
    expect([timers.earliestDue(), timers.pendingCount(), timers.due(1e15, 10), timers.dueCount(1e15, 10), timers.declared()]).toEqual([null, 0, [], 0, []]);
    await t.write(() => {
      for (const [id, due] of [
        ["c", 30],
        ["b", 20],
        ["a", 20],
        ["d", 40],
        ["spent", null],
      ] as const)
        timers.put(delay(id, due), 1);
      timers.put({ ...delay("z-decl", 50), kind: "declared", plugin: "alpha", schedule: "nightly" }, 1);
      timers.put({ ...delay("y-decl", null), kind: "declared", plugin: "alpha", schedule: "hourly", disabled: true }, 1);
      timers.put({ ...delay("x-decl", 60), kind: "declared", plugin: "beta", schedule: "a" }, 1);
    });
    expect(timers.due(30, 10).map((x) => x.id)).toEqual(["a", "b", "c"]);
    expect(timers.due(30, 2).map((x) => x.id)).toEqual(["a", "b"]);
    expect(timers.due(19, 10)).toEqual([]);
    expect([timers.dueCount(30, 10), timers.dueCount(30, 2), timers.dueCount(1_000, 100)]).toEqual([3, 2, 6]);
    expect([timers.earliestDue(), timers.pendingCount()]).toEqual([20, 6]);
    expect(timers.declared().map((x) => [x.plugin, x.schedule])).toEqual([
      ["alpha", "hourly"],
      ["alpha", "nightly"],
      ["beta", "a"],
    ]);
    await t.write(() => timers.advance("a", null, 1, 2));
    expect([timers.earliestDue(), timers.pendingCount(), timers.get("a")?.occurrences]).toEqual([20, 5, 1]);
  });

  it("lists a page at a time: timers with a next due moment by (due, id), then the others by (last change, id), of one kind or all", async () => {
    const t = await opened(kind);
    const timers = timerStatements(t.store.db);
    await t.write(() => {
      timers.put(delay("d2", 20), 1);
      timers.put({ ...delay("r1", 10), kind: "runtime" }, 1);
      timers.put(delay("d1", 20), 1);
      timers.put(delay("spent-late", null), 9);
      timers.put({ ...delay("spent-early", null), kind: "runtime" }, 5);
    });
    const ids = (page: { id: string }[]) => page.map((x) => x.id);
    const first = timers.list(null, "", 2);
    expect(ids(first)).toEqual(["r1", "d1"]);
    const second = timers.list({ dueMs: 20, id: "d1" }, "", 2);
    expect(ids(second)).toEqual(["d2", "spent-early"]);
    expect(ids(timers.list({ dueMs: null, id: "spent-early", updatedAt: 5 }, "", 2))).toEqual(["spent-late"]);
    expect(ids(timers.list({ dueMs: null, id: "spent-late", updatedAt: 9 }, "", 2))).toEqual([]);
    expect(ids(timers.list(null, "delay", 10))).toEqual(["d1", "d2", "spent-late"]);
    expect(ids(timers.list(null, "runtime", 10))).toEqual(["r1", "spent-early"]);
    // The RPCs' and /metrics' reads read the same, on PostgreSQL without a round trip the thread waits for.
    const reads = timerRowReads(t.store.db, timers);
    const waited = () => (t.store.waits?.() ?? []).reduce((n, w) => n + w.count, 0);
    const before = waited();
    const pages = await Promise.all([
      reads.list(null, "", 2),
      reads.list({ dueMs: 20, id: "d1" }, "", 2),
      reads.list({ dueMs: null, id: "spent-early", updatedAt: 5 }, "", 2),
      reads.list(null, "delay", 10),
    ]);
    const one = await Promise.all([reads.get("d1"), reads.get("absent"), reads.pendingCount(), reads.dueCount(15, 10), reads.earliestDue()]);
    expect(waited()).toBe(before);
    expect(pages).toEqual([first, second, timers.list({ dueMs: null, id: "spent-early", updatedAt: 5 }, "", 2), timers.list(null, "delay", 10)]);
    expect(one).toEqual([timers.get("d1"), undefined, 3, 1, 10]);
  });
});

describe.each(storeKinds)("occurrences and the timer controls on %s (OccurrenceStatements, TimerControlStatements)", (kind) => {
  it("records an occurrence once (alone or many at once), and moves it pending → retry_wait → pending → completed, each change only from the state it leaves", async () => {
    const t = await opened(kind);
    const occurrences = occurrenceStatements(t.store.db);
    expect([occurrences.pending(), occurrences.earliestRetry(), occurrences.dueRetries(1e15, 10)]).toEqual([[], null, []]);
    expect(
      await t.write(() => [
        occurrences.insert(occurrence("o2", 200), 1),
        occurrences.insert(occurrence("o1", 100), 1),
        occurrences.insert(occurrence("o1", 999), 2),
      ]),
    ).toEqual([true, true, false]);
    expect(occurrences.pending()).toEqual([
      { ...occurrence("o1", 100), nextAttemptMs: null, attempts: 0, callId: "o1", origin: "schedule" },
      expect.objectContaining({ id: "o2", dueMs: 200 }),
    ]);
    await t.write(() => (occurrences.finish("o1", "retry_wait", 12, "boom", 1_100, 3), occurrences.finish("o1", "completed", 0, "", null, 3))); // the second finds it waiting: nothing
    expect(occurrences.earliestRetry()).toBe(1_100);
    expect(await timerRowReads(t.store.db, timerStatements(t.store.db), occurrences).earliestDue()).toBe(1_100); // the clock's target: no timer is pending here
    expect(occurrences.dueRetries(1_099, 10)).toEqual([]);
    expect(occurrences.dueRetries(1_100, 10)).toEqual([
      expect.objectContaining({ id: "o1", status: "retry_wait", attempts: 1, latenessMs: 12, error: "boom", nextAttemptMs: 1_100 }),
    ]);
    expect(await t.write(() => [occurrences.resume("o1", 4), occurrences.resume("o1", 4), occurrences.skip("missing", 1, "late", 4)])).toEqual([
      true,
      false,
      false,
    ]);
    await t.write(() => occurrences.finish("o1", "completed", 99, "", null, 5));
    expect(occurrences.pending().map((o) => o.id)).toEqual(["o2"]);
    expect(t.query("SELECT status, attempts, lateness_ms, next_attempt_ms FROM timer_occurrences WHERE id = 'o1'")).toEqual([
      { status: "completed", attempts: 2, lateness_ms: 12, next_attempt_ms: null },
    ]); // the first call's lateness
    expect(await t.write(() => [occurrences.skip("o2", 7, "too late", 6), occurrences.skip("o2", 7, "too late", 6)])).toEqual([true, false]);
    expect(occurrences.pending()).toEqual([]);
    const written = await t.write(() => occurrences.insertMany([occurrence("m1", 300), occurrence("o2", 300), occurrence("m2", 301)], 7));
    expect([...written].sort()).toEqual(["m1", "m2"]); // o2 was there
    expect(occurrences.pending().map((o) => [o.id, o.dueMs])).toEqual([
      ["m1", 300],
      ["m2", 301],
    ]);
    expect(await t.write(() => occurrences.insertMany([], 8))).toEqual(new Set());
  });

  it("retries come due by their moment, then id, up to the limit", async () => {
    const t = await opened(kind);
    const occurrences = occurrenceStatements(t.store.db);
    await t.write(() => {
      for (const [id, at] of [
        ["r3", 30],
        ["r2", 10],
        ["r1", 10],
      ] as const)
        occurrences.insert({ ...occurrence(id, 1), status: "retry_wait", nextAttemptMs: at }, 1);
    });
    expect(occurrences.dueRetries(30, 10).map((o) => o.id)).toEqual(["r1", "r2", "r3"]);
    expect(occurrences.dueRetries(30, 2).map((o) => o.id)).toEqual(["r1", "r2"]);
    expect(occurrences.earliestRetry()).toBe(10);
  });

  it("pauses and resumes a timer; queues a triggered or backfilled occurrence once, a backfill answering which it made; counts the active ones; releases a buffered one only when none runs", async () => {
    const t = await opened(kind);
    const timers = timerStatements(t.store.db);
    const controls = control(t);
    const occurrences = occurrenceStatements(t.store.db);
    await t.write(() => timers.put(delay("t1", 500), 1));
    await t.write(() => controls.setPaused("t1", { note: "", atMs: 2, heldDueMs: 500 }, null, 2));
    expect(timers.get("t1")).toMatchObject({ paused: { note: "", atMs: 2, heldDueMs: 500 }, nextDueMs: null, updatedAt: 2 });
    await t.write(() => controls.setPaused("t1", null, 600, 3));
    expect(timers.get("t1")).toMatchObject({ paused: null, nextDueMs: 600 });

    expect(controls.activeOf("t1")).toEqual({ running: 0, buffered: 0 });
    const { status: _status, latenessMs: _lateness, error: _error, ...queued } = occurrence("q1", 400);
    const { status: _s2, latenessMs: _l2, error: _e2, ...moment } = occurrence("q2", 420);
    await t.write(() => controls.queueTriggered(queued, 450));
    expect(await t.write(() => controls.queueBackfilled([queued, moment], 4))).toEqual(new Set(["q2"])); // q1 was made before
    expect(occurrences.dueRetries(450, 10)).toEqual([
      expect.objectContaining({ id: "q2", status: "retry_wait", attempts: 0, nextAttemptMs: 420, origin: "backfill" }),
      expect.objectContaining({ id: "q1", status: "retry_wait", attempts: 0, nextAttemptMs: 450, origin: "trigger" }),
    ]);
    await t.write(() => (occurrences.resume("q2", 4), occurrences.finish("q2", "completed", 0, "", null, 4)));
    await t.write(() => occurrences.insert(occurrence("b1", 700, "buffered"), 5));
    expect(controls.activeOf("t1")).toEqual({ running: 1, buffered: 1 });
    await t.write(() => controls.releaseBuffered("t1", 650)); // q1 still waits for its try: nothing
    expect(controls.activeOf("t1")).toEqual({ running: 1, buffered: 1 });
    await t.write(() => (occurrences.resume("q1", 6), occurrences.finish("q1", "completed", 0, "", null, 6)));
    expect(controls.activeOf("t1")).toEqual({ running: 0, buffered: 1 });
    expect(controls.bufferingTimers()).toEqual(["t1"]);
    await t.write(() => controls.releaseBuffered("t1", 650));
    expect(occurrences.dueRetries(1_000, 10)).toEqual([expect.objectContaining({ id: "b1", status: "retry_wait", nextAttemptMs: 700 })]); // never before its own moment
    expect(controls.activeOf("t1")).toEqual({ running: 1, buffered: 0 });
    expect(controls.bufferingTimers()).toEqual([]);
    expect(controls.activeOf("nope")).toEqual({ running: 0, buffered: 0 });
  });

  it("backfills answering which occurrences it made from their ids read ahead of the batch (PostgreSQL), counting those an earlier unit of the batch wrote, and reading again after a sweep", async () => {
    const t = await opened(kind);
    const controls = control(t);
    const occurrences = occurrenceStatements(t.store.db);
    const sweep = retentionStatements(t.store.db);
    const committer = t.committer();
    const queued = (id: string, dueMs: number) => {
      const { status: _s, latenessMs: _l, error: _e, ...rest } = occurrence(id, dueMs);
      return rest;
    };
    await t.write(() => occurrences.insert(occurrence("o1", 100), 1)); // made before
    const readAhead = { from: controls.occurrenceIds, keys: ["o1", "o2", "o3"] };
    const [, made] = await Promise.all([
      committer.submit(() => occurrences.insertKnownNew([occurrence("o2", 200)], 2), { readAhead }), // a claim earlier in the batch
      committer.submit(() => controls.queueBackfilled([queued("o1", 100), queued("o2", 200), queued("o3", 300)], 3), { readAhead }),
    ]);
    expect(made).toEqual(new Set(["o3"]));
    expect(occurrences.dueRetries(1_000, 10).map((o) => o.id)).toEqual(["o3"]);
    await t.write(() => occurrences.finish("o1", "completed", 0, "", null, 4));
    const again = { from: controls.occurrenceIds, keys: ["o1", "o4"] };
    const [, , remade] = await Promise.all([
      committer.submit(() => occurrences.insertKnownNew([occurrence("o4", 400)], 5), { readAhead: again }),
      committer.submit(() => sweep.deleteEndedOccurrences(10, 10), { readAhead: again }), // o1 goes: what was read is forgotten
      committer.submit(() => controls.queueBackfilled([queued("o1", 100), queued("o4", 400)], 6), { readAhead: again }),
    ]);
    expect(remade).toEqual(new Set(["o1"]));
  });

  it("time's retention deletes ended occurrences and spent timers older than the cutoff, oldest first, up to the limit, and nothing still active", async () => {
    const t = await opened(kind);
    const timers = timerStatements(t.store.db);
    const occurrences = occurrenceStatements(t.store.db);
    const retention = retentionStatements(t.store.db);
    await t.write(() => {
      occurrences.insert(occurrence("ended-old", 1, "skipped", "kept-by-active"), 10);
      occurrences.insert(occurrence("ended-older", 1, "skipped", "spent-1"), 5);
      occurrences.insert(occurrence("ended-new", 1, "skipped", "spent-1"), 50);
      occurrences.insert(occurrence("active-old", 2, "pending", "kept-by-active"), 5);
      timers.put(delay("spent-1", null), 5);
      timers.put(delay("spent-2", null), 6);
      timers.put(delay("kept-by-active", null), 4);
      timers.put(delay("pending", 100), 4);
      timers.put({ ...delay("disabled", null), disabled: true }, 4);
      timers.put({ ...delay("declared", null), kind: "declared" }, 4);
    });
    await t.write(() => control(t).setPaused("pending", { note: "", atMs: 4, heldDueMs: 100 }, null, 4));
    expect(await t.write(() => retention.deleteEndedOccurrences(40, 1))).toBe(1);
    expect(await t.write(() => retention.deleteEndedOccurrences(40, 10))).toBe(1);
    expect(t.query("SELECT id FROM timer_occurrences ORDER BY id").map((r) => r.id)).toEqual(["active-old", "ended-new"]);
    expect(await t.write(() => retention.deleteSpentTimers(40, 1))).toBe(1);
    expect(timers.get("spent-1")).toBeUndefined();
    expect(await t.write(() => retention.deleteSpentTimers(40, 10))).toBe(1);
    expect(t.query("SELECT id FROM timers ORDER BY id").map((r) => r.id)).toEqual(["declared", "disabled", "kept-by-active", "pending"]);
  });
});

describe.each(storeKinds)("action calls and processor cursors on %s (CallStatements, CursorStatements)", (kind) => {
  it("starts a call once, runs it again at a higher attempt, completes or fails only the attempt it is at; the retention deletes finished calls only", async () => {
    const t = await opened(kind);
    const calls = callStatements(t.store.db);
    const call = { callId: "c1", action: "p.a", inputHash: "h", actor: { id: "u", for: "", in: "", via: "" }, recorded: false, attempt: 1 };
    expect(calls.get("c1")).toBeUndefined();
    await t.write(() => calls.insert(call, 10));
    expect(calls.get("c1")).toEqual({ ...call, state: "running", output: undefined, error: "", updatedAt: 10 });
    const c2 = { ...call, callId: "c2", actor: null, recorded: true };
    const taken = await Promise.allSettled([t.write(() => calls.insert(call, 11)), t.write(() => calls.insert(c2, 11))]);
    // The call id exists: on SQLite its unit fails, the other of the batch commits; on PostgreSQL
    // the insert is deferred and its failure fails the batch (callers look the id up first).
    expect(taken.map((r) => r.status)).toEqual(kind === "sqlite" ? ["rejected", "fulfilled"] : ["rejected", "rejected"]);
    if (kind === "postgres") await t.write(() => calls.insert(c2, 11));
    expect(calls.get("c1")).toMatchObject({ updatedAt: 10 });
    expect(calls.get("c2")).toMatchObject({ state: "running", actor: null, recorded: true });
    expect(await t.write(() => [calls.fail("c1", 1, "boom", 12), calls.complete("c1", 2, {}, 12)])).toEqual([true, false]);
    expect(calls.get("c1")).toMatchObject({ state: "failed", attempt: 1, error: "boom", updatedAt: 12 });
    await t.write(() => calls.startAgain({ ...call, attempt: 2, recorded: true }, 13));
    expect(calls.get("c1")).toMatchObject({ state: "running", attempt: 2, recorded: true, updatedAt: 13 });
    expect(await t.write(() => [calls.complete("c1", 1, { n: 1 }, 14), calls.complete("c1", 2, { n: 2 }, 14)])).toEqual([false, true]);
    expect(calls.get("c1")).toEqual({ ...call, recorded: true, attempt: 2, state: "completed", output: { n: 2 }, error: "", updatedAt: 14 });
    await t.write(() => calls.startAgain({ ...call, callId: "gone", attempt: 3 }, 15)); // its row deleted by the retention meanwhile
    expect(calls.get("gone")).toEqual({ ...call, callId: "gone", attempt: 3, state: "running", output: undefined, error: "", updatedAt: 15 });

    const deleteFinished = finishedCallsDeleter(t.store.db);
    await t.write(() => calls.insert({ ...call, callId: "c0" }, 1));
    await t.write(() => calls.fail("c0", 1, "old", 2));
    expect(await t.write(() => deleteFinished(14, 10))).toBe(1); // c0; c1 changed at 14 is not before it
    expect(await t.write(() => deleteFinished(100, 10))).toBe(1); // c1; c2 runs
    expect(t.query("SELECT call_id FROM action_calls ORDER BY call_id").map((r) => r.call_id)).toEqual(["c2", "gone"]);
  });

  it("saves a processor's ack floor and pause apart, and keeps its failed deliveries by seq", async () => {
    const t = await opened(kind);
    const cursors = cursorStatements(t.store.db);
    expect([cursors.get("p"), cursors.failed(), cursors.failedCount("p")]).toEqual([undefined, [], 0]);
    await t.write(() => cursors.save("p", 5, 1));
    expect(cursors.get("p")).toEqual({ processor: "p", ackFloor: 5, paused: false });
    await t.write(() => cursors.setPaused("p", true, 0, 2));
    await t.write(() => cursors.save("p", 7, 3));
    expect(cursors.get("p")).toEqual({ processor: "p", ackFloor: 7, paused: true });
    await t.write(() => cursors.setPaused("q", true, 3, 4));
    expect(cursors.get("q")).toEqual({ processor: "q", ackFloor: 3, paused: true });

    await t.write(() => {
      cursors.recordFailure({ processor: "p", seq: 9, error: "e9", attempts: 1, failedSeq: 20 });
      cursors.recordFailure({ processor: "p", seq: 4, error: "e4", attempts: 2, failedSeq: 21 });
      cursors.recordFailure({ processor: "a", seq: 6, error: "e6", attempts: 1, failedSeq: 22 });
    });
    await t.write(() => cursors.recordFailure({ processor: "p", seq: 9, error: "again", attempts: 3, failedSeq: 23 }));
    expect(cursors.failed("p")).toEqual([
      { processor: "p", seq: 4, error: "e4", attempts: 2, failedSeq: 21 },
      { processor: "p", seq: 9, error: "again", attempts: 3, failedSeq: 23 },
    ]);
    expect(cursors.failed().map((f) => [f.processor, f.seq])).toEqual([
      ["a", 6],
      ["p", 4],
      ["p", 9],
    ]);
    await t.write(() => (cursors.forgetFailure("p", 4), cursors.forgetFailure("p", 404)));
    expect([cursors.failedCount("p"), cursors.failedCount("a"), cursors.failedCount("none")]).toEqual([1, 1, 0]);
  });
});

describe.each(storeKinds)("documents and plugins on %s (DocumentStatements, PluginStatements)", (kind) => {
  it("keeps a collection's documents with their space, scans them in _id order, and remembers the writes applied", async () => {
    const t = await opened(kind);
    const documents = documentStatements(t.store.db);
    expect(documents.get("notes", "n1")).toBeUndefined();
    await t.write(() => {
      documents.insert("notes", { _id: "n2", text: "two" }, "space:a");
      documents.insert("notes", { _id: "n1", text: "one", tags: ["x"] }, "");
      documents.insert("other", { _id: "n1" }, "space:b");
    });
    await expect(t.write(() => documents.insert("notes", { _id: "n1" }, ""))).rejects.toThrow();
    expect(documents.get("notes", "n1")).toEqual({ doc: { _id: "n1", text: "one", tags: ["x"] }, space: "" });
    await t.write(() => documents.update("notes", { _id: "n2", text: "changed" }));
    await t.write(() => documents.update("notes", { _id: "absent" }));
    expect(documents.get("notes", "n2")).toEqual({ doc: { _id: "n2", text: "changed" }, space: "space:a" });
    expect([...documents.scan("notes")].map((d) => d.doc._id)).toEqual(["n1", "n2"]);
    const scan = documents.scan("notes");
    expect(scan.next().value).toMatchObject({ doc: { _id: "n1" } });
    scan.return(undefined);
    await t.write(() => (documents.remove("notes", "n1"), documents.remove("notes", "absent")));
    expect([...documents.scan("notes")].map((d) => d.doc._id)).toEqual(["n2"]);
    expect([...documents.scan("empty")]).toEqual([]);
    // The RPCs' reads read the same, on PostgreSQL without a round trip the thread waits for.
    const reads = documentReads(t.store.db, documents);
    const waited = () => (t.store.waits?.() ?? []).reduce((n, w) => n + w.count, 0);
    const before = waited();
    const scanned: unknown[] = [];
    for await (const d of reads.scan("notes")) scanned.push(d);
    const got = [await reads.get("notes", "n2"), await reads.get("notes", "n1"), scanned];
    expect(waited()).toBe(before);
    expect(got).toEqual([documents.get("notes", "n2"), undefined, [...documents.scan("notes")]]);

    expect(documents.applied("w1")).toBeUndefined();
    await t.write(() => documents.markApplied("w1", "notes", "n2", 100));
    expect(documents.applied("w1")).toBe("n2");
    await expect(t.write(() => documents.markApplied("w1", "notes", "n9", 101))).rejects.toThrow();
  });

  it("keeps each plugin's current revision and every revision registered", async () => {
    const t = await opened(kind);
    const plugins = pluginStatements(t.store.db);
    expect([plugins.all(), plugins.get("b")]).toEqual([[], undefined]);
    const b1 = { name: "b", revision: 1, manifest: '{"name":"b"}', registered_at: 10 };
    await t.write(() => (plugins.save(b1), plugins.save({ name: "a", revision: 1, manifest: "{}", registered_at: 11 })));
    await t.write(() => plugins.save({ ...b1, revision: 2, manifest: '{"name":"b","v":2}', registered_at: 12 }));
    expect(plugins.get("b")).toEqual({ name: "b", revision: 2, manifest: '{"name":"b","v":2}', registered_at: 12 });
    expect(plugins.all().map((p) => [p.name, p.revision])).toEqual([
      ["a", 1],
      ["b", 2],
    ]);
    await expect(t.write(() => plugins.save(b1))).rejects.toThrow(); // revision 1 is in its history
    expect(plugins.get("b")?.revision).toBe(2);
    expect(t.query("SELECT name, revision FROM plugin_revisions ORDER BY name, revision").map((r) => [r.name, Number(r.revision)])).toEqual([
      ["a", 1],
      ["b", 1],
      ["b", 2],
    ]);
  });
});
