// Percentiles of a stage histogram over about the last minute, for the processors view: the
// histogram only grows (since the owner started), so this keeps a few copies of its counts, taken
// at most every few seconds when it is read, and answers from the difference between now and the
// newest copy at least a window old. Nothing runs between reads.

import { stageBucketsMs, type StageHistogram } from "./stages.js";

/** Percentiles over a recent window. */
export interface RecentFigures {
  p50Ms: number;
  p99Ms: number;
  /** Observations in the window. */
  count: number;
  /** The window's length, ms. */
  windowMs: number;
}

interface Copy {
  at: number;
  counts: Float64Array;
}

/** Reads p50/p99 of `histogram` over about the last `windowMs` (performance.now() clock by default). */
export class RecentPercentiles {
  private readonly copies: Copy[] = [];

  constructor(
    private readonly histogram: StageHistogram,
    private readonly windowMs = 60_000,
    private readonly stepMs = 5_000,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.copies.push({ at: now(), counts: histogram.counts.slice() });
  }

  /** The figures over the window ending now. */
  read(): RecentFigures {
    const now = this.now();
    const copies = this.copies;
    if (now - copies[copies.length - 1].at >= this.stepMs) copies.push({ at: now, counts: this.histogram.counts.slice() });
    // Keep the newest copy at least a window old as the base, and none older.
    while (copies.length > 1 && now - copies[1].at >= this.windowMs) copies.shift();
    const base = copies[0];
    const counts = this.histogram.counts.map((c, i) => c - base.counts[i]);
    const count = counts.reduce((a, b) => a + b, 0);
    return { p50Ms: quantile(counts, count, 0.5), p99Ms: quantile(counts, count, 0.99), count, windowMs: now - base.at };
  }
}

/**
 * The `q` quantile of bucket counts (not cumulative) over {@link stageBucketsMs}, interpolated
 * linearly inside its bucket as Prometheus' histogram_quantile does; a quantile in the bucket above
 * the last bound is that bound. 0 for no observations.
 */
export function quantile(counts: ArrayLike<number>, total: number, q: number): number {
  if (total <= 0) return 0;
  const rank = q * total;
  let below = 0;
  for (let i = 0; i < stageBucketsMs.length; i++) {
    const inBucket = counts[i];
    if (below + inBucket >= rank && inBucket > 0) {
      const lower = i === 0 ? 0 : stageBucketsMs[i - 1];
      return lower + ((stageBucketsMs[i] - lower) * (rank - below)) / inBucket;
    }
    below += inBucket;
  }
  return stageBucketsMs[stageBucketsMs.length - 1];
}
