// Percentiles of a stage histogram over about the last minute (server/src/recent-percentiles.ts),
// as the processors view shows a processor's delivery latency: interpolated inside buckets, and
// only what was observed in the window. Through a real owner and executor: metrics.test.ts.
import { describe, expect, it } from "vitest";
import { quantile, RecentPercentiles } from "../server/src/recent-percentiles.js";
import { StageHistogram, stageBucketsMs } from "../server/src/stages.js";

describe("recent percentiles", () => {
  it("interpolate inside the bucket the rank falls in; past the last bound is that bound; none is 0", () => {
    const h = new StageHistogram();
    for (let i = 0; i < 98; i++) h.observe(0.8); // bucket (0.75, 1]
    h.observe(40); // (30, 50]
    h.observe(40);
    expect(quantile(h.counts, h.count, 0.5)).toBeCloseTo(0.75 + 0.25 * (50 / 98), 9);
    expect(quantile(h.counts, h.count, 0.99)).toBeCloseTo(30 + 20 * 0.5, 9);
    const slow = new StageHistogram();
    slow.observe(60_000);
    expect(quantile(slow.counts, slow.count, 0.99)).toBe(stageBucketsMs[stageBucketsMs.length - 1]);
    expect(quantile(new StageHistogram().counts, 0, 0.5)).toBe(0);
  });

  it("count only what was observed in about the last minute: a slow minute ages out", () => {
    let now = 0;
    const h = new StageHistogram();
    for (let i = 0; i < 50; i++) h.observe(100); // before the window's start: not counted
    const recent = new RecentPercentiles(h, 60_000, 5_000, () => now);
    for (let i = 0; i < 100; i++) h.observe(400); // a slow start
    now = 10_000;
    let f = recent.read();
    expect(f.count).toBe(100);
    expect(f.windowMs).toBe(10_000);
    expect(f.p50Ms).toBeGreaterThan(300);
    // Read every 5 s for 70 s with fast deliveries: the slow ones leave the window.
    for (now = 15_000; now <= 80_000; now += 5_000) {
      for (let i = 0; i < 10; i++) h.observe(2);
      f = recent.read();
    }
    expect(f.windowMs).toBeGreaterThanOrEqual(60_000);
    expect(f.windowMs).toBeLessThan(65_000);
    expect(f.count).toBe(120); // 12 reads of 10 within the last 60 s
    expect(f.p99Ms).toBeLessThanOrEqual(2);
    expect(f.p50Ms).toBeGreaterThan(1.5);
  });

  it("a window nobody read for long covers the time since the last read", () => {
    let now = 0;
    const h = new StageHistogram();
    const recent = new RecentPercentiles(h, 60_000, 5_000, () => now);
    h.observe(3);
    now = 3_600_000;
    const f = recent.read();
    expect(f.count).toBe(1);
    expect(f.windowMs).toBe(3_600_000);
  });
});
