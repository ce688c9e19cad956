import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { Clock } from "../clock.js";
import { newId } from "../log/ids.js";
import type { Logger } from "../logger.js";
import type { Committer } from "../store/committer.js";
import type { CursorStatements } from "../store/cursors.js";
import { storedBytes, type EventRecord, type EventStatements } from "../store/events.js";
import { takeAnswer } from "../executors/answered.js";
import type { ExecutorSession } from "../executors/session.js";
import { eventToProto } from "../rpc/convert.js";
import { takes, type ProcessorSpec } from "./declaration.js";
import { Lanes } from "./lanes.js";

/** What an engine needs from the owner. */
export interface EngineDeps {
  events: EventStatements;
  cursors: CursorStatements;
  committer: Committer;
  clock: Clock;
  logger: Logger;
  /** The log's last committed seq. */
  head(): number;
  /** An executor session hosting the processor with free credits, or undefined. */
  pickSession(processor: string): ExecutorSession | undefined;
}

/**
 * One try of one event. States: in flight (sent to `session`, `timer` = ack
 * deadline) → finished (acked) | retry wait (`timer` = backoff, no session)
 * → ready (queued to send again) → in flight ... | failed (tries used up or
 * terminal: `processor.failed` recorded, then finished).
 */
interface Attempt {
  event: EventRecord;
  key: string;
  attempt: number;
  deliveryId: string;
  session: ExecutorSession | null;
  timer: NodeJS.Timeout | null;
}

/** How an executor's answer was taken. */
export type AckVerdict = "accepted" | "unknown" | "stale";

/** Events read ahead of the ack floor at most (bounds memory whatever the backlog, P4). */
const readAheadLimit = 2_048;
/**
 * Bytes of events ({@link storedBytes}) a processor holds read ahead of its floor at most (in its
 * lanes, in flight or waiting for a retry): past it, it reads no more until some finish (2,048 events
 * of 4 MiB would be 8 GiB). One chunk is read whenever none is held, so a larger event still comes.
 */
export const processorReadAheadBytes = 16 * 1024 * 1024;
const readChunk = 256;
/** Bytes one chunk read from the log holds at most (plus one event). */
const readChunkBytes = 4 * 1024 * 1024;
/** Longest a moved floor waits before it is saved (ms). */
const floorSaveDelayMs = 20;

/**
 * A processor's consumer state, in JetStream's words (P2-P7): `ackFloor` (the
 * durable cursor: every event at or below it is finished), `delivered` (the
 * highest seq read), the attempts in flight or waiting, and per-key lanes.
 *
 * Failure semantics: a delivery is at least once. An error, an ack timeout
 * or a vanished executor is a failed try; tries are retried after growing
 * waits (each recording `processor.retried`) and, when used up or failed
 * terminally, `processor.failed` is recorded and the cursor moves on. The
 * floor only passes finished events; after a crash everything above the
 * saved floor is delivered again. A duplicate or stale ack changes nothing.
 */
export class ProcessorEngine {
  private ackFloor = 0;
  private delivered = 0;
  private pausedFlag = false;
  /** Seqs below the floor delivered again on an operator's request (P8). */
  private readonly redelivering = new Set<number>();
  private saving = false;
  private stopped = false;
  private readonly order: number[] = [];
  private orderHead = 0;
  private readonly finished = new Set<number>();
  /** Stored bytes of the events read ahead and not finished (in `order`): bounded by {@link processorReadAheadBytes}. */
  private heldBytes = 0;
  private readonly lanes = new Lanes();
  private readonly attempts = new Map<number, Attempt>();
  private readonly byDelivery = new Map<string, Attempt>();
  private readonly ready: Attempt[] = [];
  retries = 0;
  failures = 0;

  constructor(
    readonly spec: ProcessorSpec,
    private readonly deps: EngineDeps,
  ) {}

  /** The durable cursor as known in memory (saved by the next commit). */
  get floor(): number {
    return this.ackFloor;
  }

  /** Deliveries in flight or waiting for a retry. */
  get inFlight(): number {
    return this.attempts.size;
  }

  /** The highest seq read from the log. */
  get deliveredSeq(): number {
    return this.delivered;
  }

  /** Paused by an operator: nothing new is handed out (B3). */
  get paused(): boolean {
    return this.pausedFlag;
  }

  /**
   * Loads the saved cursor, or places a new processor's cursor at its start
   * position (P8) and saves it, then starts reading.
   */
  start(): void {
    const saved = this.deps.cursors.get(this.spec.name);
    if (saved) {
      this.ackFloor = saved.ackFloor;
      this.pausedFlag = saved.paused;
    } else {
      const start = this.spec.start;
      this.ackFloor = start.kind === "beginning" ? 0 : start.kind === "after" ? start.seq : this.deps.head();
      // Pinned at once: a restart must not move a new processor's start to a later end of the log.
      const floor = this.ackFloor;
      this.deps.committer
        .submit((tx) => this.deps.cursors.save(this.spec.name, floor, tx.now))
        .catch((e) => this.deps.logger.error({ err: e, processor: this.spec.name }, "saving the cursor failed"));
    }
    this.delivered = this.ackFloor;
    this.fill();
  }

  /** Reads newly committed events and hands out what it can. Call after each commit. */
  fill(): void {
    while (!this.stopped && this.order.length - this.orderHead < readAheadLimit && this.heldBytes < processorReadAheadBytes) {
      const head = this.deps.head();
      if (this.delivered >= head) break;
      const on = this.spec.on;
      const chunk = this.deps.events.readWithin(this.delivered, readChunk, readChunkBytes, on ? [...on] : []);
      const rows = chunk.events;
      for (const event of rows) {
        if (event.seq > head) break; // committed, not yet durable (E8): read after its fsync
        this.delivered = event.seq;
        if (!takes(this.spec, event)) continue;
        this.order.push(event.seq);
        this.heldBytes += storedBytes(event);
        this.lanes.push(this.spec.keyOf(event) ?? `#${event.seq}`, event);
      }
      if (!chunk.cut || rows[rows.length - 1].seq > head) this.delivered = Math.max(this.delivered, head);
    }
    this.advanceFloor();
    this.pump();
  }

  /** Sends ready work to executors with free credits, up to the processor's concurrency. */
  pump(): void {
    while (!this.stopped && !this.pausedFlag) {
      if (this.ready.length > 0) {
        const session = this.deps.pickSession(this.spec.name);
        if (!session) return;
        this.send(this.ready.shift()!, session);
        continue;
      }
      if (this.attempts.size >= this.spec.concurrency) return;
      const session = this.deps.pickSession(this.spec.name);
      if (!session) return;
      const next = this.lanes.take();
      if (!next) return;
      const attempt: Attempt = { ...next, attempt: 1, deliveryId: "", session: null, timer: null };
      this.attempts.set(next.event.seq, attempt);
      this.send(attempt, session);
    }
  }

  /**
   * An executor's answer to a delivery: `ok`, or an error (retried unless
   * `terminal`). Stale answers (the delivery timed out, was moved past, or was
   * answered already by this session) and unknown ones change nothing.
   */
  ack(session: ExecutorSession, deliveryId: string, ok: boolean, error: string, terminal: boolean): AckVerdict {
    const match = takeAnswer(session, deliveryId);
    const attempt = this.byDelivery.get(deliveryId);
    if (!attempt || attempt.session !== session) return match === "unknown" ? "unknown" : "stale";
    this.detach(attempt);
    if (ok) this.finish(attempt);
    else this.fail(attempt, error || "error", terminal);
    return "accepted";
  }

  /** Extends a delivery's ack deadline by `extendMs` (default: the ack timeout) (X4). */
  progress(session: ExecutorSession, deliveryId: string, extendMs: number): boolean {
    const attempt = this.byDelivery.get(deliveryId);
    if (!attempt || attempt.session !== session) return false;
    this.armAckTimeout(attempt, extendMs || this.spec.ackTimeoutMs);
    return true;
  }

  /** Every delivery the session held fails (X3): they are retried elsewhere. */
  sessionGone(session: ExecutorSession): void {
    for (const attempt of [...this.byDelivery.values()]) {
      if (attempt.session !== session) continue;
      this.detach(attempt);
      this.fail(attempt, "executor disconnected", false);
    }
  }

  /**
   * Stops handing out work and waits up to `graceMs` for deliveries in
   * flight to finish (P7). Unfinished ones stay above the floor, so the next
   * owner delivers them again. Resolves after the last floor is saved.
   */
  async stop(graceMs: number): Promise<void> {
    this.stopped = true;
    const deadline = this.deps.clock.now() + graceMs;
    while (this.byDelivery.size > 0 && this.deps.clock.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    for (const attempt of this.attempts.values()) if (attempt.timer) clearTimeout(attempt.timer);
    this.attempts.clear();
    this.byDelivery.clear();
    await this.deps.committer.submit((tx) => this.deps.cursors.save(this.spec.name, this.ackFloor, tx.now));
  }

  /**
   * Moves the cursor (P8): every event at or below `ackFloor` counts as
   * finished and delivery restarts after it. Work in flight is dropped (its
   * answers become stale). Recorded as `processor.cursor_moved` in the same
   * commit as the new floor.
   */
  async moveCursor(ackFloor: number, by: string): Promise<void> {
    const from = this.ackFloor;
    this.reset(ackFloor);
    await this.deps.committer.submit((tx) => {
      this.deps.cursors.save(this.spec.name, ackFloor, tx.now);
      tx.append({ id: newId(), type: "processor.cursor_moved", data: { processor: this.spec.name, from, to: ackFloor, by }, cause: "", actor: null });
    });
    this.fill();
  }

  /**
   * Pauses or resumes handing out work (B3); recorded as `processor.paused` /
   * `processor.resumed`. Idempotent: a processor already in that state is left
   * alone and nothing is recorded. Resolves true when the state changed.
   */
  async setPaused(paused: boolean, by: string): Promise<boolean> {
    if (paused === this.pausedFlag) return false;
    this.pausedFlag = paused;
    try {
      await this.deps.committer.submit((tx) => {
        this.deps.cursors.setPaused(this.spec.name, paused, this.ackFloor, tx.now);
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
   * Delivers failed events again (P8, B3), as new deliveries in their lanes;
   * recorded as `processor.redelivered`. A redelivery that finishes removes
   * the failure from the record; one that fails again records it again.
   */
  async redeliver(seqs: number[], by: string): Promise<number> {
    const failed = this.deps.cursors.failed(this.spec.name).filter((f) => seqs.length === 0 || seqs.includes(f.seq));
    const events = failed.map((f) => this.deps.events.readAfter(f.seq - 1, 1)[0]).filter((e) => e?.seq !== undefined && !this.attempts.has(e.seq) && !this.redelivering.has(e.seq));
    if (events.length === 0) return 0;
    await this.deps.committer.submit((tx) =>
      tx.append({ id: newId(), type: "processor.redelivered", data: { processor: this.spec.name, seqs: events.map((e) => e.seq), by }, cause: "", actor: null }),
    );
    for (const event of events) {
      this.redelivering.add(event.seq);
      this.lanes.push(this.spec.keyOf(event) ?? `#${event.seq}`, event);
    }
    this.pump();
    return events.length;
  }

  /** Forgets everything read and in flight, and restarts reading after `ackFloor`. */
  private reset(ackFloor: number): void {
    for (const attempt of this.attempts.values()) if (attempt.timer) clearTimeout(attempt.timer);
    this.attempts.clear();
    this.byDelivery.clear();
    this.ready.length = 0;
    this.lanes.clear();
    this.order.length = 0;
    this.orderHead = 0;
    this.finished.clear();
    this.heldBytes = 0;
    this.redelivering.clear();
    this.ackFloor = ackFloor;
    this.delivered = ackFloor;
  }

  private send(attempt: Attempt, session: ExecutorSession): void {
    attempt.deliveryId = `${this.spec.name}/${attempt.event.seq}/${attempt.attempt}`;
    attempt.session = session;
    session.inFlight.add(attempt.deliveryId);
    this.byDelivery.set(attempt.deliveryId, attempt);
    this.armAckTimeout(attempt, this.spec.ackTimeoutMs);
    session.send({
      message: {
        case: "delivery",
        value: {
          deliveryId: attempt.deliveryId,
          processor: this.spec.name,
          event: eventToProto(attempt.event, session.hosting.dataJson),
          attempt: attempt.attempt,
          deadline: timestampFromMs(this.deps.clock.now() + this.spec.ackTimeoutMs),
          key: attempt.key.startsWith("#") ? "" : attempt.key,
        },
      },
    });
  }

  private armAckTimeout(attempt: Attempt, ms: number): void {
    if (attempt.timer) clearTimeout(attempt.timer);
    attempt.timer = setTimeout(() => {
      // The executor keeps the credit until it answers (late answers are stale).
      this.byDelivery.delete(attempt.deliveryId);
      attempt.session = null;
      attempt.timer = null;
      this.fail(attempt, `not acknowledged within ${ms} ms`, false);
    }, ms);
  }

  private detach(attempt: Attempt): void {
    if (attempt.timer) clearTimeout(attempt.timer);
    attempt.timer = null;
    attempt.session = null;
    this.byDelivery.delete(attempt.deliveryId);
  }

  /** Ends an attempt; `succeeded` false when it ended by giving up (its failure stays on record). */
  private finish(attempt: Attempt, succeeded = true): void {
    const seq = attempt.event.seq;
    this.attempts.delete(seq);
    this.lanes.release(attempt.key);
    if (this.redelivering.delete(seq)) {
      if (succeeded) void this.deps.committer.submit(() => this.deps.cursors.forgetFailure(this.spec.name, seq));
      this.pump();
      return;
    }
    this.finished.add(seq);
    this.heldBytes = Math.max(0, this.heldBytes - storedBytes(attempt.event)); // never below 0: an end arriving after a reset
    this.advanceFloor();
    this.fill();
  }

  private fail(attempt: Attempt, error: string, terminal: boolean): void {
    if (this.stopped) return;
    const tries = this.spec.retryDelaysMs.length + 1;
    if (!terminal && attempt.attempt < tries) this.retry(attempt, error);
    else this.giveUp(attempt, error);
  }

  private retry(attempt: Attempt, error: string): void {
    this.retries++;
    const waitMs = this.spec.retryDelaysMs[attempt.attempt - 1];
    const { event } = attempt;
    const data = { processor: this.spec.name, event_id: event.id, seq: event.seq, attempt: attempt.attempt, error, retry_in_ms: waitMs };
    this.record("processor.retried", event, data);
    attempt.attempt++;
    attempt.timer = setTimeout(() => {
      attempt.timer = null;
      this.ready.push(attempt);
      this.pump();
    }, waitMs);
  }

  private giveUp(attempt: Attempt, error: string): void {
    this.failures++;
    const { event } = attempt;
    const data = {
      processor: this.spec.name,
      event: { seq: event.seq, id: event.id, type: event.type, data: event.data, cause: event.cause, actor: event.actor, at: new Date(event.at).toISOString() },
      error,
      attempts: attempt.attempt,
    };
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

  private advanceFloor(): void {
    while (this.orderHead < this.order.length && this.finished.has(this.order[this.orderHead])) {
      this.finished.delete(this.order[this.orderHead]);
      this.orderHead++;
    }
    if (this.orderHead > 1024) {
      this.order.splice(0, this.orderHead);
      this.orderHead = 0;
    }
    const floor = this.orderHead < this.order.length ? this.order[this.orderHead] - 1 : this.delivered;
    if (floor > this.ackFloor) {
      this.ackFloor = floor;
      this.saveFloor();
    }
  }

  /**
   * Saves the floor within `floorSaveDelayMs`, at most one save queued at a
   * time: a burst of acks costs one commit, not one fsync each. A crash loses
   * at most that window of cursor progress, whose events are delivered again
   * (at least once, P3).
   */
  private saveFloor(): void {
    if (this.saving) return;
    this.saving = true;
    setTimeout(() => {
      this.deps.committer
        .submit((tx) => {
          this.saving = false;
          this.deps.cursors.save(this.spec.name, this.ackFloor, tx.now);
        })
        .catch((e) => {
          this.saving = false;
          this.deps.logger.error({ err: e, processor: this.spec.name }, "saving the cursor failed");
        });
    }, floorSaveDelayMs);
  }
}
