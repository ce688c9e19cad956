import type { Committer } from "../store/committer.js";

/** The committer's share removal takes at most, when nothing else commits. */
const idleShare = 0.5;
/** The share it keeps under full load: removal still goes on, slowly. */
const loadedShare = 0.05;
/** The committer counts as idle after this long without another commit, ms. */
const quietMs = 100;
/** Other work's commit time is summed over this window, ms. */
const windowMs = 1_000;
/** Longest pause between two removal units, ms. */
const maxPauseMs = 1_000;
/** Longest wait for SQLite's WAL to come back within its bound, ms, and how often it is looked at. */
const maxWalWaitMs = 1_000;
const walPollMs = 20;

/**
 * The pace of retention's removal units against the committer's other work (docs/retention.md,
 * "How removal runs"). After each unit, removal pauses so that it takes at most a share of the
 * committer's time: half of it while nothing else commits, shrinking with the time the other
 * commits of the last second took (their work and their sync), down to a twentieth when they
 * fill it. So a large removal runs fast on an idle owner and gives way to emits and deliveries
 * on a busy one, yet still ends.
 *
 * On SQLite it also waits (a second at most) while the WAL is past its bound: its checkpoint is
 * then catching up, to be finished on the owner's thread (store/sqlite/checkpointer.ts), and the
 * frames a removal unit writes meanwhile (with random ids about 200 a unit of 100 events) would
 * lengthen both.
 */
export class RemovalPace {
  /** End times and durations of the last second's other commits, ms. */
  private readonly commits: { at: number; ms: number }[] = [];
  /** Removal units submitted and not yet durable. */
  private inFlight = 0;

  constructor(
    committer: Committer,
    private readonly wal?: () => { pastBound: boolean },
  ) {
    committer.onCommit(({ batchSize, durationMs }) => {
      // A commit that held only a removal unit is removal's own; any other is other work's.
      if (this.inFlight > 0 && batchSize <= this.inFlight) return;
      const at = performance.now();
      this.commits.push({ at, ms: durationMs });
      while (this.commits.length > 0 && this.commits[0].at < at - windowMs) this.commits.shift();
    });
  }

  /** Awaits a removal unit's submission (`commit`, its commit told apart from other work's) and returns how long it took to be durable, ms. */
  async track(commit: () => Promise<unknown>): Promise<number> {
    const started = performance.now();
    this.inFlight++;
    try {
      await commit();
    } finally {
      this.inFlight--;
    }
    return performance.now() - started;
  }

  /** The committer's share removal may take now, from the other commits' time over the last second. */
  share(now = performance.now()): number {
    while (this.commits.length > 0 && this.commits[0].at < now - windowMs) this.commits.shift();
    const last = this.commits[this.commits.length - 1];
    if (last === undefined || last.at < now - quietMs) return idleShare;
    const load = Math.min(1, this.commits.reduce((sum, c) => sum + c.ms, 0) / windowMs);
    return Math.max(loadedShare, idleShare * (1 - load));
  }

  /** After a unit that took `tookMs` (queued, run and made durable): a pause that keeps removal to its share (a turn of the event loop at least), then while the WAL is past its bound. */
  async pause(tookMs: number): Promise<void> {
    const share = this.share();
    const ms = tookMs > 0 ? Math.min(maxPauseMs, (tookMs * (1 - share)) / share) : 0;
    await new Promise((resolve) => (ms > 0 ? setTimeout(resolve, ms) : setImmediate(resolve)));
    if (!this.wal) return;
    for (const until = performance.now() + maxWalWaitMs; this.wal().pastBound && performance.now() < until; )
      await new Promise((resolve) => setTimeout(resolve, walPollMs));
  }
}
