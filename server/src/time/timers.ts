import { createHash } from "node:crypto";
import { ChronologError, fail } from "../errors.js";
import type { ActorRecord } from "../store/events.js";
import { parseCron, type CronSchedule } from "./cron.js";

// The rules of timers (SPEC T1, T3, T6, K2-K4): what a spec means, when a timer is first due,
// which occurrence is owed when it rings, and when an occurrence is too late to make. Pure
// functions of their arguments: `nowMs` is always passed in (STYLE 9). All instants are ms
// since the epoch, UTC.
//
// A timer's states (the row in `timers`):
// - **scheduled** (next_due_ms set): waits for the clock (T5).
// - scheduled → scheduled (recurring: cron, every_ms): when it rings, one occurrence is
//   claimed (the most recent due moment ≤ now, so an outage owes one call, K2) and next_due
//   moves strictly past now.
// - scheduled → **spent** (one-shot: at, delay; next_due_ms NULL): claimed once; the row stays
//   so the timer can be inspected (T4) and a retried Delay under a cause finds it.
// - scheduled → (deleted): Unschedule / CancelDelay, or a declared schedule removed from its
//   manifest; occurrences already claimed still run (and retry).
// - declared schedules only: scheduled ⇄ **disabled** (next_due_ms NULL, `disabled` set) by
//   their manifest or a patch (T2); a schedule of another region than the owner's is stored
//   with next_due_ms NULL too (K6).
// An occurrence is either made (its action is called, call id = occurrence id) or, when later
// than the timer's `overdue` bound at the claim, recorded as skipped. A made occurrence whose
// call fails is tried again after each of the timer's `retryDelaysMs` (T7; see fire.ts).

/** The kinds of timers (T2, T3, K3). */
export type TimerKind = "runtime" | "declared" | "delay";

/** When a timer fires (T1). */
export type TimerSpec =
  /** Once, at `atMs`. */
  | { kind: "at"; atMs: number }
  /** By a 5-field cron expression in an IANA zone ("" = UTC), T10. */
  | { kind: "cron"; expression: string; zone: string }
  /** Every `everyMs` ms, the first one interval after it was set. */
  | { kind: "every"; everyMs: number };

/** How late an occurrence may be made (K2, K3, K4); later ones are skipped. */
export type Overdue =
  | { kind: "unbounded" }
  /** Made only if at most `maxLatenessMs` late. */
  | { kind: "max"; maxLatenessMs: number }
  /** Made only within {@link onTimeToleranceMs} of its moment. */
  | { kind: "onTimeOrNever" };

/** A stored timer: a document of `sys.timers` (T4). */
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
  /** Who its calls run as (T9), `in` included; null: the system. */
  actor: ActorRecord | null;
  /** Declared schedules: plugin and schedule name ("" otherwise). */
  plugin: string;
  schedule: string;
  overdue: Overdue;
  /** Chain depth of its calls (K5; 0 in this increment). */
  chainDepth: number;
  /** Occurrences called so far (skipped ones not counted). */
  occurrences: number;
  /** Region whose owner makes it (K6): declared schedules as declared, others the region of the owner that set them. */
  region: number;
  /** A declared schedule switched off by its manifest or a patch (T2); nextDueMs is then null. */
  disabled: boolean;
  /** Waits between the tries of a failed occurrence, ms (T7): one retry per entry. */
  retryDelaysMs: number[];
  /** Commit time of the Schedule/Delay that set it, ms since the epoch. */
  createdAt: number;
  /** Commit time of its last change, ms since the epoch. */
  updatedAt: number;
}

/**
 * Waits between the tries of a failed occurrence when nothing else is said (T7): 2 more tries,
 * after 10,000 ms then 30,000 ms. Declared schedules set their own with `retry_delays_ms`;
 * runtime timers and delays always use this default.
 */
export const defaultRetryDelaysMs: readonly number[] = Object.freeze([10_000, 30_000]);

/** How far in the past an `at` (or a delay's `at`) may be and still be accepted: 1,000 ms. It then fires at once. */
export const pastToleranceMs = 1_000;
/** "On time" for `on_time_or_never` (K3): at most 1,000 ms late. */
export const onTimeToleranceMs = 1_000;
/** Shortest `every_ms`: 1,000 ms (a faster cadence is a pulse's job, K1). */
export const minEveryMs = 1_000;
/** Longest interval or distance into the future anything may be set: 100 years in ms. */
export const maxHorizonMs = 100 * 366 * 86_400_000;

const cronCache = new Map<string, CronSchedule>();

/**
 * The checked schedule of a cron spec (parsed once per expression and zone, cached).
 * Throws INVALID_ARGUMENT with the field `spec.cron.expression` or `spec.cron.zone`
 * (parseCron's message names the bad cron field, T10).
 */
export function cronOf(expression: string, zone: string): CronSchedule {
  const key = `${zone}\n${expression}`;
  let schedule = cronCache.get(key);
  if (!schedule) {
    try {
      schedule = parseCron(expression, zone);
    } catch (e) {
      if (!(e instanceof ChronologError)) throw e;
      const field = e.violations[0]?.field === "zone" ? "spec.cron.zone" : "spec.cron.expression";
      fail("bad_request", e.message, [{ field, description: e.message }]);
    }
    if (cronCache.size >= 1_000) cronCache.clear();
    cronCache.set(key, schedule);
  }
  return schedule;
}

/**
 * Checks `spec` at the moment it is set (`nowMs`) and returns when it is first due (T3).
 * `at` more than {@link pastToleranceMs} in the past, or more than 100 years ahead,
 * `every_ms` below {@link minEveryMs} or above 100 years, and bad cron expressions or zones
 * (including 6-field ones) fail with INVALID_ARGUMENT naming the field (`spec.at`,
 * `spec.every_ms`, `spec.cron.expression`, `spec.cron.zone`).
 */
export function firstDue(spec: TimerSpec, nowMs: number, field = "spec"): number {
  switch (spec.kind) {
    case "at":
      checkAt(spec.atMs, nowMs, `${field}.at`);
      return spec.atMs;
    case "cron":
      return cronOf(spec.expression, spec.zone).next(nowMs);
    case "every":
      if (!Number.isSafeInteger(spec.everyMs) || spec.everyMs < minEveryMs || spec.everyMs > maxHorizonMs) {
        fail("bad_request", `${field}.every_ms must be from ${minEveryMs} to ${maxHorizonMs} ms, got ${spec.everyMs}`, [{ field: `${field}.every_ms`, description: `from ${minEveryMs} ms` }]);
      }
      return nowMs + spec.everyMs;
  }
}

/** INVALID_ARGUMENT on `field` unless `atMs` is at most 1 s in the past and at most 100 years ahead of `nowMs`. */
export function checkAt(atMs: number, nowMs: number, field: string): void {
  if (atMs < nowMs - pastToleranceMs) {
    fail("bad_request", `${field} ${new Date(atMs).toISOString()} is in the past (now ${new Date(nowMs).toISOString()})`, [{ field, description: "in the past" }]);
  }
  if (atMs > nowMs + maxHorizonMs) fail("bad_request", `${field} is more than 100 years ahead`, [{ field, description: "too far ahead" }]);
}

/**
 * The occurrence owed by `timer`, due at or before `nowMs`, when the clock rings (T6, K2),
 * and the timer's next due moment after it (null: spent). One-shots owe their one moment.
 * A recurring timer owes one occurrence however long the owner was away: the most recent
 * due moment at or before `nowMs` (cron: `prev(now + 1)`; every: `due + k·every`), so a
 * month-long outage is one call, not thirty; the next moment is strictly after `nowMs`.
 */
export function owedOccurrence(timer: Pick<TimerRecord, "spec" | "nextDueMs">, nowMs: number): { dueMs: number; nextDueMs: number | null } {
  const due = timer.nextDueMs as number;
  switch (timer.spec.kind) {
    case "at":
      return { dueMs: due, nextDueMs: null };
    case "cron": {
      const schedule = cronOf(timer.spec.expression, timer.spec.zone);
      return { dueMs: Math.max(due, schedule.prev(nowMs + 1)), nextDueMs: schedule.next(nowMs) };
    }
    case "every": {
      const every = timer.spec.everyMs;
      const latest = due + Math.floor((nowMs - due) / every) * every;
      return { dueMs: latest, nextDueMs: latest + every };
    }
  }
}

/**
 * Why an occurrence `latenessMs` late may not be made under `overdue` (K3, K4), or "" when
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
 * The id of the occurrence of timer `timerId` due at `dueMs` (T6): 32 hex characters of
 * SHA-256 over both. It is the occurrence's action call id, so however often the owner
 * calls it (restarts, retries), the log keeps it once (A3).
 */
export function occurrenceId(timerId: string, dueMs: number): string {
  return createHash("sha256").update(`timer-occurrence\n${timerId}\n${dueMs}`).digest("hex").slice(0, 32);
}

/**
 * The next `count` moments `timer` is due, from its next due moment on (GetTimer's
 * preview, T4): empty when spent; one for one-shots.
 */
export function preview(timer: Pick<TimerRecord, "spec" | "nextDueMs">, count: number): number[] {
  if (timer.nextDueMs === null || count === 0) return [];
  const first = timer.nextDueMs;
  switch (timer.spec.kind) {
    case "at":
      return [first];
    case "cron":
      return [first, ...cronOf(timer.spec.expression, timer.spec.zone).take(first, count - 1)];
    case "every": {
      const every = timer.spec.everyMs;
      return Array.from({ length: count }, (_, i) => first + i * every);
    }
  }
}
