// Retention of spent timers and ended occurrences (time/retention.ts) through the real
// transport: TimeService to set delays and timers, an in-process SDK executor hosting the
// actions, the store read directly for `timers` and `timer_occurrences`, GET /metrics.
//
// As in time.test.ts, a ManualClock is the owner's clock and its TimerHost: the retention's
// hourly sweep is armed there next to time's one clock, so `clock.set/advance` rings it. Tests
// wait for a sweep with `sweepFrom` (the owner's `onSweep`), never on sleeps. A sweep
// deletes rows whose last change (`updated_at`, a commit time) is strictly before
// `now - retention`; the arithmetic is written beside each step.
//
// @module-tag postgres

import type { JsonObject } from "@bufbuild/protobuf";
import { timestampFromMs, timestampMs } from "@bufbuild/protobuf/wkt";
import { Code, createClient as createRpcClient, type Client } from "@connectrpc/connect";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../server/src/clock.js";
import { loadConfig, type OwnerConfig } from "../server/src/config.js";
import type { SweepResult } from "../server/src/time/retention.js";
import { createClient, type ChronologClient } from "../sdk/ts/src/client.js";
import { runExecutor, type ActionContext } from "../sdk/ts/src/executor.js";
import { TimeService } from "@chronolog/sdk/gen/chronolog/v1/time_pb";
import { definePlugin, type PluginDefinition, type ScheduleDefinition } from "../sdk/ts/src/plugin.js";
import { eventsOf, expectConnectError } from "./helpers/log-snapshot.js";
import { ownerRows, spawnOwner, startTestOwner, tempDir } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

type TestOwner = Awaited<ReturnType<typeof startTestOwner>>;
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/** 2026-03-02T12:00:00Z. */
const T0 = Date.UTC(2026, 2, 2, 12);
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** What the `keep` plugin's actions saw (`arm`: the delays it armed), and whether `flaky` and `arm` fail. */
interface Recorder {
  calls: ActionContext[];
  failing: boolean;
  armed?: { delayId: string; dueMs: number; attempt: number }[];
}

/**
 * `keep.send` records its calls; `keep.flaky` too, and throws while `failing`; `keep.arm` arms a
 * delay of `keep.send` in 60 s under its call (the cause), then throws while `failing`. The
 * declared schedule `keep/off` (disabled), and `schedules`.
 */
function keepPlugin(rec: Recorder, schedules: Record<string, ScheduleDefinition>): PluginDefinition {
  return definePlugin({
    name: "keep",
    actions: {
      send: {
        allow: ["*"],
        run(ctx) {
          rec.calls.push(ctx);
          return {};
        },
      },
      quiet: {
        allow: ["*"],
        record: false,
        run(ctx) {
          rec.calls.push(ctx);
          return { quiet: true };
        },
      },
      flaky: {
        allow: ["*"],
        run(ctx) {
          rec.calls.push(ctx);
          if (rec.failing) throw new Error("the mail relay is down");
          return {};
        },
      },
      arm: {
        allow: ["*"],
        async run(ctx) {
          const { delayId, due } = await ctx.delay("keep.send", { from: "arm" }, { intervalMs: 60_000 }, "unbounded");
          (rec.armed ??= []).push({ delayId, dueMs: due.getTime(), attempt: ctx.attempt });
          if (rec.failing) throw new Error("arming failed after its delay");
          return { delayId };
        },
      },
    },
    schedules: { off: { action: "send", everyMs: 3_600_000, disabled: true }, ...schedules },
  });
}

interface Harness {
  owner: TestOwner;
  client: ChronologClient;
  time: Client<typeof TimeService>;
  rec: Recorder;
}

/**
 * An owner on `clock` (also its TimerHost) with `options` (retention, chunk size, config, data
 * folder; tokens; more declared schedules), an executor hosting `keep`, once the sweep the owner
 * makes at start has ended.
 */
async function harness(
  clock: ManualClock,
  options: Parameters<typeof startTestOwner>[0] & { token?: string; executorToken?: string; schedules?: Record<string, ScheduleDefinition> },
  rec: Recorder = { calls: [], failing: false },
): Promise<Harness> {
  const { token, executorToken, schedules = {}, ...ownerOptions } = options;
  const owner = await startTestOwner({ clock, timers: clock, heartbeatIntervalMs: 600_000, shutdownGraceMs: 200, ...ownerOptions });
  const closeOwner = owner.close.bind(owner);
  let closed: Promise<void> | undefined;
  const close = () => (closed ??= closeOwner());
  cleanups.push(close);
  const client = createClient({ url: owner.url, token });
  const plugin = keepPlugin(rec, schedules);
  const ex = runExecutor({ url: owner.url, plugins: [plugin], credits: 16, maxBackoffMs: 200, token: executorToken, onError: () => {} });
  cleanups.push(() => ex.stop(100));
  await ex.ready;
  if (owner.timerRetention.retentionMs > 0) await until(() => owner.timerRetention.sweeps >= 1, "the sweep at start");
  return { owner: Object.assign(owner, { close }), client, time: createRpcClient(TimeService, client.transport), rec };
}

/** Resolves with the first sweep of `owner` (its timer retention, or `which`) that starts at or after `atMs` on its clock (subscribe before moving the clock); rejects after 10 s. */
function sweepFrom<K extends "timerRetention" | "callRetention" = "timerRetention">(
  owner: TestOwner,
  atMs: number,
  which?: K,
): Promise<Parameters<Parameters<TestOwner[K]["onSweep"]>[0]>[0]> {
  return new Promise((resolve, reject) => {
    const timeout = setTimeout(() => reject(new Error(`no sweep from ${new Date(atMs).toISOString()} within 10 s`)), 10_000);
    (owner[which ?? "timerRetention"] as { onSweep(listener: (result: SweepResult) => void): void }).onSweep((result) => {
      if (result.startedAtMs < atMs) return;
      clearTimeout(timeout);
      resolve(result);
    });
  });
}

/** Rows of one SQL query on the owner's store. */
function sql(h: Harness, statement: string): Promise<Record<string, unknown>[]> {
  return ownerRows(h, statement);
}

const timerIds = async (h: Harness) => (await sql(h, "SELECT id FROM timers ORDER BY id")).map((r) => r.id);
const occurrenceRows = (h: Harness) => sql(h, "SELECT timer_id, status, updated_at FROM timer_occurrences ORDER BY timer_id, due_ms");

/** A delay of `keep.<action>` in `ms`, no lateness bound; its id. */
async function delay(h: Harness, ms: number, action = "send", input: JsonObject = {}): Promise<string> {
  const { delayId } = await h.time.delay({
    action: `keep.${action}`,
    input,
    when: { case: "intervalMs", value: BigInt(ms) },
    overdue: { bound: { case: "unbounded", value: true } },
  });
  return delayId;
}

/** Prometheus samples of `owner`'s GET /metrics, by series as written. */
async function scrape(url: string): Promise<Map<string, number>> {
  const samples = new Map<string, number>();
  for (const line of (await (await fetch(`${url}/metrics`)).text()).split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    samples.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return samples;
}

describe("retention of spent timers and ended occurrences", () => {
  it("a fired delay and its occurrence are deleted once older than the default 7 days, not before; the log keeps their history; GetTimer and ListTimers no longer show it", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock, { timerRetentionMs: undefined }); // the default: 7 days
    expect(h.owner.timerRetention.retentionMs).toBe(7 * DAY);
    expect(clock.armed()).toEqual([{ atMs: T0 + HOUR, delayMs: HOUR }]); // the hourly sweep, armed at start

    const id = await delay(h, 60_000);
    clock.advance(60_000); // T0 + 60 s: fires
    await until(async () => (await occurrenceRows(h))[0]?.status === "completed", "the delay's call completed");
    // Both rows last changed at T0 + 60 s (the claim spent the timer, the call's end closed the occurrence).
    expect(await sql(h, "SELECT id, next_due_ms, updated_at FROM timers WHERE kind = 'delay'")).toEqual([{ id, next_due_ms: null, updated_at: T0 + 60_000 }]);
    expect(await occurrenceRows(h)).toEqual([{ timer_id: id, status: "completed", updated_at: T0 + 60_000 }]);

    // T0 + 60 s + 7 d: the sweep armed for T0 + 1 h rings; cutoff = now - 7 d = T0 + 60 s, and the rows are not before it.
    let swept = sweepFrom(h.owner, T0 + 60_000 + 7 * DAY);
    clock.set(T0 + 60_000 + 7 * DAY);
    expect(await swept).toMatchObject({ occurrences: 0, timers: 0, complete: true });
    expect(await timerIds(h)).toEqual(["keep/off", id].sort());
    expect(await occurrenceRows(h)).toHaveLength(1);
    expect((await h.time.getTimer({ timerId: id })).timer?.id).toBe(id);
    expect(clock.armed()).toContainEqual({ atMs: T0 + 60_000 + 7 * DAY + HOUR, delayMs: HOUR }); // the next sweep

    // An hour later: cutoff T0 + 1 h + 60 s, past both rows: deleted, occurrence first, then its timer.
    swept = sweepFrom(h.owner, T0 + 60_000 + 7 * DAY + HOUR);
    clock.advance(HOUR);
    expect(await swept).toMatchObject({ occurrences: 1, timers: 1, complete: true });
    expect(await timerIds(h)).toEqual(["keep/off"]); // the declared schedule stays
    expect(await occurrenceRows(h)).toEqual([]);
    await expectConnectError(h.time.getTimer({ timerId: id }), Code.NotFound, new RegExp(id));
    expect((await h.time.listTimers({})).timers.map((t) => t.id)).toEqual(["keep/off"]);
    expect(h.rec.calls).toHaveLength(1);

    // The log is untouched: the delay set, its call started and completed.
    const log = await eventsOf(h.client, ["timer.scheduled", "action.started", "action.completed"]);
    expect(log.filter((e) => e.data?.timer_id === id || e.data?.call_id === h.rec.calls[0].callId).map((e) => e.type)).toEqual([
      "timer.scheduled",
      "action.started",
      "action.completed",
    ]);

    const samples = await scrape(h.owner.url);
    expect(samples.get('chronolog_retention_swept_total{table="timers"}')).toBe(1);
    expect(samples.get('chronolog_retention_swept_total{table="timer_occurrences"}')).toBe(1);
  });

  it("never deleted: a pending delay, a paused schedule, a disabled declared schedule, a spent declared schedule; a fired delay beside them is", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock, { timerRetentionMs: DAY, schedules: { once: { action: "send", everyMs: HOUR, policy: { maxCount: 1 } } } }); // keep/once: spent after T0 + 1 h
    const pending = await delay(h, 60 * DAY); // due at T0 + 60 d
    await h.time.schedule({ timerId: "hourly", action: "keep.send", spec: { when: { case: "everyMs", value: BigInt(HOUR) } } });
    await h.time.pauseTimer({ timerId: "hourly", note: "holiday" }); // paused at T0: no next due moment
    const fired = await delay(h, 60_000);
    clock.advance(60_000);
    await until(async () => (await occurrenceRows(h)).some((o) => o.status === "completed"), "the fired delay's call");
    let swept = sweepFrom(h.owner, T0 + HOUR);
    clock.set(T0 + HOUR); // keep/once's one occurrence (and a sweep with nothing old enough)
    expect(await swept).toMatchObject({ occurrences: 0, timers: 0 });
    await until(async () => (await occurrenceRows(h)).filter((o) => o.status === "completed").length === 2, "keep/once's call");
    expect(await sql(h, "SELECT id, next_due_ms IS NULL AS spent, paused IS NOT NULL AS paused, disabled, updated_at FROM timers ORDER BY id")).toEqual(
      [
        { id: "hourly", spent: 1, paused: 1, disabled: 0, updated_at: T0 },
        { id: "keep/off", spent: 1, paused: 0, disabled: 1, updated_at: T0 },
        { id: "keep/once", spent: 1, paused: 0, disabled: 0, updated_at: T0 + HOUR },
        { id: fired, spent: 1, paused: 0, disabled: 0, updated_at: T0 + 60_000 },
        { id: pending, spent: 0, paused: 0, disabled: 0, updated_at: T0 },
      ].sort((a, b) => (a.id < b.id ? -1 : 1)),
    );

    // T0 + 30 d: cutoff T0 + 29 d, past every row; the fired delay and both ended occurrences go, no other timer.
    swept = sweepFrom(h.owner, T0 + 30 * DAY);
    clock.set(T0 + 30 * DAY);
    expect(await swept).toMatchObject({ occurrences: 2, timers: 1, complete: true });
    expect(await timerIds(h)).toEqual(["hourly", "keep/off", "keep/once", pending].sort());
    expect(await occurrenceRows(h)).toEqual([]);
    expect((await h.time.getTimer({ timerId: "keep/once" })).timer?.occurrences).toBe(1n); // kept with its count: deleted, the next registration would make it again at 0
    expect((await h.time.getTimer({ timerId: "hourly" })).timer).toMatchObject({ paused: true, pauseNote: "holiday" });
    expect((await h.time.getTimer({ timerId: "keep/off" })).timer?.disabled).toBe(true);
    expect(timestampMs((await h.time.getTimer({ timerId: pending })).timer!.nextDue!)).toBe(T0 + 60 * DAY);
  });

  it("an occurrence waiting for a retry is never deleted, nor its spent timer; once it ends and ages, both go", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock, { timerRetentionMs: 5_000 }, { calls: [], failing: true });
    // A one-shot at T0 + 1 h - 6 s; the sweep armed at start rings at T0 + 1 h.
    const due = T0 + HOUR - 6_000;
    await h.time.schedule({ timerId: "once", action: "keep.flaky", spec: { when: { case: "at", value: timestampFromMs(due) } } });
    clock.set(due); // fires; the call fails: retry_wait until due + 10 s = T0 + 1 h + 4 s (the default waits)
    await until(async () => (await occurrenceRows(h))[0]?.status === "retry_wait", "the retry wait");
    expect(await sql(h, "SELECT next_due_ms, updated_at FROM timers WHERE id = 'once'")).toEqual([{ next_due_ms: null, updated_at: due }]);

    // T0 + 1 h: cutoff T0 + 1 h - 5 s; the timer (last changed at T0 + 1 h - 6 s) is spent and older, but its occurrence waits.
    let swept = sweepFrom(h.owner, T0 + HOUR);
    clock.set(T0 + HOUR);
    expect(await swept).toMatchObject({ occurrences: 0, timers: 0, complete: true });
    expect(await timerIds(h)).toContain("once");
    expect(await occurrenceRows(h)).toEqual([{ timer_id: "once", status: "retry_wait", updated_at: due }]);

    // The retry at T0 + 1 h + 4 s completes; the next sweep (T0 + 2 h, cutoff T0 + 2 h - 5 s) deletes the occurrence, then its timer.
    h.rec.failing = false;
    clock.set(T0 + HOUR + 4_000);
    await until(async () => (await occurrenceRows(h))[0]?.status === "completed", "the retry completed");
    swept = sweepFrom(h.owner, T0 + 2 * HOUR);
    clock.set(T0 + 2 * HOUR);
    expect(await swept).toMatchObject({ occurrences: 1, timers: 1, complete: true });
    expect(await timerIds(h)).toEqual(["keep/off"]);
    expect(await occurrenceRows(h)).toEqual([]);
    expect(h.rec.calls.map((c) => c.attempt)).toEqual([1, 2]);
  });

  it("a spent timer goes once none of its occurrences is active; its ended occurrence, younger, stays until its own age", async () => {
    const clock = new ManualClock(T0);
    const retentionMs = 30 * 60_000 - 5_000; // 29 min 55 s
    const h = await harness(clock, { timerRetentionMs: retentionMs }, { calls: [], failing: true });
    const due = T0 + HOUR + 30 * 60_000;
    await h.time.schedule({ timerId: "once", action: "keep.flaky", spec: { when: { case: "at", value: timestampFromMs(due) } } });
    let swept = sweepFrom(h.owner, T0 + HOUR);
    clock.set(T0 + HOUR); // nothing spent or ended yet
    expect(await swept).toMatchObject({ occurrences: 0, timers: 0, complete: true });

    // Fires at T0 + 1 h 30 min (the timer's last change) and fails; the retry 10 s later completes (the occurrence's last change).
    clock.set(due);
    await until(async () => (await occurrenceRows(h))[0]?.status === "retry_wait", "the retry wait");
    h.rec.failing = false;
    clock.set(due + 10_000);
    await until(async () => (await occurrenceRows(h))[0]?.status === "completed", "the retry completed");

    // T0 + 2 h: cutoff T0 + 1 h 30 min 5 s. The timer is older and has no active occurrence: it goes; its occurrence is younger: it stays.
    swept = sweepFrom(h.owner, T0 + 2 * HOUR);
    clock.set(T0 + 2 * HOUR);
    expect(await swept).toMatchObject({ occurrences: 0, timers: 1, complete: true });
    expect(await timerIds(h)).toEqual(["keep/off"]);
    expect(await occurrenceRows(h)).toEqual([{ timer_id: "once", status: "completed", updated_at: due + 10_000 }]);

    // T0 + 3 h: the occurrence is older too.
    swept = sweepFrom(h.owner, T0 + 3 * HOUR);
    clock.set(T0 + 3 * HOUR);
    expect(await swept).toMatchObject({ occurrences: 1, timers: 0, complete: true });
    expect(await occurrenceRows(h)).toEqual([]);
  });

  it("a delay armed under a cause and since swept is not armed again when that work runs again: answered from its timer.scheduled event", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock, { timerRetentionMs: DAY }, { calls: [], failing: true });
    await expectConnectError(h.client.call("keep.arm", {}, { callId: "arm-1" }), Code.Aborted, /arming failed/); // armed a delay due at T0 + 60 s, then failed
    const [{ delayId }] = h.rec.armed!;
    clock.advance(60_000);
    await until(async () => (await occurrenceRows(h))[0]?.status === "completed", "the delay's call");
    const swept = sweepFrom(h.owner, T0 + 2 * DAY);
    clock.set(T0 + 2 * DAY); // cutoff T0 + 1 d: the delay and its occurrence go
    expect(await swept).toMatchObject({ occurrences: 1, timers: 1 });
    expect(await timerIds(h)).toEqual(["keep/off"]);

    // The call made again with its call id runs again (its first run failed); its delay, at the same position, is found in the log.
    h.rec.failing = false;
    expect((await h.client.call("keep.arm", {}, { callId: "arm-1" })).output).toEqual({ delayId });
    expect(h.rec.armed).toEqual([
      { delayId, dueMs: T0 + 60_000, attempt: 1 },
      { delayId, dueMs: T0 + 60_000, attempt: 2 },
    ]);
    expect(await timerIds(h)).toEqual(["keep/off"]); // nothing armed again
    clock.advance(DAY);
    expect(await occurrenceRows(h)).toEqual([]); // nothing claimed since
    expect(h.rec.calls).toHaveLength(1); // keep.send made once
    expect((await eventsOf(h.client, ["timer.scheduled"])).filter((e) => e.data?.timer_id === delayId)).toHaveLength(1);
  });

  it("a sweep deletes in chunks of timerRetentionChunkRows, one commit each: 12 occurrences and 12 timers in chunks of 5", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock, { timerRetentionMs: DAY, timerRetentionChunkRows: 5 });
    const ids = [];
    for (let i = 0; i < 12; i++) ids.push(await delay(h, 60_000, "send", { n: i }));
    clock.advance(60_000);
    await until(async () => (await occurrenceRows(h)).filter((o) => o.status === "completed").length === 12, "12 calls completed");

    const swept = sweepFrom(h.owner, T0 + 2 * DAY);
    clock.set(T0 + 2 * DAY);
    // Occurrences 5 + 5 + 2, then timers 5 + 5 + 2: six chunks, the short one ending each table.
    expect(await swept).toEqual({ startedAtMs: T0 + 2 * DAY, occurrences: 12, timers: 12, chunks: 6, complete: true });
    expect(await timerIds(h)).toEqual(["keep/off"]);
    expect(await occurrenceRows(h)).toEqual([]);
    expect(h.owner.timerRetention.totals).toEqual({ timers: 12, timer_occurrences: 12 });
  });

  it("an owner sweeps at start: rows that aged while it was down are deleted when it comes back", async () => {
    const clock = new ManualClock(T0);
    const dataDir = tempDir();
    const first = await harness(clock, { timerRetentionMs: DAY, dataDir });
    const id = await delay(first, 60_000);
    clock.advance(60_000);
    await until(async () => (await occurrenceRows(first))[0]?.status === "completed", "the delay's call");
    await first.owner.close();
    expect(clock.armed()).toEqual([]); // the stopped owner left nothing armed

    clock.set(T0 + 3 * DAY); // down for 3 days: cutoff at the next start is T0 + 2 d
    const second = await harness(clock, { timerRetentionMs: DAY, dataDir });
    expect(second.owner.timerRetention.sweeps).toBe(1);
    expect(second.owner.timerRetention.totals).toEqual({ timers: 1, timer_occurrences: 1 });
    expect(await timerIds(second)).toEqual(["keep/off"]);
    await expectConnectError(second.time.getTimer({ timerId: id }), Code.NotFound, new RegExp(id));
  });

  it("retention_days: 0 in the owner config keeps everything and arms no sweep", async () => {
    const clock = new ManualClock(T0);
    const tokens = { admin: "retention-admin-token-0123", exec: "retention-executor-token-0123" };
    const config: OwnerConfig = {
      principals: [
        { name: "ops", token: tokens.admin, role: "admin" },
        { name: "ex", token: tokens.exec, role: "executor" },
      ],
      timers: { retention_days: 0 },
    };
    const h = await harness(clock, { timerRetentionMs: undefined, config, token: tokens.admin, executorToken: tokens.exec });
    expect(h.owner.timerRetention.retentionMs).toBe(0);
    const id = await delay(h, 60_000);
    clock.advance(60_000);
    await until(async () => (await occurrenceRows(h))[0]?.status === "completed", "the delay's call");
    expect(clock.armed()).toEqual([]); // no hourly sweep (and no timer pending)

    clock.set(T0 + 365 * DAY);
    expect(await timerIds(h)).toEqual(["keep/off", id].sort());
    expect(await occurrenceRows(h)).toEqual([{ timer_id: id, status: "completed", updated_at: T0 + 60_000 }]);
    expect(h.owner.timerRetention.sweeps).toBe(0);
  });

  it("the config's timers.retention_days is checked at start", () => {
    const dir = tempDir();
    const file = join(dir, "owner.yaml");
    const write = (timers: string) => writeFileSync(file, `principals: [{ name: ops, token: an-admin-token-0123, role: admin }]\ntimers: ${timers}\n`);
    write("{ retention_days: 0.5 }");
    expect(loadConfig(file).timers).toEqual({ retention_days: 0.5 });
    write("{ retention_days: -1 }");
    expect(() => loadConfig(file)).toThrow(/\/timers\/retention_days must be >= 0/);
    write("{ retention: 7 }");
    expect(() => loadConfig(file)).toThrow(/\/timers must NOT have additional properties \(retention\)/);
  });
});

describe("retention of finished action calls", () => {
  const calls = (h: Harness) => sql(h, "SELECT call_id, state, attempt, updated_at FROM action_calls ORDER BY call_id");

  it("finished calls older than the retention are deleted; a recorded call id retried later is still answered from the log, an unrecorded one runs as new", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock, { callRetentionMs: DAY }, { calls: [], failing: true });
    await until(() => h.owner.callRetention.sweeps >= 1, "the call sweep at start");
    expect(h.owner.callRetention.retentionMs).toBe(DAY);
    const first = await h.client.call("keep.send", { to: "ana" }, { callId: "c-rec" });
    const timed = `${T0.toString(16).padStart(12, "0")}0123456789abcdef0123`; // leads with its moment, as an occurrence id does
    const firstTimed = await h.client.call("keep.send", { to: "cy" }, { callId: timed });
    await h.client.call("keep.quiet", {}, { callId: "c-unrec" });
    await expectConnectError(h.client.call("keep.flaky", {}, { callId: "c-fail" }), Code.Aborted, /mail relay/);
    expect(await calls(h)).toEqual([
      { call_id: timed, state: "completed", attempt: 1, updated_at: T0 },
      { call_id: "c-fail", state: "failed", attempt: 1, updated_at: T0 },
      { call_id: "c-rec", state: "completed", attempt: 1, updated_at: T0 },
      { call_id: "c-unrec", state: "completed", attempt: 1, updated_at: T0 },
    ]);

    // T0 + 1 d: cutoff T0, and the rows are not before it.
    let swept = sweepFrom(h.owner, T0 + DAY, "callRetention");
    clock.set(T0 + DAY);
    expect(await swept).toMatchObject({ calls: 0, complete: true });
    expect(await calls(h)).toHaveLength(4);
    // An hour later: cutoff T0 + 1 h, past all four.
    swept = sweepFrom(h.owner, T0 + DAY + HOUR, "callRetention");
    clock.advance(HOUR);
    expect(await swept).toMatchObject({ calls: 4, chunks: 1, complete: true });
    expect(await calls(h)).toEqual([]);
    expect(h.rec.calls).toHaveLength(4);

    // The recorded completed call: answered from action.completed, not run; another input is still a conflict.
    expect(await h.client.call("keep.send", { to: "ana" }, { callId: "c-rec" })).toEqual({ ...first, fromLog: true });
    await expectConnectError(h.client.call("keep.send", { to: "bob" }, { callId: "c-rec" }), Code.AlreadyExists, /c-rec/);
    await expectConnectError(h.client.call("keep.quiet", {}, { callId: "c-rec" }), Code.AlreadyExists, /c-rec/);
    expect(await h.client.call("keep.send", { to: "cy" }, { callId: timed })).toEqual({ ...firstTimed, fromLog: true });
    expect(h.rec.calls).toHaveLength(4);
    // The recorded failed call runs again as its next attempt, as before the sweep.
    h.rec.failing = false;
    expect((await h.client.call("keep.flaky", {}, { callId: "c-fail" })).fromLog).toBe(false);
    expect(h.rec.calls.map((c) => [c.callId, c.attempt])).toEqual([
      ["c-rec", 1],
      [timed, 1],
      ["c-unrec", 1],
      ["c-fail", 1],
      ["c-fail", 2],
    ]);
    const flaky = (await eventsOf(h.client, ["action.started", "action.retried", "action.failed", "action.completed"])).filter(
      (e) => e.data?.call_id === "c-fail",
    );
    expect(flaky.map((e) => [e.type, e.data?.attempt])).toEqual([
      ["action.started", 1],
      ["action.failed", 1],
      ["action.retried", 2],
      ["action.completed", 2],
    ]);
    // The unrecorded call left nothing but its row: its id runs as a new call.
    expect((await h.client.call("keep.quiet", {}, { callId: "c-unrec" })).fromLog).toBe(false);
    expect(h.rec.calls.at(-1)).toMatchObject({ callId: "c-unrec", attempt: 1 });

    const samples = await scrape(h.owner.url);
    expect(samples.get('chronolog_retention_swept_total{table="action_calls"}')).toBe(4);
  });

  it("actions.call_retention_days in the config and serve --call-retention-days set it; 0 keeps calls forever", { tags: ["serial"] }, async () => {
    const dir = tempDir();
    const file = join(dir, "owner.yaml");
    writeFileSync(file, "principals: [{ name: ops, token: an-admin-token-0123, role: admin }]\nactions: { call_retention_days: 2 }\n");
    expect(loadConfig(file).actions).toEqual({ call_retention_days: 2 });
    const owner = await startTestOwner({ config: loadConfig(file) });
    cleanups.push(() => owner.close());
    expect(owner.callRetention.retentionMs).toBe(2 * DAY);
    expect((await startTestOwner({ callRetentionMs: undefined }).then((o) => (cleanups.push(() => o.close()), o))).callRetention.retentionMs).toBe(7 * DAY); // the default
    writeFileSync(file, "principals: [{ name: ops, token: an-admin-token-0123, role: admin }]\nactions: { call_retention_days: -1 }\n");
    expect(() => loadConfig(file)).toThrow(/\/actions\/call_retention_days must be >= 0/);
    writeFileSync(file, "principals: [{ name: ops, token: an-admin-token-0123, role: admin }]\nactions: { call_retention_days: 0.5 }\n");
    expect(() => loadConfig(file)).toThrow(/\/actions\/call_retention_days must be integer/);

    const served = await spawnOwner(join(dir, "data"), ["--call-retention-days", "0"]);
    cleanups.push(() => void served.child.kill("SIGKILL"));
    expect(served.logs.some((line) => line.includes("action call retention off"))).toBe(true);
  });
});
