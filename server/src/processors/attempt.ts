import type { ExecutorSession } from "../executors/session.js";
import type { TimedTry } from "../stages.js";
import type { DueLinks } from "./deadlines.js";
import type { EventRecord } from "../store/events.js";
import type { Span } from "@opentelemetry/api";

/**
 * One try of an event, sent to an executor and not answered yet. States: running (its ack
 * deadline in the processor's Deadlines, linked through its DueLinks) → lingering (timed out, or its event finished by another try: the executor was
 * told to cancel it; `timer`: the end of the processor's grace; nothing else of its event or key
 * starts meanwhile) → abandoned (past the grace: the owner stops waiting, but an OK ack still
 * finishes the event until the event ends). Answered, lost with its session, or its event ended:
 * dropped. Its instants on the way (committed, written) are kept in its slot of the processor's
 * TryTimes, for the delivery stages.
 */
export interface Try extends TimedTry, DueLinks {
  deliveryId: string;
  attempt: Attempt;
  session: ExecutorSession;
  state: "running" | "lingering" | "abandoned";
  /** While it lingers: the end of the grace. */
  timer: NodeJS.Timeout | null;
  /** The ack timeout its deadline was last set with, ms. */
  ackWithinMs: number;
  /** Its ack deadline (owner's clock, ms): once it lingers, it is waited for until this plus the grace. */
  deadlineMs: number;
  /** Its `process` span while traces are recorded (tracing/messaging.ts), ended when it is answered or dropped. */
  span?: Span;
}

/**
 * One event being delivered, from its lane's take to its end. Its tries go out one after
 * another: the next only once no earlier one may still run (answered, its executor gone, or
 * past the grace). A failed try sets `retry` (sent after its wait) or, tries used up or
 * terminal, `outcome`; an OK ack from any try sets `outcome` ok. The event ends (finished, or
 * `processor.failed` recorded first) once decided and no try lingers.
 */
export interface Attempt {
  event: EventRecord;
  key: string;
  /** Tries sent so far (the number of the last one). */
  attempt: number;
  /** Failed tries counted against the processor's tries (a try lost with others on a dying stream is not). */
  failures: number;
  /** The running try, if any. */
  current: Try | null;
  /**
   * Its other tries not answered yet, in the order they were sent: told to cancel (lingering,
   * or abandoned past their grace); null when none (most events: one try at a time, no list).
   */
  lingered: Try[] | null;
  /** Decided: finished (ok), or failed with `error` (recorded once no try lingers). */
  outcome: { ok: true } | { ok: false; error: string } | null;
  /** A failed try to retry once no try of the event may run: why it failed, and the wait before the next. */
  retry: { error: string; waitMs: number } | null;
  /** The wait before the next try. */
  timer: NodeJS.Timeout | null;
  /** Waiting in a queue for an executor. */
  queued: boolean;
  /** Tried alone on an otherwise idle executor from now on: it was in flight with others on a stream that died. */
  isolated: boolean;
  /** `processor.failed` is being recorded: nothing more happens to it. */
  ending: boolean;
}

/** A new attempt of `event`, taken from lane `key`: no try yet. */
export function newAttempt(key: string, event: EventRecord): Attempt {
  return {
    event,
    key,
    attempt: 0,
    failures: 0,
    current: null,
    lingered: null,
    outcome: null,
    retry: null,
    timer: null,
    queued: false,
    isolated: false,
    ending: false,
  };
}

/** The outcome of an event finished by an OK ack (one object for all). */
export const succeeded: NonNullable<Attempt["outcome"]> = Object.freeze({ ok: true });

/** Whether a timed-out (or superseded) try of the event may still run within its grace. */
export function lingers(attempt: Attempt): boolean {
  const lingered = attempt.lingered;
  if (lingered === null) return false;
  for (let i = 0; i < lingered.length; i++) if (lingered[i].state === "lingering") return true;
  return false;
}

/**
 * A try of `attempt` failed with `error`: decides a retry (after the next of `retryDelaysMs`, or
 * at once when not `counted` against the tries) or, when `terminal` or the tries are used up,
 * the event's failure.
 */
export function tryFailed(attempt: Attempt, retryDelaysMs: number[], error: string, terminal: boolean, counted: boolean): void {
  if (counted) attempt.failures++;
  if (terminal || attempt.failures > retryDelaysMs.length) attempt.outcome = { ok: false, error };
  else attempt.retry = { error, waitMs: counted ? retryDelaysMs[attempt.failures - 1] : 0 };
}

/** The event as `processor.failed` records it. */
export function failedEvent(event: EventRecord): Record<string, unknown> {
  return { seq: event.seq, id: event.id, type: event.type, data: event.data, cause: event.cause, actor: event.actor, at: new Date(event.at).toISOString() };
}
