import type { CauseRef } from "../log/causes.js";
import { canonicalJson } from "../log/canonical.js";
import { derivedId } from "../log/ids.js";
import { fail } from "../errors.js";
import type { Tx } from "../store/committer.js";
import type { EventRecord } from "../store/events.js";
import type { ReadAhead, ReadAheadKeys } from "../store/read-ahead.js";
import { overdueToJson, specToJson } from "../store/timer-json.js";
import { sha256Hex } from "../sha256.js";
import { policyData } from "./timer-events.js";
import type { TimerRecord } from "../store/timer-records.js";

// A timer request run again (a retried delivery, an action called again, a client's retry of a
// Delay with its delay id) is answered from the event its first run recorded: the ids those
// events get, how a request finds its event, and what counts as the same timer.

/**
 * The id of the event a Schedule, Unschedule, Delay, CancelDelay, PauseTimer, ResumeTimer,
 * TriggerTimer or BackfillTimer under `cause` records: derived from the cause, the request's position and the request (`op` and every field
 * that shapes the change), so the same request run again (a retried delivery, an action called
 * again) finds it in the log, and another request at that position does not.
 */
export function changeEventId(cause: CauseRef, request: Record<string, unknown>): string {
  return derivedId(cause.eventId, cause.position, { timer_change: request });
}

/**
 * The id of the `timer.scheduled` event of a Delay from outside with client delay id `delayId`
 *: derived from the delay id alone, so the log holds at most one arming per delay id (its
 * unique id index) and a retry finds it whatever happened to the delay since.
 */
export function clientDelayEventId(delayId: string): string {
  return derivedId("client-delay", 0, { delay_id: delayId });
}

/** The `delay_request` of such an event: a SHA-256 (hex) of the request's action, input, interval_ms or at, and overdue (what "the same request" compares). */
export function delayRequestDigest(request: Record<string, unknown>): string {
  return sha256Hex(canonicalJson(request));
}

/** Event `id` when it is in the log as a `type` (a request under a cause run again); undefined when absent or `id` is null. ALREADY_EXISTS when it is another type's. */
export function recorded(tx: Tx, id: string | null, type: string): EventRecord | undefined {
  if (id === null) return undefined;
  const prior = tx.events.findById(id);
  if (prior && prior.type !== type)
    fail("id_conflict", `event id ${id} is already in the log as a ${prior.type} event (seq ${prior.seq})`, [], { id, seq: String(prior.seq) });
  return prior;
}

/**
 * What a unit changing timer `id` reads ahead of its batch (Committer.submit's options): the timer's
 * row, kept for the batch with what its units change of it (TimerStatements.prefetch), so neither
 * its read nor the answer read after the change waits for a round trip; under a cause, `eventId`,
 * the event a request run again finds ({@link recorded}).
 */
export function timerReadAhead(timers: ReadAhead, id: string, eventId: string | null): { readAhead: ReadAheadKeys; lookups?: string[] } {
  return { readAhead: { from: timers, keys: [id] }, ...(eventId !== null && { lookups: [eventId] }) };
}

/** True when `a` and `b` call the same action with the same input, spec, bound, policy (its anchor aside) and actor. */
export function sameDefinition(a: TimerRecord, b: TimerRecord): boolean {
  const def = (t: TimerRecord) =>
    canonicalJson({
      action: t.action,
      input: t.input,
      spec: specToJson(t.spec),
      overdue: overdueToJson(t.overdue),
      policy: policyData(t.policy),
      actor: t.actor,
    });
  return def(a) === def(b);
}
