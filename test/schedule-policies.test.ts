// Schedules like Temporal's through the real transport (test/helpers/schedule-harness.ts): a cron
// schedule's DST policy, moments out of range, jitter, bounds and counts, pause and resume, trigger,
// backfill, and overlap and catch-up decided in the claim.

// @module-tag postgres

import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { ManualClock } from "../server/src/clock.js";
import { CatchUpPolicy, DstGap, DstRepeated, OverlapPolicy } from "@chronolog/sdk/gen/chronolog/v1/time_pb";
import { manifestOf, type ScheduleDefinition } from "../sdk/ts/src/plugin.js";
import { eventsOf, expectConnectError, expectUnchanged, logSnapshot } from "./helpers/log-snapshot.js";
import { tempDir } from "./helpers/owner.js";
import { until } from "./helpers/until.js";
import { DAY, HOUR, MIN, T0, at, cleanUpAfterEach, cron, fields, harness, iso, ms, occurrences } from "./helpers/schedule-harness.js";
import { jobsPlugin } from "./helpers/schedule-harness.js";

cleanUpAfterEach();

describe("through TimeService", () => {
  it("a cron schedule with a DST policy: stored, previewed and fired at the exact instants (Berlin 2026-10-25, repeated both)", async () => {
    const clock = new ManualClock(at("2026-10-24T12:00:00Z"));
    const h = await harness(clock);
    const timer = await h.client.schedule("jobs.run", {}, { cron: "30 2 * * *", zone: "europe/berlin", dst: { repeated: "both" } }, { timerId: "nightly" });
    expect(timer.spec?.when).toEqual({
      case: "cron",
      value: expect.objectContaining({
        expression: "30 2 * * *",
        zone: "Europe/Berlin",
        dst: expect.objectContaining({ gap: DstGap.SHIFT, repeated: DstRepeated.BOTH }),
      }),
    });
    const got = await h.client.getTimer("nightly", { previewCount: 3 });
    expect(got.preview.map((t) => iso(ms(t)))).toEqual(["2026-10-25T00:30:00.000Z", "2026-10-25T01:30:00.000Z", "2026-10-26T01:30:00.000Z"]);
    clock.set(at("2026-10-25T00:30:00Z"));
    await until(() => h.calls.length === 1, "the 02:30 CEST call");
    clock.set(at("2026-10-25T01:30:00Z"));
    await until(() => h.calls.length === 2, "the 02:30 CET call");
    expect(h.calls.map((c) => c.scheduled?.due.toISOString())).toEqual(["2026-10-25T00:30:00.000Z", "2026-10-25T01:30:00.000Z"]);
    expect((await eventsOf(h.client, ["timer.scheduled"]))[0].data?.spec).toEqual({ cron: "30 2 * * *", zone: "Europe/Berlin", dst_repeated: "both" });

    // Gap skip on Chicago's spring-forward Sunday (2027-03-14), through the raw API enum.
    clock.set(at("2027-03-13T12:00:00Z")); // rings the nightly one (one catch-up call)
    await until(() => h.calls.length === 3, "the nightly catch-up");
    await h.time.schedule({ timerId: "chicago", action: "jobs.run", spec: cron("30 2 * * *", "America/Chicago", { gap: DstGap.SKIP }) });
    const chicago = await h.client.getTimer("chicago", { previewCount: 2 });
    expect(chicago.preview.map((t) => iso(ms(t)))).toEqual(["2027-03-15T07:30:00.000Z", "2027-03-16T07:30:00.000Z"]); // not 03-14 03:30 CDT
  });
});

describe("moments out of range", () => {
  it("a first fire time more than 100 years ahead, or a bound outside years 1-9999, is INVALID_ARGUMENT naming the field; nothing stored", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock);
    const y9997 = Date.UTC(9997, 0, 1);
    expect(
      await fields(
        h.client.schedule("jobs.run", {}, { cron: "0 0 29 2 *", zone: "UTC" }, { timerId: "leap", policy: { start: y9997 } }),
        Code.InvalidArgument,
        /more than 100 years ahead/,
      ),
    ).toEqual(["policy.start"]);
    expect(
      await fields(
        h.client.schedule("jobs.run", {}, { everyMs: 3_153_600_000_000 }, { timerId: "far", policy: { start: Date.UTC(9999, 11, 31) } }),
        Code.InvalidArgument,
      ),
    ).toEqual(["policy.start"]);
    expect(
      await fields(
        h.client.schedule("jobs.run", {}, { everyMs: 60_000 }, { timerId: "end", policy: { end: Date.UTC(9999, 11, 31) + 2 * DAY } }),
        Code.InvalidArgument,
        /9999-12-31/,
      ),
    ).toEqual(["policy.end"]);
    const listed = [];
    for await (const t of h.client.listTimers()) listed.push(t.id);
    expect(listed).toEqual([]);
  });
});

describe("through TimeService: policies, pause and resume, trigger, backfill", () => {
  it("jitter: each call is made at its jittered moment, which is its `scheduled.due` and what GetTimer previews", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock);
    const timer = await h.client.schedule("jobs.run", {}, { everyMs: MIN }, { timerId: "jittered", policy: { jitterMs: 20_000 } });
    expect(timer.policy).toMatchObject({ jitterMs: 20_000n, overlap: OverlapPolicy.ALLOW, catchUp: CatchUpPolicy.LATEST });
    const previewed = (await h.client.getTimer("jittered", { previewCount: 3 })).preview.map((t) => ms(t)!);
    expect(ms(timer.nextDue)).toBe(previewed[0]);
    previewed.forEach((d, i) => {
      expect(d).toBeGreaterThanOrEqual(T0 + (i + 1) * MIN);
      expect(d).toBeLessThanOrEqual(T0 + (i + 1) * MIN + 20_000);
    });
    for (const [i, d] of previewed.entries()) {
      clock.set(d - 1);
      expect(h.calls).toHaveLength(i);
      clock.set(d);
      await until(() => h.calls.length === i + 1, `call ${i + 1}`);
    }
    expect(h.calls.map((c) => c.scheduled?.due.getTime())).toEqual(previewed);
    expect((await eventsOf(h.client, ["timer.scheduled"]))[0].data?.policy).toEqual({ jitter_ms: 20_000 });
  });

  it("a Schedule with a timer's id and the same definition (a retry) keeps its count, pause and moments; another definition starts a new timer: counted from 0, not paused", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock);
    const schedule = (k: string) => h.client.schedule("jobs.run", { k }, { everyMs: 10_000 }, { timerId: "counted", policy: { maxCount: 2 } });
    await schedule("v1");
    clock.set(T0 + 10_000);
    await until(() => h.calls.length === 1, "the first call");
    clock.set(T0 + 15_000);
    const retried = await schedule("v1");
    expect([retried.occurrences, ms(retried.nextDue)]).toEqual([1n, T0 + 20_000]); // its moments not moved by the retry
    const replaced = await schedule("v2");
    expect([replaced.occurrences, ms(replaced.nextDue)]).toEqual([0n, T0 + 25_000]);
    for (const [t, calls] of [
      [25_000, 2],
      [35_000, 3],
      [45_000, 3],
    ]) {
      clock.set(T0 + t);
      await until(() => h.calls.length === calls, `${calls} calls at +${t / 1000} s`);
    }
    expect(h.calls.map((c) => c.input.k)).toEqual(["v1", "v2", "v2"]);
    await h.client.schedule("jobs.run", { k: "p" }, { everyMs: 10_000 }, { timerId: "paused" });
    await h.client.pauseTimer("paused");
    expect((await h.client.schedule("jobs.run", { k: "p" }, { everyMs: 10_000 }, { timerId: "paused" })).paused).toBe(true);
    expect((await h.client.schedule("jobs.run", { k: "p2" }, { everyMs: 10_000 }, { timerId: "paused" })).paused).toBe(false);
  });

  it("start and end bound the moments and max_count ends the timer after its last occurrence (spent: no next due, no preview)", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock);
    const bounded = await h.client.schedule(
      "jobs.run",
      { k: "bounded" },
      { everyMs: 10_000 },
      { timerId: "bounded", policy: { start: T0 + 25_000, end: T0 + 50_000 } },
    );
    expect(ms(bounded.nextDue)).toBe(T0 + 30_000);
    expect((await h.client.getTimer("bounded", { previewCount: 5 })).preview.map(ms)).toEqual([T0 + 30_000, T0 + 40_000]);
    await h.client.schedule("jobs.run", { k: "counted" }, { everyMs: 10_000 }, { timerId: "counted", policy: { maxCount: 2 } });
    expect((await h.client.getTimer("counted", { previewCount: 5 })).preview.map(ms)).toEqual([T0 + 10_000, T0 + 20_000]);
    for (const [t, expected] of [
      [10_000, 1],
      [20_000, 2],
      [30_000, 3],
      [40_000, 4],
      [50_000, 4],
      [60_000, 4],
    ]) {
      clock.set(T0 + t);
      await until(() => h.calls.length === expected, `${expected} calls at +${t / 1000} s`);
    }
    await until(() => h.calls.length === 4, "four calls");
    expect(h.calls.map((c) => `${c.input.k}@${(c.scheduled!.due.getTime() - T0) / 1000}`).sort()).toEqual([
      "bounded@30",
      "bounded@40",
      "counted@10",
      "counted@20",
    ]);
    for (const id of ["bounded", "counted"]) {
      const t = await h.client.getTimer(id, { previewCount: 3 });
      expect(t.nextDue).toBeUndefined();
      expect(t.preview).toEqual([]);
      expect(t.occurrences).toBe(2n);
    }
    clock.advance(HOUR);
    expect(h.calls).toHaveLength(4);
    expect(clock.armed()).toEqual([]);
  });

  it("pause with a note claims nothing; resume owes the latest missed occurrence (catch-up latest) or none (catch-up none); both are recorded", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock);
    await h.client.schedule("jobs.run", { k: "p" }, { everyMs: MIN }, { timerId: "p" });
    await h.client.schedule("jobs.run", { k: "q" }, { everyMs: MIN }, { timerId: "q", policy: { catchUp: "none" } });
    clock.advance(MIN);
    await until(() => h.calls.length === 2, "the first calls");

    const paused = await h.client.pauseTimer("p", { note: "maintenance window" });
    expect(paused.unchanged).toBe(false);
    expect(paused.timer).toMatchObject({ paused: true, pauseNote: "maintenance window" });
    expect(paused.timer.nextDue).toBeUndefined();
    expect(ms(paused.timer.pausedAt)).toBe(T0 + MIN);
    expect((await h.client.pauseTimer("p", { note: "again" })).unchanged).toBe(true);
    await h.client.pauseTimer("q");
    expect((await h.client.getTimer("p", { previewCount: 2 })).preview.map(ms)).toEqual([T0 + 2 * MIN, T0 + 3 * MIN]); // what it would have if resumed now

    clock.advance(10 * MIN + 30_000); // T0 + 11.5 min: ten moments pass
    expect(h.calls).toHaveLength(2);
    expect(await occurrences(h, "p")).toHaveLength(1);

    const resumed = await h.client.resumeTimer("p", { note: "done" });
    expect(resumed.unchanged).toBe(false);
    expect(resumed.timer.paused).toBe(false);
    expect(ms(resumed.timer.nextDue)).toBe(T0 + 11 * MIN); // the latest missed moment (30 s ago), owed at once
    await until(() => h.calls.length === 3, "the one owed occurrence");
    expect(h.calls[2]).toMatchObject({ input: { k: "p" } });
    expect(h.calls[2].scheduled?.due.getTime()).toBe(T0 + 11 * MIN);
    const q = await h.client.resumeTimer("q");
    expect(ms(q.timer.nextDue)).toBe(T0 + 12 * MIN); // catch-up none: 11 min is 30 s late, not owed
    expect((await h.client.resumeTimer("q")).unchanged).toBe(true);
    clock.set(T0 + 12 * MIN); // on time: catch-up none makes it
    await until(() => h.calls.length === 5, "both on their cadence again");
    expect(await occurrences(h, "p")).toHaveLength(3);
    expect(await occurrences(h, "q")).toHaveLength(2);

    const log = await eventsOf(h.client, ["timer.paused", "timer.resumed"]);
    expect(log.map((e) => `${e.type} ${e.data?.timer_id}`)).toEqual(["timer.paused p", "timer.paused q", "timer.resumed p", "timer.resumed q"]);
    expect(log[0].data).toMatchObject({ kind: "runtime", action: "jobs.run", note: "maintenance window", held_due_ms: T0 + 2 * MIN });
    expect(log[2].data).toMatchObject({ note: "done", paused_at_ms: T0 + MIN, next_due_ms: T0 + 11 * MIN });
  });

  it("pause and resume refuse what cannot be paused; a declared schedule (policy, DST, canonical zone from the SDK) stays paused across registrations and restarts", async () => {
    const clock = new ManualClock(T0);
    const dataDir = tempDir();
    const schedules: Record<string, ScheduleDefinition> = {
      nightly: { action: "run", cron: "30 2 * * *", zone: "utc", dst: { gap: "skip" }, policy: { maxCount: 3, overlap: "skip" } },
    };
    let h = await harness(clock, { dataDir, schedules });
    const declared = await h.client.getTimer("jobs/nightly", { previewCount: 4 });
    expect(declared.spec?.when).toEqual({
      case: "cron",
      value: expect.objectContaining({ zone: "UTC", dst: expect.objectContaining({ gap: DstGap.SKIP, repeated: DstRepeated.FIRST }) }),
    });
    expect(declared.policy).toMatchObject({ maxCount: 3n, overlap: OverlapPolicy.SKIP });
    expect(declared.preview.map((t) => iso(ms(t)))).toEqual(["2026-03-03T02:30:00.000Z", "2026-03-04T02:30:00.000Z", "2026-03-05T02:30:00.000Z"]); // max_count 3
    await h.client.pauseTimer("jobs/nightly", { note: "quiet week" });
    await h.client.registerPlugin(manifestOf(jobsPlugin([], { open: true }, schedules))); // the same manifest again
    expect(await h.client.getTimer("jobs/nightly")).toMatchObject({ paused: true, pauseNote: "quiet week" });
    await h.owner.close();
    clock.advance(3 * DAY);
    h = await harness(clock, { dataDir, schedules });
    const after = await h.client.getTimer("jobs/nightly");
    expect(after).toMatchObject({ paused: true, pauseNote: "quiet week" });
    expect(after.nextDue).toBeUndefined();
    expect(h.calls).toEqual([]);
    const resumed = await h.client.resumeTimer("jobs/nightly");
    expect(iso(ms(resumed.timer.nextDue))).toBe("2026-03-05T02:30:00.000Z"); // the latest missed moment (now 2026-03-05T12:00Z)
    await until(() => h.calls.length === 1, "the owed occurrence");

    // What cannot be paused, and bad requests (checked before anything else).
    const delay = await h.client.delay("jobs.run", {}, { intervalMs: MIN }, "unbounded");
    await h.client.schedule("jobs.run", {}, { at: clock.now() + HOUR }, { timerId: "once" });
    const before = await logSnapshot(h.client);
    await expectConnectError(h.client.pauseTimer(delay.delayId), Code.FailedPrecondition, /a delay cannot be paused; cancel it/);
    await expectConnectError(h.client.pauseTimer("once"), Code.FailedPrecondition, /one-shot \(at\): only recurring timers/);
    await expectConnectError(h.client.resumeTimer("once"), Code.FailedPrecondition, /one-shot/);
    await expectConnectError(h.client.pauseTimer("nope"), Code.NotFound, /no timer "nope"/);
    expect(await fields(h.time.pauseTimer({ timerId: "" }), Code.InvalidArgument, /timer_id is required/)).toEqual(["timer_id"]);
    // A timer id that no timer can have is INVALID_ARGUMENT before NOT_FOUND, whatever looks it up.
    expect(await fields(h.time.getTimer({ timerId: "" }), Code.InvalidArgument, /timer_id is required/)).toEqual(["timer_id"]);
    expect(await fields(h.time.getTimer({ timerId: "x\u0001" }), Code.InvalidArgument, /timer_id contains a control character/)).toEqual(["timer_id"]);
    expect(await fields(h.time.unschedule({ timerId: "   " }), Code.InvalidArgument, /timer_id is only whitespace/)).toEqual(["timer_id"]);
    expect(await fields(h.time.cancelDelay({ delayId: "d\n" }), Code.InvalidArgument, /delay_id contains a control character/)).toEqual(["delay_id"]);
    expect(await fields(h.time.resumeTimer({ timerId: "y".repeat(300) }), Code.InvalidArgument, /timer_id/)).toEqual(["timer_id"]);
    expect(await fields(h.client.pauseTimer("nope", { note: "x".repeat(1_001) }), Code.InvalidArgument, /note is longer than 1000/)).toEqual(["note"]);
    await expectUnchanged(h.client, before);
  });

  it("trigger now: one occurrence with its own id, due now, as the timer's actor, paused or not, not counted; under a cause a retried run triggers once", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock);
    await h.client.schedule("jobs.run", { k: "t" }, { everyMs: HOUR }, { timerId: "hourly", actor: { id: "user:ana", in: "space:acme" } });
    await h.client.pauseTimer("hourly");
    clock.advance(5_000);
    const { occurrenceId, due } = await h.client.triggerTimer("hourly");
    expect(due.getTime()).toBe(T0 + 5_000);
    await until(() => h.calls.length === 1, "the triggered call");
    const [ctx] = h.calls;
    expect(ctx.callId).toBe(occurrenceId);
    expect(ctx.scheduled).toEqual({ timerId: "hourly", due: new Date(T0 + 5_000), occurrenceId });
    expect(ctx.actor).toMatchObject({ id: "user:ana", in: "space:acme" });
    expect(ctx.input).toEqual({ k: "t" });
    await until(async () => (await occurrences(h, "hourly"))[0]?.status === "completed", "recorded");
    expect(await occurrences(h, "hourly")).toEqual([{ id: occurrenceId, due_ms: T0 + 5_000, status: "completed", origin: "trigger", error: "" }]);
    expect(await h.client.getTimer("hourly")).toMatchObject({ occurrences: 0n, paused: true });
    const second = await h.client.triggerTimer("hourly");
    expect(second.occurrenceId).not.toBe(occurrenceId);
    await until(() => h.calls.length === 2, "a second trigger, another occurrence");

    // Under a cause (work of a delivery or a run): derived id, so a retry is the same occurrence.
    await h.client.registerPlugin({ name: "orders", events: { "order.placed": { allow: ["*"] } } });
    const placed = (await h.client.emit("order.placed", {})).event!;
    const cause = { eventId: placed.id, position: 0 };
    const a = await h.client.triggerTimer("hourly", { cause });
    const b = await h.client.triggerTimer("hourly", { cause });
    expect(b).toEqual(a);
    await until(() => h.calls.length === 3, "the cause's trigger");
    const triggered = await eventsOf(h.client, ["timer.triggered"]);
    expect(triggered).toHaveLength(3);
    expect(triggered[2]).toMatchObject({ cause: placed.id, data: { timer_id: "hourly", occurrence_id: a.occurrenceId, due_ms: a.due.getTime() } });

    const delay = await h.client.delay("jobs.run", {}, { intervalMs: MIN }, "unbounded");
    await expectConnectError(h.client.triggerTimer(delay.delayId), Code.FailedPrecondition, /is a delay/);
    await expectConnectError(h.client.triggerTimer("nope"), Code.NotFound);
    clock.advance(DAY);
    expect(h.calls).toHaveLength(3); // still paused
  });

  it("backfill: one occurrence per fire time in [start, end), called in order with its own due moment; moments already made are not made again", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock);
    await h.client.schedule("jobs.run", {}, { cron: "0 * * * *" }, { timerId: "hourly" });
    const made = await h.client.backfillTimer("hourly", T0 - 5 * HOUR, T0 - 2 * HOUR);
    expect(made.map((o) => [iso(o.due.getTime()), o.existing])).toEqual([
      ["2026-03-02T07:00:00.000Z", false],
      ["2026-03-02T08:00:00.000Z", false],
      ["2026-03-02T09:00:00.000Z", false],
    ]);
    await until(() => h.calls.length === 3, "the backfilled calls");
    expect(h.calls.map((c) => iso(c.scheduled?.due.getTime()))).toEqual(["2026-03-02T07:00:00.000Z", "2026-03-02T08:00:00.000Z", "2026-03-02T09:00:00.000Z"]);
    expect(h.calls.map((c) => c.callId)).toEqual(made.map((o) => o.occurrenceId));
    const again = await h.client.backfillTimer("hourly", T0 - 3 * HOUR, T0 - HOUR + 1);
    expect(again.map((o) => [iso(o.due.getTime()), o.existing])).toEqual([
      ["2026-03-02T09:00:00.000Z", true],
      ["2026-03-02T10:00:00.000Z", false],
      ["2026-03-02T11:00:00.000Z", false],
    ]);
    await until(() => h.calls.length === 5, "only the new moments");
    await until(async () => (await occurrences(h, "hourly")).every((o) => o.status === "completed"), "all completed");
    expect((await occurrences(h, "hourly")).map((o) => o.origin)).toEqual(Array(5).fill("backfill"));
    expect(h.owner.lateness.snapshot().maxMs).toBeLessThan(HOUR); // hours-old moments by design: not the clock's lateness
    const log = await eventsOf(h.client, ["timer.backfilled"]);
    expect(log.map((e) => e.data)).toEqual([
      expect.objectContaining({
        timer_id: "hourly",
        start_ms: T0 - 5 * HOUR,
        end_ms: T0 - 2 * HOUR,
        occurrence_ids: made.map((o) => o.occurrenceId),
        existing: 0,
      }),
      expect.objectContaining({ occurrence_ids: again.slice(1).map((o) => o.occurrenceId), existing: 1 }),
    ]);
    // The schedule goes on; a backfill of nothing new records nothing.
    expect(await h.client.getTimer("hourly")).toMatchObject({ occurrences: 0n });
    expect((await h.client.backfillTimer("hourly", T0 - 5 * HOUR, T0 - 4 * HOUR))[0]?.existing).toBe(true);
    expect(await eventsOf(h.client, ["timer.backfilled"])).toHaveLength(2);

    const before = await logSnapshot(h.client);
    expect(await fields(h.client.backfillTimer("hourly", T0, T0 + HOUR), Code.InvalidArgument, /end .* is in the future/)).toEqual(["end"]);
    expect(await fields(h.client.backfillTimer("hourly", T0 - HOUR, T0 - HOUR), Code.InvalidArgument, /must be after start/)).toEqual(["end"]);
    expect(await fields(h.time.backfillTimer({ timerId: "hourly", end: timestampFromMs(T0) }), Code.InvalidArgument, /start is required/)).toEqual(["start"]);
    expect(await fields(h.client.backfillTimer("hourly", T0 - 50 * DAY, T0), Code.InvalidArgument, /more than 1000 fire times/)).toEqual(["end"]);
    await expectConnectError(h.client.backfillTimer("nope", T0 - HOUR, T0), Code.NotFound);
    await expectUnchanged(h.client, before);
    const delay = await h.client.delay("jobs.run", {}, { intervalMs: MIN }, "unbounded");
    await expectConnectError(
      h.client.backfillTimer(delay.delayId, T0 - HOUR, T0),
      Code.FailedPrecondition,
      /is a delay: only recurring timers \(cron, every_ms\) can be backfilled/,
    );
  });
});

describe("overlap and catch-up in the claim", () => {
  it("overlap skip: an occurrence due while the previous one runs is skipped (timer.skipped); the next one after it ended is made", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock);
    h.gate.open = false;
    await h.client.schedule("jobs.slow", {}, { everyMs: MIN }, { timerId: "s", policy: { overlap: "skip" } });
    clock.advance(MIN);
    await until(() => h.calls.length === 1, "the first (slow) call");
    clock.advance(MIN);
    await until(async () => (await occurrences(h, "s"))[1]?.status === "skipped", "the second skipped");
    expect((await occurrences(h, "s"))[1]).toMatchObject({ due_ms: T0 + 2 * MIN, error: expect.stringMatching(/overlap policy skip/) });
    expect((await eventsOf(h.client, ["timer.skipped"])).map((e) => e.data?.due_ms)).toEqual([T0 + 2 * MIN]);
    h.gate.open = true;
    await until(async () => (await occurrences(h, "s"))[0]?.status === "completed", "the first ended");
    clock.advance(MIN);
    await until(() => h.calls.length === 2, "the third made");
    expect(h.calls[1].scheduled?.due.getTime()).toBe(T0 + 3 * MIN);
  });

  it("overlap buffer one: one occurrence is held while the previous runs and made when it ends; a further one is skipped", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock);
    h.gate.open = false;
    await h.client.schedule("jobs.slow", {}, { everyMs: MIN }, { timerId: "b", policy: { overlap: "bufferOne" } });
    clock.advance(MIN);
    await until(() => h.calls.length === 1, "the first (slow) call");
    clock.advance(MIN);
    await until(async () => (await occurrences(h, "b"))[1]?.status === "buffered", "the second buffered");
    clock.advance(MIN);
    await until(async () => (await occurrences(h, "b"))[2]?.status === "skipped", "the third skipped");
    expect(h.calls).toHaveLength(1);
    h.gate.open = true;
    await until(() => h.calls.length === 2, "the buffered one, once the first ended");
    expect(h.calls[1].scheduled?.due.getTime()).toBe(T0 + 2 * MIN);
    await until(async () => (await occurrences(h, "b")).map((o) => o.status).join() === "completed,completed,skipped", "recorded");
  });

  it("overlap buffer one inside the lookahead: buffered ahead of its moment while the previous runs, made at its moment (not before) when that one ends first", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock, { holds: false, lookaheadMs: 100 }); // the owner sends at the moment on its (manual) clock
    h.gate.open = false;
    await h.client.schedule("jobs.slow", {}, { everyMs: MIN }, { timerId: "early", policy: { overlap: "bufferOne" } });
    clock.advance(MIN);
    await until(() => h.calls.length === 1, "the first (slow) call");
    clock.set(T0 + 2 * MIN - 60); // inside the 100 ms lookahead of the second moment
    await until(async () => (await occurrences(h, "early"))[1]?.status === "buffered", "the second buffered ahead");
    h.gate.open = true; // the first ends 60 ms before the second's moment
    await until(async () => (await occurrences(h, "early"))[0]?.status === "completed", "the first ended");
    await new Promise((r) => setTimeout(r, 200));
    expect(h.calls).toHaveLength(1); // not made early
    clock.set(T0 + 2 * MIN);
    await until(() => h.calls.length === 2, "the buffered one, at its moment");
    expect(h.calls[1].scheduled?.due.getTime()).toBe(T0 + 2 * MIN);
    await until(async () => (await occurrences(h, "early")).map((o) => o.status).join() === "completed,completed", "recorded");
  });

  it("overlap skip inside the lookahead is judged at the moment: a previous run that ends before it does not skip it; one still running then does", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock, { holds: false, lookaheadMs: 250 });
    h.gate.open = false;
    await h.client.schedule("jobs.slow", {}, { everyMs: MIN }, { timerId: "k", policy: { overlap: "skip" } });
    clock.advance(MIN);
    await until(() => h.calls.length === 1, "the first (slow) call");
    clock.set(T0 + 2 * MIN - 200); // inside the lookahead of the second moment, the first still running
    await new Promise((r) => setTimeout(r, 100));
    expect(await occurrences(h, "k")).toHaveLength(1); // not skipped ahead of its moment
    h.gate.open = true; // the first ends 200 ms before the second's moment
    await until(async () => (await occurrences(h, "k"))[0]?.status === "completed", "the first ended");
    clock.set(T0 + 2 * MIN - 150); // a later ring claims it, still ahead
    await until(async () => (await occurrences(h, "k"))[1]?.status === "pending", "the second claimed ahead");
    expect(h.calls).toHaveLength(1); // not made early
    h.gate.open = false;
    clock.set(T0 + 2 * MIN);
    await until(() => h.calls.length === 2, "the second, at its moment");
    expect(h.calls[1].scheduled?.due.getTime()).toBe(T0 + 2 * MIN);
    clock.set(T0 + 3 * MIN - 100); // the second still runs inside the third's lookahead, and at its moment
    await new Promise((r) => setTimeout(r, 100));
    expect(await occurrences(h, "k")).toHaveLength(2);
    clock.set(T0 + 3 * MIN);
    await until(async () => (await occurrences(h, "k"))[2]?.status === "skipped", "the third skipped at its moment");
    expect((await eventsOf(h.client, ["timer.skipped"])).map((e) => e.data?.due_ms)).toEqual([T0 + 3 * MIN]);
    h.gate.open = true;
  });

  it("catch-up all within a window: after an outage every missed occurrence in the window is made, in order", async () => {
    const clock = new ManualClock(T0);
    const dataDir = tempDir();
    let h = await harness(clock, { dataDir });
    await h.client.schedule("jobs.run", {}, { everyMs: MIN }, { timerId: "w", policy: { catchUp: "allWithinWindow", catchUpWindowMs: 3 * MIN } });
    await h.owner.close();
    clock.advance(10 * MIN + 30_000);
    h = await harness(clock, { dataDir });
    await until(() => h.calls.length === 3, "the three moments within the window");
    expect(h.calls.map((c) => c.scheduled!.due.getTime() - T0)).toEqual([8 * MIN, 9 * MIN, 10 * MIN]);
    expect(ms((await h.client.getTimer("w")).nextDue)).toBe(T0 + 11 * MIN);
  });
});
