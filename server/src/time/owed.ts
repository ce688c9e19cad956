import { fail } from "../errors.js";
import { onTimeToleranceMs } from "./claim-rules.js";
import { boundedNext, dueOf, nominalOf, rawNext, rawPrev, type TimerMoments } from "./moments.js";
import { defaultSchedulePolicy, type TimerRecord } from "../store/timer-records.js";

// Which occurrences a timer owes: to a claim when it rings (by its catch-up policy, within the
// clock's lookahead), on resume, for a backfill, and in GetTimer's preview. Pure functions of
// their arguments: `nowMs` is always passed in. Instants are ms since the epoch, UTC.

/** Most missed occurrences one claim owes under catch-up "allWithinWindow" (the most recent ones). */
export const maxCatchUpOccurrences = 100;
/** Most occurrences one BackfillTimer makes. */
export const maxBackfillOccurrences = 1_000;

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
      for (
        let n: number | null = last;
        n !== null && n >= first && owed.length < maxCatchUpOccurrences && nowMs - dueOf(timer, n) <= policy.catchUpWindowMs;
        n = rawPrev(timer, n)
      )
        owed.push(n);
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
  const view = {
    ...timer,
    nextDueMs: timer.nextDueMs ?? timer.paused?.heldDueMs ?? null,
    policy: { ...(timer.policy ?? defaultSchedulePolicy), startMs: null, endMs: null },
  };
  const out: number[] = [];
  for (let n = rawNext(view, startMs - 1); n !== null && n < endMs; n = rawNext(view, n)) {
    if (out.length === maxBackfillOccurrences)
      fail("bad_request", `the range holds more than ${maxBackfillOccurrences} fire times; backfill it in parts`, [
        { field: "end", description: `at most ${maxBackfillOccurrences} fire times` },
      ]);
    out.push(dueOf(view, n));
  }
  return out;
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
