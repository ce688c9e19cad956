// Time through the real transport (test/helpers/time-harness.ts, ManualClock): the clock's
// lookahead (claimed and started ahead, sent at the moment), executors that hold calls of time, and
// real owner processes killed with SIGKILL on the real clock.

// @module-tag postgres

import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Code, createClient as createRpcClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { describe, expect, it } from "vitest";
import { ManualClock } from "../server/src/clock.js";
import { createClient } from "../sdk/ts/src/client.js";
import type { ActionContext } from "../sdk/ts/src/executor.js";
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
import { TimeService } from "@chronolog/sdk/gen/chronolog/v1/time_pb";
import { manifestOf } from "../sdk/ts/src/plugin.js";
import { expectConnectError } from "./helpers/log-snapshot.js";
import { spawnOwner, tempDir, type OwnerProcess } from "./helpers/owner.js";
import { until } from "./helpers/until.js";
import { eventsOf } from "./helpers/log-snapshot.js";
import { T0, at, cleanUpAfterEach, cleanups, every, executor, harness, ms, occurrences, remindPlugin, type Harness } from "./helpers/time-harness.js";

cleanUpAfterEach();

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
