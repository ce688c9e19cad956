import { fail } from "../errors.js";
import { defaultDstPolicy } from "./cron.js";
import { boundedNext, cronOf, dueOf } from "./moments.js";
import { defaultSchedulePolicy, type SchedulePolicy, type TimerSpec } from "../store/timer-records.js";
import { isDefaultPolicy } from "./timers.js";
import { canonicalZone, isValidZoneName } from "./zones.js";

// What a timer may be set with, checked when it is set: ms fields, specs, `at` moments and
// schedule policies, with the INVALID_ARGUMENT naming the field; when it is first due; and a
// spec as stored.
// Pure functions of their arguments: `nowMs` is always passed in. Instants are ms
// since the epoch, UTC.

/** How far in the past an `at` (or a delay's `at`) may be and still be accepted: 1,000 ms. It then fires at once. */
export const pastToleranceMs = 1_000;
/** Shortest `every_ms`: 1,000 ms (a faster cadence is a pulse's job). */
export const minEveryMs = 1_000;
/** The range of a protobuf Timestamp, ms since the epoch: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z. */
const minTimestampMs = -62_135_596_800_000;
const maxTimestampMs = 253_402_300_799_999;

/** Longest interval or distance into the future anything may be set: 100 years in ms. */
export const maxHorizonMs = 100 * 366 * 86_400_000;
/** Shortest catch-up window: 1,000 ms. */
export const minCatchUpWindowMs = 1_000;

/**
 * INVALID_ARGUMENT naming `field` unless `ms` is a whole number of ms from `min` to `max`
 * (inclusive). The one message for every ms field of TimeService and schedule declarations:
 * `<field> must be from <min> to <max> ms, got <ms>`.
 */
export function checkMs(ms: number | bigint, field: string, min: number, max: number): number {
  const n = typeof ms === "bigint" ? (ms > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER + 1 : Number(ms)) : ms;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    fail("bad_request", `${field} must be from ${min} to ${max} ms, got ${String(ms)}`, [{ field, description: `from ${min} to ${max} ms` }]);
  }
  return n;
}

/**
 * Checks `spec` at the moment it is set (`nowMs`) and returns when it is first due, under
 * `policy` (its first nominal moment within [start, end), plus its jitter; `timerId` seeds
 * the jitter). `at` more than {@link pastToleranceMs} in the past, or more than 100 years
 * ahead, `every_ms` below {@link minEveryMs} or above 100 years, and bad cron expressions,
 * zones or DST policies (including 6-field expressions) fail with INVALID_ARGUMENT naming the
 * field (`spec.at`, `spec.every_ms`, `spec.cron.expression`, `spec.cron.zone`,
 * `spec.cron.dst`), as does a policy that leaves no moment (`policy.end`). `field` prefixes
 * the spec's fields ("spec"); `policyField` the policy's ("policy").
 */
export function firstDue(
  spec: TimerSpec,
  nowMs: number,
  field = "spec",
  policy: SchedulePolicy = defaultSchedulePolicy,
  timerId = "",
  policyField = "policy",
): number {
  switch (spec.kind) {
    case "at":
      checkAt(spec.atMs, nowMs, `${field}.at`);
      return spec.atMs;
    case "cron":
      cronOf(spec.expression, spec.zone, spec.dst ?? defaultDstPolicy, field);
      break;
    case "every":
      checkMs(spec.everyMs, `${field}.every_ms`, minEveryMs, maxHorizonMs);
      break;
  }
  const view = { id: timerId, spec, policy: { ...policy, anchorMs: policy.anchorMs ?? anchorFor(spec, nowMs) }, nextDueMs: null };
  const n = boundedNext(view, nowMs);
  if (n === null)
    fail("bad_request", `${policyField}.end leaves no fire time: the first one after ${new Date(nowMs).toISOString()} is at or after its end`, [
      { field: `${policyField}.end`, description: "no fire time before it" },
    ]);
  const due = dueOf(view, n);
  if (due > nowMs + maxHorizonMs) {
    // Beyond any sane plan, and past 9999-12-31 a moment has no protobuf Timestamp (JSON clients could not list timers).
    const where = policy.startMs !== null && policy.startMs > nowMs ? `${policyField}.start` : field;
    fail("bad_request", `the first fire time ${new Date(due).toISOString()} is more than 100 years ahead`, [{ field: where, description: "too far ahead" }]);
  }
  return due;
}

/** The anchor an `every_ms` timer set at `nowMs` counts its moments from: its first nominal moment, `nowMs + every_ms`; null for other specs. */
export function anchorFor(spec: TimerSpec, nowMs: number): number | null {
  return spec.kind === "every" ? nowMs + spec.everyMs : null;
}

/**
 * Checks a schedule policy for `spec`, reporting under `field` ("policy"): INVALID_ARGUMENT
 * naming `policy.jitter_ms` (0 to 100 years; for an `every_ms` spec also below `every_ms`, so
 * the jitter never reaches the next moment), `.end` (not after `start`), `.max_count`,
 * `.catch_up_window_ms` (required, at least 1,000 ms, with "allWithinWindow"; 0 otherwise), or
 * `policy` itself when a one-shot (`at`) is given anything but the default. Returns it. The one
 * check of the Schedule RPC, manifests' schedules and schedule patches. A cron spec takes any
 * jitter: its gaps vary, and {@link dueOf} spreads a jitter wider than a gap over that gap.
 */
export function checkSchedulePolicy(policy: SchedulePolicy, spec: TimerSpec, field = "policy"): SchedulePolicy {
  checkMs(policy.jitterMs, `${field}.jitter_ms`, 0, maxHorizonMs);
  // An every_ms out of range is the spec's error (reported by its own check), not the jitter's.
  if (spec.kind === "every" && Number.isSafeInteger(spec.everyMs) && spec.everyMs >= minEveryMs && policy.jitterMs >= spec.everyMs) {
    const max = spec.everyMs - 1;
    fail("bad_request", `${field}.jitter_ms must be from 0 to ${max} ms (less than every_ms, ${spec.everyMs} ms), got ${policy.jitterMs}`, [
      { field: `${field}.jitter_ms`, description: `from 0 to ${max} ms (less than every_ms)` },
    ]);
  }
  for (const [bound, ms] of [
    ["start", policy.startMs],
    ["end", policy.endMs],
  ] as const) {
    // A protobuf Timestamp (and so every client, JSON ones first) only holds years 1 to 9999.
    if (ms !== null && !(ms >= minTimestampMs && ms <= maxTimestampMs))
      fail("bad_request", `${field}.${bound} must be between 0001-01-01 and 9999-12-31`, [
        { field: `${field}.${bound}`, description: "out of the Timestamp range" },
      ]);
  }
  if (!Number.isSafeInteger(policy.maxCount) || policy.maxCount < 0)
    fail("bad_request", `${field}.max_count must be a whole number, got ${policy.maxCount}`, [{ field: `${field}.max_count`, description: "at most 2^53-1" }]);
  if (policy.startMs !== null && policy.endMs !== null && policy.endMs <= policy.startMs) {
    fail("bad_request", `${field}.end ${new Date(policy.endMs).toISOString()} must be after ${field}.start ${new Date(policy.startMs).toISOString()}`, [
      { field: `${field}.end`, description: "not after start" },
    ]);
  }
  if (policy.catchUp === "allWithinWindow") checkMs(policy.catchUpWindowMs, `${field}.catch_up_window_ms`, minCatchUpWindowMs, maxHorizonMs);
  else if (policy.catchUpWindowMs !== 0)
    fail("bad_request", `${field}.catch_up_window_ms applies to catch-up "all within window" only`, [
      { field: `${field}.catch_up_window_ms`, description: "only with CATCH_UP_POLICY_ALL_WITHIN_WINDOW" },
    ]);
  if (spec.kind === "at" && !isDefaultPolicy(policy))
    fail("bad_request", `${field} applies to recurring timers (cron, every_ms), not to a one-shot at`, [{ field, description: "recurring timers only" }]);
  return policy;
}

/** INVALID_ARGUMENT on `field` unless `atMs` is at most 1 s in the past and at most 100 years ahead of `nowMs`. */
export function checkAt(atMs: number, nowMs: number, field: string): void {
  if (atMs < nowMs - pastToleranceMs) {
    const at = Math.abs(atMs) <= 8.64e15 ? new Date(atMs).toISOString() : `${atMs} ms`; // beyond JavaScript's Date range
    fail("bad_request", `${field} ${at} is in the past (now ${new Date(nowMs).toISOString()})`, [{ field, description: "in the past" }]);
  }
  if (atMs > nowMs + maxHorizonMs) fail("bad_request", `${field} is more than 100 years ahead`, [{ field, description: "too far ahead" }]);
}

/** A spec as stored: a cron zone in its canonical spelling (`utc` → `UTC`), a default DST policy left out. */
export function canonicalSpec(spec: TimerSpec): TimerSpec {
  if (spec.kind !== "cron") return spec;
  const zone = isValidZoneName(spec.zone) ? canonicalZone(spec.zone) : spec.zone;
  const dst = spec.dst && (spec.dst.gap !== defaultDstPolicy.gap || spec.dst.repeated !== defaultDstPolicy.repeated) ? spec.dst : undefined;
  return { kind: "cron", expression: spec.expression, zone, ...(dst ? { dst } : {}) };
}
