/** How long one removal unit may hold the owner's thread, ms: a few, so emits and deliveries wait no longer behind it. */
export const unitTargetMs = 4;
/** The fewest events a removal by rows takes a unit, however slow the last was. */
const minEvents = 10;
/** A unit grows by at most this factor over the last one. */
const growth = 1.5;

/**
 * How many events retention's next removal by rows takes (log/retention.ts), from how long the
 * last unit held the owner's thread: at most `batch_events`, and as many as fit in
 * {@link unitTargetMs} at the last unit's pace per event. On SQLite a unit's removal runs on the
 * owner's thread, so a unit that took long (larger events, a busy disk, the CPU taken by other
 * work) makes the next one smaller at once; faster ones let it grow back, half again a unit.
 */
export class UnitSize {
  private size: number;

  constructor(private readonly maxEvents: number) {
    this.size = maxEvents;
  }

  /** Events the next unit takes at most. */
  get events(): number {
    return this.size;
  }

  /** After a unit of `events` events that held the thread `ms`. */
  took(events: number, ms: number): void {
    if (events <= 0) return;
    const fits = ms > 0 ? Math.floor((unitTargetMs * events) / ms) : this.maxEvents;
    this.size = Math.max(Math.min(minEvents, this.maxEvents), Math.min(this.maxEvents, fits, Math.ceil(this.size * growth)));
  }
}
