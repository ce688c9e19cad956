// The cancel index's cost per appended event, in-process (not a test): `npm run bench:cancel-on`.
// Indexes 0 or 100,000 pending cancellable delays in a SQLite store, then runs the cancel-on hook
// (CancelOn.cancelFor, what the committer calls after each append) for 200,000 events of the
// watched type that match no timer, and for as many of another type. The end-to-end figures (an
// owner under the ingest loops) are bench/compare's cancellable workload.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openStore } from "../../server/src/store/sqlite/open.js";
import { timerCancelStatements } from "../../server/src/store/timer-cancels.js";
import { timerStatements } from "../../server/src/store/timers.js";
import { timerControlStatements } from "../../server/src/store/timer-control.js";
import { CancelOn } from "../../server/src/time/cancel-on.js";
import type { Tx } from "../../server/src/store/committer.js";

for (const pending of [0, 100_000]) {
  const store = openStore({ dataDir: mkdtempSync(join(tmpdir(), "cm-")) });
  const db = store.db;
  const cancels = timerCancelStatements(db);
  const c0 = new CancelOn(cancels, timerStatements(db), timerControlStatements(db));
  const timers = c0.indexing(timerStatements(db));
  db.exec("BEGIN");
  for (let i = 0; i < pending; i++)
    timers.put(
      {
        id: `t-${i}`,
        kind: "delay",
        action: "a.b",
        input: { order: `p-${i}` },
        spec: { kind: "at", atMs: 2e12 + i },
        nextDueMs: 2e12 + i,
        actor: null,
        plugin: "",
        schedule: "",
        overdue: { kind: "unbounded" },
        chainDepth: 0,
        region: 0,
        disabled: false,
        retryDelaysMs: [],
        policy: { jitterMs: 0, startMs: null, endMs: null, maxCount: 0, overlap: "allow", catchUp: "latest", catchUpWindowMs: 0, anchorMs: null },
        paused: null,
        cancelOn: [{ type: "compare.order", match: { "data.order": "input.order" } }],
      },
      1,
    );
  if (pending === 0) cancels.addShape({ eventType: "compare.order", paths: JSON.stringify(["data.order"]) });
  db.exec("COMMIT");
  const c = new CancelOn(cancels, timerStatements(db), timerControlStatements(db));
  const tx = { now: 0 } as unknown as Tx; // no event matches: the unit is not used
  const n = 200_000;
  const ev = (i: number) => ({
    seq: i,
    id: `e${i}`,
    type: "compare.order",
    data: { order: `ord-${i}`, customer: "c", amount: 1 },
    cause: "",
    actor: null,
    at: 0,
  });
  for (let i = 0; i < 20_000; i++) c.cancelFor(tx, ev(i));
  const t0 = performance.now();
  for (let i = 0; i < n; i++) c.cancelFor(tx, ev(i));
  const other = performance.now();
  for (let i = 0; i < n; i++) c.cancelFor(tx, { ...ev(i), type: "other.type" });
  const t1 = performance.now();
  console.log(
    `${pending} pending: cancelFor of a watched type ${(((other - t0) * 1000) / n).toFixed(2)} µs/event; of another type ${(((t1 - other) * 1000) / n).toFixed(3)} µs/event`,
  );
  await store.close();
}
