import type { ActorRecord } from "../store/events.js";
import type { DstPolicy } from "./cron.js";

// Timers: what one is set with (its spec, lateness bound and schedule policy), as stored, and
// the states it goes through. The rules over them are pure functions of their arguments, each
// concept in a module of its own: what may be set and when it is first due (spec-checks.ts),
// a timer's nominal and due moments (moments.ts), which occurrences it owes (owed.ts), when an
// occurrence is too late or may not overlap (claim-rules.ts), and occurrence ids
// (occurrence-ids.ts). All instants are ms since the epoch, UTC.
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
//   missed occurrence is owed, as the catch-up policy says ({@link resumeDue}, owed.ts).
// An occurrence is either made (its action is called, call id = occurrence id) or, when later
// than the timer's `overdue` bound at the claim, recorded as skipped. A made occurrence whose
// call fails is tried again after each of the timer's `retryDelaysMs` (see fire.ts).

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

/** True when `policy` is the default, the anchor aside. */
export function isDefaultPolicy(policy: SchedulePolicy): boolean {
  const d = defaultSchedulePolicy;
  return policy.jitterMs === d.jitterMs && policy.startMs === d.startMs && policy.endMs === d.endMs && policy.maxCount === d.maxCount && policy.overlap === d.overlap && policy.catchUp === d.catchUp && policy.catchUpWindowMs === d.catchUpWindowMs;
}

/** A timer with only its id, kind, region and times set (retries: the default). */
export function blankTimer(id: string, kind: TimerKind, nowMs: number, region: number): TimerRecord {
  return {
    id,
    kind,
    action: "",
    input: {},
    spec: { kind: "at", atMs: nowMs },
    nextDueMs: null,
    actor: null,
    plugin: "",
    schedule: "",
    overdue: { kind: "unbounded" },
    chainDepth: 0,
    occurrences: 0,
    region,
    disabled: false,
    retryDelaysMs: [...defaultRetryDelaysMs],
    policy: { ...defaultSchedulePolicy },
    paused: null,
    createdAt: nowMs,
    updatedAt: nowMs,
  };
}
