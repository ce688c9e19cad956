/**
 * The owner's source of time. Everything that reads time takes a
 * Clock; tests pass a ManualClock.
 */
export interface Clock {
  /** Milliseconds since the Unix epoch, UTC. */
  now(): number;
}

/** The real wall clock. */
export const systemClock: Clock = { now: () => Date.now() };

/**
 * Where the owner's time module arms its one timer: `setTimeout`
 * in production, a {@link ManualClock} in tests, so a test moves time and the
 * armed timer rings without waiting. `delayMs` is at most 2^31-1 (callers clamp).
 */
export interface TimerHost {
  /** Calls `ring` once after `delayMs` ms; returns a handle for `clearTimer`. */
  setTimer(ring: () => void, delayMs: number): unknown;
  /** Disarms a timer from `setTimer` (no-op when it already rang). */
  clearTimer(handle: unknown): void;
}

/** Node's `setTimeout`/`clearTimeout`. */
export const systemTimers: TimerHost = {
  setTimer: (ring, delayMs) => setTimeout(ring, delayMs),
  clearTimer: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

interface ManualTimer {
  /** When it rings, ms since the epoch on the manual clock. */
  atMs: number;
  /** The delay it was armed with (ms). */
  delayMs: number;
  ring(): void;
}

/**
 * A clock that moves only when told to (tests), and a TimerHost on it: timers
 * armed with `setTimer` ring (synchronously, in due order, including ones
 * armed by a ringing timer) when `advance` or `set` moves the clock to or past
 * their moment; one armed with delay 0 rings on the next event-loop turn. A
 * time-skipping test environment in the manner of Temporal's.
 */
export class ManualClock implements Clock, TimerHost {
  private readonly timers = new Set<ManualTimer>();

  constructor(private ms: number) {}
  now(): number {
    return this.ms;
  }
  /** Moves the clock forward by `ms` milliseconds, ringing the timers that came due. */
  advance(ms: number): void {
    this.set(this.ms + ms);
  }
  /** Sets the clock to `ms` since the epoch, ringing the timers that came due. */
  set(ms: number): void {
    this.ms = ms;
    for (;;) {
      let first: ManualTimer | undefined;
      for (const t of this.timers) if (t.atMs <= this.ms && (!first || t.atMs < first.atMs)) first = t;
      if (!first) return;
      this.timers.delete(first);
      first.ring();
    }
  }
  /** Arms a timer at now + `delayMs` on this clock (TimerHost). */
  setTimer(ring: () => void, delayMs: number): unknown {
    const timer: ManualTimer = { atMs: this.ms + delayMs, delayMs, ring };
    this.timers.add(timer);
    // Already due (delay 0): rings on the next turn, as setTimeout(fn, 0) would, without waiting for the clock to move.
    if (delayMs <= 0) setImmediate(() => this.set(this.ms));
    return timer;
  }
  /** Disarms a timer (TimerHost). */
  clearTimer(handle: unknown): void {
    this.timers.delete(handle as ManualTimer);
  }
  /** The armed timers: when each rings and the delay it was given (ms), earliest first. */
  armed(): { atMs: number; delayMs: number }[] {
    return [...this.timers].sort((a, b) => a.atMs - b.atMs).map(({ atMs, delayMs }) => ({ atMs, delayMs }));
  }
}
