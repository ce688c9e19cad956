/** Upper bounds (inclusive, ms) of the lateness buckets; a last bucket holds the rest. */
export const latenessBucketsMs = [0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 30_000, 60_000, 300_000, 3_600_000] as const;

/** A point-in-time copy of a {@link LatenessHistogram}. */
export interface LatenessSnapshot {
  /** Calls recorded. */
  count: number;
  /** Sum of their lateness, ms. */
  sumMs: number;
  /** Largest lateness seen, ms (0 when none). */
  maxMs: number;
  /** Cumulative counts: calls at most `leMs` late (Prometheus `le` buckets; the last is Infinity). */
  buckets: { leMs: number; count: number }[];
}

/**
 * Lateness of time's calls: call time minus due time, in ms, one
 * record per call, in fixed buckets (in memory; the owner's metrics observe each record
 * through `onRecord` as `chronolog_timer_lateness_seconds`). Negative lateness (a clock
 * stepped back) counts as 0.
 */
export class LatenessHistogram {
  private readonly counts = new Array<number>(latenessBucketsMs.length + 1).fill(0);
  private count = 0;
  private sumMs = 0;
  private maxMs = 0;
  private readonly listeners: ((latenessMs: number) => void)[] = [];

  /** Calls `listener` with each lateness recorded from now on (ms, at least 0); the metrics observe it there. */
  onRecord(listener: (latenessMs: number) => void): void {
    this.listeners.push(listener);
  }

  /** Records one call `latenessMs` late. */
  record(latenessMs: number): void {
    const ms = Math.max(0, latenessMs);
    let i = latenessBucketsMs.findIndex((le) => ms <= le);
    if (i < 0) i = latenessBucketsMs.length;
    this.counts[i]++;
    this.count++;
    this.sumMs += ms;
    this.maxMs = Math.max(this.maxMs, ms);
    for (const listener of this.listeners) listener(ms);
  }

  /** The counts so far. */
  snapshot(): LatenessSnapshot {
    let cumulative = 0;
    const buckets = this.counts.map((n, i) => ({ leMs: latenessBucketsMs[i] ?? Infinity, count: (cumulative += n) }));
    return { count: this.count, sumMs: this.sumMs, maxMs: this.maxMs, buckets };
  }

  /** The upper bound (ms) of the bucket holding quantile `q` (0-1); 0 when empty, the max for the last bucket. */
  quantileMs(q: number): number {
    if (this.count === 0) return 0;
    const rank = Math.ceil(q * this.count);
    let seen = 0;
    for (let i = 0; i < this.counts.length; i++) {
      seen += this.counts[i];
      if (seen >= rank) return latenessBucketsMs[i] ?? this.maxMs;
    }
    return this.maxMs;
  }
}
