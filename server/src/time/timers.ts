import { ChronologError, fail } from "../errors.js";
import type { ActorRecord } from "../store/events.js";
import { defaultDstPolicy, parseCron, type CronSchedule, type DstPolicy } from "./cron.js";
import { sha256Bytes, sha256Hex } from "../sha256.js";

// The rules of timers: what a spec means, when a timer is first due,
// which occurrence is owed when it rings, and when an occurrence is too late to make. Pure
// functions of their arguments: `nowMs` is always passed in (STYLE 9). All instants are ms
// since the epoch, UTC.
//
// A timer's states (the row in `timers`):
// - **scheduled** (next_due_ms set): waits for the clock.
// - scheduled → scheduled (recurring: cron, every_ms): when it rings, one occurrence is
//   claimed (the most recent due moment ≤ now, so an outage owes one call) and next_due
//   moves strictly past now.
// - scheduled → **spent** (one-shot: at, delay; next_due_ms NULL): claimed once; the row stays
//   so the timer can be inspected, until the retention sweep deletes it (time/retention.ts;
//   a retried Delay under a cause is answered from the log, not from this row).
// - scheduled → (deleted): Unschedule / CancelDelay, or a declared schedule removed from its
//   manifest; occurrences already claimed still run (and retry).
// - declared schedules only: scheduled ⇄ **disabled** (next_due_ms NULL, `disabled` set) by
//   their manifest or a patch; a schedule of another region than the owner's is stored
//   with next_due_ms NULL too.
// - recurring timers only: scheduled ⇄ **paused** (next_due_ms NULL, `paused` set with the
//   note and the due moment it held) by PauseTimer / ResumeTimer; on resume at most one
//   missed occurrence is owed, as the catch-up policy says ({@link resumeDue}).
// An occurrence is either made (its action is called, call id = occurrence id) or, when later
// than the timer's `overdue` bound at the claim, recorded as skipped. A made occurrence whose
// call fails is tried again after each of the timer's `retryDelaysMs` (see fire.ts).
//
// Schedule policies shape a recurring timer's moments. Its *nominal* moments are the
// spec's (cron fire times under its DST policy; or anchor + k·every), kept within
// [start, end). Each is *due* at nominal + jitter offset (deterministic per timer and moment,
// always before the next nominal moment: spread over the gap to it when the jitter is wider,
// {@link dueOf}; `every_ms` timers may not have such a jitter at all,
// {@link checkSchedulePolicy}), so the due moments are strictly increasing and each
// nominal moment has exactly one occurrence (occurrence id from its due moment). The stored
// next_due_ms is a due moment; {@link nominalOf} maps it back. The timer is spent after its
// last moment before `end`, or once `max_count` occurrences were made (counted on `occurrences`;
// triggered and backfilled ones are not counted). Overlap ({@link claimDecision}) and catch-up
// ({@link owedOccurrences}) decide at the claim.

/** The kinds of timers. */
export type TimerKind = "runtime" | "declared" | "delay";

/** When a timer fires. */
export type TimerSpec =
  /** Once, at `atMs`. */
  | { kind: "at"; atMs: number }
  /** By a 5-field cron expression in an IANA zone ("" = UTC); `dst` absent: shift / first. */
  | { kind: "cron"; expression: string; zone: string; dst?: DstPolicy }
  /** Every `everyMs` ms, the first one interval after it was set. */
  | { kind: "every"; everyMs: number };

/** How late an occurrence may be made; later ones are skipped. */
export type Overdue =
  | { kind: "unbounded" }
  /** Made only if at most `maxLatenessMs` late. */
  | { kind: "max"; maxLatenessMs: number }
  /** Made only within {@link onTimeToleranceMs} of its moment. */
  | { kind: "onTimeOrNever" };

/** Whether an occurrence may start while the previous one of its timer still runs; by default "allow". */
export type OverlapPolicy = "allow" | "skip" | "bufferOne";

/** Which missed occurrences a recurring timer owes after an outage; by default "latest". */
export type CatchUpPolicy = "latest" | "allWithinWindow" | "none";

/** How a recurring timer runs. Times in ms; instants ms since the epoch, UTC. */
export interface SchedulePolicy {
  /**
   * Each occurrence is made up to this many ms after its nominal moment (deterministic offset,
   * {@link dueOf}); 0: none. Below `every_ms` for `every_ms` timers; a cron timer's wider
   * jitter spreads each offset over the gap to the next moment instead.
   */
  jitterMs: number;
  /** No nominal moment before this instant; null: none. */
  startMs: number | null;
  /** No nominal moment at or after this instant; null: none. */
  endMs: number | null;
  /** Spent once this many occurrences were made (`occurrences`); 0: no limit. */
  maxCount: number;
  overlap: OverlapPolicy;
  catchUp: CatchUpPolicy;
  /** With catch-up "allWithinWindow": how far back (ms) missed occurrences are owed; 0 otherwise. */
  catchUpWindowMs: number;
  /**
   * `every_ms` timers: the first nominal moment, from which the others are counted (set by the
   * owner when the timer is set; null for timers set before schedule policies existed, whose moments are counted from
   * their next due moment).
   */
  anchorMs: number | null;
}

/** The default policy: no jitter, no bounds, no limit, calls may overlap, latest only after an outage. */
export const defaultSchedulePolicy: Readonly<SchedulePolicy> = Object.freeze({
  jitterMs: 0,
  startMs: null,
  endMs: null,
  maxCount: 0,
  overlap: "allow",
  catchUp: "latest",
  catchUpWindowMs: 0,
  anchorMs: null,
});

/** A paused timer's state. */
export interface PauseState {
  /** The note given to PauseTimer ("" when none). */
  note: string;
  /** Commit time of the pause, ms since the epoch. */
  atMs: number;
  /** The due moment it held when paused (null: it had none, e.g. disabled), ms since the epoch. */
  heldDueMs: number | null;
}

/** A stored timer: a document of `sys.timers`. */
export interface TimerRecord {
  id: string;
  kind: TimerKind;
  /** `plugin.action`. */
  action: string;
  /** Input of every call, private fields included. */
  input: Record<string, unknown>;
  spec: TimerSpec;
  /** The next moment it is due, ms since the epoch (UTC); null when spent or disabled. */
  nextDueMs: number | null;
  /** Who its calls run as, `in` included; null: the system. */
  actor: ActorRecord | null;
  /** Declared schedules: plugin and schedule name ("" otherwise). */
  plugin: string;
  schedule: string;
  overdue: Overdue;
  /** Chain depth of its calls (0 in this increment). */
  chainDepth: number;
  /** Occurrences called so far (skipped ones not counted). */
  occurrences: number;
  /** Region whose owner makes it: declared schedules as declared, others the region of the owner that set them. */
  region: number;
  /** A declared schedule switched off by its manifest or a patch; nextDueMs is then null. */
  disabled: boolean;
  /** Waits between the tries of a failed occurrence, ms: one retry per entry. */
  retryDelaysMs: number[];
  /** Jitter, bounds, maximum count, overlap and catch-up; delays always have the default. */
  policy: SchedulePolicy;
  /** Set while paused; nextDueMs is then null. */
  paused: PauseState | null;
  /** Commit time of the Schedule/Delay that set it, ms since the epoch. */
  createdAt: number;
  /** Commit time of its last change, ms since the epoch. */
  updatedAt: number;
}

/**
 * Waits between the tries of a failed occurrence when nothing else is said: 2 more tries,
 * after 10,000 ms then 30,000 ms. Declared schedules set their own with `retry_delays_ms`;
 * runtime timers and delays always use this default.
 */
export const defaultRetryDelaysMs: readonly number[] = Object.freeze([10_000, 30_000]);

/** How far in the past an `at` (or a delay's `at`) may be and still be accepted: 1,000 ms. It then fires at once. */
export const pastToleranceMs = 1_000;
/** "On time" for `on_time_or_never`: at most 1,000 ms late. */
export const onTimeToleranceMs = 1_000;
/** Shortest `every_ms`: 1,000 ms (a faster cadence is a pulse's job). */
export const minEveryMs = 1_000;
/** The range of a protobuf Timestamp, ms since the epoch: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z. */
const minTimestampMs = -62_135_596_800_000;
const maxTimestampMs = 253_402_300_799_999;

/** Longest interval or distance into the future anything may be set: 100 years in ms. */
export const maxHorizonMs = 100 * 366 * 86_400_000;
/** Shortest catch-up window: 1,000 ms. */
export const minCatchUpWindowMs = 1_000;
/** Most missed occurrences one claim owes under catch-up "allWithinWindow" (the most recent ones). */
export const maxCatchUpOccurrences = 100;
/** Most occurrences one BackfillTimer makes. */
export const maxBackfillOccurrences = 1_000;
/** Longest pause or resume note, in characters. */
export const maxNoteLength = 1_000;

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

const cronCache = new Map<string, CronSchedule>();

/**
 * The checked schedule of a cron spec (parsed once per expression, zone and DST policy,
 * cached). Throws INVALID_ARGUMENT with the field `<field>.cron.expression`,
 * `<field>.cron.zone` or `<field>.cron.dst` (parseCron's message names the bad cron field);
 * `field` defaults to "spec".
 */
export function cronOf(expression: string, zone: string, dst: DstPolicy = defaultDstPolicy, field = "spec"): CronSchedule {
  const key = `${zone}\n${expression}\n${dst.gap}\n${dst.repeated}`;
  let schedule = cronCache.get(key);
  if (!schedule) {
    try {
      schedule = parseCron(expression, zone, dst);
    } catch (e) {
      if (!(e instanceof ChronologError)) throw e;
      const which = e.violations[0]?.field;
      const at = `${field}.cron.${which === "zone" ? "zone" : which === "dstPolicy" ? "dst" : "expression"}`;
      fail("bad_request", e.message, [{ field: at, description: e.message }]);
    }
    if (cronCache.size >= 1_000) cronCache.clear();
    cronCache.set(key, schedule);
  }
  return schedule;
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
export function firstDue(spec: TimerSpec, nowMs: number, field = "spec", policy: SchedulePolicy = defaultSchedulePolicy, timerId = "", policyField = "policy"): number {
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
  if (n === null) fail("bad_request", `${policyField}.end leaves no fire time: the first one after ${new Date(nowMs).toISOString()} is at or after its end`, [{ field: `${policyField}.end`, description: "no fire time before it" }]);
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
    fail("bad_request", `${field}.jitter_ms must be from 0 to ${max} ms (less than every_ms, ${spec.everyMs} ms), got ${policy.jitterMs}`, [{ field: `${field}.jitter_ms`, description: `from 0 to ${max} ms (less than every_ms)` }]);
  }
  for (const [bound, ms] of [["start", policy.startMs], ["end", policy.endMs]] as const) {
    // A protobuf Timestamp (and so every client, JSON ones first) only holds years 1 to 9999.
    if (ms !== null && !(ms >= minTimestampMs && ms <= maxTimestampMs)) fail("bad_request", `${field}.${bound} must be between 0001-01-01 and 9999-12-31`, [{ field: `${field}.${bound}`, description: "out of the Timestamp range" }]);
  }
  if (!Number.isSafeInteger(policy.maxCount) || policy.maxCount < 0) fail("bad_request", `${field}.max_count must be a whole number, got ${policy.maxCount}`, [{ field: `${field}.max_count`, description: "at most 2^53-1" }]);
  if (policy.startMs !== null && policy.endMs !== null && policy.endMs <= policy.startMs) {
    fail("bad_request", `${field}.end ${new Date(policy.endMs).toISOString()} must be after ${field}.start ${new Date(policy.startMs).toISOString()}`, [{ field: `${field}.end`, description: "not after start" }]);
  }
  if (policy.catchUp === "allWithinWindow") checkMs(policy.catchUpWindowMs, `${field}.catch_up_window_ms`, minCatchUpWindowMs, maxHorizonMs);
  else if (policy.catchUpWindowMs !== 0) fail("bad_request", `${field}.catch_up_window_ms applies to catch-up "all within window" only`, [{ field: `${field}.catch_up_window_ms`, description: "only with CATCH_UP_POLICY_ALL_WITHIN_WINDOW" }]);
  if (spec.kind === "at" && !isDefaultPolicy(policy)) fail("bad_request", `${field} applies to recurring timers (cron, every_ms), not to a one-shot at`, [{ field, description: "recurring timers only" }]);
  return policy;
}

/** True when `policy` is the default, the anchor aside. */
export function isDefaultPolicy(policy: SchedulePolicy): boolean {
  const d = defaultSchedulePolicy;
  return policy.jitterMs === d.jitterMs && policy.startMs === d.startMs && policy.endMs === d.endMs && policy.maxCount === d.maxCount && policy.overlap === d.overlap && policy.catchUp === d.catchUp && policy.catchUpWindowMs === d.catchUpWindowMs;
}

/** INVALID_ARGUMENT on `field` unless `atMs` is at most 1 s in the past and at most 100 years ahead of `nowMs`. */
export function checkAt(atMs: number, nowMs: number, field: string): void {
  if (atMs < nowMs - pastToleranceMs) {
    const at = Math.abs(atMs) <= 8.64e15 ? new Date(atMs).toISOString() : `${atMs} ms`; // beyond JavaScript's Date range
    fail("bad_request", `${field} ${at} is in the past (now ${new Date(nowMs).toISOString()})`, [{ field, description: "in the past" }]);
  }
  if (atMs > nowMs + maxHorizonMs) fail("bad_request", `${field} is more than 100 years ahead`, [{ field, description: "too far ahead" }]);
}

/** What the moment rules read of a timer; `id`, `policy` and `occurrences` default to "", the default policy and 0. */
export type TimerMoments = Pick<TimerRecord, "spec" | "nextDueMs"> & Partial<Pick<TimerRecord, "id" | "policy" | "occurrences">>;

/**
 * What `timer` owes to a claim at `nowMs` that looks ahead to `horizonMs` (>= `nowMs`, the
 * clock's lookahead): the moments it missed up to `nowMs`, by its catch-up policy
 * ({@link owedOccurrences}), then each of its moments in (`nowMs`, `horizonMs`], on time, in
 * order; and its next due moment after them (null: spent). So a moment missed while the owner
 * was down or the timer paused is never hidden by the next one coming up within the lookahead.
 */
export function owedWithin(timer: TimerMoments, nowMs: number, horizonMs: number): { dueMs: number[]; nextDueMs: number | null } {
  const missed = (timer.nextDueMs as number) <= nowMs ? owedOccurrences(timer, nowMs) : { dueMs: [], nextDueMs: timer.nextDueMs };
  const dueMs = [...missed.dueMs];
  let nextDueMs = missed.nextDueMs;
  while (nextDueMs !== null && nextDueMs <= horizonMs) {
    const ahead = owedOccurrences({ ...timer, nextDueMs, occurrences: (timer.occurrences ?? 0) + dueMs.length }, nextDueMs);
    dueMs.push(...ahead.dueMs);
    nextDueMs = ahead.nextDueMs;
  }
  return { dueMs, nextDueMs };
}

/**
 * Every occurrence `timer` owes when the clock rings at `nowMs` (its next due moment is at or
 * before it), by its catch-up policy, ascending, and its next due moment after them
 * (strictly after `nowMs`; null: spent). Of the due moments from its next one up to `nowMs`:
 * - "latest" (default): the most recent one;
 * - "allWithinWindow": those at most `catchUpWindowMs` before `nowMs`, at most
 *   {@link maxCatchUpOccurrences} (the most recent); none when even the latest is older;
 * - "none": the most recent one only if it is on time (at most {@link onTimeToleranceMs} ms
 *   late), else none.
 * Never more than `maxCount - occurrences` (the most recent); the next due moment is null when
 * these make the count, or when the next moment is at or after `end`. One-shots owe their one
 * moment. Moments not owed are not recorded (as a timer without a policy does with its earlier missed moments).
 */
export function owedOccurrences(timer: TimerMoments, nowMs: number): { dueMs: number[]; nextDueMs: number | null } {
  const due = timer.nextDueMs as number;
  if (timer.spec.kind === "at") return { dueMs: [due], nextDueMs: null };
  const policy = timer.policy ?? defaultSchedulePolicy;
  const first = nominalOf(timer, due);
  // The latest nominal moment whose due moment has come (jitter never reaches the next moment:
  // dueOf keeps every offset below the gap, so the moment before one at or before now is due by now).
  let last = rawPrev(timer, nowMs + 1) ?? first;
  if (policy.endMs !== null && last >= policy.endMs) last = rawPrev(timer, policy.endMs) ?? first;
  if (dueOf(timer, last) > nowMs) last = rawPrev(timer, last) ?? first;
  if (last < first) last = first;
  let owed: number[];
  switch (policy.catchUp) {
    case "latest":
      owed = [last];
      break;
    case "none":
      owed = nowMs - dueOf(timer, last) <= onTimeToleranceMs ? [last] : [];
      break;
    case "allWithinWindow": {
      owed = [];
      for (let n: number | null = last; n !== null && n >= first && owed.length < maxCatchUpOccurrences && nowMs - dueOf(timer, n) <= policy.catchUpWindowMs; n = rawPrev(timer, n)) owed.push(n);
      owed.reverse();
      break;
    }
  }
  const remaining = policy.maxCount > 0 ? Math.max(0, policy.maxCount - (timer.occurrences ?? 0)) : Infinity;
  if (owed.length > remaining) owed = owed.slice(owed.length - remaining);
  const next = rawNext(timer, last);
  const spent = next === null || (policy.endMs !== null && next >= policy.endMs) || owed.length >= remaining;
  return { dueMs: owed.map((n) => dueOf(timer, n)), nextDueMs: spent ? null : dueOf(timer, next) };
}

/**
 * What the claim does with an owed occurrence of `timer` that is `latenessMs` late,
 * given the timer's occurrences that have not ended (`active.running`: pending or waiting for a
 * retry; `active.buffered`: held by "bufferOne"): "skipped" with the reason when it is later
 * than the timer's `overdue` bound, or when the overlap policy is "skip" and one runs, or
 * "bufferOne" and one is already held (or about to be released); "buffered" under "bufferOne"
 * when one runs and none is held; otherwise "pending" (call it now). `reason` is "" unless
 * skipped.
 */
export function claimDecision(timer: Pick<TimerRecord, "overdue"> & Partial<Pick<TimerRecord, "policy">>, latenessMs: number, active: { running: number; buffered: number }): { status: "pending" | "buffered" | "skipped"; reason: string } {
  const late = tooLate(timer.overdue, latenessMs);
  if (late) return { status: "skipped", reason: late };
  const overlap = timer.policy?.overlap ?? "allow";
  if (overlap === "allow" || active.running + active.buffered === 0) return { status: "pending", reason: "" };
  if (overlap === "skip") return { status: "skipped", reason: `overlap policy skip: a previous occurrence is still running` };
  if (active.buffered === 0) return { status: "buffered", reason: "" };
  return { status: "skipped", reason: `overlap policy buffer one: a previous occurrence is running and another is already buffered` };
}

/**
 * The due moment a paused `timer` takes when resumed at `nowMs`, or null when it has none
 * (its held moment was null, or its moments ended). Nothing missed while paused (the held
 * moment is still ahead): the held moment. Otherwise at most one missed occurrence is owed,
 * by the catch-up policy: the most recent missed due moment ("latest"; "allWithinWindow" when
 * within the window; "none" when on time), else the next moment after `nowMs`.
 */
export function resumeDue(timer: TimerMoments & Pick<TimerRecord, "paused">, nowMs: number): number | null {
  const held = timer.paused?.heldDueMs ?? null;
  if (held === null) return null;
  if (held > nowMs) return held;
  const owed = owedOccurrences({ ...timer, nextDueMs: held }, nowMs);
  return owed.dueMs[owed.dueMs.length - 1] ?? owed.nextDueMs;
}

/**
 * The due moments of the nominal moments of `timer` in [startMs, endMs) (BackfillTimer),
 * ascending, each with its jitter, so a moment the schedule made has the same due moment
 * (and occurrence id). The timer's own bounds and count do not apply. INVALID_ARGUMENT naming
 * `end` when the range holds more than {@link maxBackfillOccurrences}.
 */
export function backfillMoments(timer: TimerMoments & Pick<TimerRecord, "paused">, startMs: number, endMs: number): number[] {
  const view = { ...timer, nextDueMs: timer.nextDueMs ?? timer.paused?.heldDueMs ?? null, policy: { ...(timer.policy ?? defaultSchedulePolicy), startMs: null, endMs: null } };
  const out: number[] = [];
  for (let n = rawNext(view, startMs - 1); n !== null && n < endMs; n = rawNext(view, n)) {
    if (out.length === maxBackfillOccurrences) fail("bad_request", `the range holds more than ${maxBackfillOccurrences} fire times; backfill it in parts`, [{ field: "end", description: `at most ${maxBackfillOccurrences} fire times` }]);
    out.push(dueOf(view, n));
  }
  return out;
}

/**
 * The last moment (ms since the epoch, UTC) an occurrence due at `dueMs` may still be made
 * under `overdue`: `dueMs` plus its bound, or plus {@link onTimeToleranceMs} for
 * `on_time_or_never`; undefined when unbounded. The call of time waits for an executor's
 * credit only until then (ActionCalls).
 */
export function latestStartMs(overdue: Overdue, dueMs: number): number | undefined {
  switch (overdue.kind) {
    case "unbounded":
      return undefined;
    case "max":
      return dueMs + overdue.maxLatenessMs;
    case "onTimeOrNever":
      return dueMs + onTimeToleranceMs;
  }
}

/**
 * Why an occurrence `latenessMs` late may not be made under `overdue`, or "" when
 * it may: `max_lateness_ms` allows up to that bound inclusive, `on_time_or_never` up to
 * {@link onTimeToleranceMs}.
 */
export function tooLate(overdue: Overdue, latenessMs: number): string {
  switch (overdue.kind) {
    case "unbounded":
      return "";
    case "max":
      return latenessMs > overdue.maxLatenessMs ? `${latenessMs} ms late, over its bound of ${overdue.maxLatenessMs} ms` : "";
    case "onTimeOrNever":
      return latenessMs > onTimeToleranceMs ? `${latenessMs} ms late: on time or never (tolerance ${onTimeToleranceMs} ms)` : "";
  }
}

/**
 * The id of the occurrence of timer `timerId` due at `dueMs`: 32 hex characters, the due
 * moment (12, ms since the epoch) then 20 of SHA-256 over both. It is the occurrence's action
 * call id, so however often the owner calls it (restarts, retries), the log keeps it once.
 * Leading with the moment makes ids sort by due: the claims, made in due order, add to the end
 * of the occurrences' and calls' id indexes instead of to pages all over them (fewer pages
 * written per commit).
 */
export function occurrenceId(timerId: string, dueMs: number): string {
  const moment = Math.max(0, dueMs).toString(16).padStart(12, "0");
  return moment + sha256Hex(`timer-occurrence\n${timerId}\n${dueMs}`).slice(0, 20);
}

/**
 * The next `count` moments `timer` is due, from its next due moment on (GetTimer's
 * preview), with jitter, within its end bound and maximum count: empty when spent;
 * one for one-shots. A paused timer previews the moments after `nowMs` it would have if
 * resumed (catch-up aside).
 */
export function preview(timer: TimerMoments & Partial<Pick<TimerRecord, "paused">>, count: number, nowMs = 0): number[] {
  let first = timer.nextDueMs;
  if (first === null && timer.paused && timer.paused.heldDueMs !== null && timer.spec.kind !== "at") {
    const view = { ...timer, nextDueMs: timer.paused.heldDueMs };
    const n = boundedNext(view, nowMs);
    first = n === null ? null : dueOf(view, n);
  }
  if (first === null || count === 0) return [];
  if (timer.spec.kind === "at") return [first];
  const view = { ...timer, nextDueMs: first };
  const policy = timer.policy ?? defaultSchedulePolicy;
  const limit = policy.maxCount > 0 ? Math.min(count, policy.maxCount - (timer.occurrences ?? 0)) : count;
  const out: number[] = [];
  for (let n: number | null = nominalOf(view, first); n !== null && out.length < limit; n = rawNext(view, n)) {
    if (policy.endMs !== null && n >= policy.endMs) break;
    out.push(dueOf(view, n));
  }
  return out;
}

// ---- nominal moments ----
// A recurring timer's nominal moments are its spec's: cron fire times (with its DST policy)
// or `anchor + k·every` (anchor: the policy's, else the next due moment, which is then on
// the lattice since jitter needs an anchor). `rawNext`/`rawPrev` ignore the bounds;
// `boundedNext` keeps within [start, end). `dueOf` adds the jitter.

/** The nominal moment strictly after `afterMs` (bounds ignored); null for a passed one-shot. */
function rawNext(timer: TimerMoments, afterMs: number): number | null {
  const spec = timer.spec;
  switch (spec.kind) {
    case "at":
      return spec.atMs > afterMs ? spec.atMs : null;
    case "cron":
      return cronOf(spec.expression, spec.zone, spec.dst ?? defaultDstPolicy).next(afterMs);
    case "every": {
      const o = everyOrigin(timer);
      return o + (Math.floor((afterMs - o) / spec.everyMs) + 1) * spec.everyMs;
    }
  }
}

/** The nominal moment strictly before `beforeMs` (bounds ignored); null when none. */
function rawPrev(timer: TimerMoments, beforeMs: number): number | null {
  const spec = timer.spec;
  switch (spec.kind) {
    case "at":
      return spec.atMs < beforeMs ? spec.atMs : null;
    case "cron":
      return cronOf(spec.expression, spec.zone, spec.dst ?? defaultDstPolicy).prev(beforeMs);
    case "every": {
      const o = everyOrigin(timer);
      return o + (Math.ceil((beforeMs - o) / spec.everyMs) - 1) * spec.everyMs;
    }
  }
}

/** The first nominal moment strictly after `afterMs` within [start, end), or null. */
function boundedNext(timer: TimerMoments, afterMs: number): number | null {
  const policy = timer.policy ?? defaultSchedulePolicy;
  const n = rawNext(timer, policy.startMs !== null ? Math.max(afterMs, policy.startMs - 1) : afterMs);
  return n !== null && (policy.endMs === null || n < policy.endMs) ? n : null;
}

/** Where an `every_ms` timer's lattice is: its anchor, else its next due moment. */
function everyOrigin(timer: TimerMoments): number {
  return timer.policy?.anchorMs ?? timer.nextDueMs ?? 0;
}

/**
 * The due moment of nominal moment `n` of `timer`: `n` plus its jitter offset, a
 * deterministic function of the timer id and `n`, from 0 up to `min(jitterMs, gap - 1)` where
 * `gap` is the distance to the next nominal moment. So the offset never reaches the next
 * moment and due moments stay strictly increasing: a jitter below the gap gives its offsets
 * from 0 to `jitterMs` as always; a wider one (cron, whose gaps vary; `every_ms` timers set
 * before the check of {@link checkSchedulePolicy}) spreads them evenly over the whole gap
 * rather than piling them up at its last ms.
 */
export function dueOf(timer: TimerMoments, n: number): number {
  const jitter = timer.policy?.jitterMs ?? 0;
  if (jitter === 0) return n;
  const next = rawNext(timer, n);
  return n + jitterOffset(timer.id ?? "", n, next === null ? jitter : Math.min(jitter, next - n - 1));
}

/** The nominal moment whose due moment is `dueMs` (the inverse of {@link dueOf}): the last one at or before it, as a due moment is before the next nominal moment. */
export function nominalOf(timer: TimerMoments, dueMs: number): number {
  if ((timer.policy?.jitterMs ?? 0) === 0 || timer.spec.kind === "at") return timer.spec.kind === "at" ? timer.spec.atMs : dueMs;
  return rawPrev(timer, dueMs + 1) ?? dueMs;
}

/**
 * 0 to `maxMs` ms (inclusive), spread (near-)evenly over that range: from SHA-256 over the
 * timer id and the nominal moment. The same hash for any `maxMs`, so only the range
 * changes a moment's offset.
 */
function jitterOffset(timerId: string, nominalMs: number, maxMs: number): number {
  const h = sha256Bytes(`timer-jitter\n${timerId}\n${nominalMs}`);
  return h.readUIntBE(0, 6) % (maxMs + 1);
}

/**
 * The id of a triggered occurrence of timer `timerId` (TriggerTimer): 32 hex characters of
 * SHA-256 over the timer id and `key` (derived from the cause under one, else fresh), so it
 * never collides with a scheduled occurrence's.
 */
export function triggeredOccurrenceId(timerId: string, key: string): string {
  return sha256Hex(`timer-trigger\n${timerId}\n${key}`).slice(0, 32);
}
