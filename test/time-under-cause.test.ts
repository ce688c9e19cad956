// Timer changes made by code under a cause are answered from the log
// when the same work runs again: a retried delivery or an action called again with its call id
// makes the same Schedule / Unschedule / Delay / CancelDelay requests (same cause, same
// positions), and each finds the event its first run recorded (timer.scheduled,
// timer.unscheduled, with ids derived from the cause, the position and the request) instead of
// changing the timers again. Through the real transport: an in-process owner on a ManualClock
// (its TimerHost too, so no delay fires unless the test moves time), an in-process SDK executor
// hosting a processor and actions whose handlers fail their first attempt after their work.
// Processor retries wait on the real clock (20 ms).
//
// @module-tag postgres

import type { JsonObject } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Code, createClient as createRpcClient, type Client } from "@connectrpc/connect";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../server/src/clock.js";
import { createClient, type ChronologClient } from "../sdk/ts/src/client.js";
import { runExecutor, type ActionContext, type DeliveryContext } from "../sdk/ts/src/executor.js";
import { AdminService } from "@chronolog/sdk/gen/chronolog/v1/admin_pb";
import type { Event } from "@chronolog/sdk/gen/chronolog/v1/event_pb";
import { TimeService } from "@chronolog/sdk/gen/chronolog/v1/time_pb";
import { definePlugin, manifestOf } from "../sdk/ts/src/plugin.js";
import { expectConnectError } from "./helpers/log-snapshot.js";
import { ownerRows, startTestOwner } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/** 2026-03-02T12:00:00Z. */
const T0 = Date.UTC(2026, 2, 2, 12);
const MINUTE = 60_000;

/** What one attempt of a handler got back from the owner. */
type Attempt = JsonObject & { job: string; attempt: number };

interface Harness {
  clock: ManualClock;
  owner: { dataDir: string; settled(): Promise<void> };
  client: ChronologClient;
  time: Client<typeof TimeService>;
  admin: Client<typeof AdminService>;
  /** Every call of `redo.ring` (the action the timers and delays call). */
  rings: ActionContext[];
  /** What each attempt of the processor and of `redo.file` got, in order. */
  attempts: Attempt[];
  /** Run by a failing first attempt after its work, before it fails (job name → what to do between the attempts). */
  between: Map<string, () => Promise<void>>;
}

/** The timer work of one mode, under `ctx` (a delivery or an action run); returns what it got. */
async function work(ctx: DeliveryContext | ActionContext, job: string, mode: string, target: string): Promise<JsonObject> {
  switch (mode) {
    case "delay-cancel": {
      const d = await ctx.delay("redo.ring", { job }, { intervalMs: MINUTE }, "unbounded");
      await ctx.cancelDelay(d.delayId);
      return { delay: d.delayId, due: d.due.getTime() };
    }
    case "schedule-unschedule": {
      const t = await ctx.schedule("redo.ring", { job }, { everyMs: MINUTE });
      await ctx.unschedule(t.id);
      return { timer: t.id };
    }
    case "named-schedule-unschedule": {
      const t = await ctx.schedule("redo.ring", { job }, { everyMs: MINUTE }, { timerId: `named-${job}` });
      await ctx.unschedule(t.id);
      return { timer: t.id };
    }
    case "delay-only": {
      const d = await ctx.delay("redo.ring", { job }, { intervalMs: MINUTE }, "unbounded");
      return { delay: d.delayId, due: d.due.getTime() };
    }
    case "schedule-only": {
      const t = await ctx.schedule("redo.ring", { job }, { everyMs: MINUTE });
      return { timer: t.id, next: t.nextDue ? Number(t.nextDue.seconds) * 1000 : null };
    }
    case "delay-at": {
      const d = await ctx.delay("redo.ring", { job }, { at: Number(target) }, "unbounded");
      return { delay: d.delayId, due: d.due.getTime() };
    }
    case "schedule-at": {
      const t = await ctx.schedule("redo.ring", { job }, { at: Number(target) });
      return { timer: t.id, next: t.nextDue ? Number(t.nextDue.seconds) * 1000 : null };
    }
    case "cancel-target":
      await ctx.cancelDelay(target);
      return { cancelled: target };
    case "unschedule-target":
      await ctx.unschedule(target);
      return { unscheduled: target };
    case "reschedule-target": {
      const t = await ctx.schedule("redo.ring", { job }, { everyMs: MINUTE }, { timerId: target });
      await ctx.unschedule(t.id);
      return { timer: t.id };
    }
    case "pause-resume-target": {
      const p = await ctx.pauseTimer(target, `pause ${job}`);
      const r = await ctx.resumeTimer(target, `resume ${job}`);
      const next = r.timer.nextDue ? Number(r.timer.nextDue.seconds) * 1000 : null;
      return { pausedUnchanged: p.unchanged, paused: p.timer.paused, resumedUnchanged: r.unchanged, resumedPaused: r.timer.paused, next };
    }
    case "trigger-target": {
      const t = await ctx.triggerTimer(target);
      return { occurrence: t.occurrenceId, due: t.due.getTime() };
    }
    case "none":
      return {};
    default:
      throw new Error(`unknown mode ${mode}`);
  }
}

/**
 * An owner on a manual clock with plugin `redo`: processor `worker` on `job.go` (data: job,
 * mode, target) and action `file` (input: job, mode, target) do the mode's timer work, then
 * fail their first attempt (after moving the clock 1 s, so a recomputed due moment would
 * differ) and succeed on the next, emitting `job.done` with what they got.
 */
async function harness(): Promise<Harness> {
  const clock = new ManualClock(T0);
  const owner = await startTestOwner({ clock, timers: clock, heartbeatIntervalMs: 600_000, shutdownGraceMs: 200 });
  cleanups.push(() => owner.close());
  const client = createClient({ url: owner.url });
  const rings: ActionContext[] = [];
  const attempts: Attempt[] = [];
  const between = new Map<string, () => Promise<void>>();
  const job = { type: "object", required: ["job", "mode"], properties: { job: { type: "string" }, mode: { type: "string" }, target: { type: "string" } } };
  const attempt = async (ctx: DeliveryContext | ActionContext, input: JsonObject): Promise<JsonObject> => {
    const got = await work(ctx, input.job as string, input.mode as string, (input.target as string | undefined) ?? "");
    attempts.push({ job: input.job as string, attempt: ctx.attempt, ...got });
    if (ctx.attempt === 1) {
      await between.get(input.job as string)?.();
      clock.advance(1_000);
      throw new Error(`job ${input.job}: failing attempt 1 after its work`);
    }
    return got;
  };
  const plugin = definePlugin({
    name: "redo",
    events: { "job.go": { allow: ["*"], schema: job }, "job.done": { schema: { type: "object" } } },
    actions: {
      ring: { allow: ["*"], run: (ctx) => void rings.push(ctx) },
      file: { allow: ["*"], inputSchema: job, run: (ctx) => attempt(ctx, ctx.input) },
    },
    processors: {
      worker: {
        on: "job.go",
        key: "data.job",
        start: "beginning",
        retryDelaysMs: [20, 20],
        run: async (ctx) => {
          await ctx.emit("job.done", await attempt(ctx, ctx.data));
        },
      },
    },
  });
  await client.registerPlugin(manifestOf(plugin));
  const ex = runExecutor({ url: owner.url, plugins: [plugin], credits: 16, maxBackoffMs: 200, onError: () => {} });
  cleanups.push(() => ex.stop(100));
  await ex.ready;
  return {
    clock,
    owner,
    client,
    time: createRpcClient(TimeService, client.transport),
    admin: createRpcClient(AdminService, client.transport),
    rings,
    attempts,
    between,
  };
}

/** Emits `job.go` and waits until the worker is past it; returns the event and every event under it. */
async function runJob(h: Harness, data: JsonObject): Promise<{ go: Event; under: Event[] }> {
  const go = (await h.client.emit("job.go", data)).event!;
  await until(async () => {
    const { processors } = await h.admin.listProcessors({});
    const p = processors.find((x) => x.name === "redo.worker");
    return p !== undefined && p.ackFloor >= go.seq && p.inFlight === 0;
  }, `redo.worker past ${go.seq}`);
  return { go, under: await under(h, go.id) };
}

/** Every event whose cause is `id` (processor.retried / .failed name it as `event_id` in their data). */
async function under(h: Harness, id: string): Promise<Event[]> {
  const out: Event[] = [];
  for await (const e of h.client.read({}))
    if (
      e.cause === id ||
      (e.data as JsonObject | undefined)?.event_id === id ||
      ((e.data as JsonObject | undefined)?.event as JsonObject | undefined)?.id === id
    )
      out.push(e);
  return out;
}

const types = (events: Event[]) => events.map((e) => e.type);
const count = (events: Event[], type: string) => events.filter((e) => e.type === type).length;

/** Every timer whose input names `job`. */
async function timersOf(h: Harness, job: string) {
  const out = [];
  for await (const t of h.client.listTimers()) if ((t.input as JsonObject | undefined)?.job === job) out.push(t);
  return out;
}

/** How many occurrences timer `id` has. */
async function occurrenceCount(h: Harness, id: string): Promise<number> {
  return Number((await ownerRows(h, "SELECT count(*) AS n FROM timer_occurrences WHERE timer_id = ?", [id]))[0]?.n);
}

describe("timer changes under a cause, run again, are answered from the log", () => {
  it("a delay or one-shot timer set `at` a moment, retried after that moment passed, is answered from the log (not INVALID_ARGUMENT), also a Delay with a delay_id from outside; a new request for a passed moment is INVALID_ARGUMENT", async () => {
    const h = await harness();
    for (const [job, mode, at] of [
      ["a-1", "delay-at", T0 + 2_000],
      ["a-2", "schedule-at", T0 + 13_000],
    ] as const) {
      h.between.set(job, async () => void h.clock.set(at + 8_000)); // attempt 1 arms `at`; the retry comes 9 s after it
      await runJob(h, { job, mode, target: String(at) });
      const [first, second] = h.attempts.filter((a) => a.job === job);
      expect(first.delay ?? first.timer).toBeTruthy();
      expect(second.delay ?? second.timer).toBe(first.delay ?? first.timer); // the same delay (and due moment) or timer: not armed again
      expect(second.due).toBe(first.due);
    }
    await until(() => h.rings.length === 2, "both calls, made once each");

    const outside = {
      delayId: "out-1",
      action: "redo.ring",
      input: { job: "a-3" },
      when: { case: "at" as const, value: timestampFromMs(h.clock.now() + 2_000) },
      overdue: { bound: { case: "unbounded" as const, value: true } },
    };
    const armed = await h.time.delay(outside);
    h.clock.advance(10_000);
    await until(() => h.rings.length === 3, "the delay from outside");
    expect(await h.time.delay(outside)).toEqual(armed);
    await expectConnectError(h.time.delay({ ...outside, delayId: "out-2" }), Code.InvalidArgument, /at .* is in the past/);
    expect(h.rings.length).toBe(3);
  });

  it("a delivery that arms a delay and cancels it, fails, and is retried: one timer.scheduled, one timer.unscheduled, the retry succeeds, the delay never fires", async () => {
    const h = await harness();
    const { go, under } = await runJob(h, { job: "j-1", mode: "delay-cancel" });
    expect(h.attempts.map((a) => a.attempt)).toEqual([1, 2]);
    const [first, second] = h.attempts;
    expect(second).toEqual({ ...first, attempt: 2 }); // the same delay id and due moment, though the clock moved
    expect(types(under).filter((t) => t.startsWith("timer.") || t.startsWith("processor.") || t === "job.done")).toEqual([
      "timer.scheduled",
      "timer.unscheduled",
      "processor.retried",
      "job.done",
    ]);
    const delayId = first.delay as string;
    for (const e of under.filter((e) => e.type.startsWith("timer."))) {
      expect((e.data as JsonObject).timer_id).toBe(delayId);
      expect(e.cause).toBe(go.id);
    }
    expect(await timersOf(h, "j-1")).toEqual([]);
    h.clock.advance(5 * MINUTE);
    expect(await occurrenceCount(h, delayId)).toBe(0);
    expect(h.rings).toEqual([]);
  });

  it("a delivery that sets a timer and unschedules it (derived id, or its own id), retried: recorded once each, nothing left, nothing fires", async () => {
    const h = await harness();
    for (const mode of ["schedule-unschedule", "named-schedule-unschedule"]) {
      const job = `j-${mode}`;
      const { under } = await runJob(h, { job, mode });
      const mine = h.attempts.filter((a) => a.job === job);
      expect(mine.map((a) => a.attempt)).toEqual([1, 2]);
      expect(mine[1].timer).toBe(mine[0].timer);
      expect(
        types(under).filter((t) => t.startsWith("timer.") || t.startsWith("processor.") || t === "job.done"),
        mode,
      ).toEqual(["timer.scheduled", "timer.unscheduled", "processor.retried", "job.done"]);
      expect(await timersOf(h, job)).toEqual([]);
      h.clock.advance(5 * MINUTE);
      expect(await occurrenceCount(h, mine[0].timer as string)).toBe(0);
    }
    expect(h.rings).toEqual([]);
  });

  it("a delivery that only arms a delay (or sets a timer), retried, leaves one, due when the first attempt said; the delay fires once", async () => {
    const h = await harness();
    const { under } = await runJob(h, { job: "j-3", mode: "delay-only" });
    const [first, second] = h.attempts;
    expect(second).toEqual({ ...first, attempt: 2 });
    expect(first.due).toBe(T0 + MINUTE);
    expect(count(under, "timer.scheduled")).toBe(1);
    expect(count(under, "processor.retried")).toBe(1);
    const timers = await timersOf(h, "j-3");
    expect(timers.map((t) => t.id)).toEqual([first.delay]);
    h.clock.advance(MINUTE); // T0 + 61 s: the delay is due (at T0 + 60 s)
    await until(() => h.rings.length === 1, "the delayed call");
    expect(h.rings[0].scheduled?.timerId).toBe(first.delay);
    expect(await occurrenceCount(h, first.delay as string)).toBe(1);

    const timer = await runJob(h, { job: "j-4", mode: "schedule-only" });
    const mine = h.attempts.filter((a) => a.job === "j-4");
    expect(mine[1]).toEqual({ ...mine[0], attempt: 2 }); // the same timer and next due moment
    expect(count(timer.under, "timer.scheduled")).toBe(1);
    expect((await timersOf(h, "j-4")).map((t) => t.id)).toEqual([mine[0].timer]);
  });

  it("a retried delivery cancelling a delay (or unscheduling a timer) set from outside, which its first attempt removed, succeeds: removed and recorded once", async () => {
    const h = await harness();
    const outside = await h.client.delay("redo.ring", { job: "j-5" }, { intervalMs: MINUTE }, "unbounded");
    const { under } = await runJob(h, { job: "j-5", mode: "cancel-target", target: outside.delayId });
    expect(h.attempts.map((a) => a.attempt)).toEqual([1, 2]);
    expect(types(under).filter((t) => t.startsWith("timer.") || t.startsWith("processor.") || t === "job.done")).toEqual([
      "timer.unscheduled",
      "processor.retried",
      "job.done",
    ]);
    expect(await timersOf(h, "j-5")).toEqual([]);

    await h.client.schedule("redo.ring", { job: "j-6" }, { everyMs: MINUTE }, { timerId: "outside-j-6" });
    const unscheduled = await runJob(h, { job: "j-6", mode: "unschedule-target", target: "outside-j-6" });
    expect(types(unscheduled.under).filter((t) => t.startsWith("timer.") || t.startsWith("processor.") || t === "job.done")).toEqual([
      "timer.unscheduled",
      "processor.retried",
      "job.done",
    ]);
    expect(await timersOf(h, "j-6")).toEqual([]);

    // Setting a timer another request set the same way, under its own id, replaces it and is recorded, so its retry finds that.
    await h.client.schedule("redo.ring", { job: "j-10" }, { everyMs: MINUTE }, { timerId: "shared-j-10" });
    const rescheduled = await runJob(h, { job: "j-10", mode: "reschedule-target", target: "shared-j-10" });
    const changes = rescheduled.under.filter((e) => e.type.startsWith("timer."));
    expect(changes.map((e) => [e.type, (e.data as JsonObject).timer_id, (e.data as JsonObject).replaced])).toEqual([
      ["timer.scheduled", "shared-j-10", true],
      ["timer.unscheduled", "shared-j-10", undefined],
    ]);
    expect(count(rescheduled.under, "processor.failed")).toBe(0);
    expect(await timersOf(h, "j-10")).toEqual([]);

    h.clock.advance(5 * MINUTE);
    expect(await occurrenceCount(h, outside.delayId)).toBe(0);
    expect(await occurrenceCount(h, "outside-j-6")).toBe(0);
    expect(await occurrenceCount(h, "shared-j-10")).toBe(0);
    expect(h.rings).toEqual([]);
  });

  it("an action called again with its call id after a failed run: its delay armed and cancelled once, under its action.started", async () => {
    const h = await harness();
    const input = { job: "j-7", mode: "delay-cancel" };
    await expect(h.client.call("redo.file", input, { callId: "file-j-7" })).rejects.toMatchObject({ code: Code.Aborted });
    const again = await h.client.call("redo.file", input, { callId: "file-j-7" });
    expect(again.fromLog).toBe(false);
    const [first, second] = h.attempts;
    expect(second).toEqual({ ...first, attempt: 2 });
    expect(again.output).toEqual({ delay: first.delay, due: first.due });
    const started = [];
    for await (const e of h.client.read({ types: ["action.started"] })) if ((e.data as JsonObject).call_id === "file-j-7") started.push(e);
    expect(started).toHaveLength(1);
    const mine = await under(h, started[0].id);
    expect(types(mine).filter((t) => t.startsWith("timer."))).toEqual(["timer.scheduled", "timer.unscheduled"]);
    h.clock.advance(5 * MINUTE);
    expect(await occurrenceCount(h, first.delay as string)).toBe(0);
    expect(h.rings).toEqual([]);
  });

  it("other requests keep their semantics: from outside NOT_FOUND for a removed timer and the same id replaces; under a cause, another position is not a retry", async () => {
    const h = await harness();
    const d = await h.client.delay("redo.ring", { job: "j-8" }, { intervalMs: MINUTE }, "unbounded");
    await h.client.cancelDelay(d.delayId);
    await expectConnectError(h.client.cancelDelay(d.delayId), Code.NotFound, /no delay/);
    await h.client.schedule("redo.ring", { job: "j-8" }, { everyMs: MINUTE }, { timerId: "again-j-8" });
    await h.client.schedule("redo.ring", { job: "j-8" }, { everyMs: MINUTE }, { timerId: "again-j-8" });
    const scheduled = [];
    for await (const e of h.client.read({ types: ["timer.scheduled"] }))
      if ((e.data as JsonObject).timer_id === "again-j-8") scheduled.push((e.data as JsonObject).replaced);
    expect(scheduled).toEqual([false, true]);
    await h.client.unschedule("again-j-8");
    await expectConnectError(h.client.unschedule("again-j-8"), Code.NotFound, /no timer/);

    // Under a cause: the same request at the same position is answered from the log; at another position it is new work.
    const go = (await h.client.emit("job.go", { job: "j-9", mode: "none" })).event!;
    const armed = await h.client.delay("redo.ring", { job: "j-9" }, { intervalMs: MINUTE }, "unbounded");
    await h.time.cancelDelay({ delayId: armed.delayId, cause: { eventId: go.id, position: 0 } });
    await h.time.cancelDelay({ delayId: armed.delayId, cause: { eventId: go.id, position: 0 } });
    await expectConnectError(h.time.cancelDelay({ delayId: armed.delayId, cause: { eventId: go.id, position: 1 } }), Code.NotFound, /no delay/);
    await expectConnectError(h.time.unschedule({ timerId: "never-set", cause: { eventId: go.id, position: 2 } }), Code.NotFound, /no timer/);
    const unscheduled = [];
    for await (const e of h.client.read({ types: ["timer.unscheduled"] })) if ((e.data as JsonObject).timer_id === armed.delayId) unscheduled.push(e);
    expect(unscheduled).toHaveLength(1);
    // A request answered from the log is the same request: another input at the same position is not (here: a delay still to arm).
    const a = await h.time.delay({
      action: "redo.ring",
      input: { job: "j-9", n: 1 },
      when: { case: "intervalMs", value: 5_000n },
      overdue: { bound: { case: "unbounded", value: true } },
      cause: { eventId: go.id, position: 3 },
    });
    const b = await h.time.delay({
      action: "redo.ring",
      input: { job: "j-9", n: 2 },
      when: { case: "intervalMs", value: 5_000n },
      overdue: { bound: { case: "unbounded", value: true } },
      cause: { eventId: go.id, position: 3 },
    });
    expect(b.delayId).not.toBe(a.delayId);
  });

  it("a delivery that pauses a timer and resumes it, fails, and is retried: one timer.paused, one timer.resumed, the timer runs; also when it was paused already, or removed between the attempts", async () => {
    const h = await harness();
    const timerChanges = (events: Event[]) => events.filter((e) => e.type.startsWith("timer.") || e.type.startsWith("processor.") || e.type === "job.done");
    await h.client.schedule("redo.ring", { job: "p-1" }, { everyMs: MINUTE }, { timerId: "pr-1" });
    const { go, under } = await runJob(h, { job: "p-1", mode: "pause-resume-target", target: "pr-1" });
    const mine = h.attempts.filter((a) => a.job === "p-1");
    expect(mine.map((a) => a.attempt)).toEqual([1, 2]);
    expect(mine[0]).toMatchObject({ pausedUnchanged: false, paused: true, resumedUnchanged: false, resumedPaused: false });
    expect(mine[1]).toEqual({ ...mine[0], attempt: 2 }); // answered as the first attempt was, from the log
    expect(types(timerChanges(under))).toEqual(["timer.paused", "timer.resumed", "processor.retried", "job.done"]);
    for (const e of under.filter((e) => e.type.startsWith("timer."))) expect(e.cause).toBe(go.id);
    const [timer] = await timersOf(h, "p-1");
    expect(timer.paused).toBe(false);
    expect(timer.nextDue).toBeDefined();

    // Paused already (from outside): the pause changes nothing but is recorded under the cause (unchanged), so the retry's pause does not pause the timer its first attempt resumed.
    await h.client.schedule("redo.ring", { job: "p-2" }, { everyMs: MINUTE }, { timerId: "pr-2" });
    await h.client.pauseTimer("pr-2", { note: "from outside" });
    const already = await runJob(h, { job: "p-2", mode: "pause-resume-target", target: "pr-2" });
    const two = h.attempts.filter((a) => a.job === "p-2");
    expect(two[0]).toMatchObject({ pausedUnchanged: true, paused: true, resumedUnchanged: false, resumedPaused: false });
    expect(two[1]).toEqual({ ...two[0], attempt: 2 });
    expect(types(timerChanges(already.under))).toEqual(["timer.paused", "timer.resumed", "processor.retried", "job.done"]);
    expect((already.under.find((e) => e.type === "timer.paused")!.data as JsonObject).unchanged).toBe(true);
    expect((await timersOf(h, "p-2"))[0].paused).toBe(false);

    // Removed between the attempts: the retry is answered from the log (no NOT_FOUND) and changes nothing.
    await h.client.schedule("redo.ring", { job: "p-3" }, { everyMs: MINUTE }, { timerId: "pr-3" });
    h.between.set("p-3", () => h.client.unschedule("pr-3"));
    const removed = await runJob(h, { job: "p-3", mode: "pause-resume-target", target: "pr-3" });
    const three = h.attempts.filter((a) => a.job === "p-3");
    expect(three.map((a) => a.attempt)).toEqual([1, 2]);
    expect(three[1]).toEqual({ ...three[0], attempt: 2 });
    expect(types(timerChanges(removed.under))).toEqual(["timer.paused", "timer.resumed", "processor.retried", "job.done"]);
    expect(await timersOf(h, "p-3")).toEqual([]);
  });

  it("a delivery that triggers a timer, fails, and is retried: one timer.triggered, one occurrence, called once; also when the timer was removed between the attempts", async () => {
    const h = await harness();
    await h.client.schedule("redo.ring", { job: "t-1" }, { everyMs: 10 * MINUTE }, { timerId: "tr-1" });
    const { under } = await runJob(h, { job: "t-1", mode: "trigger-target", target: "tr-1" });
    const mine = h.attempts.filter((a) => a.job === "t-1");
    expect(mine.map((a) => a.attempt)).toEqual([1, 2]);
    expect(mine[1]).toEqual({ ...mine[0], attempt: 2 });
    expect(count(under, "timer.triggered")).toBe(1);
    expect(count(under, "processor.failed")).toBe(0);
    await until(() => h.rings.length === 1, "the triggered call");
    expect(await occurrenceCount(h, "tr-1")).toBe(1);
    expect(h.rings.map((r) => r.input)).toEqual([{ job: "t-1" }]);

    await h.client.schedule("redo.ring", { job: "t-2" }, { everyMs: 10 * MINUTE }, { timerId: "tr-2" });
    h.between.set("t-2", () => h.client.unschedule("tr-2"));
    const removed = await runJob(h, { job: "t-2", mode: "trigger-target", target: "tr-2" });
    const two = h.attempts.filter((a) => a.job === "t-2");
    expect(two.map((a) => a.attempt)).toEqual([1, 2]); // the retry succeeded: no NOT_FOUND
    expect(two[1]).toEqual({ ...two[0], attempt: 2 });
    expect(count(removed.under, "timer.triggered")).toBe(1);
    expect(count(removed.under, "processor.failed")).toBe(0);
    expect(count(removed.under, "job.done")).toBe(1);
    h.clock.advance(MINUTE);
    await until(() => h.rings.length === 2, "the second triggered call");
    await new Promise((r) => setTimeout(r, 100));
    expect(h.rings.map((r) => r.input)).toEqual([{ job: "t-1" }, { job: "t-2" }]); // each called once
  });

  it("a backfill under a cause, made again, is answered from its timer.backfilled (recorded once), also after the timer was removed; from outside nothing changes", async () => {
    const h = await harness();
    await h.client.schedule("redo.ring", { job: "b-1" }, { everyMs: MINUTE }, { timerId: "bf-1" });
    h.clock.advance(10 * MINUTE);
    const go = (await h.client.emit("job.go", { job: "b-1", mode: "none" })).event!;
    const request = { timerId: "bf-1", start: timestampFromMs(T0 + 2 * MINUTE), end: timestampFromMs(T0 + 4 * MINUTE), cause: { eventId: go.id, position: 0 } };
    const first = await h.time.backfillTimer(request);
    expect(first.occurrences.map((o) => o.existing)).toEqual([false, false]);
    const again = await h.time.backfillTimer(request);
    expect(again.occurrences).toEqual(first.occurrences); // not "existing": the answer the first run got
    await h.client.unschedule("bf-1");
    expect((await h.time.backfillTimer(request)).occurrences).toEqual(first.occurrences);
    const backfilled = [];
    for await (const e of h.client.read({ types: ["timer.backfilled"] })) backfilled.push(e);
    expect(backfilled).toHaveLength(1);
    // From outside: decided from stored state, as before.
    await expectConnectError(h.time.backfillTimer({ ...request, cause: undefined }), Code.NotFound, /no timer/);
  });
});
