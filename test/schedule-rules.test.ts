// Schedules like Temporal's and per-schedule DST policies: the rules (time/spec-checks.ts,
// moments.ts, owed.ts, claim-rules.ts, cron.ts) are pure functions of their arguments, tested at
// exact instants. Overlap and catch-up "all within window" are decided in the claim (fire.ts),
// through claimDecision and owedOccurrences: tested alone here and end to end in
// schedule-policies.test.ts.

import { describe, expect, it } from "vitest";
import { parseCron } from "../server/src/time/cron.js";
import { claimDecision } from "../server/src/time/claim-rules.js";
import { dueOf, nominalOf } from "../server/src/time/moments.js";
import { backfillMoments, owedOccurrences, owedWithin, preview, resumeDue } from "../server/src/time/owed.js";
import { firstDue } from "../server/src/time/spec-checks.js";
import type { SchedulePolicy, TimerSpec } from "../server/src/store/timer-records.js";
import { DAY, HOUR, MIN, T0, at, iso, policy } from "./helpers/schedule-harness.js";
import { minutely, owedOccurrence } from "./helpers/schedule-harness.js";

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
