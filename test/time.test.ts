// Time through the real transport: TimeService over gRPC, an
// in-process SDK executor hosting the action, the owner's real store and committer.
//
// Rules are tested on a ManualClock passed as both `clock` and `timers` (the TimerHost where
// the owner arms its one timer): `clock.advance(ms)` moves time and rings the armed timer at
// once, and `clock.armed()` shows what the owner armed (delay clamped to 2^31-1 ms). Nothing
// waits for real time except the message round trips (`until`). Owners here get a 10-minute
// heartbeat interval so a manual clock moved by days never trips the executor watchdog.
// The last describe runs real owner processes killed with SIGKILL on the real clock.
//
// @module-tag postgres

import { create } from "@bufbuild/protobuf";
import { timestampFromMs, timestampMs, type Timestamp } from "@bufbuild/protobuf/wkt";
import { Code, createClient as createRpcClient, type Client } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../server/src/clock.js";
import { createClient, type ChronologClient } from "../sdk/ts/src/client.js";
import { runExecutor, type ActionContext, type Executor } from "../sdk/ts/src/executor.js";
import { AdminService } from "@chronolog/sdk/gen/chronolog/v1/admin_pb";
import {
  ActionResultBatchSchema,
  ActionResultSchema,
  ExecutorService,
  HelloSchema,
  Outcome,
  type Invocation,
  type SubscribeRequest,
} from "@chronolog/sdk/gen/chronolog/v1/executor_pb";
import { TimeService, TimerKind, type Timer } from "@chronolog/sdk/gen/chronolog/v1/time_pb";
import { BadRequestSchema } from "@chronolog/sdk/gen/google/rpc/error_details_pb";
import { definePlugin, manifestOf, type PluginDefinition } from "../sdk/ts/src/plugin.js";
import { expectConnectError, expectUnchanged, logSnapshot } from "./helpers/log-snapshot.js";
import { ownerRows, spawnOwner, startTestOwner, tempDir, type OwnerProcess } from "./helpers/owner.js";
import { until } from "./helpers/until.js";
import { eventsOf } from "./helpers/log-snapshot.js";

type TestOwner = Awaited<ReturnType<typeof startTestOwner>>;
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/** 2026-03-02T12:00:00Z, a Monday. */
const T0 = Date.UTC(2026, 2, 2, 12);
const DAY = 86_400_000;

interface Harness {
  owner: TestOwner;
  client: ChronologClient;
  time: Client<typeof TimeService>;
  admin: Client<typeof AdminService>;
  /** Every invocation the executor ran, in order. */
  calls: ActionContext[];
}

/** A plugin whose actions record their invocations in `calls`. */
function remindPlugin(calls: ActionContext[]): PluginDefinition {
  return definePlugin({
    name: "remind",
    actions: {
      send: {
        allow: ["*"],
        run(ctx) {
          calls.push(ctx);
          return { n: calls.length };
        },
      },
      strict: {
        allow: ["*"],
        inputSchema: { type: "object", required: ["to"], properties: { to: { type: "string" } } },
        run: () => ({}),
      },
      quick: {
        allow: ["*"],
        timeoutMs: 200, // waits for a host at most this long
        run(ctx) {
          calls.push(ctx);
          return {};
        },
      },
    },
  });
}

async function executor(url: string, plugin: PluginDefinition, token?: string, holds?: boolean): Promise<Executor> {
  const ex = runExecutor({ url, plugins: [plugin], credits: 16, maxBackoffMs: 200, token, holds, onError: () => {} });
  cleanups.push(() => ex.stop(100));
  await ex.ready;
  return ex;
}

/**
 * An in-process owner on `clock` (also its TimerHost), its clients, and an executor hosting
 * `remind` (`holds`: false for one the owner sends calls of time to at their moment on `clock`).
 */
async function harness(
  clock: ManualClock,
  options: { dataDir?: string; calls?: ActionContext[]; executor?: boolean; lookaheadMs?: number; holds?: boolean } = {},
): Promise<Harness> {
  const lookahead = options.lookaheadMs === undefined ? {} : { timerLookaheadMs: options.lookaheadMs };
  const owner = await startTestOwner({
    clock,
    timers: clock,
    heartbeatIntervalMs: 600_000,
    shutdownGraceMs: 200,
    ...lookahead,
    ...(options.dataDir ? { dataDir: options.dataDir } : {}),
  });
  const closeOwner = owner.close.bind(owner);
  let closed: Promise<void> | undefined;
  const close = () => (closed ??= closeOwner());
  cleanups.push(close);
  const client = createClient({ url: owner.url });
  const calls = options.calls ?? [];
  const plugin = remindPlugin(calls);
  await client.registerPlugin(manifestOf(plugin));
  if (options.executor !== false) await executor(owner.url, plugin, undefined, options.holds);
  return {
    owner: Object.assign(owner, { close }),
    client,
    time: createRpcClient(TimeService, client.transport),
    admin: createRpcClient(AdminService, client.transport),
    calls,
  };
}

const at = (ms: number) => ({ when: { case: "at" as const, value: timestampFromMs(ms) } });
const every = (ms: number) => ({ when: { case: "everyMs" as const, value: BigInt(ms) } });
const cron = (expression: string, zone = "") => ({ when: { case: "cron" as const, value: { expression, zone } } });
const ms = (t: Timestamp | undefined) => (t ? timestampMs(t) : undefined);
const iso = (t: number | undefined) => (t === undefined ? undefined : new Date(t).toISOString());

/** The occurrence rows of `timerId`, by due moment. */
function occurrences(h: Harness, timerId: string): Promise<Record<string, unknown>[]> {
  return ownerRows(h, "SELECT id, due_ms, status, attempts, call_id, lateness_ms, error FROM timer_occurrences WHERE timer_id = ? ORDER BY due_ms", [timerId]);
}

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

describe("the clock's lookahead: claimed and started ahead, sent at the moment to an executor that does not hold", () => {
  const due = T0 + 60_000;
  const started = async (h: Harness) => (await eventsOf(h.client, ["action.started"])).length;
  /** Real time for an Invocation that should not be sent to have arrived if it had been. */
  const settle = () => new Promise((r) => setTimeout(r, 150));

  it("rings 50 ms ahead: the claim and action.started commit then; the Invocation is sent at the moment itself, 0 ms late", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock, { lookaheadMs: 50, holds: false });
    await h.time.schedule({ timerId: "ahead", action: "remind.send", input: {}, spec: at(due) });
    expect(clock.armed()).toEqual([{ atMs: due - 50, delayMs: 60_000 - 50 }]);
    clock.set(due - 40);
    await until(async () => (await started(h)) === 1, "action.started committed ahead of the moment");
    expect((await occurrences(h, "ahead"))[0]).toMatchObject({ status: "pending", due_ms: due });
    await settle();
    expect(h.calls).toEqual([]); // held until the moment
    clock.set(due);
    await until(() => h.calls.length === 1, "the call at its moment");
    expect(h.calls[0].scheduled?.due.getTime()).toBe(due);
    expect(h.calls[0].attempt).toBe(1);
    await until(async () => (await occurrences(h, "ahead"))[0]?.status === "completed", "the occurrence's end");
    expect((await occurrences(h, "ahead"))[0]).toMatchObject({ lateness_ms: 0, attempts: 1 });
    expect(h.owner.lateness.snapshot()).toMatchObject({ count: 1, maxMs: 0 });
  });

  it("a moment missed while paused is still made when the resume lands inside the lookahead of the next one (then the next, at its moment)", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock, { lookaheadMs: 50, holds: false });
    await h.time.schedule({ timerId: "minutely", action: "remind.send", input: {}, spec: every(60_000) });
    await h.client.pauseTimer("minutely");
    clock.set(T0 + 120_000 - 11); // its moment T0+60s passed while paused; the next is 11 ms away
    await h.client.resumeTimer("minutely");
    await until(() => h.calls.length === 1, "the missed moment, made at once");
    clock.set(T0 + 120_000);
    await until(() => h.calls.length === 2, "the next moment");
    expect(h.calls.map((c) => c.scheduled?.due.getTime())).toEqual([T0 + 60_000, T0 + 120_000]);
  });

  it("a cancel inside the lookahead comes too late: NOT_FOUND, and the delay is called once at its moment", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock, { lookaheadMs: 50, holds: false });
    const { delayId } = await h.time.delay({
      action: "remind.send",
      when: { case: "at", value: timestampFromMs(due) },
      overdue: { bound: { case: "unbounded", value: true } },
    });
    clock.set(due - 10);
    await until(async () => (await started(h)) === 1, "made ahead of the moment");
    await expectConnectError(h.time.cancelDelay({ delayId }), Code.NotFound);
    clock.set(due);
    await until(() => h.calls.length === 1, "the call at its moment");
    await settle();
    expect(h.calls.map((c) => c.scheduled?.timerId)).toEqual([delayId]);
  });

  it("an owner stopped between the start and the moment: the next one sends it at the moment, once, as the next attempt", async () => {
    const clock = new ManualClock(T0);
    const dataDir = tempDir();
    const first = await harness(clock, { dataDir, lookaheadMs: 50, holds: false });
    await first.time.schedule({ timerId: "ahead", action: "remind.send", input: {}, spec: at(due) });
    clock.set(due - 30);
    await until(async () => (await started(first)) === 1, "started ahead of the moment");
    await first.owner.close();
    expect(first.calls).toEqual([]);
    clock.set(due - 20);
    const second = await harness(clock, { dataDir, lookaheadMs: 50, holds: false });
    await settle();
    expect(second.calls).toEqual([]); // recovered, held until the moment
    clock.set(due);
    await until(() => second.calls.length === 1, "the recovered call at its moment");
    expect(second.calls[0]).toMatchObject({ attempt: 2, callId: (await occurrences(second, "ahead"))[0].id });
    await settle();
    expect(second.calls).toHaveLength(1);
    expect(second.owner.lateness.snapshot()).toMatchObject({ count: 1, maxMs: 0 }); // the re-sent call's lateness counts
  });

  it("a call started ahead by an owner that stopped, and too late for its bound when the next one starts, is skipped and its start gets an end (action.failed)", async () => {
    const clock = new ManualClock(T0);
    const dataDir = tempDir();
    const first = await harness(clock, { dataDir, lookaheadMs: 50, holds: false });
    const { delayId } = await first.time.delay({
      action: "remind.send",
      when: { case: "at", value: timestampFromMs(due) },
      overdue: { bound: { case: "onTimeOrNever", value: true } },
    });
    clock.set(due - 30);
    await until(async () => (await started(first)) === 1, "started ahead of the moment");
    await first.owner.close();
    clock.set(due + 10_000); // back 10 s late: over "on time or never"
    const second = await harness(clock, { dataDir, lookaheadMs: 50, holds: false });
    await until(async () => (await occurrences(second, delayId))[0]?.status === "skipped", "skipped at the restart");
    const [occurrence] = await occurrences(second, delayId);
    const ends = await eventsOf(second.client, ["action.completed", "action.failed"]);
    expect(ends.map((e) => [e.type, e.data?.call_id, e.data?.attempt])).toEqual([["action.failed", occurrence.id, 1]]);
    expect(String(ends[0].data?.error)).toMatch(
      /^no result recorded before the owner stopped \(the executor may or may not have run it\); not run again: .*on time or never/,
    );
    await settle();
    expect(second.calls).toEqual([]);
  });
});

describe("an executor that holds: calls of time sent ahead with hold_ms, started at the moment", () => {
  const due = T0 + 60_000;

  /** A raw executor stream (hello with `holds`, `invocation_batches`, `batches`): the Invocations it gets, the message kinds they came in, and `answer` to send ActionResults. */
  function rawExecutor(url: string, holds: boolean, invocationBatches = false, batches = false) {
    const invocations: Invocation[] = [];
    const kinds: string[] = [];
    const outbox: SubscribeRequest["message"][] = [
      { case: "hello", value: create(HelloSchema, { executor: "raw", actions: ["remind.send"], credits: 4, holds, invocationBatches, batches }) },
    ];
    let wake = () => {};
    const ended = new AbortController();
    cleanups.push(async () => ended.abort());
    async function* requests() {
      while (!ended.signal.aborted) {
        while (outbox.length > 0) yield { message: outbox.shift()! } as SubscribeRequest;
        await new Promise<void>((r) => (wake = r));
      }
    }
    void (async () => {
      try {
        for await (const m of createRpcClient(ExecutorService, createGrpcTransport({ baseUrl: url })).subscribe(requests(), { signal: ended.signal })) {
          if (m.message.case === "invocation") invocations.push(m.message.value);
          if (m.message.case === "invocations") invocations.push(...m.message.value.invocations);
          if (m.message.case === "invocation" || m.message.case === "invocations") kinds.push(m.message.case);
        }
      } catch {
        // ended by the test
      }
    })();
    return {
      invocations,
      kinds,
      answer(invocationId: string, startedLateMs: number) {
        outbox.push({ case: "actionResult", value: create(ActionResultSchema, { invocationId, outcome: Outcome.OK, output: {}, startedLateMs }) });
        wake();
      },
      /** Answers several invocations in one ActionResultBatch. */
      answerAll(answers: { invocationId: string; startedLateMs: number }[]) {
        outbox.push({
          case: "actionResults",
          value: create(ActionResultBatchSchema, { results: answers.map((a) => create(ActionResultSchema, { ...a, outcome: Outcome.OK, output: {} })) }),
        });
        wake();
      },
    };
  }

  it("the Invocation goes out when the call is made, 40 ms ahead, with hold_ms 40; the executor's reported delay is the call's lateness", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock, { lookaheadMs: 50, executor: false });
    const raw = rawExecutor(h.owner.url, true);
    await until(async () => (await h.admin.listExecutors({})).executors.length === 1, "the raw executor connected");
    await h.time.schedule({ timerId: "held", action: "remind.send", input: {}, spec: at(due) });
    clock.set(due - 40);
    await until(() => raw.invocations.length === 1, "the Invocation, before the moment on the owner's clock");
    const [invocation] = raw.invocations;
    expect(invocation).toMatchObject({ holdMs: 40, attempt: 1, scheduled: { timerId: "held" } });
    expect(invocation.writtenAtMs).toBeGreaterThan(0); // the stream's clock when it was written: hold_ms counts from then
    expect(ms(invocation.scheduled?.due)).toBe(due);
    expect(ms(invocation.deadline)).toBe(due + 30_000); // the hold, then the action's timeout (30 s by default)
    clock.set(due + 5);
    raw.answer(invocation.invocationId, 3);
    await until(async () => (await occurrences(h, "held"))[0]?.status === "completed", "the occurrence's end");
    expect((await occurrences(h, "held"))[0]).toMatchObject({ lateness_ms: 3, attempts: 1 });
    expect(h.owner.lateness.snapshot()).toMatchObject({ count: 1, maxMs: 3 });
  });

  it("an executor that said `invocation_batches` gets the calls one ring starts in InvocationBatch messages, and may answer them in one ActionResultBatch", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock, { lookaheadMs: 50, executor: false });
    const raw = rawExecutor(h.owner.url, true, true);
    await until(async () => (await h.admin.listExecutors({})).executors.length === 1, "the raw executor connected");
    for (const id of ["b1", "b2", "b3"]) await h.time.schedule({ timerId: id, action: "remind.send", input: {}, spec: at(due) });
    clock.set(due - 40);
    await until(() => raw.invocations.length === 3, "the three Invocations, held");
    expect(raw.kinds).toContain("invocations"); // the ring started them together: not one message each
    expect(raw.kinds.length).toBeLessThan(3);
    expect(raw.invocations.map((i) => i.scheduled?.timerId).sort()).toEqual(["b1", "b2", "b3"]);
    clock.set(due + 5);
    raw.answerAll(raw.invocations.map((i, k) => ({ invocationId: i.invocationId, startedLateMs: k + 1 })));
    await until(
      async () => (await Promise.all(["b1", "b2", "b3"].map((id) => occurrences(h, id)))).every(([o]) => o?.status === "completed"),
      "the three ends, from one message",
    );
    expect(h.owner.lateness.snapshot()).toMatchObject({ count: 3, maxMs: 3 });
  });

  it("an executor that said only `batches` (DeliveryBatch: an SDK from before InvocationBatch) gets one Invocation per message", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock, { lookaheadMs: 50, executor: false });
    const raw = rawExecutor(h.owner.url, true, false, true);
    await until(async () => (await h.admin.listExecutors({})).executors.length === 1, "the raw executor connected");
    for (const id of ["o1", "o2", "o3"]) await h.time.schedule({ timerId: id, action: "remind.send", input: {}, spec: at(due) });
    clock.set(due - 40);
    await until(() => raw.invocations.length === 3, "the three Invocations");
    expect(raw.kinds).toEqual(["invocation", "invocation", "invocation"]);
  });

  it("a reported delay counts at most up to the answer, and an answer before the hold's end counts 0", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock, { lookaheadMs: 50, executor: false });
    const raw = rawExecutor(h.owner.url, true);
    await until(async () => (await h.admin.listExecutors({})).executors.length === 1, "the raw executor connected");
    await h.time.schedule({ timerId: "absurd", action: "remind.send", input: {}, spec: at(due) });
    await h.time.schedule({ timerId: "early", action: "remind.send", input: {}, spec: at(due + 5) });
    clock.set(due - 40);
    await until(() => raw.invocations.length === 2, "both Invocations, held");
    raw.answer(raw.invocations[1].invocationId, 0); // the `early` one, answered 45 ms before its moment: the executor did not hold
    clock.set(due + 7);
    raw.answer(raw.invocations[0].invocationId, 4_294_967_295);
    await until(
      async () => (await occurrences(h, "absurd"))[0]?.status === "completed" && (await occurrences(h, "early"))[0]?.status === "completed",
      "both ends",
    );
    expect((await occurrences(h, "absurd"))[0]).toMatchObject({ lateness_ms: 7 });
    expect((await occurrences(h, "early"))[0]).toMatchObject({ lateness_ms: 0 });
    expect(h.owner.lateness.snapshot()).toMatchObject({ count: 2, maxMs: 7 });
  });

  it("the SDK holding a credit's worth of calls (16) prints no listener-leak warning", async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    process.on("warning", onWarning);
    try {
      const clock = new ManualClock(T0);
      const h = await harness(clock, { lookaheadMs: 50 });
      for (let i = 0; i < 16; i++) await h.time.schedule({ timerId: `many-${i}`, action: "remind.send", input: {}, spec: at(due) });
      clock.set(due - 40);
      await until(() => h.calls.length === 16, "all 16 calls, after their hold");
      await new Promise((r) => setImmediate(r));
      expect(warnings).toEqual([]);
    } finally {
      process.off("warning", onWarning);
    }
  });

  it("`serve --timer-lookahead-ms 40` sends calls of time at most 40 ms ahead (the default is 250)", { tags: ["serial"] }, async () => {
    const owner = await spawnOwner(tempDir(), ["--timer-lookahead-ms", "40"]);
    cleanups.push(() => void owner.child.kill("SIGKILL"));
    const client = createClient({ url: owner.url });
    await client.registerPlugin(manifestOf(remindPlugin([])));
    const raw = rawExecutor(owner.url, true);
    await until(async () => (await createRpcClient(AdminService, client.transport).listExecutors({})).executors.length === 1, "the raw executor connected");
    const time = createRpcClient(TimeService, client.transport);
    const t = Date.now();
    for (const k of [1, 2, 3]) await time.schedule({ timerId: `soon-${k}`, action: "remind.send", spec: at(t + 500 * k + 500) });
    await until(() => raw.invocations.length === 3, "the Invocations", 5_000);
    const holds = raw.invocations.map((i) => i.holdMs);
    expect(Math.max(...holds)).toBeGreaterThan(0); // sent ahead (the first may be sent late by a cold owner)
    expect(Math.max(...holds)).toBeLessThanOrEqual(40);
  });

  it("one that does not hold gets hold_ms 0, at the moment", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock, { lookaheadMs: 50, executor: false });
    const raw = rawExecutor(h.owner.url, false);
    await until(async () => (await h.admin.listExecutors({})).executors.length === 1, "the raw executor connected");
    await h.time.schedule({ timerId: "sent", action: "remind.send", input: {}, spec: at(due) });
    clock.set(due - 40);
    await until(async () => (await eventsOf(h.client, ["action.started"])).length === 1, "started ahead");
    await new Promise((r) => setTimeout(r, 150));
    expect(raw.invocations).toEqual([]);
    clock.set(due);
    await until(() => raw.invocations.length === 1, "the Invocation at the moment");
    expect(raw.invocations[0].holdMs).toBe(0);
  });

  it("the TypeScript SDK holds by default: the action starts hold_ms of real time after the Invocation came", { tags: ["serial"] }, async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock, { lookaheadMs: 50 });
    await h.time.schedule({ timerId: "sdk", action: "remind.send", input: {}, spec: at(due) });
    const before = performance.now();
    clock.set(due - 40); // the owner's clock stays here: only the executor's hold (real time) brings the call
    await until(() => h.calls.length === 1, "the call, after its hold");
    expect(performance.now() - before).toBeGreaterThanOrEqual(40);
    await until(async () => (await occurrences(h, "sdk"))[0]?.status === "completed", "the occurrence's end");
    const { lateness_ms } = (await occurrences(h, "sdk"))[0];
    expect(lateness_ms).toBeGreaterThanOrEqual(0);
    expect(lateness_ms).toBeLessThan(40); // the hold's overrun on this machine, not the time before it
  });
});

describe("TimeService bad input (nothing written)", () => {
  it("INVALID_ARGUMENT for bad cron, unknown zones, 6 fields, `at` in the past, short every_ms, Delay without overdue; NOT_FOUND for unknown actions; input checked against the schema", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock);
    const before = await logSnapshot(h.client);
    const fields = async (p: Promise<unknown>, code: Code, message: RegExp) =>
      (await expectConnectError(p, code, message)).findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field);
    const schedule = (spec: Parameters<typeof h.time.schedule>[0]["spec"], action = "remind.send") => h.time.schedule({ action, spec });
    expect(await fields(schedule(cron("0 25 * * *")), Code.InvalidArgument, /hour.*25/)).toEqual(["spec.cron.expression"]);
    expect(await fields(schedule(cron("0 9 * * *", "Mars/Olympus")), Code.InvalidArgument, /Mars\/Olympus/)).toEqual(["spec.cron.zone"]);
    expect(
      await fields(schedule(cron("0 0 9 * * *")), Code.InvalidArgument, /has 6 fields .*; expected 5: minute hour day-of-month month day-of-week/),
    ).toEqual(["spec.cron.expression"]);
    expect(await fields(schedule(cron("0 0 30 2 *")), Code.InvalidArgument, /./)).toEqual(["spec.cron.expression"]);
    expect(await fields(schedule(at(T0 - 5_000)), Code.InvalidArgument, /in the past/)).toEqual(["spec.at"]);
    expect(await fields(schedule(every(10)), Code.InvalidArgument, /every_ms/)).toEqual(["spec.every_ms"]);
    expect(await fields(h.time.schedule({ action: "remind.send" }), Code.InvalidArgument, /spec is required/)).toEqual(["spec"]);
    await expectConnectError(schedule(every(5_000), "remind.nope"), Code.NotFound, /remind\.nope/);
    expect(
      await fields(
        h.time.schedule({ action: "remind.strict", input: {}, spec: every(5_000) }),
        Code.InvalidArgument,
        /schema: input: must have required property 'to'/,
      ),
    ).toEqual(["input"]);
    expect(
      await fields(h.time.delay({ action: "remind.send", when: { case: "intervalMs", value: 1_000n } }), Code.InvalidArgument, /overdue is required/),
    ).toEqual(["overdue"]);
    expect(
      await fields(h.time.delay({ action: "remind.send", when: { case: "intervalMs", value: 1_000n }, overdue: {} }), Code.InvalidArgument, /bound/),
    ).toEqual(["overdue"]);
    expect(
      await fields(h.time.delay({ action: "remind.send", overdue: { bound: { case: "unbounded", value: true } } }), Code.InvalidArgument, /interval_ms or at/),
    ).toEqual(["when"]);
    expect(
      await fields(
        h.time.delay({
          action: "remind.send",
          when: { case: "at", value: timestampFromMs(T0 - 2_000) },
          overdue: { bound: { case: "unbounded", value: true } },
        }),
        Code.InvalidArgument,
        /past/,
      ),
    ).toEqual(["at"]);
    // Past JavaScript's Date range (±8.64e15 ms) too: INVALID_ARGUMENT, not INTERNAL.
    const beyond = (seconds: bigint) =>
      h.time.delay({
        action: "remind.send",
        when: { case: "at", value: { seconds, nanos: 1_000_000 } as never },
        overdue: { bound: { case: "unbounded", value: true } },
      });
    expect(await fields(beyond(8_640_000_000_000n), Code.InvalidArgument, /more than 100 years ahead/)).toEqual(["at"]);
    expect(await fields(beyond(-10_000_000_000_000n), Code.InvalidArgument, /at -10000000000000000 ms is in the past/)).toEqual(["at"]);
    // A Timestamp's nanos outside 0-999,999,999 would move the moment silently (2e9 nanos: 2 s later).
    const nanos = (n: number) => ({ seconds: BigInt(Math.floor(T0 / 1000) + 5), nanos: n }) as never;
    expect(
      await fields(
        h.time.delay({ action: "remind.send", when: { case: "at", value: nanos(-1) }, overdue: { bound: { case: "unbounded", value: true } } }),
        Code.InvalidArgument,
        /at\.nanos must be 0 to 999999999 \(got -1\)/,
      ),
    ).toEqual(["at.nanos"]);
    expect(await fields(schedule({ when: { case: "at", value: nanos(2_000_000_000) } } as never), Code.InvalidArgument, /nanos/)).toEqual(["spec.at.nanos"]);
    await expectUnchanged(h.client, before);
    // `at` up to 1 s in the past is accepted and fires at once.
    await h.time.schedule({ timerId: "just-past", action: "remind.send", spec: at(T0 - 500) });
    await until(() => h.calls.length === 1, "the just-past timer's call");
    expect(h.calls[0].scheduled?.due.getTime()).toBe(T0 - 500);
    expect(await eventsOf(h.client, ["timer.scheduled"])).toHaveLength(1);
  });

  it("a client needs the action's allow to schedule it; under a cause only executors may; nothing is written when refused", async () => {
    const tokens = { exec: "executor-token-0123456789", web: "client-token-0123456789" };
    const config = {
      principals: [
        { name: "ex", token: tokens.exec, role: "executor" as const },
        { name: "web", token: tokens.web, role: "client" as const },
      ],
    };
    const clock = new ManualClock(T0);
    const owner = await startTestOwner({ clock, timers: clock, config, heartbeatIntervalMs: 600_000, shutdownGraceMs: 200 });
    cleanups.push(() => owner.close());
    const plugin = definePlugin({ name: "p", actions: { open: { allow: ["*"], run: () => ({}) }, closed: { allow: ["partner"], run: () => ({}) } } });
    await executor(owner.url, plugin, tokens.exec);
    const web = createRpcClient(TimeService, createClient({ url: owner.url, token: tokens.web }).transport);
    const before = await logSnapshot(createClient({ url: owner.url, token: tokens.exec }));
    await expectConnectError(web.schedule({ action: "p.closed", spec: every(5_000) }), Code.PermissionDenied, /p\.closed/);
    await expectConnectError(
      web.schedule({ action: "p.open", spec: every(5_000), cause: { eventId: "x", position: 0 } }),
      Code.PermissionDenied,
      /under a cause/,
    );
    await expectUnchanged(createClient({ url: owner.url, token: tokens.exec }), before);
    const { timer } = await web.schedule({ action: "p.open", spec: every(5_000) });
    expect(timer?.id).toMatch(/^[0-9a-f-]{36}$/); // a fresh UUIDv7
    await expectConnectError(web.unschedule({ timerId: timer!.id, cause: { eventId: "x", position: 0 } }), Code.PermissionDenied);
  });
});

describe("time across real owner processes killed with SIGKILL", { tags: ["serial"] }, () => {
  it("a timer set before a kill -9 is called once, with its original moment, after the restart; a recurring one owes one call for the whole outage", async () => {
    const dataDir = tempDir();
    const children: OwnerProcess[] = [];
    cleanups.push(() => {
      for (const c of children) if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill("SIGKILL");
    });
    const first = await spawnOwner(dataDir);
    children.push(first);
    const calls: ActionContext[] = [];
    const plugin = remindPlugin(calls);
    const client1 = createClient({ url: first.url });
    await client1.registerPlugin(manifestOf(plugin));
    const time1 = createRpcClient(TimeService, client1.transport);
    const setAt = Date.now();
    const once = (await time1.schedule({ timerId: "once", action: "remind.send", spec: at(setAt + 2_000) })).timer!;
    const rec = (await time1.schedule({ timerId: "rec", action: "remind.send", spec: every(1_500) })).timer!;
    const killedAt = Date.now();
    first.child.kill("SIGKILL"); // before either is due (no executor was ever connected either)
    await first.exited;
    expect(killedAt).toBeLessThan(ms(rec.nextDue)!);
    // Down for ~5 s: `once` passes its moment, `rec` misses three.
    while (Date.now() < setAt + 6_500) await new Promise((r) => setTimeout(r, 100));
    const restartedAt = Date.now();
    const second = await spawnOwner(dataDir);
    children.push(second);
    await executor(second.url, plugin);
    await until(
      () => calls.some((c) => c.scheduled?.timerId === "once") && calls.filter((c) => c.scheduled?.timerId === "rec").length >= 3,
      "the calls after the restart",
      20_000,
    );

    const onceCalls = calls.filter((c) => c.scheduled?.timerId === "once");
    expect(onceCalls).toHaveLength(1);
    expect(onceCalls[0].scheduled?.due.getTime()).toBe(ms(once.nextDue));
    const recDues = calls.filter((c) => c.scheduled?.timerId === "rec").map((c) => c.scheduled!.due.getTime());
    const firstDue = ms(rec.nextDue)!;
    // One call for the outage (a storm would start at firstDue, ~5 s before the restart), with
    // the most recent moment before the restart, then the cadence: due moments of the schedule,
    // each strictly later than the one before.
    expect(recDues[0]).toBeGreaterThan(restartedAt - 1_500);
    expect(recDues.filter((d) => d < restartedAt).length).toBeLessThanOrEqual(1);
    expect(recDues.every((d, i) => (d - firstDue) % 1_500 === 0 && (i === 0 || d > recDues[i - 1]))).toBe(true);
    const time2 = createRpcClient(TimeService, createClient({ url: second.url }).transport);
    expect((await time2.getTimer({ timerId: "once" })).timer?.occurrences).toBe(1n);
    second.child.kill("SIGKILL");
  });
});

describe("Delay from outside with a client delay_id", () => {
  const unbounded = { bound: { case: "unbounded" as const, value: true } };

  it("the same Delay retried arms one delay, records one timer.scheduled and gets the same answer: while pending, after it was made, after it was cancelled", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock);
    const request = {
      delayId: "remind-order-7",
      action: "remind.send",
      input: { order: 7 },
      when: { case: "intervalMs" as const, value: 5_000n },
      overdue: unbounded,
    };
    const a = await h.time.delay(request);
    expect([a.delayId, ms(a.due)]).toEqual(["remind-order-7", T0 + 5_000]);
    clock.advance(1_000); // a retry later would be due later if it armed again
    const b = await h.time.delay(request);
    expect(b).toEqual(a);
    expect(await eventsOf(h.client, ["timer.scheduled"])).toHaveLength(1);
    expect(clock.armed().map((a) => a.atMs)).toEqual([T0 + 5_000]);

    clock.advance(4_000);
    await until(() => h.calls.length === 1, "the delayed call");
    await until(async () => (await occurrences(h, "remind-order-7"))[0]?.status === "completed", "the occurrence recorded");
    const before = await logSnapshot(h.client);
    expect(await h.time.delay(request)).toEqual(a); // made: the same answer, not armed again
    await expectUnchanged(h.client, before);
    expect((await h.time.getTimer({ timerId: "remind-order-7" })).timer?.nextDue).toBeUndefined();
    clock.advance(60_000);
    expect(h.calls).toHaveLength(1);

    // Cancelled (its row is gone): answered from the log's timer.scheduled, nothing armed.
    const cancelRequest = { ...request, delayId: "remind-order-8", when: { case: "at" as const, value: timestampFromMs(clock.now() + 10_000) } };
    const c = await h.time.delay(cancelRequest);
    await h.time.cancelDelay({ delayId: "remind-order-8" });
    await expectConnectError(h.time.getTimer({ timerId: "remind-order-8" }), Code.NotFound);
    const afterCancel = await logSnapshot(h.client);
    expect(await h.time.delay(cancelRequest)).toEqual(c);
    await expectUnchanged(h.client, afterCancel);
    await expectConnectError(h.time.getTimer({ timerId: "remind-order-8" }), Code.NotFound);
    clock.advance(20_000);
    expect(h.calls).toHaveLength(1);
    // The same through the TS SDK client.
    const viaSdk = await h.client.delay("remind.send", { order: 9 }, { intervalMs: 1_000 }, "unbounded", { delayId: "remind-order-9" });
    expect(await h.client.delay("remind.send", { order: 9 }, { intervalMs: 1_000 }, "unbounded", { delayId: "remind-order-9" })).toEqual(viaSdk);
    expect((await eventsOf(h.client, ["timer.scheduled"])).map((e) => e.data?.timer_id)).toEqual(["remind-order-7", "remind-order-8", "remind-order-9"]);
  });

  it("another request with the same delay_id is ALREADY_EXISTS (pending, made or cancelled), an id naming a schedule FAILED_PRECONDITION, bad ids and a delay_id under a cause INVALID_ARGUMENT; nothing written", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock);
    await h.client.registerPlugin({ name: "orders", events: { "order.placed": { allow: ["*"] } } });
    const placed = (await h.client.emit("order.placed", { id: 7 })).event!;
    const request = { delayId: "d-1", action: "remind.send", input: { order: 7 }, when: { case: "intervalMs" as const, value: 5_000n }, overdue: unbounded };
    await h.time.delay(request);
    await h.time.schedule({ timerId: "weekly", action: "remind.send", spec: every(60_000) });
    const fields = async (p: Promise<unknown>, code: Code, message: RegExp) =>
      (await expectConnectError(p, code, message)).findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field);
    const conflicts = async () => {
      const before = await logSnapshot(h.client);
      for (const other of [
        { input: { order: 8 } },
        { when: { case: "intervalMs" as const, value: 6_000n } },
        { when: { case: "at" as const, value: timestampFromMs(T0 + 5_000) } },
        { overdue: { bound: { case: "onTimeOrNever" as const, value: true } } },
      ]) {
        expect(await fields(h.time.delay({ ...request, ...other }), Code.AlreadyExists, /delay_id "d-1" already names a delay/)).toEqual(["delay_id"]);
      }
      await expectUnchanged(h.client, before);
    };
    await conflicts(); // pending
    clock.advance(5_000);
    await until(() => h.calls.length === 1, "the delayed call");
    await until(async () => (await occurrences(h, "d-1"))[0]?.status === "completed", "the call's end recorded"); // the log is still from here on
    await conflicts(); // made
    const before = await logSnapshot(h.client);
    expect(await fields(h.time.delay({ ...request, delayId: "weekly" }), Code.FailedPrecondition, /delay_id "weekly" names a runtime timer/)).toEqual([
      "delay_id",
    ]);
    for (const [bad, message] of [
      [" ", /delay_id is only whitespace/],
      ["a\u0001b", /delay_id contains a control character/],
      ["x".repeat(257), /delay_id is longer than 256/],
      ["plugin/schedule", /delay_id "plugin\/schedule" may not contain "\/"/],
    ] as const) {
      expect(await fields(h.time.delay({ ...request, delayId: bad }), Code.InvalidArgument, message)).toEqual(["delay_id"]);
    }
    expect(
      await fields(
        h.time.delay({ ...request, delayId: "d-2", cause: { eventId: placed.id, position: 0 } }),
        Code.InvalidArgument,
        /delay_id must be empty under a cause/,
      ),
    ).toEqual(["delay_id"]);
    await expectUnchanged(h.client, before);
    expect(h.calls).toHaveLength(1);
  });
});
