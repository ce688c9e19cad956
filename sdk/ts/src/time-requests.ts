// The time calls' options (when a timer fires or a delay is due, lateness bounds, schedule and
// DST policies, the options and answers of Schedule, Delay and the timer operations) and their
// conversion into request fields, checked before anything is sent (see options.ts).

import type { JsonObject, MessageInitShape } from "@bufbuild/protobuf";
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import type { Actor } from "./gen/chronolog/v1/event_pb.js";
import {
  CatchUpPolicy,
  DstGap,
  DstRepeated,
  OverlapPolicy,
  TimerKind,
  type CancelOnSchema,
  type DstPolicySchema,
  type OverdueSchema,
  type SchedulePolicySchema,
  type TimerSpecSchema,
} from "./gen/chronolog/v1/time_pb.js";
import { choiceOf, countOf, invalid, momentOf, msOf, shown, whenKeyOf } from "./options.js";

/**
 * When a timer fires: once `at` a moment, by a 5-field cron expression in an IANA zone
 * (default UTC) with an optional DST policy, or every `everyMs` ms (>= 1,000; the first one
 * interval from now).
 */
export type TimerWhen = { at: Date | number } | { cron: string; zone?: string; dst?: DstOptions } | { everyMs: number };

/**
 * What a cron schedule's fixed-hour wall times do across daylight-saving changes: `gap`
 * "shift" (default: once, moved forward by the gap, 02:30 → 03:30) or "skip" (not that day);
 * `repeated` "first" (default), "last" or "both" occurrences of a repeated wall time. Wildcard
 * or step hours (`*`, `*\/n`) always run at every real matching instant.
 */
export interface DstOptions {
  gap?: "shift" | "skip";
  repeated?: "first" | "last" | "both";
}

/**
 * How a recurring timer runs; every field optional (absent: the default). Times in ms.
 * - `jitterMs`: each occurrence is made up to this many ms after its moment (a deterministic
 *   offset per occurrence, always before the next moment; `scheduled.due` includes it);
 * - `start` / `end`: no moment before `start`, none at or after `end` (then it is spent);
 * - `maxCount`: spent once this many occurrences were made (triggered and backfilled ones not counted);
 * - `overlap`: "allow" (default: calls may overlap), "skip" (skipped while the previous one
 *   runs) or "bufferOne" (held until it ends, one at most);
 * - `catchUp`: after an outage, "latest" (default: the most recent missed occurrence),
 *   "allWithinWindow" (every missed one at most `catchUpWindowMs` old, at most 100) or "none".
 */
export interface SchedulePolicyOptions {
  jitterMs?: number;
  start?: Date | number;
  end?: Date | number;
  maxCount?: number;
  overlap?: "allow" | "skip" | "bufferOne";
  catchUp?: "latest" | "allWithinWindow" | "none";
  /** Required (>= 1,000) with `catchUp: "allWithinWindow"`. */
  catchUpWindowMs?: number;
}

/** When a delay is due: `intervalMs` ms from now, or `at` a moment (Date or ms since the epoch). */
export type DelayWhen = { intervalMs: number } | { at: Date | number };

/**
 * How late a timer's or delay's call may still be made: `"unbounded"` (whenever
 * possible), `{ maxLatenessMs }` (at most that many ms late, else recorded as skipped), or
 * `"onTimeOrNever"` (within the owner's tolerance of 1,000 ms).
 */
export type OverdueBound = "unbounded" | "onTimeOrNever" | { maxLatenessMs: number };

/** The kinds of timers. */
export type TimerKindName = "runtime" | "declared" | "delay";

/**
 * An event that cancels a pending timer or delay: the first event of `type` whose data matches
 * the timer's input, e.g. `{ type: "order.paid", match: { "data.order_id": "input.order_id" } }`
 * (each key a path in the event, each value a path in the input; absent: every event of the
 * type). The cancel commits with the event; a timer is claimed at its moment, so either its call
 * is made (and the event cancels nothing) or no call is ever made.
 */
export interface CancelOnOption {
  type: string;
  match?: Record<string, string>;
}

/** Options of a Schedule. */
export interface ScheduleOptions {
  /** Events that cancel the timer while it is pending (at most 10). */
  cancelOn?: CancelOnOption[];
  /** Timer id; the same id replaces that timer. Default: derived under a cause, else generated. */
  timerId?: string;
  /** Lateness bound of each occurrence (default unbounded). */
  overdue?: OverdueBound;
  /** Jitter, bounds, maximum count, overlap and catch-up (recurring timers only). */
  policy?: SchedulePolicyOptions;
  /** Actor fields to assert (from outside; the principal must allow them). */
  actor?: Partial<Pick<Actor, "id" | "for" | "in" | "via">>;
  /** Work under a delivery or an action run: the timer id and actor come from it; executors and admins only. */
  cause?: { eventId: string; position: number };
  signal?: AbortSignal;
}

/** Options of a Delay. */
export interface DelayOptions {
  /** Events that cancel the delay while it is pending (at most 10). */
  cancelOn?: CancelOnOption[];
  /** Actor fields to assert (from outside; the principal must allow them). */
  actor?: Partial<Pick<Actor, "id" | "for" | "in" | "via">>;
  /** Work under a delivery or an action run: the delay id and actor come from it; executors and admins only. */
  cause?: { eventId: string; position: number };
  /** Start a new chain instead of continuing the cause's. */
  freshChain?: boolean;
  /**
   * The delay's id, chosen by the client (from outside only; not under a cause, where it is
   * derived). Makes the Delay safe to retry: the same request with the same id returns
   * that delay (same due moment) and arms nothing, even after it was made or cancelled; another
   * request with it is ALREADY_EXISTS; an id naming a schedule is FAILED_PRECONDITION. No "/".
   */
  delayId?: string;
  signal?: AbortSignal;
}

/** One delay of a {@link ChronologClient.delayBatch}: what {@link ChronologClient.delay} takes, as one object. */
export interface DelaySpec extends Omit<DelayOptions, "signal"> {
  action: string;
  input?: JsonObject;
  when: DelayWhen;
  overdue: OverdueBound;
}

/** Options of Unschedule and CancelDelay. */
export interface TimerChangeOptions {
  /** Work under a delivery or an action run; executors and admins only. */
  cause?: { eventId: string; position: number };
  signal?: AbortSignal;
}

/** Options of PauseTimer and ResumeTimer. */
export interface PauseOptions extends TimerChangeOptions {
  /** Why (at most 1,000 characters), recorded in `timer.paused` / `timer.resumed`. */
  note?: string;
}

/** One occurrence of a BackfillTimer. */
export interface BackfilledOccurrenceResult {
  /** Occurrence id, also the action call id. */
  occurrenceId: string;
  /** Its due moment (the action's `scheduled.due`). */
  due: Date;
  /** True when it had been made before (not made again). */
  existing: boolean;
}

/** An armed delay. */
export interface DelayResult {
  /** Cancels it (CancelDelay). */
  delayId: string;
  /** When it is due. */
  due: Date;
}

/** `cancelOn` in its API form: INVALID_ARGUMENT naming the field for an entry that is not one. */
export function cancelOnOf(cancelOn: CancelOnOption[] | undefined): MessageInitShape<typeof CancelOnSchema>[] {
  if (cancelOn === undefined) return [];
  if (!Array.isArray(cancelOn)) throw invalid(`cancelOn must be an array (got ${shown(cancelOn)})`);
  return cancelOn.map((c, i) => {
    if (c === null || typeof c !== "object" || typeof c.type !== "string") throw invalid(`cancelOn[${i}].type must be a string (got ${shown(c?.type)})`);
    const match = c.match ?? {};
    for (const [k, v] of Object.entries(match)) if (typeof v !== "string") throw invalid(`cancelOn[${i}].match.${k} must be a string (got ${shown(v)})`);
    return { type: c.type, match };
  });
}

/** The API's timer kinds by name. */
export const timerKinds: Record<TimerKindName, TimerKind> = { runtime: TimerKind.RUNTIME, declared: TimerKind.DECLARED, delay: TimerKind.DELAY };

/** A timer's when in its API form (TimerSpec): INVALID_ARGUMENT naming the field for a bad moment, cron, zone or interval. */
export function specOf(when: TimerWhen): MessageInitShape<typeof TimerSpecSchema> {
  switch (whenKeyOf(when, ["at", "cron", "everyMs"])) {
    case "at":
      return { when: { case: "at", value: momentOf((when as { at: unknown }).at, "at") } };
    case "cron": {
      const { cron, zone, dst } = when as { cron: unknown; zone?: unknown; dst?: DstOptions };
      if (typeof cron !== "string") throw invalid(`cron must be a string (got ${shown(cron)})`);
      if (zone !== undefined && typeof zone !== "string") throw invalid(`zone must be a string (got ${shown(zone)})`);
      return { when: { case: "cron", value: { expression: cron, zone: zone ?? "", dst: dst && dstOf(dst) } } };
    }
    default:
      return { when: { case: "everyMs", value: msOf((when as { everyMs: unknown }).everyMs, "everyMs") } };
  }
}

/** A delay's when in its API form: INVALID_ARGUMENT naming the field for a bad interval or moment. */
export function delayWhenOf(when: DelayWhen): { case: "intervalMs"; value: bigint } | { case: "at"; value: Timestamp } {
  return whenKeyOf(when, ["intervalMs", "at"]) === "intervalMs"
    ? { case: "intervalMs", value: msOf((when as { intervalMs: unknown }).intervalMs, "intervalMs") }
    : { case: "at", value: momentOf((when as { at: unknown }).at, "at") };
}

/**
 * A DST policy in its API form (DstPolicy). Throws a ConnectError INVALID_ARGUMENT for a
 * `gap` other than "shift" or "skip" or a `repeated` other than "first", "last" or "both"
 * (absent ones are the owner's defaults).
 */
export function dstOf(dst: DstOptions): MessageInitShape<typeof DstPolicySchema> {
  if (dst === null || typeof dst !== "object") throw invalid(`dst must be an object (got ${shown(dst)})`);
  return {
    gap: dst.gap === undefined ? DstGap.UNSPECIFIED : choiceOf(dst.gap, "dst.gap", { shift: DstGap.SHIFT, skip: DstGap.SKIP }),
    repeated:
      dst.repeated === undefined
        ? DstRepeated.UNSPECIFIED
        : choiceOf(dst.repeated, "dst.repeated", { first: DstRepeated.FIRST, last: DstRepeated.LAST, both: DstRepeated.BOTH }),
  };
}

/**
 * A schedule policy in its API form (SchedulePolicy). Throws a ConnectError
 * INVALID_ARGUMENT naming the field (`policy.jitterMs`, `policy.start`, `policy.maxCount`,
 * `policy.overlap`, ...) for a number of ms or a count that is not a non-negative integer, a
 * moment that is not a valid Date or ms since the epoch, or an unknown overlap or catch-up name.
 */
export function schedulePolicyOf(policy: SchedulePolicyOptions): MessageInitShape<typeof SchedulePolicySchema> {
  if (policy === null || typeof policy !== "object") throw invalid(`policy must be an object (got ${shown(policy)})`);
  const overlaps = { allow: OverlapPolicy.ALLOW, skip: OverlapPolicy.SKIP, bufferOne: OverlapPolicy.BUFFER_ONE };
  const catchUps = { latest: CatchUpPolicy.LATEST, allWithinWindow: CatchUpPolicy.ALL_WITHIN_WINDOW, none: CatchUpPolicy.NONE };
  const unknown = Object.keys(policy).find((key) => !policyKeys.includes(key));
  if (unknown !== undefined) throw invalid(`policy.${unknown} is not a policy option (${policyKeys.join(", ")})`);
  return {
    jitterMs: msOf(policy.jitterMs ?? 0, "policy.jitterMs"),
    start: policy.start === undefined ? undefined : momentOf(policy.start, "policy.start"),
    end: policy.end === undefined ? undefined : momentOf(policy.end, "policy.end"),
    maxCount: countOf(policy.maxCount ?? 0, "policy.maxCount"),
    overlap: policy.overlap === undefined ? OverlapPolicy.UNSPECIFIED : choiceOf(policy.overlap, "policy.overlap", overlaps),
    catchUp: policy.catchUp === undefined ? CatchUpPolicy.UNSPECIFIED : choiceOf(policy.catchUp, "policy.catchUp", catchUps),
    catchUpWindowMs: msOf(policy.catchUpWindowMs ?? 0, "policy.catchUpWindowMs"),
  };
}

/** The keys a SchedulePolicyOptions may have (a misspelt one is refused, as JSON requests refuse it). */
const policyKeys = ["jitterMs", "start", "end", "maxCount", "overlap", "catchUp", "catchUpWindowMs"];

/** A lateness bound in its API form: INVALID_ARGUMENT for anything but "unbounded", "onTimeOrNever" or `{ maxLatenessMs }` with a non-negative integer. */
export function overdueOf(overdue: OverdueBound): MessageInitShape<typeof OverdueSchema> {
  if (overdue === "unbounded") return { bound: { case: "unbounded", value: true } };
  if (overdue === "onTimeOrNever") return { bound: { case: "onTimeOrNever", value: true } };
  if (overdue === null || typeof overdue !== "object" || !("maxLatenessMs" in overdue))
    throw invalid(`overdue must be "unbounded", "onTimeOrNever" or { maxLatenessMs } (got ${shown(overdue)})`);
  return { bound: { case: "maxLatenessMs", value: msOf(overdue.maxLatenessMs, "maxLatenessMs") } };
}

/** A timestamp the owner always sets, as a Date (an invalid Date if it ever were absent). */
export function dateOf(t: Timestamp | undefined): Date {
  return t ? timestampDate(t) : new Date(NaN);
}
