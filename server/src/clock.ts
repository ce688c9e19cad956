/**
 * The owner's source of time (STYLE 9). Everything that reads time takes a
 * Clock; tests pass a ManualClock.
 */
export interface Clock {
  /** Milliseconds since the Unix epoch, UTC. */
  now(): number;
}

/** The real wall clock. */
export const systemClock: Clock = { now: () => Date.now() };

/** A clock that moves only when told to (tests). */
export class ManualClock implements Clock {
  constructor(private ms: number) {}
  now(): number {
    return this.ms;
  }
  /** Moves the clock forward by `ms` milliseconds. */
  advance(ms: number): void {
    this.ms += ms;
  }
  /** Sets the clock to `ms` since the epoch. */
  set(ms: number): void {
    this.ms = ms;
  }
}
