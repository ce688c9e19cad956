// Schedules like Temporal's and per-schedule DST policies, and the TimeService
// message fixes that came with them.
//
// The rules (time/spec-checks.ts, moments.ts, owed.ts, claim-rules.ts, cron.ts) are pure
// functions of their arguments and are tested at exact instants. The RPCs (PauseTimer,
// ResumeTimer, TriggerTimer, BackfillTimer, Schedule with a policy, GetTimer's preview) run
// against a real owner through the real transport, with an in-process SDK executor hosting
// the actions. As in time.test.ts, a ManualClock is both the owner's clock and its TimerHost:
// `clock.set/advance` rings what the owner armed.
//
// Overlap and catch-up "all within window" are decided in the claim (fire.ts), through
// claimDecision and owedOccurrences: the rules are tested alone and end to end.
//
// @module-tag postgres

import { createHash } from "node:crypto";
import { timestampFromMs, timestampMs, type Timestamp } from "@bufbuild/protobuf/wkt";
import { Code, createClient as createRpcClient, type Client } from "@connectrpc/connect";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../server/src/clock.js";
import { parseCron } from "../server/src/time/cron.js";
import { claimDecision } from "../server/src/time/claim-rules.js";
import { dueOf, nominalOf, type TimerMoments } from "../server/src/time/moments.js";
import { backfillMoments, owedOccurrences, owedWithin, preview, resumeDue } from "../server/src/time/owed.js";
import { checkSchedulePolicy, firstDue } from "../server/src/time/spec-checks.js";
import { defaultSchedulePolicy, type SchedulePolicy, type TimerSpec } from "../server/src/store/timer-records.js";
import { createClient, type ChronologClient } from "../sdk/ts/src/client.js";
import { runExecutor, type ActionContext } from "../sdk/ts/src/executor.js";
import { CatchUpPolicy, DstGap, DstRepeated, OverlapPolicy, TimeService } from "@chronolog/sdk/gen/chronolog/v1/time_pb";
import { BadRequestSchema } from "@chronolog/sdk/gen/google/rpc/error_details_pb";
import { definePlugin, manifestOf, type PluginDefinition, type ScheduleDefinition } from "../sdk/ts/src/plugin.js";
import { cli } from "./helpers/cli.js";
import { eventsOf, expectConnectError, expectUnchanged, logSnapshot } from "./helpers/log-snapshot.js";
import { ownerRows, startTestOwner, tempDir } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

/** The single occurrence the catch-up policy "latest" owes at `nowMs`: the most recent due moment, and the next one after it. */
function owedOccurrence(timer: TimerMoments, nowMs: number): { dueMs: number; nextDueMs: number | null } {
  const owed = owedOccurrences({ ...timer, policy: { ...(timer.policy ?? defaultSchedulePolicy), catchUp: "latest", catchUpWindowMs: 0 } }, nowMs);
  return { dueMs: owed.dueMs[owed.dueMs.length - 1] ?? (timer.nextDueMs as number), nextDueMs: owed.nextDueMs };
}

type TestOwner = Awaited<ReturnType<typeof startTestOwner>>;
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/** 2026-03-02T12:00:00Z, a Monday. */
const T0 = Date.UTC(2026, 2, 2, 12);
const MIN = 60_000;
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const iso = (t: number | undefined | null) => (t === undefined || t === null ? t : new Date(t).toISOString());
const ms = (t: Timestamp | undefined) => (t ? timestampMs(t) : undefined);
const at = (s: string) => Date.parse(s);

/** A policy: the defaults with `p` over them. */
const policy = (p: Partial<SchedulePolicy> = {}): SchedulePolicy => ({ ...defaultSchedulePolicy, ...p });
/** An every-minute timer anchored at T0 + 1 min, next due `nextDueMs`. */
const minutely = (nextDueMs: number, p: Partial<SchedulePolicy> = {}, occurrences = 0) => ({
  id: "t",
  spec: { kind: "every", everyMs: MIN } as TimerSpec,
  nextDueMs,
  policy: policy({ anchorMs: T0 + MIN, ...p }),
  occurrences,
});

describe("DST policy per cron schedule, at exact instants", () => {
  const take = (expr: string, zone: string, from: string, n: number, dst = {}) => parseCron(expr, zone, dst).take(at(from), n).map(iso);

  it("Europe/Berlin 2026-03-29 (02:00 → 03:00): 02:30 shifts to 03:30 CEST by default; gap skip runs the next day", () => {
    expect(take("30 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z", 2)).toEqual(["2026-03-29T01:30:00.000Z", "2026-03-30T00:30:00.000Z"]);
    expect(take("30 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z", 2, { gap: "shift" })).toEqual(["2026-03-29T01:30:00.000Z", "2026-03-30T00:30:00.000Z"]);
    expect(take("30 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z", 2, { gap: "skip" })).toEqual(["2026-03-30T00:30:00.000Z", "2026-03-31T00:30:00.000Z"]);
  });

  it("Europe/Berlin 2026-10-25 (03:00 → 02:00): 02:30 runs at the first copy by default, the second with last, both with both", () => {
    expect(take("30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z", 2)).toEqual(["2026-10-25T00:30:00.000Z", "2026-10-26T01:30:00.000Z"]);
    expect(take("30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z", 2, { repeated: "last" })).toEqual([
      "2026-10-25T01:30:00.000Z",
      "2026-10-26T01:30:00.000Z",
    ]);
    expect(take("30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z", 3, { repeated: "both" })).toEqual([
      "2026-10-25T00:30:00.000Z",
      "2026-10-25T01:30:00.000Z",
      "2026-10-26T01:30:00.000Z",
    ]);
    // A wildcard hour runs at every real instant whatever the policy.
    expect(take("0 * * * *", "Europe/Berlin", "2026-10-24T23:30:00Z", 3, { repeated: "first" })).toEqual([
      "2026-10-25T00:00:00.000Z",
      "2026-10-25T01:00:00.000Z",
      "2026-10-25T02:00:00.000Z",
    ]);
  });

  it("America/Chicago 2026-03-08 and 2026-11-01: the same rules in another zone", () => {
    expect(take("30 2 * * *", "America/Chicago", "2026-03-07T12:00:00Z", 2)).toEqual(["2026-03-08T08:30:00.000Z", "2026-03-09T07:30:00.000Z"]); // 03:30 CDT
    expect(take("30 2 * * *", "America/Chicago", "2026-03-07T12:00:00Z", 1, { gap: "skip" })).toEqual(["2026-03-09T07:30:00.000Z"]);
    expect(take("30 1 * * *", "America/Chicago", "2026-10-31T12:00:00Z", 1)).toEqual(["2026-11-01T06:30:00.000Z"]); // 01:30 CDT
    expect(take("30 1 * * *", "America/Chicago", "2026-10-31T12:00:00Z", 1, { repeated: "last" })).toEqual(["2026-11-01T07:30:00.000Z"]); // 01:30 CST
    expect(take("30 1 * * *", "America/Chicago", "2026-10-31T12:00:00Z", 3, { repeated: "both" })).toEqual([
      "2026-11-01T06:30:00.000Z",
      "2026-11-01T07:30:00.000Z",
      "2026-11-02T07:30:00.000Z",
    ]);
  });

  it("a timer's spec carries its DST policy into its moments: first due, owed occurrence and preview", () => {
    const spec: TimerSpec = { kind: "cron", expression: "30 2 * * *", zone: "Europe/Berlin", dst: { gap: "skip", repeated: "both" } };
    expect(iso(firstDue(spec, at("2026-03-28T12:00:00Z")))).toBe("2026-03-30T00:30:00.000Z");
    const timer = { id: "b2", spec, nextDueMs: at("2026-10-25T00:30:00Z"), policy: policy() };
    expect(preview(timer, 3).map(iso)).toEqual(["2026-10-25T00:30:00.000Z", "2026-10-25T01:30:00.000Z", "2026-10-26T01:30:00.000Z"]);
    expect(owedOccurrence(timer, at("2026-10-25T00:30:00Z"))).toEqual({ dueMs: at("2026-10-25T00:30:00Z"), nextDueMs: at("2026-10-25T01:30:00Z") });
  });
});

describe("rules (pure, at exact instants)", () => {
  it("catch-up: latest owes the most recent missed moment; all-within-window every one in the window; none only an on-time one", () => {
    const now = T0 + 10 * MIN + 30_000; // moments T0+1min ... T0+10min have passed
    expect(owedOccurrences(minutely(T0 + MIN), now)).toEqual({ dueMs: [T0 + 10 * MIN], nextDueMs: T0 + 11 * MIN });
    expect(owedOccurrences(minutely(T0 + MIN, { catchUp: "allWithinWindow", catchUpWindowMs: 3 * MIN }), now)).toEqual({
      dueMs: [T0 + 8 * MIN, T0 + 9 * MIN, T0 + 10 * MIN],
      nextDueMs: T0 + 11 * MIN,
    });
    expect(owedOccurrences(minutely(T0 + MIN, { catchUp: "allWithinWindow", catchUpWindowMs: 10_000 }), now)).toEqual({ dueMs: [], nextDueMs: T0 + 11 * MIN });
    expect(owedOccurrences(minutely(T0 + MIN, { catchUp: "none" }), now)).toEqual({ dueMs: [], nextDueMs: T0 + 11 * MIN });
    expect(owedOccurrences(minutely(T0 + 10 * MIN, { catchUp: "none" }), T0 + 10 * MIN + 800)).toEqual({ dueMs: [T0 + 10 * MIN], nextDueMs: T0 + 11 * MIN });
    // The window is never older than the timer's next due moment.
    expect(owedOccurrences(minutely(T0 + 9 * MIN, { catchUp: "allWithinWindow", catchUpWindowMs: HOUR }), now).dueMs).toEqual([T0 + 9 * MIN, T0 + 10 * MIN]);
    // owedOccurrence (the single one the claim makes without the catch-up wiring) is "latest".
    expect(owedOccurrence(minutely(T0 + MIN, { catchUp: "none" }), now)).toEqual({ dueMs: T0 + 10 * MIN, nextDueMs: T0 + 11 * MIN });
  });

  it("with the clock's lookahead: what was missed by the claim's time first (by catch-up), then each moment within the lookahead, on time", () => {
    // Resumed (or back from an outage) 11 ms before T0+10min, the moment T0+9min missed: both are owed, the missed one first.
    const now = T0 + 10 * MIN - 11;
    expect(owedWithin(minutely(T0 + 9 * MIN), now, now + 50)).toEqual({ dueMs: [T0 + 9 * MIN, T0 + 10 * MIN], nextDueMs: T0 + 11 * MIN });
    expect(owedWithin(minutely(T0 + 2 * MIN), now, now + 50)).toEqual({ dueMs: [T0 + 9 * MIN, T0 + 10 * MIN], nextDueMs: T0 + 11 * MIN }); // latest missed only
    expect(owedWithin(minutely(T0 + 2 * MIN, { catchUp: "none" }), now, now + 50)).toEqual({ dueMs: [T0 + 10 * MIN], nextDueMs: T0 + 11 * MIN }); // none missed; the coming one is on time
    // Nothing missed: only what comes within the lookahead, each moment of it.
    expect(owedWithin(minutely(T0 + 10 * MIN), now, now + 50)).toEqual({ dueMs: [T0 + 10 * MIN], nextDueMs: T0 + 11 * MIN });
    expect(owedWithin(minutely(T0 + 10 * MIN), now, now + MIN + 11)).toEqual({ dueMs: [T0 + 10 * MIN, T0 + 11 * MIN], nextDueMs: T0 + 12 * MIN });
    // The count left bounds missed and coming ones together.
    expect(owedWithin(minutely(T0 + 9 * MIN, { maxCount: 3 }, 2), now, now + 50)).toEqual({ dueMs: [T0 + 9 * MIN], nextDueMs: null });
  });

  it("end bound and maximum count: nothing at or after the end; spent with the last one; catch-up never owes more than the count left", () => {
    expect(owedOccurrences(minutely(T0 + MIN, { endMs: T0 + 5 * MIN + 1 }), T0 + HOUR)).toEqual({ dueMs: [T0 + 5 * MIN], nextDueMs: null });
    expect(owedOccurrences(minutely(T0 + 3 * MIN, { endMs: T0 + 5 * MIN }), T0 + 3 * MIN)).toEqual({ dueMs: [T0 + 3 * MIN], nextDueMs: T0 + 4 * MIN });
    expect(owedOccurrences(minutely(T0 + 4 * MIN, { endMs: T0 + 5 * MIN }), T0 + 4 * MIN)).toEqual({ dueMs: [T0 + 4 * MIN], nextDueMs: null });
    expect(owedOccurrences(minutely(T0 + MIN, { maxCount: 3 }, 1), T0 + MIN)).toEqual({ dueMs: [T0 + MIN], nextDueMs: T0 + 2 * MIN });
    expect(owedOccurrences(minutely(T0 + 2 * MIN, { maxCount: 3 }, 2), T0 + 2 * MIN)).toEqual({ dueMs: [T0 + 2 * MIN], nextDueMs: null });
    expect(owedOccurrences(minutely(T0 + MIN, { maxCount: 5, catchUp: "allWithinWindow", catchUpWindowMs: HOUR }, 3), T0 + 10 * MIN)).toEqual({
      dueMs: [T0 + 9 * MIN, T0 + 10 * MIN],
      nextDueMs: null,
    });
    // Start bound: the first moment at or after it.
    const spec: TimerSpec = { kind: "every", everyMs: 10_000 };
    expect(firstDue(spec, T0, "spec", policy({ startMs: T0 + 25_000 }))).toBe(T0 + 30_000);
    expect(firstDue(spec, T0, "spec", policy({ startMs: T0 + 30_000 }))).toBe(T0 + 30_000);
    expect(() => firstDue(spec, T0, "spec", policy({ endMs: T0 + 5_000 }))).toThrow(/policy\.end leaves no fire time/);
    // Preview stops at the end and at the count.
    expect(preview(minutely(T0 + MIN, { endMs: T0 + 3 * MIN + 1 }), 10)).toEqual([T0 + MIN, T0 + 2 * MIN, T0 + 3 * MIN]);
    expect(preview(minutely(T0 + MIN, { maxCount: 4 }, 2), 10)).toEqual([T0 + MIN, T0 + 2 * MIN]);
  });

  it("jitter: a deterministic offset per moment, at most the bound and always before the next moment; due moments map back to their moment", () => {
    const timer = minutely(T0 + MIN, { jitterMs: 20_000 });
    const dues = Array.from({ length: 50 }, (_, i) => dueOf(timer, T0 + (i + 1) * MIN));
    expect(dues.every((d, i) => d >= T0 + (i + 1) * MIN && d <= T0 + (i + 1) * MIN + 20_000)).toBe(true);
    expect(new Set(dues.map((d, i) => d - T0 - (i + 1) * MIN)).size).toBeGreaterThan(10); // they differ
    expect(dues.map((d) => nominalOf(timer, d))).toEqual(dues.map((_, i) => T0 + (i + 1) * MIN));
    expect(dueOf(timer, T0 + MIN)).toBe(dueOf({ ...timer }, T0 + MIN)); // deterministic
    expect(dueOf({ ...timer, id: "other" }, T0 + MIN)).not.toBe(dueOf(timer, T0 + MIN)); // per timer
    // A bound over the interval (an every_ms timer stored before such bounds were refused) stays below the next moment.
    const wide = minutely(T0 + MIN, { jitterMs: 10 * MIN });
    const wideDues = Array.from({ length: 20 }, (_, i) => dueOf(wide, T0 + (i + 1) * MIN));
    expect(wideDues.every((d, i) => d < T0 + (i + 2) * MIN && (i === 0 || d > wideDues[i - 1]))).toBe(true);
    // The claim owes the jittered moment and moves to the next one's.
    const first = { ...timer, nextDueMs: dues[0] };
    expect(owedOccurrence(first, dues[0])).toEqual({ dueMs: dues[0], nextDueMs: dues[1] });
    expect(owedOccurrence(first, dues[3] + 1)).toEqual({ dueMs: dues[3], nextDueMs: dues[4] });
    expect(preview(first, 3)).toEqual(dues.slice(0, 3));
    // A cron schedule's jitter keeps its first due moment within the bound.
    const cron: TimerSpec = { kind: "cron", expression: "0 9 * * *", zone: "Europe/Berlin" };
    const due = firstDue(cron, T0, "spec", policy({ jitterMs: 5 * MIN }), "cron-jitter");
    expect(due).toBeGreaterThanOrEqual(at("2026-03-03T08:00:00Z"));
    expect(due).toBeLessThanOrEqual(at("2026-03-03T08:05:00Z"));
  });

  it("overlap: allow calls whatever runs; skip skips while one runs; buffer one holds one, then skips; lateness is judged first", () => {
    const none = { running: 0, buffered: 0 };
    const running = { running: 1, buffered: 0 };
    const full = { running: 1, buffered: 1 };
    const timer = (overlap: SchedulePolicy["overlap"]) => ({ overdue: { kind: "unbounded" } as const, policy: policy({ overlap }) });
    expect(claimDecision(timer("allow"), 0, full)).toEqual({ status: "pending", reason: "" });
    expect(claimDecision(timer("skip"), 0, none)).toEqual({ status: "pending", reason: "" });
    expect(claimDecision(timer("skip"), 0, running)).toEqual({ status: "skipped", reason: expect.stringMatching(/overlap policy skip/) });
    expect(claimDecision(timer("bufferOne"), 0, none)).toEqual({ status: "pending", reason: "" });
    expect(claimDecision(timer("bufferOne"), 0, running)).toEqual({ status: "buffered", reason: "" });
    expect(claimDecision(timer("bufferOne"), 0, full)).toEqual({ status: "skipped", reason: expect.stringMatching(/already buffered/) });
    expect(claimDecision({ overdue: { kind: "max", maxLatenessMs: 10 }, policy: policy({ overlap: "bufferOne" }) }, 11, running)).toEqual({
      status: "skipped",
      reason: expect.stringMatching(/over its bound/),
    });
  });

  it("resume: the held moment if still ahead; else one missed occurrence by the catch-up policy; else the next moment", () => {
    const paused = (held: number | null, p: Partial<SchedulePolicy> = {}) => ({
      ...minutely(0, p),
      nextDueMs: null,
      paused: { note: "", atMs: T0, heldDueMs: held },
    });
    expect(resumeDue(paused(T0 + MIN), T0 + 30_000)).toBe(T0 + MIN);
    expect(resumeDue(paused(T0 + MIN), T0 + 10 * MIN + 30_000)).toBe(T0 + 10 * MIN);
    expect(resumeDue(paused(T0 + MIN, { catchUp: "none" }), T0 + 10 * MIN + 30_000)).toBe(T0 + 11 * MIN);
    expect(resumeDue(paused(T0 + MIN, { catchUp: "allWithinWindow", catchUpWindowMs: MIN }), T0 + 10 * MIN + 30_000)).toBe(T0 + 10 * MIN);
    expect(resumeDue(paused(T0 + MIN, { catchUp: "allWithinWindow", catchUpWindowMs: 10_000 }), T0 + 10 * MIN + 30_000)).toBe(T0 + 11 * MIN);
    expect(resumeDue(paused(null), T0 + HOUR)).toBeNull();
    // A paused timer previews the moments after now it would have.
    expect(preview(paused(T0 + MIN), 2, T0 + 10 * MIN + 30_000)).toEqual([T0 + 11 * MIN, T0 + 12 * MIN]);
  });

  it("backfill moments: the nominal moments of [start, end) with their jitter, bounds ignored; over 1,000 is refused", () => {
    const timer = { ...minutely(T0 + MIN, { endMs: T0 + 2 * MIN }), paused: null };
    expect(backfillMoments(timer, T0 - 3 * MIN, T0)).toEqual([T0 - 3 * MIN, T0 - 2 * MIN, T0 - MIN]);
    expect(backfillMoments(timer, T0 - 3 * MIN + 1, T0 + 1)).toEqual([T0 - 2 * MIN, T0 - MIN, T0]);
    const jittered = { ...minutely(T0 + MIN, { jitterMs: 30_000 }), paused: null };
    expect(backfillMoments(jittered, T0 + MIN, T0 + 3 * MIN)).toEqual([dueOf(jittered, T0 + MIN), dueOf(jittered, T0 + 2 * MIN)]);
    expect(() => backfillMoments(timer, T0 - DAY, T0)).toThrow(/more than 1000 fire times/);
  });
});

// ---- through the real transport ----

interface Harness {
  owner: TestOwner;
  client: ChronologClient;
  time: Client<typeof TimeService>;
  calls: ActionContext[];
  /** Runs of `jobs.slow` wait for this to be set true. */
  gate: { open: boolean };
}

/** The `jobs` plugin: `run` records its calls; `slow` records and waits for the gate; `strict` has an input schema; `closed` allows no one from outside. */
function jobsPlugin(calls: ActionContext[], gate: { open: boolean }, schedules: Record<string, ScheduleDefinition> = {}): PluginDefinition {
  return definePlugin({
    name: "jobs",
    actions: {
      run: { allow: ["*"], run: (ctx) => void calls.push(ctx) },
      slow: {
        allow: ["*"],
        async run(ctx) {
          calls.push(ctx);
          while (!gate.open) await new Promise((r) => setTimeout(r, 5));
        },
      },
      strict: { allow: ["*"], inputSchema: { type: "object", required: ["items"], properties: { items: { type: "array" } } }, run: () => ({}) },
      closed: { allow: ["partner"], run: (ctx) => void calls.push(ctx) },
    },
    schedules,
  });
}

async function harness(
  clock: ManualClock,
  options: {
    dataDir?: string;
    schedules?: Record<string, ScheduleDefinition>;
    config?: NonNullable<Parameters<typeof startTestOwner>[0]>["config"];
    token?: string;
    holds?: boolean;
    lookaheadMs?: number;
  } = {},
): Promise<Harness> {
  const owner = await startTestOwner({
    clock,
    timers: clock,
    heartbeatIntervalMs: 600_000,
    shutdownGraceMs: 200,
    ...(options.lookaheadMs === undefined ? {} : { timerLookaheadMs: options.lookaheadMs }),
    ...(options.dataDir ? { dataDir: options.dataDir } : {}),
    ...(options.config ? { config: options.config } : {}),
  });
  let closed: Promise<void> | undefined;
  const closeOwner = owner.close.bind(owner);
  const close = () => (closed ??= closeOwner());
  cleanups.push(close);
  const calls: ActionContext[] = [];
  const gate = { open: true };
  const ex = runExecutor({
    url: owner.url,
    token: options.token,
    plugins: [jobsPlugin(calls, gate, options.schedules)],
    credits: 16,
    maxBackoffMs: 200,
    holds: options.holds,
    onError: () => {},
  });
  cleanups.push(() => ex.stop(100));
  await ex.ready;
  const client = createClient({ url: owner.url, token: options.token });
  return { owner: Object.assign(owner, { close }), client, time: createRpcClient(TimeService, client.transport), calls, gate };
}

/** The occurrence rows of `timerId`, by due moment. */
function occurrences(h: Harness, timerId: string): Promise<Record<string, unknown>[]> {
  return ownerRows(h, "SELECT id, due_ms, status, origin, error FROM timer_occurrences WHERE timer_id = ? ORDER BY due_ms, id", [timerId]);
}

const every = (n: number) => ({ when: { case: "everyMs" as const, value: BigInt(n) } });
const cron = (expression: string, zone = "", dst?: { gap?: DstGap; repeated?: DstRepeated }) => ({
  when: { case: "cron" as const, value: { expression, zone, dst } },
});
const fields = async (p: Promise<unknown>, code: Code, message: RegExp = /./) =>
  (await expectConnectError(p, code, message)).findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field);

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
    await expectConnectError(h.client.backfillTimer(delay.delayId, T0 - HOUR, T0), Code.FailedPrecondition, /a delay cannot be backfilled/);
  });
});

describe("TimeService: one order of checks, and clearer messages", () => {
  const tokens = { admin: "admin-token-0123456789", web: "web-client-token-0123", exec: "executor-token-0123456", partner: "partner-token-0123456789" };
  const config = {
    principals: [
      { name: "ops", token: tokens.admin, role: "admin" as const },
      { name: "web", token: tokens.web, role: "client" as const },
      { name: "worker", token: tokens.exec, role: "executor" as const },
      { name: "partner", token: tokens.partner, role: "client" as const },
    ],
  };

  it("shape first (INVALID_ARGUMENT), then who acts, then NOT_FOUND, then the action's allow or managing the timer (PERMISSION_DENIED), then the input, then state; nothing written", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock, { config, token: tokens.exec });
    const ops = createClient({ url: h.owner.url, token: tokens.admin });
    const web = createClient({ url: h.owner.url, token: tokens.web });
    const webTime = createRpcClient(TimeService, web.transport);
    await createClient({ url: h.owner.url, token: tokens.partner }).schedule("jobs.closed", {}, { everyMs: HOUR }, { timerId: "closed-timer" });
    const before = await logSnapshot(ops);

    // A bad expression from a caller who may not call the action: the request's shape is checked first.
    expect(await fields(webTime.schedule({ action: "jobs.closed", spec: cron("0 25 * * *") }), Code.InvalidArgument, /hour/)).toEqual(["spec.cron.expression"]);
    expect(
      await fields(
        webTime.schedule({ action: "jobs.nope", spec: cron("0 9 * * 1 2026") }),
        Code.InvalidArgument,
        /has 6 fields \("0" "9" "\*" "\*" "1" "2026"\); expected 5: minute hour day-of-month month day-of-week/,
      ),
    ).toEqual(["spec.cron.expression"]);
    expect(
      await fields(
        webTime.schedule({ action: "jobs.closed", spec: every(HOUR), policy: { catchUp: CatchUpPolicy.ALL_WITHIN_WINDOW } }),
        Code.InvalidArgument,
        /catch_up_window_ms/,
      ),
    ).toEqual(["policy.catch_up_window_ms"]);
    expect(
      await fields(
        webTime.schedule({ action: "jobs.closed", spec: every(HOUR), policy: { start: timestampFromMs(T0 + DAY), end: timestampFromMs(T0) } }),
        Code.InvalidArgument,
        /policy\.end .* must be after policy\.start/,
      ),
    ).toEqual(["policy.end"]);
    expect(
      await fields(
        webTime.schedule({ action: "jobs.closed", spec: { when: { case: "at", value: timestampFromMs(T0 + HOUR) } }, policy: { jitterMs: 5n } }),
        Code.InvalidArgument,
        /recurring timers/,
      ),
    ).toEqual(["policy"]);
    expect(await fields(webTime.pauseTimer({ timerId: "closed-timer", note: "x".repeat(1_001) }), Code.InvalidArgument)).toEqual(["note"]);
    // Then who acts: a client never acts under a cause.
    await expectConnectError(
      webTime.pauseTimer({ timerId: "nope", cause: { eventId: "x", position: 0 } }),
      Code.PermissionDenied,
      /only executors act under a cause/,
    );
    // Then what the request names: NOT_FOUND.
    await expectConnectError(webTime.schedule({ action: "jobs.nope", spec: every(HOUR) }), Code.NotFound, /jobs\.nope/);
    await expectConnectError(webTime.pauseTimer({ timerId: "nope" }), Code.NotFound, /no timer "nope"/);
    // Then the permission: the action's allow; managing a timer needs it too; declared schedules are the admins'.
    await expectConnectError(
      webTime.schedule({ action: "jobs.closed", spec: every(HOUR), input: { not: "checked yet" } }),
      Code.PermissionDenied,
      /may not schedule jobs\.closed \(allow: partner\)/,
    );
    for (const call of [
      webTime.pauseTimer({ timerId: "closed-timer" }),
      webTime.triggerTimer({ timerId: "closed-timer" }),
      webTime.unschedule({ timerId: "closed-timer" }),
    ]) {
      await expectConnectError(call, Code.PermissionDenied, /may not (pause|trigger|cancel)/);
    }
    // Then the input against the action's schema: the missing property is named on `input`.
    const missing = await expectConnectError(
      web.schedule("jobs.strict", {}, { everyMs: HOUR }),
      Code.InvalidArgument,
      /input: must have required property 'items'/,
    );
    expect(missing.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => [v.field, v.description])).toEqual([
      ["input", "must have required property 'items' (rule: required)"],
    ]);
    // interval_ms and every_ms: one message for every out-of-range ms value.
    const big = await expectConnectError(
      webTime.delay({ action: "jobs.run", when: { case: "intervalMs", value: 2n ** 60n }, overdue: { bound: { case: "unbounded", value: true } } }),
      Code.InvalidArgument,
    );
    const far = await expectConnectError(
      webTime.delay({ action: "jobs.run", when: { case: "intervalMs", value: 4_000_000_000_000n }, overdue: { bound: { case: "unbounded", value: true } } }),
      Code.InvalidArgument,
    );
    expect(big.rawMessage).toBe("interval_ms must be from 0 to 3162240000000 ms, got 1152921504606846976");
    expect(far.rawMessage).toBe("interval_ms must be from 0 to 3162240000000 ms, got 4000000000000");
    expect((await expectConnectError(webTime.schedule({ action: "jobs.run", spec: every(2 ** 60) }), Code.InvalidArgument)).rawMessage).toMatch(
      /^spec\.every_ms must be from 1000 to 3162240000000 ms, got \d+$/,
    );
    expect((await expectConnectError(webTime.schedule({ action: "jobs.run", spec: every(10) }), Code.InvalidArgument)).rawMessage).toBe(
      "spec.every_ms must be from 1000 to 3162240000000 ms, got 10",
    );
    await expectUnchanged(ops, before);

    // The declared schedule's zone and a runtime one's: stored with the canonical IANA spelling.
    const utc = await web.schedule("jobs.run", {}, { cron: "0 9 * * *", zone: "utc" });
    expect(utc.spec?.when.value).toMatchObject({ zone: "UTC" });
    const [scheduled] = (await eventsOf(ops, ["timer.scheduled"])).filter((e) => e.data?.timer_id === utc.id);
    expect(scheduled.data?.spec).toEqual({ cron: "0 9 * * *", zone: "UTC" });
    // An admin manages anything; the client that may call the action manages its runtime timer.
    expect((await web.pauseTimer(utc.id, { note: "mine" })).unchanged).toBe(false);
    expect((await ops.pauseTimer("closed-timer")).unchanged).toBe(false);
  });

  it("declared schedules are managed by admins (and code under a cause): a client that may call the action gets PERMISSION_DENIED", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock, { config, token: tokens.exec, schedules: { hourly: { action: "run", cron: "0 * * * *" } } });
    const web = createClient({ url: h.owner.url, token: tokens.web });
    const ops = createClient({ url: h.owner.url, token: tokens.admin });
    await expectConnectError(web.pauseTimer("jobs/hourly"), Code.PermissionDenied, /declared schedules are managed by admins/);
    await expectConnectError(web.backfillTimer("jobs/hourly", T0 - HOUR, T0), Code.PermissionDenied, /declared schedules are managed by admins/);
    expect((await ops.pauseTimer("jobs/hourly", { note: "ops" })).timer.paused).toBe(true);
    // Code under a cause (an executor) may: e.g. a processor resuming it.
    await ops.registerPlugin({ name: "orders", events: { "order.placed": { allow: ["*"] } } });
    const placed = (await ops.emit("order.placed", {})).event!;
    expect((await h.client.resumeTimer("jobs/hourly", { note: "from code", cause: { eventId: placed.id, position: 0 } })).timer.paused).toBe(false);
    const [resumed] = await eventsOf(ops, ["timer.resumed"]);
    expect(resumed).toMatchObject({ cause: placed.id, data: { note: "from code" } });
  });
});

describe("chronolog pause-timer, resume-timer, trigger-timer, backfill-timer", { tags: ["serial"] }, () => {
  it("pauses, resumes, triggers and backfills from the command line", async () => {
    const clock = new ManualClock(T0);
    const h = await harness(clock);
    await h.client.schedule("jobs.run", {}, { cron: "0 * * * *" }, { timerId: "hourly" });
    const run = (args: string[]) => cli([...args, "--url", h.owner.url]);
    expect((await run(["pause-timer", "hourly", "--note", "cli"])).stdout).toBe("hourly: paused\n");
    expect((await run(["pause-timer", "hourly"])).stdout).toBe("hourly: already paused\n");
    expect((await run(["timers"])).stdout).toMatch(/hourly\s+runtime\s+jobs\.run\s+cron "0 \* \* \* \*" in UTC\s+paused/);
    expect((await run(["resume-timer", "hourly"])).stdout).toBe("hourly: resumed, next due 2026-03-02T13:00:00.000Z\n");
    expect((await run(["resume-timer", "hourly"])).stdout).toBe("hourly: was not paused\n");
    expect((await run(["trigger-timer", "hourly"])).stdout).toMatch(/^hourly: triggered occurrence [0-9a-f]{32} due 2026-03-02T12:00:00\.000Z\n$/);
    const backfill = await run(["backfill-timer", "hourly", "--start", "2026-03-02T09:00:00Z", "--end", "2026-03-02T11:00:00Z"]);
    expect(backfill.stdout).toMatch(/2026-03-02T09:00:00\.000Z\s+[0-9a-f]{32}\s+made\n2026-03-02T10:00:00\.000Z\s+[0-9a-f]{32}\s+made/);
    await until(() => h.calls.length === 3, "the triggered and backfilled calls");
    const bad = await run(["backfill-timer", "hourly", "--start", "yesterday", "--end", "2026-03-02T11:00:00Z"]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/--start must be an RFC 3339 time with its offset/);
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

// ---- jitter never reaches the next moment ----

/** The jitter hash of timer `id` at nominal moment `n` (as time/moments.ts computes it): 48 bits of SHA-256. */
const jitterHash = (id: string, n: number) => createHash("sha256").update(`timer-jitter\n${id}\n${n}`).digest().readUIntBE(0, 6);
/** The due moment of `n` before the fix: offset `hash % (jitter + 1)`, capped at `gap - 1`. */
const oldDue = (id: string, n: number, jitterMs: number, gapMs: number) => n + Math.min(jitterHash(id, n) % (jitterMs + 1), gapMs - 1);
/** The due moment of `n` now: offset `hash % (min(jitter, gap - 1) + 1)`, spread over [0, min(jitter + 1, gap)). */
const spreadDue = (id: string, n: number, jitterMs: number, gapMs: number) => n + (jitterHash(id, n) % (Math.min(jitterMs, gapMs - 1) + 1));

describe("jitter: spread before the next moment, never at or past it", () => {
  const everyMinute: TimerSpec = { kind: "cron", expression: "* * * * *", zone: "" };
  /** 2026-03-02T04:04:00Z and the 4 minutes after it. */
  const minutes = Array.from({ length: 5 }, (_, i) => at("2026-03-02T04:04:00Z") + i * MIN);

  it("cron * * * * * with jitter_ms 300000: each moment lands within its own minute, spread (not at :59.999), strictly increasing", () => {
    const p = policy({ jitterMs: 5 * MIN });
    const first = firstDue(everyMinute, at("2026-03-02T04:03:30Z"), "spec", p, "jg");
    const timer = { id: "jg", spec: everyMinute, nextDueMs: first, policy: p };
    const dues = preview(timer, 5);
    // Before, the offsets piled up at each gap's last ms: 04:04:59.999, 04:05:49.594, 04:06:59.999, 04:07:59.999, 04:08:59.999.
    expect(dues.map(iso)).toEqual([
      "2026-03-02T04:04:08.265Z",
      "2026-03-02T04:05:47.494Z",
      "2026-03-02T04:06:59.062Z",
      "2026-03-02T04:07:15.790Z",
      "2026-03-02T04:08:50.173Z",
    ]);
    expect(dues).toEqual(minutes.map((n) => spreadDue("jg", n, 5 * MIN, MIN)));
    // Over many minutes: within [n, n + 1 min), strictly increasing, hardly ever the last ms, spread over the minute.
    const many = Array.from({ length: 600 }, (_, i) => minutes[0] + i * MIN);
    const offsets = many.map((n) => dueOf(timer, n) - n);
    expect(offsets.every((o) => o >= 0 && o < MIN)).toBe(true);
    expect(offsets.filter((o) => o === MIN - 1).length).toBeLessThanOrEqual(1);
    expect(offsets.filter((o) => o < MIN / 2).length).toBeGreaterThan(240); // about half in each half of the minute
    expect(offsets.filter((o) => o >= MIN / 2).length).toBeGreaterThan(240);
    const due = many.map((n) => dueOf(timer, n));
    expect(due.every((d, i) => i === 0 || d > due[i - 1])).toBe(true);
    expect(due.map((d) => nominalOf(timer, d))).toEqual(many);
    // Catch-up and the claim: the latest moment whose due has come, then the next one's due.
    const claimed = { ...timer, nextDueMs: dues[0] };
    expect(owedOccurrence(claimed, dues[0])).toEqual({ dueMs: dues[0], nextDueMs: dues[1] });
    expect(owedOccurrence(claimed, dues[3] - 1)).toEqual({ dueMs: dues[2], nextDueMs: dues[3] });
    expect(owedOccurrence(claimed, dues[3])).toEqual({ dueMs: dues[3], nextDueMs: dues[4] });
    expect(owedOccurrence(claimed, minutes[4] - 1)).toEqual({ dueMs: dues[3], nextDueMs: dues[4] }); // 04:07:59.999: 04:08's due not yet come
    expect(owedWithin(claimed, dues[0], dues[2])).toEqual({ dueMs: dues.slice(0, 3), nextDueMs: dues[3] });
    expect(backfillMoments({ ...timer, paused: null }, minutes[0], minutes[4] + 1)).toEqual(dues);
    // Varying gaps (cron "0,1,30 * * * *": 1 min, 29 min, 30 min): each offset spreads within its own gap.
    const uneven = {
      id: "u",
      spec: { kind: "cron", expression: "0,1,30 * * * *", zone: "" } as TimerSpec,
      nextDueMs: null,
      policy: policy({ jitterMs: 25 * MIN }),
    };
    const h0 = at("2026-03-02T04:00:00Z");
    expect([h0, h0 + MIN, h0 + 30 * MIN].map((n) => dueOf(uneven, n))).toEqual([
      spreadDue("u", h0, 25 * MIN, MIN),
      spreadDue("u", h0 + MIN, 25 * MIN, 29 * MIN),
      spreadDue("u", h0 + 30 * MIN, 25 * MIN, 30 * MIN),
    ]);
  });

  it("an ordinary jitter (below the gap) keeps the due moments it had before", () => {
    const every = minutely(T0 + MIN, { jitterMs: 20_000 });
    const moments = Array.from({ length: 50 }, (_, i) => T0 + (i + 1) * MIN);
    expect(moments.map((n) => dueOf(every, n))).toEqual(moments.map((n) => oldDue("t", n, 20_000, MIN)));
    expect(moments.map((n) => dueOf({ ...every, policy: { ...every.policy, jitterMs: MIN - 1 } }, n))).toEqual(
      moments.map((n) => oldDue("t", n, MIN - 1, MIN)),
    );
    const cronTimer = (jitterMs: number) => ({ id: "jg", spec: everyMinute, nextDueMs: null, policy: policy({ jitterMs }) });
    expect(minutes.map((n) => dueOf(cronTimer(30_000), n))).toEqual(minutes.map((n) => oldDue("jg", n, 30_000, MIN)));
    expect(minutes.map((n) => dueOf(cronTimer(MIN - 1), n))).toEqual(minutes.map((n) => oldDue("jg", n, MIN - 1, MIN)));
    expect(minutes.map((n) => dueOf(cronTimer(20_000), n)).map(iso)).toEqual([
      "2026-03-02T04:04:06.159Z",
      "2026-03-02T04:05:18.460Z",
      "2026-03-02T04:06:08.536Z",
      "2026-03-02T04:07:19.636Z",
      "2026-03-02T04:08:15.391Z",
    ]);
    // A daily cron with 5 minutes of jitter: its first due moment as before.
    const daily: TimerSpec = { kind: "cron", expression: "0 9 * * *", zone: "Europe/Berlin" };
    expect(firstDue(daily, T0, "spec", policy({ jitterMs: 5 * MIN }), "cron-jitter")).toBe(oldDue("cron-jitter", at("2026-03-03T08:00:00Z"), 5 * MIN, DAY));
  });

  it("every_ms: jitter_ms at or over every_ms is INVALID_ARGUMENT naming policy.jitter_ms (below it is fine; a bad every_ms is the spec's error)", () => {
    const spec = (everyMs: number): TimerSpec => ({ kind: "every", everyMs });
    const refused = (p: SchedulePolicy, s: TimerSpec, field?: string) => {
      try {
        checkSchedulePolicy(p, s, field);
      } catch (e) {
        return { message: (e as Error).message, fields: (e as { violations: { field: string }[] }).violations.map((v) => v.field) };
      }
      return undefined;
    };
    expect(refused(policy({ jitterMs: 999_999 }), spec(2_000))).toEqual({
      message: "policy.jitter_ms must be from 0 to 1999 ms (less than every_ms, 2000 ms), got 999999",
      fields: ["policy.jitter_ms"],
    });
    expect(refused(policy({ jitterMs: 2_000 }), spec(2_000), "schedules.fast.policy")).toMatchObject({ fields: ["schedules.fast.policy.jitter_ms"] });
    expect(refused(policy({ jitterMs: 1_999 }), spec(2_000))).toBeUndefined();
    expect(refused(policy({ jitterMs: 999_999 }), spec(10))).toBeUndefined(); // every_ms itself is refused (spec.every_ms)
    expect(refused(policy({ jitterMs: 5 * MIN }), everyMinute)).toBeUndefined(); // cron takes it
  });

  it("through Schedule, manifests and patches: refused for every_ms, accepted and previewed within each minute for cron", async () => {
    const clock = new ManualClock(at("2026-03-02T04:03:30Z"));
    const h = await harness(clock, { schedules: { tick: { action: "run", everyMs: 2_000 } } });
    const before = await logSnapshot(h.client);
    expect(
      await fields(
        h.time.schedule({ timerId: "fast", action: "jobs.run", spec: every(2_000), policy: { jitterMs: 999_999n } }),
        Code.InvalidArgument,
        /^policy\.jitter_ms must be from 0 to 1999 ms \(less than every_ms, 2000 ms\), got 999999$/,
      ),
    ).toEqual(["policy.jitter_ms"]);
    expect(
      await fields(h.time.schedule({ timerId: "fast", action: "jobs.run", spec: every(2_000), policy: { jitterMs: 2_000n } }), Code.InvalidArgument),
    ).toEqual(["policy.jitter_ms"]);
    expect(
      await fields(
        h.client.registerPlugin({ name: "ops", schedules: { fast: { action: "jobs.run", everyMs: 2_000n, policy: { jitterMs: 2_000n } } } }),
        Code.InvalidArgument,
      ),
    ).toEqual(["schedules.fast.policy.jitter_ms"]);
    expect(
      await fields(
        h.client.registerPlugin({ name: "ops", schedulePatches: [{ plugin: "jobs", schedule: "tick", policy: { jitterMs: 5_000n } }] }),
        Code.InvalidArgument,
      ),
    ).toEqual(["schedule_patches[0].policy.jitter_ms"]);
    await expectUnchanged(h.client, before);
    // Below every_ms is accepted.
    expect((await h.time.schedule({ timerId: "fast", action: "jobs.run", spec: every(2_000), policy: { jitterMs: 1_999n } })).timer?.policy?.jitterMs).toBe(
      1_999n,
    );
    // Cron keeps a jitter wider than its gap and spreads it within each minute.
    await h.time.schedule({ timerId: "jg", action: "jobs.run", spec: cron("* * * * *"), policy: { jitterMs: 300_000n } });
    const previewed = (await h.client.getTimer("jg", { previewCount: 5 })).preview.map((t) => ms(t)!);
    expect(previewed).toEqual(minutes.map((n) => spreadDue("jg", n, 5 * MIN, MIN)));
    clock.set(previewed[0] - 1);
    expect(h.calls.filter((c) => c.scheduled?.timerId === "jg")).toHaveLength(0);
    clock.set(previewed[0]);
    await until(() => h.calls.some((c) => c.scheduled?.timerId === "jg"), "jg's first call");
    expect(h.calls.find((c) => c.scheduled?.timerId === "jg")?.scheduled?.due.getTime()).toBe(previewed[0]);
    // A patch that makes the every_ms schedule a cron one may bring the wide jitter.
    await h.client.registerPlugin({ name: "ops", schedulePatches: [{ plugin: "jobs", schedule: "tick", cron: "* * * * *", policy: { jitterMs: 300_000n } }] });
    const tick = await h.client.getTimer("jobs/tick", { previewCount: 3 });
    expect(tick.policy?.jitterMs).toBe(300_000n);
    const tickDues = tick.preview.map((t) => ms(t)!);
    tickDues.forEach((d, i) => {
      const n = Math.floor(d / MIN) * MIN;
      expect(d).toBe(spreadDue("jobs/tick", n, 5 * MIN, MIN));
      if (i > 0) expect(n).toBe(Math.floor(tickDues[i - 1] / MIN) * MIN + MIN);
    });
  });
});
