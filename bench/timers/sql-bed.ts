// SQL bed for bench/timers (not a test): `node --import tsx bench/timers/sql-bed.ts`.
//
// A fired delay's statements on a real store (WAL, synchronous=NORMAL, no fsync), through the
// real Committer: per commit, the claim of up to 18 due delays (occurrence insert, timer advance),
// then each call's start (action_calls row, action.started) and end (action.completed, row and
// occurrence ends), each its own unit, as the owner's firing path writes them. No gRPC, no
// executor: what the store costs a call, steadier than bench (a)'s owner CPU. Prints CPU µs and
// bytes written (wchar) per call.
// BED_N: delays (24,000). BED_RANDOM_IDS=1: random timer ids (as owner-made delay ids are,
// against their due order) instead of ids in due order. BED_DROP="index,index": drops indexes
// first, to see what one costs.
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { callEventId } from "../../server/src/actions/records.js";
import { systemClock } from "../../server/src/clock.js";
import { callStatements } from "../../server/src/store/calls.js";
import { Committer } from "../../server/src/store/committer.js";
import { openStore } from "../../server/src/store/sqlite/open.js";
import { eventStatements } from "../../server/src/store/events.js";
import { occurrenceStatements } from "../../server/src/store/occurrences.js";
import { timerStatements } from "../../server/src/store/timers.js";
import { occurrenceId } from "../../server/src/time/occurrence-ids.js";
import { defaultSchedulePolicy } from "../../server/src/store/timer-records.js";

const n = Number(process.env.BED_N ?? 24_000);
const perCommit = 18;
const dir = mkdtempSync(join(tmpdir(), "chronolog-sql-bed-"));
const store = openStore({ dataDir: dir, synchronous: "NORMAL" });
for (const index of (process.env.BED_DROP ?? "").split(",").filter(Boolean)) store.db.exec(`DROP INDEX ${index}`);
const events = eventStatements(store.db);
const timers = timerStatements(store.db);
const occurrences = occurrenceStatements(store.db);
const calls = callStatements(store.db);
const committer = new Committer(store.db, systemClock, events, { transactions: store.transactions });
const written = () => Number(/wchar: (\d+)/.exec(readFileSync("/proc/self/io", "utf8"))![1]);

const t0 = Date.now() + 1_000;
store.db.transaction(() => {
  for (let i = 0; i < n; i++) {
    const dueMs = t0 + i;
    const id = process.env.BED_RANDOM_IDS ? randomUUID() : `delay-${i}`;
    timers.put(
      {
        id,
        kind: "delay",
        action: "bench.fire",
        input: { i, note: "x".repeat(40) },
        spec: { kind: "at", atMs: dueMs },
        nextDueMs: dueMs,
        actor: { id: "u-1", for: "", in: "", via: "" },
        plugin: "",
        schedule: "",
        overdue: { kind: "unbounded" },
        chainDepth: 0,
        region: 0,
        disabled: false,
        retryDelaysMs: [10_000, 30_000],
        policy: defaultSchedulePolicy,
        paused: null,
      },
      Date.now(),
    );
  }
})();

/** One commit's claim of the delays due by `horizonMs`: their occurrence ids and inputs. */
function claim(horizonMs: number): Promise<{ id: string; input: Record<string, unknown> }[]> {
  return committer.submit((tx) =>
    timers.due(horizonMs, 32).map((timer) => {
      const id = occurrenceId(timer.id, timer.nextDueMs!);
      occurrences.insert(
        {
          id,
          timerId: timer.id,
          dueMs: timer.nextDueMs!,
          action: timer.action,
          input: timer.input,
          actor: timer.actor,
          overdue: timer.overdue,
          retryDelaysMs: timer.retryDelaysMs,
          status: "pending",
          latenessMs: null,
          error: "",
        },
        tx.now,
      );
      timers.advance(timer.id, null, 1, tx.now);
      return { id, input: timer.input };
    }),
  );
}

let done = 0;
const cpu0 = process.cpuUsage();
const written0 = written();
while (done < n) {
  const claimed = await claim(t0 + done + perCommit - 1);
  if (claimed.length === 0) break;
  await Promise.all(
    claimed.map(({ id, input }) =>
      committer.submit((tx) => {
        calls.insert({ callId: id, action: "bench.fire", inputHash: "0".repeat(64), actor: null, recorded: true, attempt: 1 }, tx.now);
        tx.append({
          id: callEventId(id, "started"),
          type: "action.started",
          data: { call_id: id, action: "bench.fire", input, attempt: 1, chain_depth: 0 },
          cause: "",
          actor: null,
        });
      }),
    ),
  );
  await Promise.all(
    claimed.map(({ id }) =>
      committer.submit((tx) => {
        calls.complete(id, 1, undefined, tx.now);
        tx.append({
          id: callEventId(id, "completed"),
          type: "action.completed",
          data: { call_id: id, action: "bench.fire", attempt: 1, output: { ok: true } },
          cause: callEventId(id, "started"),
          actor: null,
        });
        occurrences.finish(id, "completed", 1, "", null, tx.now);
      }),
    ),
  );
  done += claimed.length;
}
const cpu = process.cpuUsage(cpu0);
console.log(
  `sql bed: ${done} calls, ${((cpu.user + cpu.system) / done).toFixed(1)} µs CPU and ${((written() - written0) / done / 1024).toFixed(1)} KiB written per call (ids ${process.env.BED_RANDOM_IDS ? "random" : "in due order"}; dropped: ${process.env.BED_DROP || "none"})`,
);
await store.close();
rmSync(dir, { recursive: true, force: true });
