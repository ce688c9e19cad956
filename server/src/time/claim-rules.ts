import type { Overdue, TimerRecord } from "../store/timer-records.js";

// What the claim decides about an owed occurrence: whether it is too late for its timer's
// lateness bound, whether the overlap policy lets it start, and the last moment its call may
// start. Pure functions of their arguments.

/** "On time" for `on_time_or_never`: at most 1,000 ms late. */
export const onTimeToleranceMs = 1_000;

/**
 * What the claim does with an owed occurrence of `timer` that is `latenessMs` late,
 * given the timer's occurrences that have not ended (`active.running`: pending or waiting for a
 * retry; `active.buffered`: held by "bufferOne"): "skipped" with the reason when it is later
 * than the timer's `overdue` bound, or when the overlap policy is "skip" and one runs, or
 * "bufferOne" and one is already held (or about to be released); "buffered" under "bufferOne"
 * when one runs and none is held; otherwise "pending" (call it now). `reason` is "" unless
 * skipped.
 */
export function claimDecision(
  timer: Pick<TimerRecord, "overdue"> & Partial<Pick<TimerRecord, "policy">>,
  latenessMs: number,
  active: { running: number; buffered: number },
): { status: "pending" | "buffered" | "skipped"; reason: string } {
  const late = tooLate(timer.overdue, latenessMs);
  if (late) return { status: "skipped", reason: late };
  const overlap = timer.policy?.overlap ?? "allow";
  if (overlap === "allow" || active.running + active.buffered === 0) return { status: "pending", reason: "" };
  if (overlap === "skip") return { status: "skipped", reason: `overlap policy skip: a previous occurrence is still running` };
  if (active.buffered === 0) return { status: "buffered", reason: "" };
  return { status: "skipped", reason: `overlap policy buffer one: a previous occurrence is running and another is already buffered` };
}

/** `active` (a timer's occurrences that have not ended, as {@link claimDecision} takes them) with one more a claim wrote as `status`. */
export function withClaimed(active: { running: number; buffered: number }, status: "pending" | "buffered" | "skipped"): { running: number; buffered: number } {
  if (status === "pending") return { ...active, running: active.running + 1 };
  return status === "buffered" ? { ...active, buffered: active.buffered + 1 } : active;
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
