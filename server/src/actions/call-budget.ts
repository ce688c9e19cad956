import type { CallIdentity } from "./records.js";
import type { Run } from "./run.js";

/** At most this much of a caller's deadline is kept back to answer it (ms), so it learns why. */
const maxAnswerMarginMs = 500;

/** How long the next attempt of `run` may wait for a host: the action's timeout or the callers' deadline (less a margin), whichever is first. */
export function attemptBudgetMs(run: Run): number {
  let callers = run.waiters.size === 0 ? 0 : -Infinity;
  for (const waiter of run.waiters) {
    const remaining = waiter.remainingMs();
    if (remaining === undefined) {
      callers = Infinity;
      break;
    }
    callers = Math.max(callers, remaining - Math.min(maxAnswerMarginMs, Math.floor(remaining / 4)));
  }
  return Math.min(run.call.entry.timeoutMs, callers);
}

/**
 * The least time a call of time must have to spare before its moment for its start to be committed
 * as deferrable (Committer.submit: it may wait up to 10 ms longer under load), ms.
 */
const startSlackMs = 30;

/** True for a call made by time whose moment is at least {@link startSlackMs} away (it was claimed inside the clock's lookahead); `nowMs` on the owner's clock. */
export function hasSlack(call: CallIdentity, nowMs: number): boolean {
  return call.scheduled?.sendAtMs !== undefined && call.scheduled.sendAtMs - nowMs >= startSlackMs;
}
