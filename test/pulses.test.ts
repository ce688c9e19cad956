// Pulses, chains, the SDK's time helpers and the `timers` / `cursors`
// commands, through the real transport: an in-process owner and in-process SDK
// executors over gRPC.
//
// Rules run on a ManualClock passed as the owner's `clock` and `timers` (its TimerHost):
// `clock.set(ms)` moves time and rings the pulse timer at once; tests then wait for the
// owner's pulse outcomes (`owner.pulses.onPulse`), never for real time. Owners get a
// 10-minute heartbeat interval so a manual clock moved by minutes never trips the
// executor watchdog.
//
// Arithmetic used below: T0 = 2026-03-02T12:00:00Z is a multiple of every cycle used here
// (60 s, 86,400 s), so T0 is a boundary of each pulse and interval 0 of its cycle.
//
// @module-tag postgres

import type { JsonObject } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient as createRpcClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../server/src/clock.js";
import { intervalIndex, intervalStart, nextBoundary, pulseCallId, type PulseSpec } from "../server/src/time/pulse-rules.js";
import type { PulseOutcome } from "../server/src/time/pulses.js";
import { createClient, type ChronologClient } from "../sdk/ts/src/client.js";
import { runExecutor, type ActionContext, type Executor } from "../sdk/ts/src/executor.js";
import type { Event } from "@chronolog/sdk/gen/chronolog/v1/event_pb";
import { ExecutorService } from "@chronolog/sdk/gen/chronolog/v1/executor_pb";
import { definePlugin, manifestOf, type PluginDefinition, type PulseDefinition } from "../sdk/ts/src/plugin.js";
import { startTestOwner, tempDir } from "./helpers/owner.js";
import { until } from "./helpers/until.js";
import { cli } from "./helpers/cli.js";
import { eventsOf } from "./helpers/log-snapshot.js";

type TestOwner = Awaited<ReturnType<typeof startTestOwner>>;
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/** 2026-03-02T12:00:00Z: a multiple of 60 s and of a day. */
const T0 = Date.UTC(2026, 2, 2, 12);

interface Harness {
  owner: TestOwner;
  client: ChronologClient;
  clock: ManualClock;
  /** Every pulse outcome the owner published, in order. */
  outcomes: PulseOutcome[];
}

async function harness(clock: ManualClock, dataDir?: string, extra: Record<string, unknown> = {}): Promise<Harness> {
  const owner = await startTestOwner({ clock, timers: clock, heartbeatIntervalMs: 600_000, shutdownGraceMs: 200, ...(dataDir ? { dataDir } : {}), ...extra });
  const closeOwner = owner.close.bind(owner);
  let closed: Promise<void> | undefined;
  const close = () => (closed ??= closeOwner());
  cleanups.push(close);
  const outcomes: PulseOutcome[] = [];
  owner.pulses.onPulse((o) => outcomes.push(o));
  return { owner: Object.assign(owner, { close }), client: createClient({ url: owner.url }), clock, outcomes };
}

async function executor(url: string, plugin: PluginDefinition): Promise<Executor> {
  const ex = runExecutor({ url, plugins: [plugin], credits: 4, maxBackoffMs: 200, onError: () => {} });
  cleanups.push(() => ex.stop(100));
  await ex.ready;
  return ex;
}

/** A plugin `sweep` whose action `tick` records each call as (executor tag, ctx) and runs `hold` (default: returns at once). */
function sweepPlugin(
  tag: string,
  calls: { tag: string; ctx: ActionContext }[],
  pulse: PulseDefinition,
  hold?: (ctx: ActionContext) => Promise<void>,
): PluginDefinition {
  return definePlugin({
    name: "sweep",
    actions: {
      tick: {
        async run(ctx) {
          calls.push({ tag, ctx });
          await hold?.(ctx);
          return { tag };
        },
      },
    },
    pulses: { every: pulse },
  });
}

/** Resolves once the owner published an outcome for every expected key (`dueMs/instance`), returning the interval's outcomes. */
async function outcomesAt(h: Harness, dueMs: number, count = 1): Promise<PulseOutcome[]> {
  await until(() => h.outcomes.filter((o) => o.dueMs === dueMs).length >= count, `${count} pulse outcome(s) at ${new Date(dueMs).toISOString()}`);
  return h.outcomes.filter((o) => o.dueMs === dueMs);
}

describe("pulse rules", () => {
  const spec = (cycleSeconds: number, intervals: number): Pick<PulseSpec, "cycleSeconds" | "intervalMs"> => ({
    cycleSeconds,
    intervalMs: (cycleSeconds * 1000) / intervals,
  });

  it("intervals split the cycle counted from the epoch: a day in 24 is one hour each, indexed by the hour of the UTC day", () => {
    const day = spec(86_400, 24);
    expect(day.intervalMs).toBe(3_600_000);
    const at = Date.UTC(2026, 2, 2, 13, 59, 59, 999); // 13:59:59.999Z
    expect(intervalStart(day, at)).toBe(Date.UTC(2026, 2, 2, 13));
    expect(intervalIndex(day, intervalStart(day, at))).toBe(13);
    expect(nextBoundary(day, at)).toBe(Date.UTC(2026, 2, 2, 14));
    expect(intervalIndex(day, Date.UTC(2026, 2, 3, 0))).toBe(0); // a new cycle at midnight UTC
    expect(intervalIndex(day, Date.UTC(2026, 2, 2, 23))).toBe(23);
    // A boundary belongs to the interval it starts: next boundary after a boundary is one interval on.
    expect(intervalStart(day, Date.UTC(2026, 2, 2, 14))).toBe(Date.UTC(2026, 2, 2, 14));
    expect(nextBoundary(day, Date.UTC(2026, 2, 2, 14))).toBe(Date.UTC(2026, 2, 2, 15));
  });

  it("a 60 s cycle in 3: 20 s intervals indexed 0, 1, 2 from each whole minute; a 7 s cycle in 1 counts 7 s from the epoch", () => {
    const minute = spec(60, 3);
    expect([0, 19_999, 20_000, 40_000, 59_999, 60_000].map((s) => intervalIndex(minute, intervalStart(minute, T0 + s)))).toEqual([0, 0, 1, 2, 2, 0]);
    const seven = spec(7, 1);
    expect(intervalStart(seven, 15_000)).toBe(14_000);
    expect(nextBoundary(seven, 15_000)).toBe(21_000);
  });

  it("the call id of an interval is fixed by the pulse, the interval start and (replica) the instance", () => {
    expect(pulseCallId("sweep.every", T0)).toBe(pulseCallId("sweep.every", T0));
    expect(pulseCallId("sweep.every", T0)).not.toBe(pulseCallId("sweep.every", T0 + 1));
    expect(pulseCallId("sweep.every", T0, "a")).not.toBe(pulseCallId("sweep.every", T0, "b"));
    expect(pulseCallId("sweep.every", T0)).toMatch(/^[0-9a-f]{32}$/);
  });
});

describe("pulse declarations and hellos", () => {
  it("registration refuses a bad pulse with INVALID_ARGUMENT naming pulses.<name>", async () => {
    const h = await harness(new ManualClock(T0));
    const register = async (pulse: Record<string, unknown>, actions: Record<string, unknown> = { tick: {} }) => {
      try {
        await h.client.registerPlugin({ name: "bad", actions, pulses: { p: pulse } } as never);
      } catch (e) {
        return ConnectError.from(e);
      }
      throw new Error("registered");
    };
    const cases: [Record<string, unknown>, string][] = [
      [{ action: "nope", cycleSeconds: 60 }, "pulses.p.action"],
      [{ action: "other.tick", cycleSeconds: 60 }, "pulses.p.action"],
      [{ action: "", cycleSeconds: 60 }, "pulses.p.action"],
      [{ action: "tick", cycleSeconds: 0 }, "pulses.p.cycle_seconds"],
      [{ action: "tick", cycleSeconds: 60, intervals: 7 }, "pulses.p.intervals"], // 60,000 / 7 is not whole ms
      [{ action: "tick", cycleSeconds: 1, intervals: 20 }, "pulses.p.intervals"], // 50 ms < 100 ms
    ];
    for (const [pulse, field] of cases) {
      const err = await register(pulse);
      expect(err.code, JSON.stringify(pulse)).toBe(Code.InvalidArgument);
      expect(err.rawMessage, JSON.stringify(pulse)).toContain(field);
    }
    const strict = await register({ action: "tick", cycleSeconds: 60 }, { tick: { inputSchema: { type: "object", required: ["x"] } } });
    expect(strict.rawMessage).toContain("pulses.p.action");
    expect(strict.rawMessage).toContain("rejects {}");
    // Valid forms: the action by its name or as plugin.action; 86,400 s in 24; 1 s in 10 (100 ms each).
    await h.client.registerPlugin({
      name: "good",
      actions: { tick: {} },
      pulses: { a: { action: "tick", cycleSeconds: 86_400, intervals: 24 }, b: { action: "good.tick", cycleSeconds: 1, intervals: 10 } },
    });
  });

  it("a hello naming an unknown pulse, or a pulse whose action it does not host, is INVALID_ARGUMENT", async () => {
    const h = await harness(new ManualClock(T0));
    await h.client.registerPlugin(manifestOf(sweepPlugin("x", [], { action: "tick", cycleSeconds: 60 })));
    const subscribe = (pulses: string[], actions: string[]) => {
      const rpc = createRpcClient(ExecutorService, createGrpcTransport({ baseUrl: h.owner.url }));
      async function* requests() {
        yield { message: { case: "hello" as const, value: { executor: "x", pulses, actions } } };
        await new Promise((r) => setTimeout(r, 300));
      }
      return rpc.subscribe(requests());
    };
    const firstError = async (pulses: string[], actions: string[]) => {
      try {
        for await (const m of subscribe(pulses, actions)) if (m.message.case === "welcome") return "welcome";
      } catch (e) {
        return ConnectError.from(e);
      }
      return undefined;
    };
    const unknown = await firstError(["sweep.nope"], ["sweep.tick"]);
    expect(unknown).toBeInstanceOf(ConnectError);
    expect((unknown as ConnectError).code).toBe(Code.InvalidArgument);
    expect((unknown as ConnectError).rawMessage).toContain('unknown pulse "sweep.nope"');
    const noAction = await firstError(["sweep.every"], []);
    expect((noAction as ConnectError).code).toBe(Code.InvalidArgument);
    expect((noAction as ConnectError).rawMessage).toContain("sweep.tick");
    expect(await firstError(["sweep.every"], ["sweep.tick"])).toBe("welcome");
  });
});

describe("pulses on a manual clock", () => {
  it("scope component: each interval is one call, on one of the executors, told its interval index and start; the call starts a chain and is recorded", async () => {
    const h = await harness(new ManualClock(T0));
    const calls: { tag: string; ctx: ActionContext }[] = [];
    const pulse: PulseDefinition = { action: "tick", cycleSeconds: 60, intervals: 3 };
    await executor(h.owner.url, sweepPlugin("a", calls, pulse));
    await executor(h.owner.url, sweepPlugin("b", calls, pulse));
    // T0 is a boundary, but it was already running when the owner started: not called.
    for (let k = 1; k <= 5; k++) {
      h.clock.set(T0 + k * 20_000);
      const [outcome] = await outcomesAt(h, T0 + k * 20_000);
      expect(outcome).toMatchObject({
        pulse: "sweep.every",
        interval: k % 3,
        status: "completed",
        instance: "",
        callId: pulseCallId("sweep.every", T0 + k * 20_000),
      });
    }
    expect(calls).toHaveLength(5);
    expect(calls.map((c) => c.ctx.pulse)).toEqual([1, 2, 3, 4, 5].map((k) => ({ pulse: "sweep.every", interval: k % 3, due: new Date(T0 + k * 20_000) })));
    expect(calls.every((c) => c.ctx.chainDepth === 0 && c.ctx.actor === undefined && c.ctx.scheduled === undefined)).toBe(true);
    expect(new Set(calls.map((c) => c.ctx.callId)).size).toBe(5);
    // Recorded as calls with chain depth 0, as the system.
    const started = await eventsOf(h.client, ["action.started"]);
    expect(started).toHaveLength(5);
    expect(started[0].data).toMatchObject({ action: "sweep.tick", call_id: calls[0].ctx.callId, chain_depth: 0 });
    expect(started[0].actor).toBeUndefined();
    // Each call's lateness (call time minus the interval's start) went into the owner's histogram.
    expect(h.owner.lateness.snapshot()).toMatchObject({ count: 5, maxMs: 0 });
  });

  it("scope replica: every connected instance hosting the pulse is called at each boundary, each with its own call id", async () => {
    const h = await harness(new ManualClock(T0));
    const calls: { tag: string; ctx: ActionContext }[] = [];
    const pulse: PulseDefinition = { action: "tick", cycleSeconds: 60, scope: "replica" };
    for (const tag of ["a", "b", "c"]) await executor(h.owner.url, sweepPlugin(tag, calls, pulse));
    h.clock.set(T0 + 60_000);
    const first = await outcomesAt(h, T0 + 60_000, 3);
    expect(first.map((o) => o.status)).toEqual(["completed", "completed", "completed"]);
    expect(new Set(first.map((o) => o.instance)).size).toBe(3);
    expect(calls.map((c) => c.tag).sort()).toEqual(["a", "b", "c"]);
    expect(calls.every((c) => c.ctx.pulse?.interval === 0 && c.ctx.pulse.due.getTime() === T0 + 60_000)).toBe(true);
    expect(new Set(calls.map((c) => c.ctx.callId)).size).toBe(3);
    for (const o of first) expect(o.callId).toBe(pulseCallId("sweep.every", T0 + 60_000, o.instance));
    h.clock.set(T0 + 120_000);
    await outcomesAt(h, T0 + 120_000, 3);
    expect(calls).toHaveLength(6);
  });

  it("a call outlasting its interval skips the next boundary (not queued, not made up); the one after is made", async () => {
    const h = await harness(new ManualClock(T0));
    const calls: { tag: string; ctx: ActionContext }[] = [];
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const pulse: PulseDefinition = { action: "tick", cycleSeconds: 10 };
    await executor(
      h.owner.url,
      sweepPlugin("a", calls, pulse, (ctx) => (ctx.pulse?.due.getTime() === T0 + 10_000 ? held : Promise.resolve())),
    );
    h.clock.set(T0 + 10_000);
    await until(() => calls.length === 1, "the first call running");
    h.clock.set(T0 + 20_000); // the first call still runs
    expect(await outcomesAt(h, T0 + 20_000)).toEqual([expect.objectContaining({ status: "skipped", interval: 0, callId: "" })]);
    release();
    await outcomesAt(h, T0 + 10_000);
    expect(calls).toHaveLength(1); // the skipped interval is not made up when the call ends
    h.clock.set(T0 + 30_000);
    expect(await outcomesAt(h, T0 + 30_000)).toEqual([expect.objectContaining({ status: "completed" })]);
    expect(calls.map((c) => c.ctx.pulse?.due.getTime())).toEqual([T0 + 10_000, T0 + 30_000]);
  });

  it("an owner that stops during a pulse's call ends it (action.failed): the interval is not made up, and the log keeps no start without an end", async () => {
    const clock = new ManualClock(T0);
    const dataDir = tempDir();
    const h = await harness(clock, dataDir);
    const calls: { tag: string; ctx: ActionContext }[] = [];
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    await executor(
      h.owner.url,
      sweepPlugin("a", calls, { action: "tick", cycleSeconds: 10 }, () => held),
    );
    clock.set(T0 + 10_000);
    await until(() => calls.length === 1, "the call running");
    const callId = calls[0].ctx.callId;
    await h.owner.close();
    release();

    const h2 = await harness(clock, dataDir);
    const ofCall: Event[] = [];
    for await (const e of h2.client.read({})) if ((e.data as JsonObject | undefined)?.call_id === callId) ofCall.push(e);
    expect(ofCall.map((e) => e.type)).toEqual(["action.started", "action.failed"]);
    expect(ofCall[1].data).toMatchObject({ attempt: 1, error: expect.stringMatching(/owner stopped during the call/) });
    expect(calls).toHaveLength(1);
  });

  it("scope replica: only the instance whose call still runs skips; the others are called", async () => {
    const h = await harness(new ManualClock(T0));
    const calls: { tag: string; ctx: ActionContext }[] = [];
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const pulse: PulseDefinition = { action: "tick", cycleSeconds: 10, scope: "replica" };
    await executor(
      h.owner.url,
      sweepPlugin("slow", calls, pulse, () => held),
    );
    await executor(h.owner.url, sweepPlugin("fast", calls, pulse));
    h.clock.set(T0 + 10_000);
    await until(() => calls.length === 2, "both called");
    await outcomesAt(h, T0 + 10_000, 1); // the fast call's end is recorded (else, on a busy machine, it still runs at 20 s and skips too)
    h.clock.set(T0 + 20_000);
    await outcomesAt(h, T0 + 20_000, 2);
    expect(
      h.outcomes
        .filter((o) => o.dueMs === T0 + 20_000)
        .map((o) => o.status)
        .sort(),
    ).toEqual(["completed", "skipped"]);
    expect(calls.filter((c) => c.ctx.pulse?.due.getTime() === T0 + 20_000).map((c) => c.tag)).toEqual(["fast"]);
    release();
  });

  it("no executor at a boundary: the interval is missed and not made up when one connects; a restarted owner does not call the interval it was down for", async () => {
    const clock = new ManualClock(T0);
    const dataDir = tempDir();
    const h = await harness(clock, dataDir);
    const calls: { tag: string; ctx: ActionContext }[] = [];
    const plugin = sweepPlugin("a", calls, { action: "tick", cycleSeconds: 10 });
    await h.client.registerPlugin(manifestOf(plugin));
    clock.set(T0 + 10_000);
    expect(await outcomesAt(h, T0 + 10_000)).toEqual([expect.objectContaining({ status: "missed", error: "no executor hosts it" })]);
    clock.set(T0 + 15_000);
    const ex = await executor(h.owner.url, plugin); // mid-interval: nothing owed
    clock.set(T0 + 19_999);
    expect(calls).toHaveLength(0);
    clock.set(T0 + 20_000);
    await outcomesAt(h, T0 + 20_000);
    expect(calls.map((c) => c.ctx.pulse?.due.getTime())).toEqual([T0 + 20_000]);

    // Down over the boundary at 30 s: back at 35 s, the 30 s interval is not called; 40 s is.
    await ex.stop(100);
    await h.owner.close();
    clock.set(T0 + 35_000);
    const h2 = await harness(clock, dataDir);
    await executor(h2.owner.url, plugin);
    clock.set(T0 + 39_999);
    clock.set(T0 + 40_000);
    await outcomesAt(h2, T0 + 40_000);
    expect(h2.outcomes.map((o) => o.dueMs)).toEqual([T0 + 40_000]);
    expect(calls.map((c) => c.ctx.pulse?.due.getTime())).toEqual([T0 + 20_000, T0 + 40_000]);
  });

  it("a clock that jumps over several boundaries makes one call, for the current interval (missed ones are not made up)", async () => {
    const h = await harness(new ManualClock(T0));
    const calls: { tag: string; ctx: ActionContext }[] = [];
    await executor(h.owner.url, sweepPlugin("a", calls, { action: "tick", cycleSeconds: 60, intervals: 6 }));
    h.clock.set(T0 + 45_000); // boundaries at 10, 20, 30, 40 s passed at once
    await outcomesAt(h, T0 + 40_000);
    expect(calls.map((c) => c.ctx.pulse)).toEqual([{ pulse: "sweep.every", interval: 4, due: new Date(T0 + 40_000) }]);
    expect(h.owner.pulses.armedFor).toBe(T0 + 50_000);
  });
});

describe("chains of delays and the SDK's time helpers under a cause", () => {
  it("ctx.delay under a delivery arms one delay however often the delivery runs; its call continues the chain one deeper; a self-re-arming loop stops at the maximum with timer.chain_exceeded; fresh_chain starts over", async () => {
    const h = await harness(new ManualClock(T0), undefined, { maxChainDepth: 2 });
    const attempts: number[] = [];
    const runs: ActionContext[] = [];
    const refusals: ConnectError[] = [];
    const done: ActionContext[] = [];
    const plugin = definePlugin({
      name: "loop",
      events: { "loop.started": { allow: ["*"] } },
      processors: {
        arm: {
          on: "loop.started",
          retryDelaysMs: [10, 10],
          async run(ctx) {
            attempts.push(ctx.attempt);
            await ctx.delay("loop.again", { n: 1 }, { intervalMs: 1_000 }, "unbounded");
            if (ctx.attempt === 1) throw new Error("failing after arming the delay");
          },
        },
      },
      actions: {
        again: {
          async run(ctx, input) {
            runs.push(ctx);
            try {
              await ctx.delay("loop.again", { n: Number(input.n) + 1 }, { intervalMs: 1_000 }, { maxLatenessMs: 5_000 });
            } catch (e) {
              refusals.push(ConnectError.from(e));
              await ctx.delay("loop.done", {}, { at: T0 + 60_000 }, "onTimeOrNever", { freshChain: true });
            }
            return {};
          },
        },
        done: { run: (ctx) => void done.push(ctx) },
      },
    });
    await executor(h.owner.url, plugin);
    const started = await h.client.emit("loop.started", {});

    // The delivery failed once after arming and ran again: one delay, depth 1 (the event came from outside: depth 0).
    await until(() => attempts.length === 2, "the retried delivery");
    await until(
      async () => (await eventsOf(h.client, ["processor.retried"])).length === 1 && (await h.client.admin.listProcessors({})).processors[0]?.lag === 0n,
      "the delivery acked",
    );
    const armed = [];
    for await (const t of h.client.listTimers({ kind: "delay" })) armed.push(t);
    expect(armed).toHaveLength(1);
    expect(armed[0]).toMatchObject({ action: "loop.again", chainDepth: 1 });
    expect(timestampMs(armed[0].nextDue!)).toBe(T0 + 1_000);
    const scheduled = await eventsOf(h.client, ["timer.scheduled"]);
    expect(scheduled).toHaveLength(1);
    expect(scheduled[0].cause).toBe(started.event!.id);

    // Its call is one deeper, and re-arms itself at depth 2.
    h.clock.set(T0 + 1_000);
    await until(() => runs.length === 1, "the first delayed call");
    expect(runs[0].chainDepth).toBe(1);
    expect(runs[0].scheduled?.timerId).toBe(armed[0].id);
    // The call re-arms (due T0 + 2 s) before the clock moves on, or the new delay would count from the later time.
    await until(async () => {
      for await (const t of h.client.listTimers({ kind: "delay" })) if (t.chainDepth === 2 && t.nextDue) return true;
      return false;
    }, "the re-armed delay");
    h.clock.set(T0 + 2_000);
    await until(() => runs.length === 2, "the second delayed call");
    expect(runs[1].chainDepth).toBe(2);

    // Depth 3 is past the maximum of 2: refused and recorded, once.
    await until(() => refusals.length === 1, "the refusal");
    expect(refusals[0].code).toBe(Code.FailedPrecondition);
    expect(refusals[0].rawMessage).toContain("past the owner's maximum of 2");
    const startedCalls = await eventsOf(h.client, ["action.started"]);
    expect(startedCalls.map((e) => [e.data?.call_id, e.data?.chain_depth])).toEqual([
      [runs[0].callId, 1],
      [runs[1].callId, 2],
    ]);
    await until(async () => (await eventsOf(h.client, ["timer.chain_exceeded"])).length === 1, "timer.chain_exceeded");
    const [exceeded] = await eventsOf(h.client, ["timer.chain_exceeded"]);
    expect(exceeded.data).toMatchObject({ action: "loop.again", chain_depth: 3, max_chain_depth: 2 });
    expect(exceeded.cause).toBe(startedCalls[1].id);

    // The fresh chain (armed after the refusal) starts at depth 0 and is made.
    const delays = [];
    for await (const t of h.client.listTimers({ kind: "delay" })) delays.push({ action: t.action, chainDepth: t.chainDepth, spent: t.nextDue === undefined });
    expect(delays).toEqual(
      expect.arrayContaining([
        { action: "loop.done", chainDepth: 0, spent: false },
        { action: "loop.again", chainDepth: 1, spent: true },
        { action: "loop.again", chainDepth: 2, spent: true },
      ]),
    );
    expect(delays).toHaveLength(3);
    h.clock.set(T0 + 60_000);
    await until(() => done.length === 1, "the fresh chain's call");
    expect(done[0].chainDepth).toBe(0);
  });

  it("ctx.schedule / unschedule / cancelDelay under a cause, and the client's schedule / delay / cancelDelay / getTimer", async () => {
    const h = await harness(new ManualClock(T0));
    const made: string[] = [];
    const plugin = definePlugin({
      name: "plan",
      actions: {
        setup: {
          allow: ["*"],
          async run(ctx) {
            const timer = await ctx.schedule("plan.note", { what: "weekly" }, { cron: "0 9 * * 1", zone: "Europe/Berlin" });
            const delay = await ctx.delay("plan.note", { what: "once" }, { intervalMs: 5_000 }, "unbounded");
            await ctx.cancelDelay(delay.delayId);
            const other = await ctx.schedule("plan.note", { what: "tick" }, { everyMs: 1_000 }, { timerId: "plan-tick" });
            await ctx.unschedule(other.id);
            return { timer: timer.id, delay: delay.delayId };
          },
        },
        note: { allow: ["*"], run: (ctx) => void made.push(String(ctx.input.what)) },
      },
    });
    await executor(h.owner.url, plugin);
    const first = await h.client.call("plan.setup", {}, { callId: "setup-1" });
    // One timer left (the cron one); the delay was cancelled and the other timer stopped, under the same cause.
    const timers = [];
    for await (const t of h.client.listTimers()) timers.push(t);
    expect(timers.map((t) => t.id)).toEqual([first.output.timer]);
    expect(timestampMs(timers[0].nextDue!)).toBe(Date.UTC(2026, 2, 9, 8));
    expect((await eventsOf(h.client, ["timer.unscheduled"])).map((e) => e.data?.timer_id)).toEqual([first.output.delay, "plan-tick"]);

    const delay = await h.client.delay("plan.note", { what: "later" }, { at: new Date(T0 + 3_000) }, { maxLatenessMs: 100 });
    expect(delay.due.getTime()).toBe(T0 + 3_000);
    expect((await h.client.getTimer(delay.delayId)).chainDepth).toBe(0);
    const own = await h.client.schedule("plan.note", { what: "every" }, { everyMs: 2_000 }, { timerId: "every-2s" });
    expect(timestampMs(own.nextDue!)).toBe(T0 + 2_000);
    h.clock.set(T0 + 3_000);
    await until(() => made.length === 2, "the delay and the every-2s timer");
    expect(made.sort()).toEqual(["every", "later"]);
    await h.client.unschedule("every-2s");
    await expect(h.client.cancelDelay(delay.delayId)).rejects.toMatchObject({ code: Code.NotFound });
  });
});

describe("CLI timers and cursors", { tags: ["serial"] }, () => {
  it("`timers` prints what ListTimers returns (JSON lines and a table, with --kind and --preview); `cursors` prints ListProcessors", async () => {
    const h = await harness(new ManualClock(T0));
    const plugin = definePlugin({
      name: "ops",
      events: { "job.done": { allow: ["*"] } },
      actions: { run: { allow: ["*"], run: () => ({}) } },
      processors: { audit: { on: "job.done", start: "beginning", run: () => {} } },
    });
    await executor(h.owner.url, plugin);
    await h.client.schedule("ops.run", {}, { cron: "0 9 * * 1", zone: "Europe/Berlin" }, { timerId: "weekly" });
    await h.client.schedule("ops.run", {}, { everyMs: 60_000 }, { timerId: "minutely" });
    const delay = await h.client.delay("ops.run", { n: 1 }, { intervalMs: 30_000 }, { maxLatenessMs: 500 });
    await h.client.emit("job.done", {});
    await h.client.emit("job.done", {});

    const api = [];
    for await (const t of h.client.listTimers()) api.push(t);
    const json = await cli(["timers", "--url", h.owner.url, "--json"]);
    expect(json.stderr).toBe("");
    const lines = json.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => l.id)).toEqual(api.map((t) => t.id));
    expect(lines.map((l) => l.id)).toEqual([delay.delayId, "minutely", "weekly"]); // by next due: 30 s, 60 s, Monday 09:00 Berlin
    expect(lines[2]).toMatchObject({
      id: "weekly",
      kind: "TIMER_KIND_RUNTIME",
      action: "ops.run",
      spec: { cron: { expression: "0 9 * * 1", zone: "Europe/Berlin" } },
      nextDue: "2026-03-09T08:00:00Z",
    });

    const delays = await cli(["timers", "--url", h.owner.url, "--json", "--kind", "delay"]);
    expect(
      delays.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l).id),
    ).toEqual([delay.delayId]);

    const table = await cli(["timers", "--url", h.owner.url, "--preview", "2"]);
    const rows = table.stdout.trim().split("\n");
    expect(rows[0]).toMatch(/^ID\s+KIND\s+ACTION\s+WHEN\s+NEXT DUE\s+OCCURRENCES\s+CHAIN\s+PREVIEW$/);
    expect(rows).toHaveLength(4);
    expect(rows[2]).toMatch(
      /^minutely\s+runtime\s+ops\.run\s+every 60000 ms\s+2026-03-02T12:01:00\.000Z\s+0\s+0\s+2026-03-02T12:01:00\.000Z, 2026-03-02T12:02:00\.000Z$/,
    );
    expect(rows[3]).toContain('cron "0 9 * * 1" in Europe/Berlin');
    expect(rows[3]).toContain("2026-03-09T08:00:00.000Z, 2026-03-16T08:00:00.000Z");
    const got = await h.client.getTimer("weekly", { previewCount: 2 });
    expect(got.preview.map((t) => new Date(timestampMs(t)).toISOString())).toEqual(["2026-03-09T08:00:00.000Z", "2026-03-16T08:00:00.000Z"]);

    // The processor finished every event (its ack floor is the log head: lag 0).
    await until(async () => (await h.client.admin.listProcessors({})).processors[0]?.lag === 0n, "the processor caught up");
    const { processors } = await h.client.admin.listProcessors({});
    const floor = String(processors[0].ackFloor);
    expect(Number(floor)).toBeGreaterThanOrEqual(2);
    const cursors = await cli(["cursors", "--url", h.owner.url, "--json"]);
    const status = cursors.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(status.map(({ latency: _, ...rest }) => rest)).toEqual([{ name: "ops.audit", ackFloor: Number(floor), delivered: Number(processors[0].delivered) }]); // seqs as numbers; zeros and false left out, as in proto3 JSON
    expect(status[0].latency).toMatchObject({ count: expect.any(Number), p99Ms: expect.any(Number) }); // its deliveries' latency over the last minute
    const cursorTable = (await cli(["cursors", "--url", h.owner.url])).stdout.trim().split("\n");
    expect(cursorTable[0]).toMatch(/^NAME\s+ACK FLOOR\s+READ TO\s+LAG\s+IN FLIGHT\s+RETRIES\s+FAILURES\s+PAUSED$/);
    expect(cursorTable[1]).toMatch(new RegExp(`^ops\\.audit\\s+${floor}\\s+${processors[0].delivered}\\s+0\\s+0\\s+0\\s+0\\s+no$`));

    const bad = await cli(["timers", "--url", h.owner.url, "--preview", "101"]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain("must be a whole number from 1 to 100");
  });
});
