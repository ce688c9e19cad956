// What time's calls cost the owner's thread on PostgreSQL: the round trips it waited for
// (chronolog_store_waits_total) while schedules' occurrences are claimed and end (overlap policies
// "skip" and "bufferOne" too) and failed calls are tried again, on a ManualClock through the real
// transport; and the overlap policies across a takeover and a restart (the owner learns which
// timers hold a buffered occurrence, and which occurrences still run, from the store).

// @module-tag postgres

import { describe, expect, it } from "vitest";
import { pino } from "pino";
import { ManualClock } from "../server/src/clock.js";
import { createClient } from "../sdk/ts/src/client.js";
import { runExecutor, TerminalError, type ActionContext } from "../sdk/ts/src/executor.js";
import { definePlugin } from "../sdk/ts/src/plugin.js";
import { onPostgres, ownerRows, startTestOwner, tempDir } from "./helpers/owner.js";
import { MIN, T0, cleanUpAfterEach, harness, jobsPlugin, occurrences } from "./helpers/schedule-harness.js";
import { until } from "./helpers/until.js";

cleanUpAfterEach();

/** The round trips the owner at `url` waited for so far (chronolog_store_waits_total, every connection). */
async function waits(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return [...text.matchAll(/^chronolog_store_waits_total\{[^}]*\} (\d+)$/gm)].reduce((sum, [, n]) => sum + Number(n), 0);
}

/** The statuses of `timerId`'s occurrences, by due moment, joined. */
async function statuses(h: Parameters<typeof ownerRows>[0], timerId: string): Promise<string> {
  return (await ownerRows(h, "SELECT status FROM timer_occurrences WHERE timer_id = ? ORDER BY due_ms, id", [timerId])).map((o) => o.status).join();
}

describe("the round trips of time's calls on PostgreSQL", () => {
  it.runIf(onPostgres)("the end of a recurring schedule's occurrence waits for none: 20 interval schedules, 5 moments each", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock);
    const ids = Array.from({ length: 20 }, (_, k) => `every-${k}`);
    for (const id of ids) await h.client.schedule("jobs.run", { id }, { everyMs: MIN }, { timerId: id });
    const completed = async () => {
      let n = 0;
      for (const id of ids) n += (await occurrences(h, id)).filter((o) => o.status === "completed").length;
      return n;
    };
    clock.advance(MIN); // the first moment: the statements are prepared
    await until(async () => (await completed()) === 20, "the first 20 occurrences ended");
    const before = await waits(h.owner.url);
    for (let moment = 2; moment <= 6; moment++) {
      clock.advance(MIN);
      await until(async () => (await completed()) === 20 * moment, `the occurrences of moment ${moment} ended`);
    }
    expect(h.calls).toHaveLength(120);
    // One each (100) before: whether the end released a buffered occurrence was read.
    expect(await waits(h.owner.url), "waits for 100 occurrences called and ended").toBeLessThan(before + 10);
  });

  it.runIf(onPostgres)("a failed call's next try waits for none: 20 schedules whose first try fails, tried again as the same call", async () => {
    const clock = new ManualClock(T0);
    const owner = await startTestOwner({ clock, timers: clock, heartbeatIntervalMs: 600_000, shutdownGraceMs: 200 });
    const tries = new Map<string, number>();
    const plugin = definePlugin({
      name: "flaky",
      actions: {
        once: {
          allow: ["*"],
          run(ctx) {
            const n = (tries.get(ctx.callId) ?? 0) + 1;
            tries.set(ctx.callId, n);
            if (n === 1) throw new Error("the first try fails");
            return {};
          },
        },
      },
    });
    const executor = runExecutor({ url: owner.url, plugins: [plugin], credits: 32, maxBackoffMs: 200, onError: () => {} });
    try {
      await executor.ready;
      const client = createClient({ url: owner.url });
      const ids = Array.from({ length: 20 }, (_, k) => `flaky-${k}`);
      for (const id of ids) await client.schedule("flaky.once", { id }, { everyMs: 60 * MIN }, { timerId: id }); // tried again after 10 s (the default waits)
      const h = { owner };
      const ended = async (status: string) => {
        let n = 0;
        for (const id of ids)
          n += (await ownerRows(h, "SELECT status FROM timer_occurrences WHERE timer_id = ?", [id])).filter((o) => o.status === status).length;
        return n;
      };
      const warm = await client.call("flaky.once", {}, { callId: "warm-up" }).catch(() => undefined); // fails: its try again prepares the statements
      expect(warm).toBeUndefined();
      await client.call("flaky.once", {}, { callId: "warm-up" });
      clock.advance(60 * MIN);
      await until(async () => (await ended("retry_wait")) === 20, "20 first tries failed");
      const before = await waits(owner.url);
      clock.advance(10_000);
      await until(async () => (await ended("completed")) === 20, "20 second tries completed");
      // Two each (40) before: the call's stored row and its action.started were read in the commit.
      expect(await waits(owner.url), "waits for 20 second tries").toBeLessThan(before + 10);
      expect([...tries.values()].every((n) => n === 2)).toBe(true);
      const retried = [];
      for await (const e of client.read({ types: ["action.retried"] })) retried.push(e);
      expect(retried).toHaveLength(21);
      const started = new Map<string, string>();
      for await (const e of client.read({ types: ["action.started"] })) started.set(String(e.data?.call_id), e.id);
      for (const e of retried) expect(e.cause, "an action.retried is caused by its call's action.started").toBe(started.get(String(e.data?.call_id)));
    } finally {
      await executor.stop(100);
      await owner.close();
    }
  });
});

describe("the round trips of a call's events a cancel_on names, on PostgreSQL", () => {
  it.runIf(onPostgres)(
    "an action.completed that cancels a pending delay waits for none: 20 calls, each cancelling the delay waiting on its call id",
    async () => {
      const clock = new ManualClock(T0);
      const h = await harness(clock);
      const delayOn = (callId: string) =>
        h.client.delay("jobs.run", { call: callId }, { intervalMs: 3_600_000 }, "unbounded", {
          cancelOn: [{ type: "action.completed", match: { "data.call_id": "input.call" } }],
        });
      const pending = async () => {
        let n = 0;
        for await (const _ of h.client.listTimers({ kind: "delay" })) n++;
        return n;
      };
      await delayOn("warm-up");
      await h.client.call("jobs.run", {}, { callId: "warm-up" }); // the statements prepared
      await until(async () => (await pending()) === 0, "the warm-up's delay cancelled");
      const ids = Array.from({ length: 20 }, (_, k) => `paid-${k}`);
      for (const id of ids) await delayOn(id);
      expect(await pending()).toBe(20);
      const before = await waits(h.owner.url);
      await Promise.all(ids.map((callId) => h.client.call("jobs.run", {}, { callId })));
      await until(async () => (await pending()) === 0, "the 20 delays cancelled");
      // Two each (40) before: the timers waiting on the event's key, and each timer's row, were read in the commit.
      expect(await waits(h.owner.url), "waits for 20 calls whose action.completed cancels a delay").toBeLessThan(before + 10);
      const cancelled = [];
      for await (const e of h.client.read({ types: ["timer.unscheduled"] })) cancelled.push(e);
      expect(cancelled.map((e) => (e.data?.cancelled_by as { type?: string } | undefined)?.type)).toEqual(Array(21).fill("action.completed"));
      expect(h.calls.map((c) => c.callId).sort()).toEqual(["warm-up", ...ids].sort()); // the delays were never called
    },
  );
});

describe("the round trips of overlap policies' claims and ends on PostgreSQL", () => {
  /** 8 interval schedules of `jobs.slow` with overlap "skip" and 8 with "bufferOne" (the harness's executor runs 16 at once); their ids. */
  async function overlapping(h: Awaited<ReturnType<typeof harness>>): Promise<{ skip: string[]; buffer: string[] }> {
    const skip = Array.from({ length: 8 }, (_, k) => `skip-${k}`);
    const buffer = Array.from({ length: 8 }, (_, k) => `buffer-${k}`);
    for (const id of skip) await h.client.schedule("jobs.slow", { id }, { everyMs: MIN }, { timerId: id, policy: { overlap: "skip" } });
    for (const id of buffer) await h.client.schedule("jobs.slow", { id }, { everyMs: MIN }, { timerId: id, policy: { overlap: "bufferOne" } });
    return { skip, buffer };
  }

  /** The statuses of each of `ids`' occurrences, by due moment, joined, then the timers joined with "|". */
  async function all(h: Parameters<typeof ownerRows>[0], ids: string[]): Promise<string> {
    const each = [];
    for (const id of ids) each.push(await statuses(h, id));
    return each.join("|");
  }

  it.runIf(onPostgres)("claims of skip and bufferOne schedules wait for none, whether one runs or not: 16 schedules, 4 moments each", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock);
    const { skip, buffer } = await overlapping(h);
    const ids = [...skip, ...buffer];
    clock.advance(MIN); // the first moment: the statements are prepared
    await until(async () => (await all(h, ids)) === ids.map(() => "completed").join("|"), "the first 16 occurrences ended");
    const before = await waits(h.owner.url);
    h.gate.open = false;
    clock.advance(MIN); // none runs: each called
    await until(() => h.calls.length === 32, "the second 16 called");
    clock.advance(MIN); // each still runs: skipped, or buffered
    const third = (id: string) => (id.startsWith("skip") ? "completed,pending,skipped" : "completed,pending,buffered");
    await until(async () => (await all(h, ids)) === ids.map(third).join("|"), "the third skipped or buffered");
    clock.advance(MIN); // skipped again: one runs, and under bufferOne one is buffered already
    await until(async () => (await all(h, ids)) === ids.map((id) => `${third(id)},skipped`).join("|"), "the fourth skipped");
    h.gate.open = true;
    const done = (id: string) => (id.startsWith("skip") ? "completed,completed,skipped,skipped" : "completed,completed,completed,skipped");
    await until(async () => (await all(h, ids)) === ids.map(done).join("|"), "the running ones ended, the buffered ones made");
    expect(h.calls).toHaveLength(40);
    // Two a moment each before (96): the occurrences still running counted, the occurrence written answering whether it was new; and one each end of a bufferOne one (16).
    expect(await waits(h.owner.url), "waits for 48 claims and 24 ends").toBeLessThan(before + 10);
    const made = h.calls.filter((c) => String(c.input.id).startsWith("buffer")).map((c) => c.scheduled?.due.getTime());
    expect(
      made.filter((due) => due === T0 + 3 * MIN),
      "each buffered occurrence made once",
    ).toHaveLength(8);
  });
});

describe("the round trips of timer.failed on PostgreSQL", () => {
  it.runIf(onPostgres)(
    "a timer.failed that a cancel_on names waits for none: 20 schedules failing for good, each cancelling a delay that watches it",
    async () => {
      const clock = new ManualClock(T0);
      const owner = await startTestOwner({ clock, timers: clock, heartbeatIntervalMs: 600_000, shutdownGraceMs: 200 });
      const plugin = definePlugin({
        name: "doomed",
        actions: {
          run: {
            allow: ["*"],
            run() {
              throw new TerminalError("fails for good");
            },
          },
          watch: { allow: ["*"], run: () => ({}) },
        },
      });
      const executor = runExecutor({ url: owner.url, plugins: [plugin], credits: 32, maxBackoffMs: 200, onError: () => {} });
      try {
        await executor.ready;
        const client = createClient({ url: owner.url });
        const h = { owner };
        const ids = Array.from({ length: 20 }, (_, k) => `doomed-${k}`);
        for (const id of ids) await client.schedule("doomed.run", { id }, { everyMs: 60 * MIN }, { timerId: id });
        /** A pending delay for each schedule, cancelled by its next timer.failed. */
        const watch = () =>
          client.delayBatch(
            ids.map((id) => ({
              action: "doomed.watch",
              input: { timer: id },
              when: { at: T0 + 600 * MIN },
              overdue: "unbounded" as const,
              cancelOn: [{ type: "timer.failed", match: { "data.timer_id": "input.timer" } }],
            })),
          );
        const failed = async () => Number((await ownerRows(h, "SELECT count(*) AS n FROM timer_occurrences WHERE status = 'failed'"))[0].n);
        const delays = async () => Number((await ownerRows(h, "SELECT count(*) AS n FROM timers WHERE kind = 'delay'"))[0].n);
        await watch();
        clock.advance(60 * MIN); // the first moment: the statements are prepared
        await until(async () => (await failed()) === 20 && (await delays()) === 0, "20 failed for good, their delays cancelled");
        await watch();
        const before = await waits(owner.url);
        clock.advance(60 * MIN);
        await until(async () => (await failed()) === 40 && (await delays()) === 0, "20 more failed, the new delays cancelled");
        // One or two each (20-40) before: the timers waiting on the event's key, read in the unit.
        expect(await waits(owner.url), "waits for 20 calls failing for good").toBeLessThan(before + 10);
        const unscheduled = [];
        for await (const e of client.read({ types: ["timer.unscheduled"] })) unscheduled.push(e);
        expect(unscheduled).toHaveLength(40);
      } finally {
        await executor.stop(100);
        await owner.close();
      }
    },
  );
});

describe("the round trips of BackfillTimer on PostgreSQL", () => {
  it.runIf(onPostgres)(
    "a backfill waits for none, answering which moments it made: 20 hourly schedules, each backfilled twice over ranges that overlap",
    async () => {
      const clock = new ManualClock(T0);
      const h = await harness(clock);
      const HOUR = 60 * MIN;
      const ids = Array.from({ length: 21 }, (_, k) => `hourly-${k}`);
      for (const id of ids) await h.client.schedule("jobs.run", { id }, { everyMs: HOUR }, { timerId: id });
      clock.advance(5 * HOUR); // each claims its latest moment (T0 + 5 h) only
      await until(() => h.calls.length === 21, "the latest moments called");
      await h.client.backfillTimer(ids[20], T0 + 1, T0 + 5 * HOUR); // the statements are prepared
      const before = await waits(h.owner.url);
      const answers = [];
      for (const id of ids.slice(0, 20)) {
        answers.push(await h.client.backfillTimer(id, T0 + 1, T0 + 4 * HOUR));
        answers.push(await h.client.backfillTimer(id, T0 + 3 * HOUR, T0 + 5 * HOUR + 1));
      }
      // One each (40) before: the occurrences written answering which were new.
      expect(await waits(h.owner.url), "waits for 40 backfills").toBeLessThan(before + 10);
      const shown = (made: Awaited<ReturnType<typeof h.client.backfillTimer>>) =>
        made.map((o) => `${(o.due.getTime() - T0) / HOUR}${o.existing ? " existing" : ""}`);
      expect(shown(answers[0])).toEqual(["1", "2", "3"]);
      expect(shown(answers[1])).toEqual(["3 existing", "4", "5 existing"]);
      expect(new Set(answers.map((a) => shown(a).join()))).toEqual(new Set(["1,2,3", "3 existing,4,5 existing"]));
      await until(() => h.calls.length === 21 + 4 + 20 * 4, "each backfilled moment called once");
      expect((await occurrences(h, ids[0])).map((o) => [(Number(o.due_ms) - T0) / HOUR, o.origin, o.status])).toEqual([
        [1, "backfill", "completed"],
        [2, "backfill", "completed"],
        [3, "backfill", "completed"],
        [4, "backfill", "completed"],
        [5, "schedule", "completed"],
      ]);
    },
  );
});

describe("overlap policies across a takeover", () => {
  it.runIf(onPostgres)(
    "a standby that takes over while occurrences run skips and buffers as the leader would, and makes the buffered one when the one it waited for ends",
    async () => {
      const dataDir = tempDir();
      const clock = new ManualClock(T0);
      const first = await harness(clock, { dataDir });
      first.gate.open = false;
      await first.client.schedule("jobs.slow", { id: "b" }, { everyMs: MIN }, { timerId: "b", policy: { overlap: "bufferOne" } });
      await first.client.schedule("jobs.slow", { id: "s" }, { everyMs: MIN }, { timerId: "s", policy: { overlap: "skip" } });
      clock.advance(MIN);
      await until(() => first.calls.length === 2, "the first calls (slow)");
      clock.advance(MIN);
      await until(
        async () => (await statuses(first, "b")) === "pending,buffered" && (await statuses(first, "s")) === "pending,skipped",
        "the second buffered or skipped",
      );
      // A second owner on the same database waits as a standby while the first leads.
      let waiting = false;
      const logger = pino({ level: "info" }, { write: (line: string) => void (waiting ||= line.includes("a standby's")) });
      const waited = new AbortController(); // ends its wait if the test fails before it takes over
      const taking = startTestOwner({ clock, timers: clock, dataDir, logger, heartbeatIntervalMs: 600_000, shutdownGraceMs: 200, signal: waited.signal });
      const calls: ActionContext[] = [];
      const gate = { open: false };
      let executor: ReturnType<typeof runExecutor> | undefined;
      try {
        await until(() => waiting, "the second owner waiting as a standby");
        await first.owner.close(); // the running calls stay pending: the new leader calls them again
        const second = await taking;
        executor = runExecutor({ url: second.url, plugins: [jobsPlugin(calls, gate)], credits: 16, maxBackoffMs: 200, onError: () => {} });
        await until(() => calls.length === 2, "the pending calls made again by the new leader");
        const h = { owner: second };
        clock.advance(MIN); // both still run (and b holds a buffered one): skipped
        await until(
          async () => (await statuses(h, "b")) === "pending,buffered,skipped" && (await statuses(h, "s")) === "pending,skipped,skipped",
          "the third skipped",
        );
        gate.open = true;
        await until(
          async () => (await statuses(h, "b")) === "completed,completed,skipped" && (await statuses(h, "s")) === "completed,skipped,skipped",
          "the buffered one made",
        );
        clock.advance(MIN); // none runs: both called
        await until(
          async () =>
            (await statuses(h, "b")) === "completed,completed,skipped,completed" && (await statuses(h, "s")) === "completed,skipped,skipped,completed",
          "the fourth made",
        );
        expect(calls.map((c) => `${c.input.id}@${(c.scheduled!.due.getTime() - T0) / MIN}`).sort()).toEqual(["b@1", "b@2", "b@4", "s@1", "s@4"]);
      } finally {
        waited.abort();
        await executor?.stop(100);
        await taking.then((owner) => owner.close()).catch(() => undefined);
      }
    },
  );
});

describe("overlap buffer one across a restart", () => {
  it("an occurrence buffered before the owner stopped is made when the one it waited for ends after the restart", async () => {
    const dataDir = tempDir();
    const clock = new ManualClock(T0);
    const first = await harness(clock, { dataDir });
    first.gate.open = false;
    await first.client.schedule("jobs.slow", {}, { everyMs: MIN }, { timerId: "b", policy: { overlap: "bufferOne" } });
    clock.advance(MIN);
    await until(() => first.calls.length === 1, "the first (slow) call");
    clock.advance(MIN);
    await until(async () => (await statuses(first, "b")) === "pending,buffered", "the second buffered");
    await first.owner.close(); // the first call stays pending: called again at the next start
    const second = await harness(clock, { dataDir });
    await until(() => second.calls.length === 2, "the pending one called again, then the buffered one made");
    expect(second.calls.map((c) => c.scheduled?.due.getTime())).toEqual([T0 + MIN, T0 + 2 * MIN]);
    await until(async () => (await statuses(second, "b")) === "completed,completed", "both recorded");
  });
});
