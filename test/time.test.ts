// Time through the real transport: TimeService over gRPC, an in-process SDK executor hosting the
// action, the owner's real store and committer (test/helpers/time-harness.ts). Rules are tested on a
// ManualClock: `clock.advance(ms)` moves time and rings the armed timer at once, and `clock.armed()`
// shows what the owner armed (delay clamped to 2^31-1 ms). Nothing waits for real time except the
// message round trips (`until`). This file: timers, delays, bounds, causes and listing.

// @module-tag postgres

import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { ManualClock } from "../server/src/clock.js";
import { TimerKind, type Timer } from "@chronolog/sdk/gen/chronolog/v1/time_pb";
import { expectConnectError } from "./helpers/log-snapshot.js";
import { tempDir } from "./helpers/owner.js";
import { until } from "./helpers/until.js";
import { eventsOf } from "./helpers/log-snapshot.js";
import { DAY, T0, at, cleanUpAfterEach, cron, every, executor, harness, iso, ms, occurrences, remindPlugin } from "./helpers/time-harness.js";

cleanUpAfterEach();

describe("timers on a manual clock", () => {
  it("an `at` timer fires once at its moment; the action gets `scheduled` (timer id, due, occurrence id) and runs as whoever set it, `in` included", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock);
    const { timer } = await h.time.schedule({
      timerId: "once",
      action: "remind.send",
      input: { to: "ana" },
      spec: at(T0 + 60_000),
      actor: { id: "user:ana", in: "space:acme" },
    });
    expect(timer?.kind).toBe(TimerKind.RUNTIME);
    expect(ms(timer?.nextDue)).toBe(T0 + 60_000);
    expect(timer?.actor).toMatchObject({ id: "user:ana", in: "space:acme" });
    expect(clock.armed()).toEqual([{ atMs: T0 + 60_000, delayMs: 60_000 }]);

    clock.advance(59_999);
    expect(await occurrences(h, "once")).toEqual([]);
    expect(clock.armed()).toEqual([{ atMs: T0 + 60_000, delayMs: 60_000 }]);

    clock.advance(1); // T0 + 60 s: rings
    await until(() => h.calls.length === 1, "the timer's call");
    const [ctx] = h.calls;
    expect(ctx.scheduled).toEqual({ timerId: "once", due: new Date(T0 + 60_000), occurrenceId: ctx.callId });
    expect(ctx.input).toEqual({ to: "ana" });
    expect(ctx.actor).toMatchObject({ id: "user:ana", in: "space:acme" });
    await until(async () => (await occurrences(h, "once"))[0]?.status === "completed", "the occurrence recorded completed");
    expect(await occurrences(h, "once")).toEqual([
      { id: ctx.callId, due_ms: T0 + 60_000, status: "completed", attempts: 1, call_id: ctx.callId, lateness_ms: 0, error: "" },
    ]);

    // Spent: no next due, one occurrence; nothing armed; moving on calls nothing more.
    const got = (await h.time.getTimer({ timerId: "once", previewCount: 3 })).timer!;
    expect(got.nextDue).toBeUndefined();
    expect(got.occurrences).toBe(1n);
    expect(got.preview).toEqual([]);
    expect(clock.armed()).toEqual([]);
    clock.advance(DAY);
    expect(await occurrences(h, "once")).toHaveLength(1);
    expect(h.calls).toHaveLength(1);

    // The log: the timer set (with its actor), then the occurrence's call, once (call id = occurrence id).
    const log = await eventsOf(h.client, ["timer.scheduled", "action.started", "action.completed"]);
    expect(log.map((e) => e.type)).toEqual(["timer.scheduled", "action.started", "action.completed"]);
    expect(log[0].data).toMatchObject({
      timer_id: "once",
      kind: "runtime",
      action: "remind.send",
      spec: { at: T0 + 60_000 },
      next_due_ms: T0 + 60_000,
      replaced: false,
    });
    expect(log[0].actor).toMatchObject({ id: "user:ana", in: "space:acme" });
    expect(log[1].data).toMatchObject({ call_id: ctx.callId, action: "remind.send" });
    expect(log[1].actor).toMatchObject({ id: "user:ana", in: "space:acme" });
    // Calling the occurrence id again answers from the log: an occurrence runs once.
    expect(await h.client.call("remind.send", { to: "ana" }, { callId: ctx.callId })).toMatchObject({ fromLog: true });
    expect(h.calls).toHaveLength(1);
    // Lateness: one call, made at its moment on the manual clock.
    expect(h.owner.lateness.snapshot()).toMatchObject({ count: 1, maxMs: 0 });
  });

  it("`every_ms` fires repeatedly with increasing due moments; after a long gap it owes one occurrence, not a storm", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock);
    const { timer } = await h.time.schedule({ timerId: "tick", action: "remind.send", spec: every(5_000) });
    expect(ms(timer?.nextDue)).toBe(T0 + 5_000); // one interval after it was set
    for (let i = 1; i <= 3; i++) {
      clock.advance(5_000);
      await until(() => h.calls.length === i, `call ${i}`);
    }
    expect(h.calls.map((c) => c.scheduled?.due.getTime())).toEqual([T0 + 5_000, T0 + 10_000, T0 + 15_000]);
    expect(new Set(h.calls.map((c) => c.callId)).size).toBe(3);

    // 60 s pass at once (12 due moments): one call, with the most recent due moment; then the cadence goes on.
    clock.advance(60_000); // now T0 + 75 s, exactly a due moment
    await until(() => h.calls.length === 4, "the catch-up call");
    expect(h.calls[3].scheduled?.due.getTime()).toBe(T0 + 75_000);
    const got = (await h.time.getTimer({ timerId: "tick", previewCount: 3 })).timer!;
    expect(ms(got.nextDue)).toBe(T0 + 80_000);
    expect(got.preview.map(ms)).toEqual([T0 + 80_000, T0 + 85_000, T0 + 90_000]);
    expect(got.occurrences).toBe(4n);
    expect((await occurrences(h, "tick")).map((o) => o.due_ms)).toEqual([T0 + 5_000, T0 + 10_000, T0 + 15_000, T0 + 75_000]);
    clock.advance(7_000); // T0 + 82 s: one more (due 80 s, 2 s late)
    await until(() => h.calls.length === 5, "the next call");
    expect(h.calls[4].scheduled?.due.getTime()).toBe(T0 + 80_000);
  });

  it("a cron timer in Europe/Berlin: next due right across the fall-back day; a month's outage is one call with the most recent moment", async () => {
    const clock = new ManualClock(Date.UTC(2026, 9, 24, 12)); // Sat 2026-10-24 12:00Z
    const h = await harness(clock);
    const { timer } = await h.time.schedule({ timerId: "nightly", action: "remind.send", spec: cron("0 2 * * *", "Europe/Berlin") });
    expect(iso(ms(timer?.nextDue))).toBe("2026-10-25T00:00:00.000Z"); // 02:00 CEST, the first of the repeated hour
    const got = (await h.time.getTimer({ timerId: "nightly", previewCount: 3 })).timer!;
    expect(got.preview.map((t) => iso(ms(t)))).toEqual(["2026-10-25T00:00:00.000Z", "2026-10-26T01:00:00.000Z", "2026-10-27T01:00:00.000Z"]);
    expect(got.spec?.when).toEqual({ case: "cron", value: expect.objectContaining({ expression: "0 2 * * *", zone: "Europe/Berlin" }) });

    clock.set(Date.UTC(2026, 9, 25, 0));
    await until(() => h.calls.length === 1, "the 02:00 CEST call");
    expect(h.calls[0].scheduled?.due.toISOString()).toBe("2026-10-25T00:00:00.000Z");
    expect(iso(ms((await h.time.getTimer({ timerId: "nightly" })).timer?.nextDue))).toBe("2026-10-26T01:00:00.000Z");

    // The owner's clock jumps a month (as after an outage): one call, due at the last 02:00 before now.
    clock.set(Date.UTC(2026, 10, 24, 12)); // 2026-11-24 12:00Z
    await until(() => h.calls.length === 2, "the catch-up call");
    expect(h.calls[1].scheduled?.due.toISOString()).toBe("2026-11-24T01:00:00.000Z"); // 02:00 CET
    expect(iso(ms((await h.time.getTimer({ timerId: "nightly" })).timer?.nextDue))).toBe("2026-11-25T01:00:00.000Z");
    expect(await occurrences(h, "nightly")).toHaveLength(2);
  });

  it("Schedule with the same id replaces the timer; Unschedule stops it (NOT_FOUND after)", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock);
    await h.time.schedule({ timerId: "r", action: "remind.send", input: { v: 1 }, spec: at(T0 + 10_000) });
    const { timer } = await h.time.schedule({ timerId: "r", action: "remind.send", input: { v: 2 }, spec: at(T0 + 20_000) });
    expect(ms(timer?.nextDue)).toBe(T0 + 20_000);
    expect((await h.time.listTimers({})).timers.map((t) => t.id)).toEqual(["r"]);
    clock.advance(10_000); // the first moment: nothing is due any more
    expect(await occurrences(h, "r")).toEqual([]);
    clock.advance(10_000);
    await until(() => h.calls.length === 1, "the replaced timer's call");
    expect(h.calls[0].input).toEqual({ v: 2 });
    expect(h.calls[0].scheduled?.due.getTime()).toBe(T0 + 20_000);
    expect((await eventsOf(h.client, ["timer.scheduled"])).map((e) => e.data?.replaced)).toEqual([false, true]);

    await h.time.schedule({ timerId: "rep", action: "remind.send", spec: every(5_000) });
    clock.advance(5_000);
    await until(() => h.calls.length === 2, "the recurring call");
    await h.time.unschedule({ timerId: "rep" });
    clock.advance(60_000);
    expect(await occurrences(h, "rep")).toHaveLength(1);
    await expectConnectError(h.time.getTimer({ timerId: "rep" }), Code.NotFound, /rep/);
    await expectConnectError(h.time.unschedule({ timerId: "rep" }), Code.NotFound, /no timer "rep"/);
    expect((await eventsOf(h.client, ["timer.unscheduled"])).map((e) => e.data)).toEqual([
      { timer_id: "rep", kind: "runtime", action: "remind.send", next_due_ms: T0 + 30_000 },
    ]);
    expect(h.calls).toHaveLength(2);
  });

  it("a delay of 40 days (over 2^31 ms) is armed clamped to 2^31-1 ms, does not fire when that rings, and fires at its moment", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock);
    const forty = 40 * DAY; // 3,456,000,000 ms > 2^31-1 = 2,147,483,647
    const { delayId, due } = await h.time.delay({
      action: "remind.send",
      input: { n: 40 },
      when: { case: "intervalMs", value: BigInt(forty) },
      overdue: { bound: { case: "unbounded", value: true } },
    });
    expect(ms(due)).toBe(T0 + forty);
    expect(clock.armed()).toEqual([{ atMs: T0 + 2 ** 31 - 1, delayMs: 2 ** 31 - 1 }]);

    clock.advance(2 ** 31 - 1); // the clamped timer rings ~24.9 days early: re-armed for the rest
    expect(clock.armed()).toEqual([{ atMs: T0 + forty, delayMs: forty - (2 ** 31 - 1) }]);
    expect(await occurrences(h, delayId)).toEqual([]);
    const got = (await h.time.getTimer({ timerId: delayId })).timer!;
    expect(got.kind).toBe(TimerKind.DELAY);
    expect(ms(got.nextDue)).toBe(T0 + forty);

    clock.advance(forty - (2 ** 31 - 1) - 1);
    expect(await occurrences(h, delayId)).toEqual([]);
    clock.advance(1);
    await until(() => h.calls.length === 1, "the delayed call");
    expect(h.calls[0].scheduled).toMatchObject({ timerId: delayId, due: new Date(T0 + forty) });
    // Made: CancelDelay is NOT_FOUND now.
    await expectConnectError(h.time.cancelDelay({ delayId }), Code.NotFound, /already made/);
  });

  it("CancelDelay before the moment: never called; an unknown id is NOT_FOUND", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock);
    const { delayId } = await h.time.delay({
      action: "remind.send",
      when: { case: "intervalMs", value: 1_000n },
      overdue: { bound: { case: "onTimeOrNever", value: true } },
    });
    await h.time.cancelDelay({ delayId });
    clock.advance(10_000);
    expect(await occurrences(h, delayId)).toEqual([]);
    await expectConnectError(h.time.cancelDelay({ delayId }), Code.NotFound);
    await expectConnectError(h.time.cancelDelay({ delayId: "nope" }), Code.NotFound, /no delay "nope"/);
    await h.time.schedule({ timerId: "not-a-delay", action: "remind.send", spec: { when: { case: "everyMs", value: 60_000n } } });
    await expectConnectError(
      h.time.cancelDelay({ delayId: "not-a-delay" }),
      Code.FailedPrecondition,
      /"not-a-delay" is a runtime timer: use Unschedule, not a delay/,
    ); // as Unschedule of a delay
    expect((await h.time.getTimer({ timerId: "not-a-delay" })).timer?.id).toBe("not-a-delay");
    expect(h.calls).toEqual([]);
  });

  it("a bound longer than the action's wait for a host still holds: the try that found no executor started nothing, so its retry past the bound is skipped, not made", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock, { executor: false });
    const { delayId } = await h.time.delay({
      action: "remind.quick",
      when: { case: "intervalMs", value: 1_000n },
      overdue: { bound: { case: "maxLatenessMs", value: 5_000n } },
    });
    clock.set(T0 + 1_000); // no executor: the call waits 200 ms (the action's timeout, inside the bound) and fails, nothing started
    await until(async () => (await occurrences(h, delayId))[0]?.status === "retry_wait", "the first try failed: no executor");
    await executor(h.owner.url, remindPlugin(h.calls));
    clock.set(T0 + 1_000 + 10_000); // its retry, 10 s later: past the 5 s bound
    await until(async () => (await occurrences(h, delayId))[0]?.status === "skipped", "skipped at its retry");
    await new Promise((r) => setTimeout(r, 100));
    expect(h.calls).toEqual([]);
    expect(await eventsOf(h.client, ["action.started"])).toEqual([]);
    expect((await eventsOf(h.client, ["timer.skipped"])).map((e) => e.data?.timer_id)).toEqual([delayId]);
  });

  it('Unschedule of a one-shot already made, or claimed inside the lookahead, is NOT_FOUND "already made" (as CancelDelay); its call is made once', async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock, { lookaheadMs: 250, holds: false });
    await h.time.schedule({ timerId: "once", action: "remind.send", spec: at(T0 + 1_000) });
    clock.set(T0 + 1_000 - 100); // inside the lookahead: claimed, to be sent at its moment
    await until(async () => (await occurrences(h, "once"))[0]?.status === "pending", "claimed ahead");
    await expectConnectError(h.time.unschedule({ timerId: "once" }), Code.NotFound, /timer "once" was already made/);
    clock.set(T0 + 1_000);
    await until(() => h.calls.length === 1, "made once, at its moment");
    await expectConnectError(h.time.unschedule({ timerId: "once" }), Code.NotFound, /already made/);
    expect(await eventsOf(h.client, ["timer.unscheduled"])).toEqual([]);
    await h.time.schedule({ timerId: "later", action: "remind.send", spec: at(T0 + 60_000) });
    await h.time.unschedule({ timerId: "later" }); // one still ahead of its lookahead is stopped
    clock.set(T0 + 60_000);
    await new Promise((r) => setTimeout(r, 100));
    expect(h.calls).toHaveLength(1);
  });

  it("a bounded delay that finds no executor's credit by its bound is skipped (timer.skipped), never made late; an unbounded one waits and is made", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock, { executor: false });
    const bounded = await h.time.delay({
      action: "remind.send",
      input: { k: "bounded" },
      when: { case: "intervalMs", value: 1_000n },
      overdue: { bound: { case: "maxLatenessMs", value: 300n } },
    });
    const onTime = await h.time.delay({
      action: "remind.send",
      input: { k: "on-time" },
      when: { case: "intervalMs", value: 1_000n },
      overdue: { bound: { case: "onTimeOrNever", value: true } },
    });
    await h.time.delay({
      action: "remind.send",
      input: { k: "unbounded" },
      when: { case: "intervalMs", value: 1_000n },
      overdue: { bound: { case: "unbounded", value: true } },
    });
    clock.set(T0 + 1_000); // due; no executor: the calls wait for a credit (300 ms of wall time for the bounded one, 1 s for the on-time one)
    await until(async () => (await occurrences(h, bounded.delayId))[0]?.status === "skipped", "the bounded one skipped when its bound passed", 5_000);
    await until(async () => (await occurrences(h, onTime.delayId))[0]?.status === "skipped", "the on-time one skipped", 5_000);
    await executor(h.owner.url, remindPlugin(h.calls));
    await until(() => h.calls.length === 1, "the unbounded one, once an executor came");
    await new Promise((r) => setTimeout(r, 200));
    expect(h.calls.map((c) => c.input)).toEqual([{ k: "unbounded" }]);
    expect((await eventsOf(h.client, ["timer.skipped"])).map((e) => e.data?.timer_id).sort()).toEqual([bounded.delayId, onTime.delayId].sort());
    expect((await eventsOf(h.client, ["action.started"])).map((e) => e.data?.input)).toEqual([{ k: "unbounded" }]); // nothing started for the skipped ones
  });

  it("a delay whose owner was down past its bound is skipped and recorded (timer.skipped, occurrence `skipped`); an unbounded one is made late with its original moment", async () => {
    const clock = new ManualClock(T0);
    const dataDir = tempDir();
    const first = await harness(clock, { dataDir });
    const bounded = await first.time.delay({
      action: "remind.send",
      input: { k: "bounded" },
      when: { case: "intervalMs", value: 10_000n },
      overdue: { bound: { case: "maxLatenessMs", value: 5_000n } },
    });
    const onTime = await first.time.delay({
      action: "remind.send",
      input: { k: "on-time" },
      when: { case: "intervalMs", value: 10_000n },
      overdue: { bound: { case: "onTimeOrNever", value: true } },
    });
    const late = await first.time.delay({
      action: "remind.send",
      input: { k: "late" },
      when: { case: "intervalMs", value: 10_000n },
      overdue: { bound: { case: "unbounded", value: true } },
    });
    await first.owner.close(); // the owner is down...
    clock.advance(70_000); // ...through the moment, and 60 s past it
    const second = await harness(clock, { dataDir });
    await until(() => second.calls.length === 1, "the unbounded delay's call");
    expect(second.calls[0].input).toEqual({ k: "late" });
    expect(second.calls[0].scheduled?.due.getTime()).toBe(T0 + 10_000);
    await until(async () => (await occurrences(second, late.delayId))[0]?.status === "completed", "the late occurrence recorded");
    expect((await occurrences(second, late.delayId))[0]).toMatchObject({ lateness_ms: 60_000, attempts: 1 });
    for (const [d, bound] of [
      [bounded, "5000 ms"],
      [onTime, "on time or never"],
    ] as const) {
      expect(await occurrences(second, d.delayId)).toEqual([
        expect.objectContaining({ status: "skipped", attempts: 0, due_ms: T0 + 10_000, lateness_ms: 60_000, error: expect.stringContaining(bound) }),
      ]);
      expect((await second.time.getTimer({ timerId: d.delayId })).timer?.nextDue).toBeUndefined();
    }
    const skipped = await eventsOf(second.client, ["timer.skipped"]);
    expect(skipped.map((e) => e.data?.timer_id).sort()).toEqual([bounded.delayId, onTime.delayId].sort());
    expect(skipped[0].data).toMatchObject({ action: "remind.send", due_ms: T0 + 10_000, lateness_ms: 60_000 });
    expect(second.calls).toHaveLength(1);
    // Within its bound a bounded delay is made.
    const inTime = await second.time.delay({
      action: "remind.send",
      input: { k: "in time" },
      when: { case: "intervalMs", value: 1_000n },
      overdue: { bound: { case: "maxLatenessMs", value: 5_000n } },
    });
    clock.advance(5_000); // 4 s late, within 5 s
    await until(() => second.calls.length === 2, "the bounded delay within its bound");
    expect(second.calls[1].scheduled?.timerId).toBe(inTime.delayId);
  });

  it("an occurrence claimed but not called when its owner stopped is called at the restart with the same call id, or skipped if its bound has passed", async () => {
    const clock = new ManualClock(T0);
    const dataDir = tempDir();
    const first = await harness(clock, { dataDir, executor: false }); // no executor: the calls wait for one
    const strict = await first.time.delay({
      action: "remind.send",
      input: { k: "strict" },
      when: { case: "intervalMs", value: 1_000n },
      overdue: { bound: { case: "onTimeOrNever", value: true } },
    });
    const loose = await first.time.delay({
      action: "remind.send",
      input: { k: "loose" },
      when: { case: "intervalMs", value: 1_000n },
      overdue: { bound: { case: "unbounded", value: true } },
    });
    clock.advance(1_000);
    for (const d of [strict, loose]) await until(async () => (await occurrences(first, d.delayId))[0]?.status === "pending", "the claim");
    await first.owner.close(); // the calls were waiting for an executor: the occurrences stay pending
    clock.advance(60_000);
    const second = await harness(clock, { dataDir });
    await until(() => second.calls.length === 1, "the recovered call");
    const [looseRow] = await occurrences(second, loose.delayId);
    expect(second.calls[0].input).toEqual({ k: "loose" });
    expect(second.calls[0].callId).toBe(looseRow.id);
    expect(second.calls[0].scheduled?.due.getTime()).toBe(T0 + 1_000);
    await until(async () => (await occurrences(second, loose.delayId))[0]?.status === "completed", "the recovered call recorded");
    await until(async () => (await occurrences(second, strict.delayId))[0]?.status === "skipped", "the strict delay skipped");
    expect((await occurrences(second, strict.delayId))[0]).toMatchObject({
      lateness_ms: 60_000,
      attempts: 0,
      error: expect.stringContaining("on time or never"),
    });
    expect((await eventsOf(second.client, ["timer.skipped"])).map((e) => e.data?.timer_id)).toEqual([strict.delayId]);
    expect(second.calls).toHaveLength(1);
  });

  it("under a cause: the id is derived (a retried request changes nothing) and the calls run as the cause's actor", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock);
    await h.client.registerPlugin({ name: "orders", events: { "order.placed": { allow: ["*"] } } });
    const placed = (await h.client.emit("order.placed", { id: 7 }, { actor: { id: "user:bob", in: "space:shop" } })).event!;
    const cause = { eventId: placed.id, position: 0 };
    const request = {
      action: "remind.send",
      input: { order: 7 },
      when: { case: "intervalMs" as const, value: 5_000n },
      overdue: { bound: { case: "unbounded" as const, value: true } },
      cause,
    };
    const a = await h.time.delay(request);
    clock.advance(1_000);
    const b = await h.time.delay(request); // a retried run: the same delay, not a second one
    expect(b).toEqual(a);
    await expectConnectError(h.time.delay({ ...request, actor: { id: "user:eve" } }), Code.InvalidArgument, /actor must be empty under a cause/);
    const scheduled = await eventsOf(h.client, ["timer.scheduled"]);
    expect(scheduled).toHaveLength(1);
    expect(scheduled[0].cause).toBe(placed.id);
    expect(scheduled[0].actor).toMatchObject({ id: "user:bob", in: "space:shop" });
    const timer = await h.time.schedule({ action: "remind.send", spec: every(60_000), cause: { eventId: placed.id, position: 1 } });
    expect((await h.time.schedule({ action: "remind.send", spec: every(60_000), cause: { eventId: placed.id, position: 1 } })).timer?.id).toBe(timer.timer?.id);
    clock.advance(4_000);
    await until(() => h.calls.length === 1, "the delayed call");
    expect(h.calls[0].actor).toMatchObject({ id: "user:bob", in: "space:shop" });
    expect(h.calls[0].scheduled?.timerId).toBe(a.delayId);
  });

  it("ListTimers lists the timers without a next due moment by last change, not id, and pages through them", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock);
    await h.time.schedule({ timerId: "z-fires-first", action: "remind.send", spec: at(T0 + 1_000) });
    await h.time.schedule({ timerId: "a-fires-second", action: "remind.send", spec: at(T0 + 2_000) });
    await h.time.schedule({ timerId: "m-pending", action: "remind.send", spec: at(T0 + 60_000) });
    clock.advance(1_000);
    await until(() => h.calls.length === 1, "the first one-shot's call");
    clock.advance(1_000);
    await until(() => h.calls.length === 2, "the second one-shot's call");

    const all = (await h.time.listTimers({})).timers.map((t) => t.id);
    expect(all).toEqual(["m-pending", "z-fires-first", "a-fires-second"]); // spent: in the order they fired
    const paged: string[] = [];
    let pageToken = "";
    do {
      const page = await h.time.listTimers({ pageSize: 1, pageToken });
      paged.push(...page.timers.map((t) => t.id));
      pageToken = page.nextPageToken;
    } while (pageToken);
    expect(paged).toEqual(all);
    const olderOwnersToken = Buffer.from(JSON.stringify([null, "z-fires-first"])).toString("base64url"); // the tail's token before it was ordered by last change
    await expectConnectError(h.time.listTimers({ pageToken: olderOwnersToken }), Code.InvalidArgument, /older owner/);
  });

  it("ListTimers orders by next due and pages; GetTimer previews the next fire times", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock);
    await h.time.schedule({ timerId: "c-cron", action: "remind.send", spec: cron("30 9 * * 1-5", "America/New_York") }); // 13:30Z on weekdays (EST)
    await h.time.schedule({ timerId: "a-at", action: "remind.send", spec: at(T0 + 3_600_000) });
    await h.time.schedule({ timerId: "b-every", action: "remind.send", spec: every(600_000) });
    const { delayId } = await h.time.delay({
      action: "remind.send",
      when: { case: "intervalMs", value: 1_000n },
      overdue: { bound: { case: "unbounded", value: true } },
    });
    clock.advance(1_000);
    await until(() => h.calls.length === 1, "the delay's call"); // spent: listed last

    const all = (await h.time.listTimers({})).timers;
    expect(all.map((t) => [t.id, iso(ms(t.nextDue))])).toEqual([
      ["b-every", "2026-03-02T12:10:00.000Z"],
      ["a-at", "2026-03-02T13:00:00.000Z"],
      ["c-cron", "2026-03-02T14:30:00.000Z"],
      [delayId, undefined],
    ]);
    const pages: string[][] = [];
    let pageToken = "";
    do {
      const page = await h.time.listTimers({ pageSize: 2, pageToken });
      pages.push(page.timers.map((t) => t.id));
      pageToken = page.nextPageToken;
    } while (pageToken);
    expect(pages.flat()).toEqual(all.map((t) => t.id));
    expect(pages[0]).toEqual(["b-every", "a-at"]);
    expect((await h.time.listTimers({ kind: TimerKind.DELAY })).timers.map((t) => t.id)).toEqual([delayId]);
    await expectConnectError(h.time.listTimers({ pageToken: "garbage" }), Code.InvalidArgument, /page_token/);
    await expectConnectError(h.time.listTimers({ kind: 99 as TimerKind }), Code.InvalidArgument, /kind 99 is not a timer kind/);

    const cronTimer: Timer = (await h.time.getTimer({ timerId: "c-cron", previewCount: 4 })).timer!;
    // Mon 2026-03-02 ... Thu 03-05 at 09:30 EST (New York changes to EDT on 03-08).
    expect(cronTimer.preview.map((t) => iso(ms(t)))).toEqual([
      "2026-03-02T14:30:00.000Z",
      "2026-03-03T14:30:00.000Z",
      "2026-03-04T14:30:00.000Z",
      "2026-03-05T14:30:00.000Z",
    ]);
    const later = (await h.time.getTimer({ timerId: "c-cron", previewCount: 6 })).timer!.preview.map((t) => iso(ms(t)));
    expect(later.slice(4)).toEqual(["2026-03-06T14:30:00.000Z", "2026-03-09T13:30:00.000Z"]); // the weekend skipped; EDT from Monday
    expect((await h.time.getTimer({ timerId: "a-at", previewCount: 5 })).timer!.preview.map(ms)).toEqual([T0 + 3_600_000]);
    await expectConnectError(h.time.getTimer({ timerId: "c-cron", previewCount: 101 }), Code.InvalidArgument, /preview_count/);
    await expectConnectError(h.time.getTimer({ timerId: "nope" }), Code.NotFound);
  });
});
