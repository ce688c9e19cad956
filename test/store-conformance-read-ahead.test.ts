// What a batch's emits look up, read ahead of the batch, the same cases on SQLite and PostgreSQL
// (test/helpers/stores.ts; PostgreSQL's when the test server runs, CHRONOLOG_TEST_STORE=postgres):
// the last positions of the streams they append to (StreamStatements, through log/streams.ts, whose
// expected versions keep their meaning) and the timers waiting on their cancel keys
// (TimerCancelStatements) with those timers' rows, the timers a unit names by id (TimerStatements:
// a pause, a cancel), where a retried emit's event is in its stream, and the documents a write
// writes (DocumentStatements). On PostgreSQL a batch whose keys were read ahead waits for no round trip;
// what a unit of the batch changed is seen by the units after it, and what a unit that failed
// changed is not.
//
// @module-tag postgres

import { afterEach, describe, expect, it } from "vitest";
import { ChronologError } from "../server/src/errors.js";
import { Streams, type ExpectedVersion } from "../server/src/log/streams.js";
import type { Committer, Tx } from "../server/src/store/committer.js";
import { documentStatements } from "../server/src/store/documents.js";
import { streamStatements } from "../server/src/store/streams.js";
import { cancelKeyText, timerCancelStatements, type CancelKey } from "../server/src/store/timer-cancels.js";
import { timerControlStatements } from "../server/src/store/timer-control.js";
import type { TimerKind } from "../server/src/store/timer-records.js";
import { retentionStatements } from "../server/src/store/timer-retention.js";
import { timerStatements, type TimerPut } from "../server/src/store/timers.js";
import { CancelOn } from "../server/src/time/cancel-on.js";
import { blankTimer } from "../server/src/time/timers.js";
import { closeTestStores, openTestStore, storeKinds, testEvent as event, type TestStore } from "./helpers/stores.js";

afterEach(closeTestStores);

/** Round trips the owner's thread has waited for on `t`'s store so far (none on SQLite: its reads are not round trips). */
const waited = (t: TestStore) => (t.store.waits?.() ?? []).reduce((n, w) => n + w.count, 0);

const any: ExpectedVersion = { kind: "any" };
const noStream: ExpectedVersion = { kind: "noStream" };
const at = (position: number): ExpectedVersion => ({ kind: "position", position });

/** Runs `work`, answering the code of a ChronologError it throws instead of throwing. */
function outcome<T>(work: () => T): T | string {
  try {
    return work();
  } catch (error) {
    if (error instanceof ChronologError) return error.kind;
    throw error;
  }
}

describe.each(storeKinds)("streams read ahead of a batch on %s (StreamStatements)", (kind) => {
  /** A unit appending an event to `stream` (of no space) expecting `expected`, as an emit does: the position it took. */
  const appendTo = (streams: Streams, tx: Tx, id: string, stream: string, expected: ExpectedVersion) => {
    const position = streams.next("", stream, expected, "expected_version");
    const seq = tx.append(event(id)).seq;
    streams.record("", stream, position, seq);
    return position;
  };

  it("keeps the expected versions' meaning inside one batch: appends of earlier units count, a refused or undone unit's do not; no round trip waited for", async () => {
    const t = await openTestStore(kind);
    const statements = streamStatements(t.store.db);
    const streams = new Streams(statements);
    const committer = t.committer();
    await committer.submit((tx) => appendTo(streams, tx, "o-0", "order-1", noStream));
    const readAhead = streams.readAheadOf(["order-1", "order-2", "order-3"].map((stream) => ({ space: "", stream })));
    const unit = (work: (tx: Tx) => unknown) => committer.submit((tx) => outcome(() => work(tx)), { readAhead, pure: true });
    const before = waited(t);
    const results = await Promise.all([
      unit((tx) => appendTo(streams, tx, "o-1", "order-1", at(0))),
      unit((tx) => appendTo(streams, tx, "o-1-late", "order-1", at(0))), // the same expected version: the first one took it
      unit((tx) => appendTo(streams, tx, "o-2", "order-1", at(1))),
      unit((tx) => appendTo(streams, tx, "p-0", "order-2", noStream)),
      unit((tx) => appendTo(streams, tx, "p-0-again", "order-2", noStream)),
      committer
        .submit(
          (tx) => {
            appendTo(streams, tx, "q-undone", "order-3", noStream);
            throw new Error("the unit fails after its append");
          },
          { readAhead, pure: true },
        )
        .catch((e: Error) => e.message),
      unit((tx) => appendTo(streams, tx, "q-0", "order-3", noStream)), // the undone append gave its position back
      unit((tx) => appendTo(streams, tx, "q-1", "order-3", any)),
    ]);
    expect(results).toEqual([1, "wrong_expected_version", 2, 0, "wrong_expected_version", "the unit fails after its append", 0, 1]);
    expect(waited(t)).toBe(before);
    const rows = t.query("SELECT s.stream, s.position, e.id FROM event_streams s JOIN events e ON e.seq = s.seq ORDER BY s.stream, s.position");
    expect(rows.map((r) => `${r.stream}@${r.position}:${r.id}`)).toEqual([
      "order-1@0:o-0",
      "order-1@1:o-1",
      "order-1@2:o-2",
      "order-2@0:p-0",
      "order-3@0:q-0",
      "order-3@1:q-1",
    ]);
    // Next batch: read ahead again, from what was committed.
    expect(await unit((tx) => appendTo(streams, tx, "o-3", "order-1", at(2)))).toBe(3);
    expect(await unit((tx) => appendTo(streams, tx, "o-x", "order-1", at(2)))).toBe("wrong_expected_version");
    expect(waited(t)).toBe(before);
  });

  it("a stream not read ahead is read in its unit, and still sees the batch's earlier appends; a batch run again reads ahead again", async () => {
    const t = await openTestStore(kind);
    const streams = new Streams(streamStatements(t.store.db));
    const committer = t.committer();
    await committer.submit((tx) => appendTo(streams, tx, "a-0", "account", noStream));
    const results = await Promise.all([
      committer.submit((tx) => appendTo(streams, tx, "a-1", "account", at(0))),
      committer.submit((tx) => outcome(() => appendTo(streams, tx, "a-late", "account", at(0)))),
      committer.submit((tx) => appendTo(streams, tx, "a-2", "account", at(1)), { readAhead: streams.readAheadOf([{ space: "", stream: "other" }]) }),
    ]);
    expect(results).toEqual([1, "wrong_expected_version", 2]);
    // Units taking their ids to be new (pure) whose id is in the log: the batch runs again, reading first.
    const readAhead = streams.readAheadOf([{ space: "", stream: "account" }]);
    const again = await Promise.all([
      committer.submit((tx) => (tx.events.findById("a-0") ? "found" : appendTo(streams, tx, "a-0", "account", at(2))), {
        readAhead,
        pure: true,
        lookups: ["a-0"],
      }),
      committer.submit((tx) => appendTo(streams, tx, "a-3", "account", at(2)), { readAhead, pure: true }),
    ]);
    expect(again).toEqual(["found", 3]);
    // Alone, refused by what it took to be absent, and writing nothing: the batch still runs again, reading.
    const retried = await committer.submit((tx) => (tx.events.findById("a-1") ? "found" : outcome(() => appendTo(streams, tx, "a-1", "account", noStream))), {
      readAhead,
      pure: true,
      lookups: ["a-1"],
    });
    expect(retried).toBe("found");
  });
});

describe.each(storeKinds)("the cancel index read ahead of a batch on %s (TimerCancelStatements)", (kind) => {
  const paid = (order: string): CancelKey => ({ eventType: "order.paid", matchKey: JSON.stringify({ "data.order": order }) });

  it("a unit finds the timers waiting on its keys without a round trip, those a unit of the batch added too, not those of an undone unit", async () => {
    const t = await openTestStore(kind);
    const cancels = timerCancelStatements(t.store.db);
    expect(cancels.readsAhead).toBe(kind === "postgres");
    const committer: Committer = t.committer();
    await committer.submit(() => {
      cancels.setKeys("t-1", [paid("o-1")], false);
      cancels.setKeys("t-2", [paid("o-1")], false);
      cancels.timersOn(paid("o-0")); // its statement prepared on the writer (once: not counted below)
    });
    const readAhead = { from: cancels, keys: ["o-1", "o-2", "o-3", "o-4"].map((order) => cancelKeyText(paid(order))) };
    const before = waited(t);
    const first = await Promise.all([
      committer.submit(() => cancels.timersOn(paid("o-1")), { readAhead }),
      committer.submit(() => cancels.timersOn(paid("o-2")), { readAhead }),
      committer.submit(() => cancels.timersOn(paid("o-2")), { readAhead }),
    ]);
    expect(first).toEqual([["t-1", "t-2"], [], []]);
    expect(waited(t)).toBe(before);
    const second = await Promise.all([
      committer.submit(() => cancels.timersOn(paid("o-3")), { readAhead }),
      committer.submit(() => cancels.setKeys("t-3", [paid("o-3")], false), { readAhead }),
      committer.submit(() => cancels.timersOn(paid("o-3")), { readAhead }), // added in this batch: read again
      committer
        .submit(
          () => {
            cancels.setKeys("t-4", [paid("o-4")], false);
            throw new Error("undone");
          },
          { readAhead },
        )
        .catch((e: Error) => e.message),
      committer.submit(() => cancels.timersOn(paid("o-4")), { readAhead }),
      committer.submit(() => cancels.timersOn(paid("o-1")), { readAhead }),
    ]);
    expect(second).toEqual([[], undefined, ["t-3"], "undone", [], ["t-1", "t-2"]]);
    // The key a unit of the batch added is kept with it, the one a failed unit added given back: nothing read in the units.
    expect(waited(t)).toBe(before);
    expect(t.query("SELECT timer_id FROM timer_cancels ORDER BY timer_id").map((r) => r.timer_id)).toEqual(["t-1", "t-2", "t-3"]);
  });
});

describe.each(storeKinds)("documents read ahead of a batch on %s (DocumentStatements)", (kind) => {
  it("a unit finds the documents read ahead and those earlier units wrote, not an undone unit's; their writes wait for no round trip", async () => {
    const t = await openTestStore(kind);
    const documents = documentStatements(t.store.db);
    expect(documents.readAheadOf === undefined).toBe(kind === "sqlite");
    const committer = t.committer();
    await committer.submit(() => {
      // Each statement prepared on the writer once (not counted below).
      documents.insert("notes", { _id: "n1", v: 1 }, "space:a");
      documents.update("notes", { _id: "n1", v: 1 });
      documents.remove("notes", "none");
    });
    const keys = ["n1", "n2", "n3"].flatMap((id) => documents.readAheadOf?.("notes", id).keys ?? []);
    const readAhead = documents.readAheadOf && { from: documents.readAheadOf("notes", "n1").from, keys };
    const unit = <T>(work: () => T) => committer.submit(work, readAhead ? { readAhead } : {});
    const doc = (id: string) => documents.get("notes", id) ?? "none";
    const before = waited(t);
    const seen = await Promise.all([
      unit(() => doc("n1")),
      unit(() => documents.update("notes", { _id: "n1", v: 2 })),
      unit(() => doc("n1")),
      unit(() => (documents.insert("notes", { _id: "n2", v: 1 }, "space:b"), doc("n2"))),
      unit(() => documents.remove("notes", "n1")),
      unit(() => doc("n1")),
      unit(() => {
        documents.insert("notes", { _id: "n3", v: 1 }, "");
        throw new Error("undone");
      }).catch((e: Error) => e.message),
      unit(() => doc("n3")),
    ]);
    expect(seen).toEqual([
      { doc: { _id: "n1", v: 1 }, space: "space:a" },
      undefined,
      { doc: { _id: "n1", v: 2 }, space: "space:a" },
      { doc: { _id: "n2", v: 1 }, space: "space:b" },
      undefined,
      "none",
      "undone",
      "none",
    ]);
    expect(waited(t)).toBe(before);
    expect(t.query("SELECT id, doc, space FROM documents ORDER BY id")).toEqual([{ id: "n2", doc: JSON.stringify({ _id: "n2", v: 1 }), space: "space:b" }]);
    // A document not read ahead is read in its unit; an insert of an id not known absent still refuses a taken id.
    await expect(committer.submit(() => documents.insert("notes", { _id: "n2", v: 9 }, ""))).rejects.toThrow();
    expect(await committer.submit(() => doc("n2"))).toEqual({ doc: { _id: "n2", v: 1 }, space: "space:b" });
  });
});

describe.each(storeKinds)("a batch's reads ahead on %s", (kind) => {
  it("streams, cancel keys and documents of one batch are read in one round trip where reads are round trips", async () => {
    const t = await openTestStore(kind);
    const db = t.store.db;
    const streams = new Streams(streamStatements(db));
    const cancels = timerCancelStatements(db);
    const documents = documentStatements(db);
    const committer = t.committer();
    const sent: number[] = [];
    const readAheadAll = db.readAheadAll?.bind(db);
    if (readAheadAll) db.readAheadAll = (reads) => (sent.push(reads.length), readAheadAll(reads));
    const key = { eventType: "order.paid", matchKey: "{}" };
    const seen = await Promise.all([
      committer.submit((tx) => [streams.next("", "s", noStream, "expected_version"), tx.append(event("e1")).seq], {
        readAhead: streams.readAheadOf([{ space: "", stream: "s" }]),
      }),
      committer.submit(() => cancels.timersOn(key), cancels.readsAhead ? { readAhead: { from: cancels, keys: [cancelKeyText(key)] } } : {}),
      committer.submit(() => documents.get("notes", "n1") ?? "none", documents.readAheadOf ? { readAhead: documents.readAheadOf("notes", "n1") } : {}),
    ]);
    expect(seen).toEqual([[0, 1], [], "none"]);
    expect(sent).toEqual(kind === "postgres" ? [3] : []);
  });
});

describe.each(storeKinds)("timers' rows read ahead of a batch on %s (TimerStatements, TimerCancelStatements)", (kind) => {
  const at = Date.UTC(2026, 0, 2);
  /** A pending delay of `order` (kind `delay`) or a declared schedule (`declared`) that events `type` with its order cancel. */
  const timer = (id: string, order: string, timerKind: TimerKind = "delay", type = "order.paid", path = "data.order"): TimerPut => ({
    ...blankTimer(id, timerKind, at, 0),
    action: "shop.remind",
    input: { order },
    nextDueMs: at,
    cancelOn: [{ type, match: { [path]: "input.order" } }],
  });
  /** Time's cancel on an event over `t`'s store, wired as the owner wires it (time/index.ts). */
  const wired = (t: TestStore) => {
    const db = t.store.db;
    const timers = timerStatements(db);
    const cancels = timerCancelStatements(db);
    const control = timerControlStatements(db);
    const cancelOn = new CancelOn(cancels, timers, control);
    const committer = t.committer();
    committer.afterAppend((tx, e) => cancelOn.cancelFor(tx, e));
    if (cancels.readsAhead) committer.readAheadOfAppends((events) => cancelOn.readAheadOf(events));
    const emit = (id: string, type: string, data: Record<string, unknown>, also?: (tx: Tx) => void) => {
      const e = { id, type, data, cause: "", actor: null };
      return committer.submit(
        (tx) => {
          tx.append(e);
          also?.(tx);
        },
        { appends: [e] },
      );
    };
    return { timers, indexed: cancelOn.indexing(timers), control, committer, emit };
  };
  /** The events after `seq`: type, the timer it names and what cancelled it. */
  const since = (t: TestStore, seq: number) =>
    t.query("SELECT type, data FROM events WHERE seq > ? ORDER BY seq", [seq]).map((r) => {
      const data = JSON.parse(r.data as string) as { timer_id?: string; cancelled_by?: { event_id: string } };
      return `${r.type}${data.timer_id ? ` ${data.timer_id}` : ""}${data.cancelled_by ? ` by ${data.cancelled_by.event_id}` : ""}`;
    });

  it("an event cancels the timers it matches from their rows read ahead: once each, set and matched in one batch, a shape new in the batch; no round trip waited for", async () => {
    const t = await openTestStore(kind);
    const { indexed, committer, emit } = wired(t);
    // Each statement prepared on the writer once (not counted below): a cancel of a delay and a pause of a declared schedule.
    await committer.submit((tx) => ["w-1", "w-2", "d-1", "d-2", "d-3"].forEach((id, i) => indexed.put(timer(id, id, i === 1 ? "declared" : "delay"), tx.now)));
    await committer.submit((tx) => indexed.put(timer("s-1", "s-1", "declared"), tx.now));
    await Promise.all([emit("warm-1", "order.paid", { order: "w-1" }), emit("warm-2", "order.paid", { order: "w-2" })]);
    const head = t.events.head();
    const before = waited(t);
    const undone = emit("x-undone", "order.paid", { order: "d-2" }, () => {
      throw new Error("undone");
    }).catch((e: Error) => e.message);
    await Promise.all([
      emit("e-1", "order.paid", { order: "d-1" }),
      emit("e-2", "order.paid", { order: "d-1" }), // d-1 is gone: cancelled once
      emit("e-3", "order.paid", { order: "s-1" }), // a declared schedule: paused
      emit("e-4", "order.paid", { order: "s-1" }), // paused already: nothing
      committer.submit((tx) => indexed.put(timer("n-1", "n-1"), tx.now, { made: true })), // set in the batch...
      emit("e-5", "order.paid", { order: "n-1" }), // ...and matched in it
      undone,
      emit("e-6", "order.paid", { order: "d-2" }), // the undone unit cancelled nothing
      committer.submit((tx) => indexed.put(timer("p-1", "p-1", "delay", "parcel.sent", "data.parcel"), tx.now, { made: true })), // the first timer of its type
      emit("e-7", "parcel.sent", { parcel: "p-1" }),
      emit("e-8", "order.paid", { order: "nobody" }),
    ]);
    expect(await undone).toBe("undone");
    expect(waited(t)).toBe(before);
    expect(since(t, head)).toEqual([
      "order.paid", // e-1
      "timer.unscheduled d-1 by e-1",
      "order.paid", // e-2
      "order.paid", // e-3
      "timer.paused s-1 by e-3",
      "order.paid", // e-4
      "order.paid", // e-5
      "timer.unscheduled n-1 by e-5",
      "order.paid", // e-6
      "timer.unscheduled d-2 by e-6",
      "parcel.sent", // e-7
      "timer.unscheduled p-1 by e-7",
      "order.paid", // e-8
    ]);
    const rows = t.query("SELECT id, next_due_ms, paused FROM timers ORDER BY id");
    expect(rows.map((r) => `${r.id}:${r.next_due_ms === null ? "-" : "due"}:${r.paused === null ? "" : "paused"}`)).toEqual([
      "d-3:due:",
      "s-1:-:paused",
      "w-2:-:paused",
    ]);
    expect(t.query("SELECT timer_id FROM timer_cancels ORDER BY timer_id").map((r) => r.timer_id)).toEqual(["d-3", "s-1", "w-2"]);
  });

  it("a timer's row kept for the batch follows every statement that changes it; a unit undone gives its changes back; a sweep of spent timers forgets them", async () => {
    const t = await openTestStore(kind);
    const { timers, control, committer } = wired(t);
    const plain = (id: string): TimerPut => ({ ...timer(id, id, "runtime"), cancelOn: undefined });
    await committer.submit((tx) => {
      for (const id of ["r-1", "r-2", "r-3", "r-4", "r-5"]) timers.put(plain(id), tx.now);
      timers.put(plain("r-5"), tx.now, { anew: true });
      control.setPaused("r-4", { note: "held", atMs: at, heldDueMs: at }, null, tx.now); // each statement prepared on the writer once
      timers.advance("r-2", at, 0, tx.now);
      timers.advanceMany([{ id: "r-3", nextDueMs: at, called: 0 }], tx.now);
      timers.remove("none");
    });
    const shown = (id: string) => {
      const r = timers.get(id);
      return r ? `${r.id}:${r.nextDueMs ?? "-"}:${r.occurrences}:${r.paused?.note ?? ""}:${r.input.order}` : `${id}:none`;
    };
    const readAhead = { from: timers, keys: ["r-1", "r-2", "r-3", "r-4", "r-5", "r-6"] };
    const unit = <T>(work: (tx: Tx) => T) => committer.submit(work, { readAhead });
    const before = waited(t);
    const seen = await Promise.all([
      unit((tx) => (control.setPaused("r-1", { note: "p", atMs: tx.now, heldDueMs: at }, null, tx.now), shown("r-1"))),
      unit((tx) => (timers.advance("r-2", at + 1, 1, tx.now), shown("r-2"))),
      unit((tx) => (timers.advanceMany([{ id: "r-2", nextDueMs: at + 2, called: 1 }], tx.now), shown("r-2"))),
      unit((tx) => (timers.put(plain("r-2"), tx.now, { anew: true }), shown("r-2"))), // a new timer under the id: counted from 0
      unit(() => [timers.remove("r-3"), shown("r-3"), timers.remove("r-3")]),
      unit((tx) => (timers.put({ ...plain("r-4"), input: { order: "again" } }, tx.now), shown("r-4"))), // keeps its count and pause
      unit((tx) => {
        control.setPaused("r-5", { note: "undone", atMs: tx.now, heldDueMs: at }, null, tx.now);
        throw new Error("undone");
      }).catch((e: Error) => e.message),
      unit(() => shown("r-5")),
      unit((tx) => (timers.put(plain("r-6"), tx.now), shown("r-6"))),
    ]);
    expect(seen).toEqual([
      "r-1:-:0:p:r-1",
      `r-2:${at + 1}:1::r-2`,
      `r-2:${at + 2}:2::r-2`,
      `r-2:${at}:0::r-2`,
      [true, "r-3:none", false],
      `r-4:${at}:0:held:again`, // its pause state stays (a put does not write it)
      "undone",
      `r-5:${at}:0::r-5`,
      `r-6:${at}:0::r-6`,
    ]);
    expect(waited(t)).toBe(before);
    // What the batch answered is what was committed.
    expect(await committer.submit(() => ["r-1", "r-2", "r-3", "r-4", "r-5", "r-6"].map(shown))).toEqual([
      "r-1:-:0:p:r-1",
      `r-2:${at}:0::r-2`,
      "r-3:none",
      `r-4:${at}:0:held:again`,
      `r-5:${at}:0::r-5`,
      `r-6:${at}:0::r-6`,
    ]);
    // A sweep deletes rows it cannot name: what the batch kept is read again.
    const swept = await Promise.all([
      unit((tx) => (timers.advance("r-6", null, 0, tx.now), shown("r-6"))),
      unit(() => retentionStatements(t.store.db).deleteSpentTimers(Date.UTC(2100, 0, 1), 10)),
      unit(() => shown("r-6")),
    ]);
    expect(swept).toEqual([`r-6:-:0::r-6`, 1, "r-6:none"]);
  });
});

describe.each(storeKinds)("a retried emit naming a stream on %s (StreamStatements)", (kind) => {
  it("finds its event's stream position read ahead, and that of an event the batch appended; no round trip waited for", async () => {
    const t = await openTestStore(kind);
    const streams = new Streams(streamStatements(t.store.db));
    const committer = t.committer();
    const emit = (id: string, expected: ExpectedVersion, retried: boolean) =>
      committer.submit(
        (tx) => {
          const stored = tx.events.findById(id);
          if (stored) return `${id} again at ${streams.positionOf(stored.seq)}`;
          const position = streams.next("", "cart", expected, "expected_version");
          streams.record("", "cart", position, tx.append(event(id)).seq);
          return `${id} at ${position}`;
        },
        { lookups: [id], pure: true, readAhead: streams.readAheadOf([{ space: "", stream: "cart", ...(retried && { retried: id }) }]) },
      );
    await emit("c-0", noStream, true);
    await emit("c-1", at(0), true);
    const before = waited(t);
    expect(await Promise.all([emit("c-1", at(0), true), emit("c-2", at(1), true), emit("c-2", at(1), true), emit("c-0", noStream, true)])).toEqual([
      "c-1 again at 1",
      "c-2 at 2",
      "c-2 again at 2",
      "c-0 again at 0",
    ]);
    expect(waited(t)).toBe(before);
  });
});
