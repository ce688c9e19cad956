import { defaultSchedulePolicy, type SchedulePolicy, type TimerKind, type TimerRecord } from "../store/timer-records.js";

// Timers: the states one goes through, and the defaults it is set with. What one is set with
// (its spec, lateness bound and schedule policy) and how it is stored are its record's types
// (store/timer-records.ts). The rules over them are pure functions of their arguments, each
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

/**
 * Waits between the tries of a failed occurrence when nothing else is said: 2 more tries,
 * after 10,000 ms then 30,000 ms. Declared schedules set their own with `retry_delays_ms`;
 * runtime timers and delays always use this default.
 */
export const defaultRetryDelaysMs: readonly number[] = Object.freeze([10_000, 30_000]);

/** A timer as a principal reads it (GetTimer, ListTimers, PauseTimer, ResumeTimer: see TimerReads.view). */
export type TimerView = TimerRecord & {
  /** True when the read rule withholds its action's work from the reader: `input` is then empty. */
  inputWithheld: boolean;
};

/** True when `policy` is the default, the anchor aside. */
export function isDefaultPolicy(policy: SchedulePolicy): boolean {
  const d = defaultSchedulePolicy;
  return (
    policy.jitterMs === d.jitterMs &&
    policy.startMs === d.startMs &&
    policy.endMs === d.endMs &&
    policy.maxCount === d.maxCount &&
    policy.overlap === d.overlap &&
    policy.catchUp === d.catchUp &&
    policy.catchUpWindowMs === d.catchUpWindowMs
  );
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
