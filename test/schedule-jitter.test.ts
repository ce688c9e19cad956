// Jitter spreads a schedule's moments before the next one, never at or past it: the rule at exact
// instants, and through Schedule, manifests and patches (test/helpers/schedule-harness.ts).

// @module-tag postgres

import { createHash } from "node:crypto";
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { ManualClock } from "../server/src/clock.js";
import { dueOf, nominalOf } from "../server/src/time/moments.js";
import { backfillMoments, owedWithin, preview } from "../server/src/time/owed.js";
import { checkSchedulePolicy, firstDue } from "../server/src/time/spec-checks.js";
import type { SchedulePolicy, TimerSpec } from "../server/src/store/timer-records.js";
import { expectUnchanged, logSnapshot } from "./helpers/log-snapshot.js";
import { until } from "./helpers/until.js";
import { DAY, MIN, T0, at, cleanUpAfterEach, cron, every, fields, harness, iso, ms, policy } from "./helpers/schedule-harness.js";
import { minutely, owedOccurrence } from "./helpers/schedule-harness.js";

cleanUpAfterEach();

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
