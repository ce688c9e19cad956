import type { Clock, TimerHost } from "../clock.js";
import type { Logger } from "../logger.js";

/** The longest delay `setTimeout` takes (2^31-1 ms, ~24.8 days); longer ones would ring at once. */
export const maxTimerDelayMs = 2 ** 31 - 1;
/**
 * How far ahead of a due moment the clock rings by default, ms: the claim and the call's start
 * commit in that time, and an executor that holds gets the Invocation then, so the owner's own
 * pauses shorter than this do not make the call late. 250 rather than 100: in bench/timers
 * the owner fell 150-350 ms behind in the burst's first second (cold code paths after other
 * traffic), which 100 ms did not cover. The cost: a cancel inside this window comes too late, and
 * held calls keep their executor's credits this long.
 */
export const defaultLookaheadMs = 250;
/**
 * Most time between two rings under a steady stream of due timers, ms. Wider spacing claims
 * larger batches, whose calls then start and reach the executor together: in bench/timers a
 * 50 ms spacing (a fifth of 250) put the owner behind where 20 did not (3 alternating pairs).
 */
const ringSpacingMs = 20;
/** Wait before ringing again after a ring whose claim failed (e.g. a disk error), ms. */
const ringRetryMs = 1_000;

/** What the clock needs. */
export interface ClockArmDeps {
  clock: Clock;
  /** Where the one timer is armed: setTimeout, or a ManualClock in tests. */
  timers: TimerHost;
  /**
   * The earliest next due moment of any timer (the `timers_by_due` index), ms; null when none. A
   * promise where the read is a round trip (PostgreSQL): the clock is armed when it answers.
   */
  earliestDue(): number | null | Promise<number | null>;
  /** The clock rings this long before a due moment, ms (0: at it). */
  lookaheadMs: number;
  /** Claims and calls what is due; resolves once the claim committed. */
  ring(): Promise<void>;
  logger: Logger;
}

/**
 * The owner's one clock: a single timer armed for the earliest
 * next due moment, never a polling loop.
 *
 * Its target is the earliest next due moment of any timer or next try of an
 * occurrence waiting to be retried: one clock for both.
 *
 * - **idle**: no timer pending; nothing armed.
 * - **armed(due)**: one timer for `min(due − lookahead − now, 2^31−1)` ms. A
 *   timer that rings before `due − lookahead` (clamped, or early by a
 *   millisecond) re-arms.
 * - **ringing**: `ring()` claims everything due by now + lookahead in one
 *   commit (each call is then started and sent at its moment, see
 *   TimerFiring); then the clock re-reads the index and arms for the next
 *   earliest, but no sooner than {@link ringSpacingMs} (or a fifth of a
 *   shorter lookahead) after this ring began: under a steady stream of due
 *   timers each ring claims a batch (each still at least the lookahead less
 *   that spacing ahead of its moment) instead of one per ring. A commit that
 *   set a timer while it rang, or one already inside the lookahead, takes
 *   that spacing away (it is armed for as soon as it is due).
 * A commit that sets a timer earlier than the armed one calls `changed` and
 * the clock re-arms; later or removed timers need nothing (a ring that finds
 * nothing due simply re-arms).
 */
export class ClockArm {
  private handle: unknown = null;
  private armedDue: number | null = null;
  private ringing = false;
  /** A commit set a timer while the clock rang: its re-arm is not spaced. */
  private changedWhileRinging = false;
  /** The armed timer rings later than its due moment asks, for the spacing after a ring. */
  private spaced = false;
  /** The earliest due read is on its way (its number: only the last one arms), and the earliest moment commits set meanwhile. */
  private reading: { read: number; changedDue: number | null } | null = null;
  private reads = 0;
  private started = false;
  private stopped = false;
  /** The delay last handed to the TimerHost (ms), for tests and metrics; null when idle. */
  armedDelayMs: number | null = null;

  constructor(private readonly deps: ClockArmDeps) {}

  /** Arms for the earliest pending timer. */
  start(): void {
    this.started = true;
    this.arm();
  }

  /** A commit set a timer (or a retry) due at `dueMs` (ms since the epoch): re-arms when it is earlier than the armed one. Before `start`, nothing: start arms for the earliest. */
  changed(dueMs: number | null): void {
    if (dueMs === null || !this.started || this.stopped) return;
    if (this.ringing) return void (this.changedWhileRinging = true); // the ring re-arms when it ends, unspaced
    if (this.reading) return void (this.reading.changedDue = minOf(this.reading.changedDue, dueMs)); // armed when the read answers
    // Armed for the earliest known (or idle: none), and every timer set since was told here: `dueMs` is the earliest now.
    if (this.armedDue === null || dueMs < this.armedDue) return this.armFor(dueMs);
    // A commit that landed with the ring's own may be told after the re-arm, which then read it and spaced it: as soon as it is due.
    if (this.spaced && dueMs - this.deps.lookaheadMs <= this.deps.clock.now()) this.armFor(this.armedDue);
  }

  /** Re-arms from the index whatever changed (a registration moved or removed declared timers); nothing before `start` or while ringing. */
  refresh(): void {
    if (this.started && !this.stopped && !this.ringing) this.arm();
  }

  /** Disarms for good (owner shutdown). */
  stop(): void {
    this.stopped = true;
    this.disarm();
  }

  /** The due moment the clock is armed for (ms), or null when idle. */
  get target(): number | null {
    return this.armedDue;
  }

  /** Arms for the earliest due moment, once read; `delayAfterMs`: instead, ring after that long; `notBefore`: not before this moment (ms since the epoch). */
  private arm(delayAfterMs?: number, notBefore = 0): void {
    this.disarm();
    if (this.stopped) return;
    const due = this.deps.earliestDue();
    if (!(due instanceof Promise)) return this.armFor(due, delayAfterMs, notBefore);
    const reading = { read: ++this.reads, changedDue: null };
    this.reading = reading;
    due.then(
      (earliest) => {
        if (this.reads !== reading.read) return; // a later read arms
        this.reading = null;
        if (!this.ringing) this.armFor(minOf(earliest, reading.changedDue), delayAfterMs, notBefore);
      },
      (error) => {
        if (this.reads !== reading.read) return;
        this.reading = null;
        this.deps.logger.error({ err: error }, "reading the earliest due timer failed; trying again");
        if (!this.ringing && !this.stopped) this.handle = this.deps.timers.setTimer(() => this.arm(), ringRetryMs);
      },
    );
  }

  /** Arms for `due` (null: idle), as {@link arm} says. */
  private armFor(due: number | null, delayAfterMs?: number, notBefore = 0): void {
    this.disarm();
    if (this.stopped || due === null) return;
    const now = this.deps.clock.now();
    const dueDelayMs = Math.max(0, due - this.deps.lookaheadMs - now);
    const delayMs = delayAfterMs ?? Math.min(Math.max(dueDelayMs, notBefore - now), maxTimerDelayMs);
    this.spaced = delayAfterMs === undefined && notBefore - now > dueDelayMs;
    this.armedDue = due;
    this.armedDelayMs = delayMs;
    this.handle = this.deps.timers.setTimer(() => this.onRing(), delayMs);
  }

  private disarm(): void {
    this.reading = null;
    this.reads++;
    if (this.handle !== null) this.deps.timers.clearTimer(this.handle);
    this.handle = null;
    this.armedDue = null;
    this.armedDelayMs = null;
    this.spaced = false;
  }

  private onRing(): void {
    const due = this.armedDue;
    this.handle = null;
    if (this.stopped) return;
    if (due !== null && this.deps.clock.now() < due - this.deps.lookaheadMs) return this.armFor(due); // clamped or early
    this.armedDue = null;
    this.ringing = true;
    this.changedWhileRinging = false;
    const nextRingAt = this.deps.clock.now() + Math.min(ringSpacingMs, Math.floor(this.deps.lookaheadMs / 5));
    this.deps.ring().then(
      () => {
        this.ringing = false;
        this.arm(undefined, this.changedWhileRinging ? 0 : nextRingAt);
      },
      (error) => {
        this.ringing = false;
        this.deps.logger.error({ err: error }, "claiming due timers failed; trying again");
        this.arm(ringRetryMs);
      },
    );
  }
}

function minOf(a: number | null, b: number | null): number | null {
  return a === null ? b : b === null ? a : Math.min(a, b);
}
