import type { Clock } from "../clock.js";
import { KeyRates, type RateSpec } from "../flow/rate.js";
import type { EventRecord } from "../store/events.js";
import type { KeyQueues } from "./key-limits.js";

/**
 * A processor's rate (`rate: {limit, period_ms, key, burst}`): an event starts only with a token
 * of its rate key; until then its key is passed over (other keys go on) and the engine is woken
 * when the first token is due. Nothing is dropped. The time events waited for a token is counted
 * (KeyRates.waitedMs) for the metrics.
 */
export class RateGate {
  readonly rates: KeyRates;
  /** Since when each event held back waited (the clock's ms), by seq. */
  private readonly since = new Map<number, number>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    spec: RateSpec,
    private readonly clock: Clock,
  ) {
    this.rates = new KeyRates(spec, () => clock.now());
  }

  /** For KeyQueues.take: 0 when `event` may start now (its token taken), else the ms until its key has one. */
  readonly admit = (event: EventRecord): number => {
    const waitMs = this.rates.take(this.rates.spec.keyOf(event));
    const since = this.since.get(event.seq);
    if (waitMs > 0) {
      if (since === undefined) this.since.set(event.seq, this.clock.now());
    } else if (since !== undefined) {
      this.since.delete(event.seq);
      this.rates.waited(this.clock.now() - since);
    }
    return waitMs;
  };

  /** Events held back for a token now. */
  get waiting(): number {
    return this.since.size;
  }

  /** After a pump: when keys were parked, wakes `pump` once the first token is due (parked keys take turns again). */
  arm(queues: KeyQueues, pump: () => void): void {
    if (this.timer || queues.parkedKeys === 0) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      queues.unpark();
      pump();
    }, queues.wakeInMs);
  }

  /** Stops the wake and forgets the waits (the engine stopped or reset). */
  clear(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.since.clear();
  }
}
