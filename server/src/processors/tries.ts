import { tracing } from "../tracing/tracer.js";
import { deliverySpan, endTry, spanTrace } from "../tracing/messaging.js";
import type { Clock } from "../clock.js";
import type { LogTail } from "../log/tail.js";
import { storedBytes, type EventRecord } from "../store/events.js";
import type { ExecutorSession } from "../executors/session.js";
import type { ProcessorSpec } from "./declaration.js";
import type { Attempt, Try } from "./attempt.js";
import { Deadlines } from "./deadlines.js";
import type { Isolation } from "./isolation.js";
import { TryTimes, type ProcessorStages } from "../stages.js";

/** What a processor's {@link Tries} need from its engine. */
export interface TriesDeps {
  spec: ProcessorSpec;
  clock: Clock;
  /** The last events committed, in memory, and when each became durable (log/tail.ts). */
  tail: Pick<LogTail, "durableAtOf">;
  stages: ProcessorStages;
  /** The processor's events tried alone: told when a try stops being waited for. */
  isolation: Isolation;
  /** How many events the delivery of `seq` stands for (debounce; 0: itself only). */
  debounced(seq: number): number;
  /** A running try's ack deadline passed: it lingers now (its executor told to cancel it); the engine counts the failed try, `error`. */
  timedOut(t: Try, error: string): void;
  /** A lingering try's grace passed: it is abandoned; the engine moves its event on. */
  abandoned(t: Try): void;
}

/**
 * A processor's tries, from their delivery to an executor until they are answered, by delivery
 * id: each running try's ack deadline (all of them under one timer); a try that timed out or
 * whose event was finished by another try is told to cancel and waited for until the processor's
 * grace after its deadline, then abandoned (see {@link Try}'s states). The instants of each
 * (committed, written, answered) go to the processor's delivery stages.
 */
export class Tries {
  private readonly byDelivery = new Map<string, Try>();
  /**
   * Tries sent since the engine started: the last part of a delivery id. The event's seq and
   * attempt alone repeat when a try of the event is still running as it is sent again (a cursor
   * moved back, a redelivery): the earlier try's ack would then answer the later one.
   */
  private sent = 0;
  /** The instants of the tries in flight (committed, written), for the delivery stages. */
  private readonly times: TryTimes;
  /** The running tries' ack deadlines, under one timer. */
  private readonly deadlines = new Deadlines<Try>((t) => this.ackTimedOut(t));
  /** performance.now() minus the owner's clock, read at most once per {@link round} (for an event the log's tail no longer holds); NaN until then. */
  private clockOffset = Number.NaN;

  constructor(private readonly deps: TriesDeps) {
    this.times = new TryTimes(deps.stages);
  }

  /** The try sent under `deliveryId`, while it is not answered and not dropped. */
  get(deliveryId: string): Try | undefined {
    return this.byDelivery.get(deliveryId);
  }

  /** The tries sent on `session`, in the order they were sent. */
  on(session: ExecutorSession): Try[] {
    return [...this.byDelivery.values()].filter((t) => t.session === session);
  }

  /** Whether a try is still waited for: running, or lingering within its grace. */
  get waiting(): boolean {
    for (const t of this.byDelivery.values()) if (t.state !== "abandoned") return true;
    return false;
  }

  /** A round of sends begins (an engine's pump): the owner's clock is read again when an event's commit time is needed. */
  round(): void {
    this.clockOffset = Number.NaN;
  }

  /**
   * Sends the event's next try to `session`, running under the processor's ack timeout. Its
   * delivery stages are observed when it is the event's first try and not a `redelivered` one.
   */
  send(attempt: Attempt, session: ExecutorSession, redelivered: boolean): Try {
    const { spec } = this.deps;
    attempt.attempt++;
    const first = attempt.attempt === 1 && !redelivered;
    const slot = this.times.take(first ? this.committedAt(attempt.event) : Number.NaN);
    const t: Try = {
      deliveryId: `${spec.name}/${attempt.event.seq}/${attempt.attempt}/${++this.sent}`,
      attempt,
      session,
      state: "running",
      timer: null,
      deadlineMs: 0,
      ackWithinMs: 0,
      dueAt: 0,
      prevDue: null,
      nextDue: null,
      due: false,
      slot,
      times: this.times,
    };
    if (attempt.current) (attempt.lingered ??= []).push(attempt.current);
    attempt.current = t;
    session.inFlight.add(t.deliveryId);
    this.byDelivery.set(t.deliveryId, t);
    this.extend(t, spec.ackTimeoutMs);
    const { event, key } = attempt;
    if (tracing.on) t.span = deliverySpan(spec.name, event, attempt.attempt);
    session.deliver({
      deliveryId: t.deliveryId,
      processor: spec.name,
      event,
      attempt: attempt.attempt,
      deadlineMs: t.deadlineMs,
      key: key.startsWith("#") ? "" : key,
      debounced: this.deps.debounced(event.seq),
      timed: t,
      trace: t.span ? spanTrace(t.span) : event.trace,
      bytes: storedBytes(event),
    });
    return t;
  }

  /** `t` was answered at `at` (performance.now() ms): its delivery stages end there. */
  answered(t: Try, at: number): void {
    this.times.answered(t.slot, at);
  }

  /** Sets a running try's ack deadline `ms` from now. */
  extend(t: Try, ms: number): void {
    t.deadlineMs = this.deps.clock.now() + ms;
    t.ackWithinMs = ms;
    this.deadlines.set(t, ms);
  }

  /**
   * Tells `t`'s executor to cancel it (`reason`) and waits for its answer until the processor's
   * grace after its ack deadline (a try superseded before its deadline keeps the rest of it);
   * then stops waiting (abandoned: an OK ack still counts until the event ends).
   */
  linger(t: Try, reason: string): void {
    this.deadlines.remove(t);
    if (t.timer) clearTimeout(t.timer);
    t.timer = null;
    const { attempt } = t;
    if (attempt.current === t) {
      attempt.current = null;
      (attempt.lingered ??= []).push(t);
    }
    t.session.send({ message: { case: "cancelDelivery", value: { deliveryId: t.deliveryId, reason } } });
    t.state = "lingering";
    const waitMs = Math.max(0, t.deadlineMs - this.deps.clock.now()) + this.deps.spec.timeoutGraceMs;
    if (waitMs === 0) return this.abandon(t);
    t.timer = setTimeout(() => {
      t.timer = null;
      this.abandon(t);
      this.deps.abandoned(t);
    }, waitMs);
  }

  /** Forgets a try: answered, lost with its session, or its event ended. */
  drop(t: Try): void {
    if (t.span) {
      endTry(t.span, t.state === "running" ? "lost" : "timeout");
      t.span = undefined;
    }
    this.deadlines.remove(t);
    if (t.timer) clearTimeout(t.timer);
    t.timer = null;
    this.byDelivery.delete(t.deliveryId);
    if (t.slot >= 0) this.times.release(t.slot);
    t.slot = -1;
    const { attempt } = t;
    if (attempt.current === t) attempt.current = null;
    else if (attempt.lingered !== null) {
      const i = attempt.lingered.indexOf(t);
      if (i >= 0) attempt.lingered.splice(i, 1);
      if (attempt.lingered.length === 0) attempt.lingered = null;
    }
    this.deps.isolation.ended(t);
  }

  /** Forgets every try of `attempt` not answered yet, in the order they were sent. */
  dropAll(attempt: Attempt): void {
    const { lingered } = attempt;
    attempt.lingered = null;
    if (lingered !== null) for (const t of lingered) this.drop(t);
    if (attempt.current) this.drop(attempt.current);
  }

  /** Forgets every try, their deadlines and timers too (their answers become stale). */
  clear(): void {
    this.deadlines.clear();
    for (const t of this.byDelivery.values()) {
      if (t.timer) clearTimeout(t.timer);
      t.slot = -1;
    }
    this.times.clear();
    this.byDelivery.clear();
  }

  /**
   * When `event`'s commit became durable (performance.now() ms): as the log's tail noted it, or
   * for an event it no longer holds (a backlog, or one committed before the owner started) from
   * its commit time on the owner's clock, to the millisecond.
   */
  private committedAt(event: EventRecord): number {
    const durableAt = this.deps.tail.durableAtOf(event.seq);
    if (durableAt !== undefined) return durableAt;
    if (Number.isNaN(this.clockOffset)) this.clockOffset = performance.now() - this.deps.clock.now();
    return event.at + this.clockOffset;
  }

  /** A running try's ack deadline passed. */
  private ackTimedOut(t: Try): void {
    const error = `not acknowledged within ${t.ackWithinMs} ms`;
    if (t.span) t.span.addEvent("ack timeout", { "chronolog.error": error });
    // The executor keeps the credit until it answers: the handler may still run.
    this.linger(t, error);
    this.deps.timedOut(t, error);
  }

  private abandon(t: Try): void {
    t.state = "abandoned";
    if (t.session.inFlight.has(t.deliveryId)) t.session.abandoned.add(t.deliveryId);
    this.deps.isolation.ended(t);
  }
}
