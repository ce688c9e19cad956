import { ChronologError } from "../errors.js";
import type { CallerContext } from "./run.js";

// The errors a call ends with when no action answered it: its caller left, the owner is
// stopping, or a call of time found no executor by its lateness bound.

/**
 * A client cancels at its own deadline, which comes a little before the owner's copy of it
 * (the request took time to arrive): a cancellation this close to the deadline is the deadline.
 */
const deadlineToleranceMs = 250;

/** The error a caller that left gets: DEADLINE_EXCEEDED when its deadline passed, CANCELLED otherwise. */
export function callerGone(caller: CallerContext): ChronologError {
  const remaining = caller.remainingMs();
  return remaining !== undefined && remaining <= deadlineToleranceMs
    ? new ChronologError("deadline_exceeded", "the caller's deadline passed before the action answered")
    : new ChronologError("cancelled", "the caller cancelled the call");
}

/** Metadata key marking the error of a call of time not started by its latest start. */
const notStartedKey = "not_started_by_ms";

/** The error of a call of time that found no executor's credit by `latestMs` (its lateness bound): not made. */
export function notStartedError(action: string, latestMs: number): ChronologError {
  return new ChronologError(
    "deadline_exceeded",
    `no executor of ${action} had a free credit by ${new Date(latestMs).toISOString()}, the occurrence's lateness bound: not made`,
    [],
    { [notStartedKey]: String(latestMs) },
  );
}

/** True for the error of a call of time not started by its `latestStartMs` (ScheduledCall): nothing was written for it. */
export function notStartedInTime(error: unknown): boolean {
  return error instanceof ChronologError && error.metadata?.[notStartedKey] !== undefined;
}

/** The error of a call refused or ended because the owner is stopping (UNAVAILABLE): call again when it is back. */
export function stoppingError(): ChronologError {
  return new ChronologError("unavailable", "the owner is stopping; call again when it is back");
}
