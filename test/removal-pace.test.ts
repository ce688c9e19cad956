// The pace of retention's removal units (server/src/log/removal-pace.ts): half of the
// committer's time while nothing else commits, a shrinking share as other commits fill it; on
// SQLite no unit while the WAL is past its bound.
import { describe, expect, it } from "vitest";
import { RemovalPace } from "../server/src/log/removal-pace.js";
import type { CommitInfo, Committer } from "../server/src/store/committer.js";

/** A committer whose commits the test tells. */
function fakeCommitter() {
  const listeners: ((info: CommitInfo) => void)[] = [];
  const committer = { onCommit: (l: (info: CommitInfo) => void) => listeners.push(l) } as unknown as Committer;
  const commit = (durationMs: number, batchSize = 1) => {
    for (const l of listeners) l({ head: 0, batchSize, durationMs, events: [] });
  };
  return { committer, commit };
}

describe("removal pace", () => {
  it("takes half the committer while nothing else commits, a twentieth when other commits fill it, and between in between", () => {
    const { committer, commit } = fakeCommitter();
    const pace = new RemovalPace(committer);
    expect(pace.share()).toBe(0.5);
    for (let i = 0; i < 100; i++) commit(3); // 300 ms of other commits in the last second
    expect(pace.share()).toBeCloseTo(0.35);
    for (let i = 0; i < 300; i++) commit(3);
    expect(pace.share()).toBe(0.05);
    // A second later, with nothing committed since, the committer is idle again.
    expect(pace.share(performance.now() + 1_100)).toBe(0.5);
  });

  it("does not count the commits of its own units as load", async () => {
    const { committer, commit } = fakeCommitter();
    const pace = new RemovalPace(committer);
    const took = await pace.track(async () => {
      for (let i = 0; i < 400; i++) commit(3, 1); // batches holding only the removal unit
    });
    expect(took).toBeGreaterThanOrEqual(0);
    expect(pace.share()).toBe(0.5);
    await pace.track(async () => commit(900, 5)); // a batch with other units beside it
    expect(pace.share()).toBe(0.05);
  });

  it("waits while SQLite's WAL is past its bound, until its checkpoint was finished", async () => {
    const { committer } = fakeCommitter();
    const wal = { pastBound: true };
    const pace = new RemovalPace(committer, () => wal);
    let paused = false;
    const pausing = pace.pause(0).then(() => (paused = true));
    await new Promise((r) => setTimeout(r, 150));
    expect(paused).toBe(false);
    wal.pastBound = false;
    await pausing;
    expect(paused).toBe(true);
    // Within its bound: no wait beyond the turn of the event loop.
    const started = performance.now();
    await pace.pause(0);
    expect(performance.now() - started).toBeLessThan(1_000);
  });
});
