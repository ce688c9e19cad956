import { settleDelivery } from "../tracing/messaging.js";
import type { Clock } from "../clock.js";
import { rememberCause, type LiveCauses } from "../log/causes.js";
import { newId } from "../log/ids.js";
import type { Logger } from "../logger.js";
import type { Committer } from "../store/committer.js";
import type { CursorStatements, FailedDeliveryRow } from "../store/cursors.js";
import type { BudgetedRows, EventReads, EventRecord, EventStatements } from "../store/events.js";
import { takeAnswer } from "../executors/answered.js";
import type { ExecutorSession } from "../executors/session.js";
import type { ProcessorSpec } from "./declaration.js";
import { failedEvent, lingers, newAttempt, succeeded, tryFailed, type Attempt, type Try } from "./attempt.js";
import { Isolation } from "./isolation.js";
import type { LogTail } from "../log/tail.js";
import { RecentPercentiles } from "../recent-percentiles.js";
import { Tries } from "./tries.js";
import type { ProcessorStages, Stages } from "../stages.js";
import { AckFloor } from "./floor.js";
import { Intake } from "./intake.js";
import type { RateGate } from "./rate-gate.js";
import type { Debouncer } from "./debounce.js";

/** What an engine needs from the owner. */
export interface EngineDeps {
  events: EventStatements;
  /** The last events committed, in memory: read there while the engine keeps up, and when each became durable (log/tail.ts). */
  tail: Pick<LogTail, "readWithin" | "durableAtOf">;
  cursors: CursorStatements;
  /** Reads of the log and of the failed deliveries outside the committer (on PostgreSQL without blocking the event loop). */
  logReads: Pick<EventReads, "bySeqs">;
  failedReads: (processor: string) => Promise<FailedDeliveryRow[]>;
  committer: Committer;
  clock: Clock;
  logger: Logger;
  /** The log's last committed seq. */
  head(): number;
  /** An executor session hosting the processor with free credits, or undefined. */
  pickSession(processor: string): ExecutorSession | undefined;
  /** Reserves a session hosting the processor for a try run alone: it takes no new work until {@link release}d; undefined when none can be. */
  reserve(processor: string): ExecutorSession | undefined;
  /** Ends a reservation: the session takes work again. */
  release(session: ExecutorSession): void;
  /** The owner's stage histograms: the engine observes its deliveries' stages in its processor's. */
  stages: Stages;
  /** Where the log's reads are round trips (PostgreSQL): reads what the tail no longer holds without blocking the event loop (LogReader). */
  readLog?: (afterSeq: number, limit: number, maxBytes: number, types: string[]) => Promise<BudgetedRows>;
  /** Where a look-up of an event is a round trip (PostgreSQL): each event delivered is remembered there as a cause, so work under it reads nothing. */
  causes?: LiveCauses;
}

/** How an executor's answer was taken. */
export type AckVerdict = "accepted" | "unknown" | "stale";

/**
 * A processor's consumer state, in JetStream's words: `ackFloor` (the
 * durable cursor: every event at or below it is finished), `delivered` (the
 * highest seq read), the attempts in flight or waiting, and per-key lanes.
 *
 * Failure semantics: a delivery is at least once. An error, an ack timeout
 * or a vanished executor is a failed try; tries are retried after growing
 * waits (each recording `processor.retried`) and, when used up or failed
 * terminally, `processor.failed` is recorded and the cursor moves on. The
 * floor only passes finished events; after a crash everything above the
 * saved floor is delivered again. A duplicate or stale ack changes nothing.
 *
 * A timed-out try is told to cancel (CancelDelivery) and may answer for the
 * processor's grace: its OK ack still finishes the event, and until it
 * answers, its executor goes or the grace passes, no other try of the event
 * and no later event of its key starts (an OK ack of any try counts until the
 * event is recorded failed). Deliveries in flight on a stream that dies with
 * several of them are not charged a try (nobody knows which one killed the
 * executor): they are tried again one at a time, each alone on an executor
 * with nothing else running, until each is acked or fails alone.
 */
export class ProcessorEngine {
  private readonly ackFloor: AckFloor;
  private pausedFlag = false;
  /** Seqs below the floor delivered again on an operator's request. */
  private readonly redelivering = new Set<number>();
  private stopped = false;
  private readonly intake: Intake;
  /** A look ahead goes on in a later turn of the event loop. */
  private reading = false;
  private readonly attempts = new Map<number, Attempt>();
  /** The tries sent and not answered yet: their ack deadlines, and their grace once timed out or superseded. */
  private readonly tries: Tries;
  private readonly ready: Attempt[] = [];
  private readonly isolation: Isolation;
  private readonly stages: ProcessorStages;
  /** Its delivery latency (committed → first answer) over about the last minute, for ListProcessors. */
  readonly latency: RecentPercentiles;
  retries = 0;
  failures = 0;

  constructor(
    readonly spec: ProcessorSpec,
    private readonly deps: EngineDeps,
  ) {
    this.isolation = new Isolation(spec.name, deps.reserve, deps.release);
    this.stages = deps.stages.processor(spec.name);
    this.tries = new Tries({
      spec,
      clock: deps.clock,
      tail: deps.tail,
      debounced: (seq) => this.intake.debounced(seq),
      stages: this.stages,
      isolation: this.isolation,
      timedOut: (t, error) => {
        tryFailed(t.attempt, this.spec.retryDelaysMs, error, false, true);
        this.advance(t.attempt);
      },
      abandoned: (t) => {
        this.advance(t.attempt);
        this.pump();
      },
    });
    this.latency = new RecentPercentiles(this.stages.latency);
    this.ackFloor = new AckFloor({ processor: spec.name, committer: deps.committer, cursors: deps.cursors, logger: deps.logger, stages: this.stages });
    this.intake = new Intake({ ...deps, spec, floor: this.ackFloor, pump: () => this.pump(), wake: () => this.fill() });
  }

  /** The durable cursor as known in memory (saved by the next commit). */
  get floor(): number {
    return this.ackFloor.value;
  }

  /** Deliveries in flight or waiting for a retry. */
  get inFlight(): number {
    return this.attempts.size;
  }

  /** The highest seq read from the log. */
  get deliveredSeq(): number {
    return this.intake.delivered;
  }

  /** The processor's rate, if it declares one. */
  get rate(): RateGate | undefined {
    return this.intake.rate;
  }

  /** The processor's debounce, if it declares one. */
  get debounce(): Debouncer | undefined {
    return this.intake.debouncer;
  }

  /** Events finished without a delivery (`if_active`: skip or coalesce). */
  get passed(): number {
    return this.intake.passed;
  }

  /** Paused by an operator: nothing new is handed out. */
  get paused(): boolean {
    return this.pausedFlag;
  }

  /**
   * Loads the saved cursor, or places a new processor's cursor at its start
   * position and saves it, then starts reading.
   */
  start(): void {
    const saved = this.deps.cursors.get(this.spec.name);
    if (saved) {
      this.ackFloor.reset(saved.ackFloor);
      this.pausedFlag = saved.paused;
      this.intake.rate?.rates.emptiedAt(this.deps.clock.now()); // it ran before: what it started then is not known, so its rate starts from empty
    } else {
      const start = this.spec.start;
      const floor = start.kind === "beginning" ? 0 : start.kind === "after" ? start.seq : this.deps.head();
      this.ackFloor.reset(floor);
      // Pinned at once: a restart must not move a new processor's start to a later end of the log.
      this.deps.committer
        .submit((tx) => this.deps.cursors.save(this.spec.name, floor, tx.now))
        .catch((e) => this.deps.logger.error({ err: e, processor: this.spec.name }, "saving the cursor failed"));
    }
    this.intake.reset(this.ackFloor.value);
    this.fill();
  }

  /** Reads newly committed events and hands out what it can. Call after each commit. */
  fill(): void {
    if (this.stopped) return;
    const more = this.intake.read();
    this.ackFloor.advance(this.intake.delivered);
    this.pump();
    if (!more || this.reading) return;
    this.reading = true;
    setImmediate(() => {
      this.reading = false;
      this.fill();
    });
  }

  /** Sends ready work to executors with free credits, up to the processor's concurrency. */
  pump(): void {
    if (this.stopped || this.pausedFlag) return;
    this.tries.round();
    const alone = this.isolation.next();
    if (alone) {
      alone.attempt.queued = false;
      this.isolation.started(this.send(alone.attempt, alone.session));
    }
    while (!this.stopped && !this.pausedFlag) {
      if (this.ready.length > 0) {
        const session = this.deps.pickSession(this.spec.name);
        if (!session) return;
        const attempt = this.ready.shift()!;
        attempt.queued = false;
        this.send(attempt, session);
        continue;
      }
      if (this.attempts.size >= this.spec.concurrency) return;
      const session = this.deps.pickSession(this.spec.name);
      if (!session) return;
      const event = this.intake.take();
      if (!event) return;
      const attempt = newAttempt(this.intake.takenKey, event);
      this.attempts.set(event.seq, attempt);
      this.send(attempt, session);
    }
  }

  /**
   * An executor's answer to a delivery: `ok`, or an error (retried unless
   * `terminal`). An OK ack of a timed-out try finishes the event as long as it
   * has not been recorded failed; an error of one changes nothing more (its
   * timeout counted). Answers to deliveries this engine no longer waits for
   * (the event ended, the cursor moved, answered already) are stale; unknown
   * ones were never received. Neither changes anything. `at`: when it was read (performance.now()
   * ms, one reading for the acks of one message).
   */
  ack(session: ExecutorSession, deliveryId: string, ok: boolean, error: string, terminal: boolean, at: number): AckVerdict {
    const match = takeAnswer(session, deliveryId);
    const t = this.tries.get(deliveryId);
    if (!t || t.session !== session) return match === "unknown" ? "unknown" : "stale";
    this.tries.answered(t, at);
    const attempt = t.attempt;
    const running = t.state === "running";
    if (t.span) {
      settleDelivery(t.span, this.spec.name, ok ? "ok" : terminal ? "terminal_error" : "error", error);
      t.span = undefined;
    }
    this.tries.drop(t);
    if (ok) attempt.outcome = succeeded;
    else if (running) tryFailed(attempt, this.spec.retryDelaysMs, error || "error", terminal, true);
    this.advance(attempt, at);
    return "accepted";
  }

  /** Extends a running delivery's ack deadline by `extendMs` (default: the ack timeout); not one that timed out. */
  progress(session: ExecutorSession, deliveryId: string, extendMs: number): boolean {
    const t = this.tries.get(deliveryId);
    if (!t || t.session !== session || t.state !== "running") return false;
    this.tries.extend(t, extendMs || this.spec.ackTimeoutMs);
    return true;
  }

  /**
   * The session ended: its running tries fail and are retried elsewhere, its timed-out ones
   * stop lingering. A try lost alone is a failed try; one lost with other work in flight on the
   * session is not charged (any of them may have killed the executor) and is tried again alone.
   */
  sessionGone(session: ExecutorSession): void {
    const inFlight = session.live;
    this.isolation.sessionGone(session);
    for (const t of this.tries.on(session)) {
      const running = t.state === "running";
      this.tries.drop(t);
      if (running && inFlight > 1) {
        tryFailed(
          t.attempt,
          this.spec.retryDelaysMs,
          `executor disconnected with ${inFlight} deliveries or calls in flight: not counted, tried again alone`,
          false,
          false,
        );
        t.attempt.isolated = true;
      } else if (running) {
        tryFailed(
          t.attempt,
          this.spec.retryDelaysMs,
          t.attempt.isolated ? "executor disconnected while it ran this delivery alone" : "executor disconnected",
          false,
          true,
        );
      }
      this.advance(t.attempt);
    }
    this.pump();
  }

  /**
   * Stops handing out work and waits up to `graceMs` for deliveries in
   * flight to finish. Unfinished ones stay above the floor, so the next
   * owner delivers them again. Resolves after the last floor is saved.
   */
  async stop(graceMs: number): Promise<void> {
    this.stopped = true;
    this.intake.stop();
    const deadline = this.deps.clock.now() + graceMs;
    while (this.tries.waiting && this.deps.clock.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    this.forgetAttempts();
    await this.deps.committer.submit((tx) => this.deps.cursors.save(this.spec.name, this.ackFloor.value, tx.now));
  }

  /**
   * Moves the cursor: every event at or below `ackFloor` counts as
   * finished and delivery restarts after it. Work in flight is dropped (its
   * answers become stale). Recorded as `processor.cursor_moved` in the same
   * commit as the new floor.
   */
  async moveCursor(ackFloor: number, by: string): Promise<void> {
    const from = this.ackFloor.value;
    this.reset(ackFloor);
    await this.deps.committer.submit((tx) => {
      this.deps.cursors.save(this.spec.name, ackFloor, tx.now);
      tx.append({ id: newId(), type: "processor.cursor_moved", data: { processor: this.spec.name, from, to: ackFloor, by }, cause: "", actor: null });
    });
    this.fill();
  }

  /**
   * Pauses or resumes handing out work; recorded as `processor.paused` /
   * `processor.resumed`. Idempotent: a processor already in that state is left
   * alone and nothing is recorded. Resolves true when the state changed.
   */
  async setPaused(paused: boolean, by: string): Promise<boolean> {
    if (paused === this.pausedFlag) return false;
    this.pausedFlag = paused;
    try {
      await this.deps.committer.submit((tx) => {
        this.deps.cursors.setPaused(this.spec.name, paused, this.ackFloor.value, tx.now);
        tx.append({ id: newId(), type: paused ? "processor.paused" : "processor.resumed", data: { processor: this.spec.name, by }, cause: "", actor: null });
      });
    } catch (e) {
      this.pausedFlag = !paused; // not recorded: the change did not happen
      throw e;
    }
    this.pump();
    return true;
  }

  /**
   * Delivers failed events again, as new deliveries in their lanes;
   * recorded as `processor.redelivered`. A redelivery that finishes removes
   * the failure from the record; one that fails again records it again.
   */
  async redeliver(seqs: number[], by: string): Promise<number> {
    const failed = (await this.deps.failedReads(this.spec.name)).filter((f) => seqs.length === 0 || seqs.includes(f.seq));
    // A failure whose event is no longer in the log cannot be delivered again (it can be dismissed).
    const read = failed.length === 0 ? [] : await this.deps.logReads.bySeqs(failed.map((f) => f.seq));
    // What started meanwhile (a delivery of the seq, or another redelivery of it) is left to run.
    const events = read.filter((e) => !this.attempts.has(e.seq) && !this.redelivering.has(e.seq));
    if (events.length === 0) return 0;
    await this.deps.committer.submit((tx) =>
      tx.append({
        id: newId(),
        type: "processor.redelivered",
        data: { processor: this.spec.name, seqs: events.map((e) => e.seq), by },
        cause: "",
        actor: null,
      }),
    );
    for (const event of events) {
      this.redelivering.add(event.seq);
      this.intake.requeue(event, false);
    }
    this.pump();
    return events.length;
  }

  /** Forgets everything read and in flight, and restarts reading after `ackFloor`. */
  private reset(ackFloor: number): void {
    this.forgetAttempts();
    this.ackFloor.reset(ackFloor);
    this.intake.reset(ackFloor);
    this.redelivering.clear();
  }

  /** Drops every attempt and try (their timers too), and ends a reservation. */
  private forgetAttempts(): void {
    for (const attempt of this.attempts.values()) if (attempt.timer) clearTimeout(attempt.timer);
    this.tries.clear();
    this.attempts.clear();
    this.ready.length = 0;
    this.isolation.clear();
  }

  /** Sends the event's next try to `session`. */
  private send(attempt: Attempt, session: ExecutorSession): Try {
    if (this.deps.causes) rememberCause(this.deps.causes, attempt.event);
    return this.tries.send(attempt, session, this.redelivering.has(attempt.event.seq));
  }

  /**
   * Moves an event on after a change: finished once it succeeded and no try lingers (a running
   * one is told to cancel), failed once decided and no try may run, retried once no try may run
   * (neither while the engine stops: the next owner delivers it again). `at`: now, when the
   * caller read it (performance.now() ms).
   */
  private advance(attempt: Attempt, at?: number): void {
    if (attempt.ending) return;
    if (attempt.outcome?.ok) {
      if (attempt.current) this.tries.linger(attempt.current, "the event was finished by another try");
      this.unschedule(attempt);
      if (!lingers(attempt)) this.finish(attempt, true, at);
      return;
    }
    if (this.stopped || attempt.current || lingers(attempt)) return;
    if (attempt.outcome) return this.giveUp(attempt, attempt.outcome.error);
    if (attempt.retry) this.retry(attempt, attempt.retry);
  }

  /** Drops a pending retry (the event succeeded meanwhile). */
  private unschedule(attempt: Attempt): void {
    if (attempt.timer) clearTimeout(attempt.timer);
    attempt.timer = null;
    attempt.retry = null;
    if (!attempt.queued) return;
    attempt.queued = false;
    if (attempt.isolated) this.isolation.remove(attempt);
    else this.ready.splice(this.ready.indexOf(attempt), 1);
  }

  /** Ends an attempt; `succeeded` false when it ended by giving up (its failure stays on record); `at`: now, when the caller read it. */
  private finish(attempt: Attempt, succeeded: boolean, at = performance.now()): void {
    this.tries.dropAll(attempt);
    this.unschedule(attempt);
    const seq = attempt.event.seq;
    this.attempts.delete(seq);
    this.intake.release(attempt.key);
    if (this.redelivering.delete(seq)) {
      if (succeeded) void this.deps.committer.submit(() => this.deps.cursors.forgetFailure(this.spec.name, seq));
      this.pump();
      return;
    }
    this.intake.finished(attempt.event, at);
    this.fill();
  }

  private retry(attempt: Attempt, retry: { error: string; waitMs: number }): void {
    this.retries++;
    attempt.retry = null;
    const { event } = attempt;
    this.record("processor.retried", event, {
      processor: this.spec.name,
      event_id: event.id,
      seq: event.seq,
      attempt: attempt.attempt,
      error: retry.error,
      retry_in_ms: retry.waitMs,
    });
    attempt.timer = setTimeout(() => {
      attempt.timer = null;
      attempt.queued = true;
      if (attempt.isolated) this.isolation.push(attempt);
      else this.ready.push(attempt);
      this.pump();
    }, retry.waitMs);
  }

  private giveUp(attempt: Attempt, error: string): void {
    this.failures++;
    attempt.ending = true;
    this.tries.dropAll(attempt); // from now on a late ack is stale
    const { event } = attempt;
    const data = { processor: this.spec.name, event: failedEvent(event), error, attempts: attempt.attempt };
    this.deps.committer
      .submit((tx) => {
        const failed = tx.append({ id: newId(), type: "processor.failed", data, cause: event.id, actor: event.actor });
        this.deps.cursors.recordFailure({ processor: this.spec.name, seq: event.seq, error, attempts: attempt.attempt, failedSeq: failed.seq });
      })
      .then(
        () => this.finish(attempt, false),
        (e) => this.deps.logger.error({ err: e, processor: this.spec.name, seq: event.seq }, "recording processor.failed failed"),
      );
  }

  /** Appends a runtime event about `event` (actor: the event's, so readers of its space see it). */
  private record(type: string, event: EventRecord, data: Record<string, unknown>): void {
    this.deps.committer
      .submit((tx) => tx.append({ id: newId(), type, data, cause: event.id, actor: event.actor }))
      .catch((e) => this.deps.logger.error({ err: e, processor: this.spec.name }, `recording ${type} failed`));
  }
}
