import type { Clock } from "../clock.js";
import type { Db } from "./database.js";
import type { EventRecord, EventStatements } from "./events.js";

/**
 * What a unit of work sees inside a commit: the commit's time, the events
 * table, and `append`, which gives the next dense seq (E1).
 */
export interface Tx {
  /** Commit time in ms since the epoch (UTC), the same for the whole batch. */
  readonly now: number;
  readonly db: Db;
  readonly events: EventStatements;
  /** Appends an event with the next seq and the commit time; returns it. */
  append(event: Omit<EventRecord, "seq" | "at">): EventRecord;
}

/** A unit of work run inside the group commit; it may throw to undo itself only. */
export type Work<T> = (tx: Tx) => T;

/** What a commit changed, published after the fsync. */
export interface CommitInfo {
  /** The log's last seq after the commit. */
  head: number;
  /** Units of work in the batch. */
  batchSize: number;
  /** Time spent in the transaction, commit included (ms). */
  durationMs: number;
}

interface Pending {
  work: Work<unknown>;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/**
 * The single writer (ARCHITECTURE "One writer, one commit pipeline").
 *
 * Group commit: units of work submitted while the event loop is busy are
 * collected and run in one transaction on the next turn (`setImmediate`), each
 * inside its own savepoint, so one failing unit undoes only itself. Callers'
 * promises settle only after COMMIT returned, i.e. after the fsync when
 * synchronous=FULL (E8).
 *
 * Failure semantics: a unit that throws is rolled back to its savepoint and
 * its caller gets the error; if COMMIT itself fails (disk full, I/O error),
 * the whole batch is rolled back and every caller gets the error. Nothing is
 * acknowledged that was not committed.
 */
export class Committer {
  private queue: Pending[] = [];
  private scheduled = false;
  private headSeq: number;
  private lastCommitAt = 0;
  private readonly listeners: ((info: CommitInfo) => void)[] = [];

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly events: EventStatements,
    /** Told about an exception thrown by an onCommit listener (default: printed to stderr). */
    private readonly onListenerError: (error: unknown) => void = (error) => console.error(error),
  ) {
    this.headSeq = events.head();
  }

  /** The last committed seq. */
  get head(): number {
    return this.headSeq;
  }

  /** Calls `listener` after every commit that succeeded. */
  onCommit(listener: (info: CommitInfo) => void): void {
    this.listeners.push(listener);
  }

  /** Queues `work` for the next group commit; resolves with its result once durable. */
  submit<T>(work: Work<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ work, resolve: resolve as (v: unknown) => void, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const batch = this.queue;
    this.queue = [];
    if (batch.length === 0) return;
    const started = performance.now();
    const headBefore = this.headSeq;
    const outcomes: { ok: boolean; value: unknown }[] = [];
    const tx = this.transaction();
    try {
      this.db.exec("BEGIN IMMEDIATE");
      for (const item of batch) outcomes.push(this.runUnit(item.work, tx));
      this.db.exec("COMMIT");
    } catch (error) {
      if (this.db.inTransaction) this.db.exec("ROLLBACK");
      this.headSeq = headBefore;
      for (const item of batch) item.reject(error);
      return;
    }
    batch.forEach((item, i) => (outcomes[i].ok ? item.resolve(outcomes[i].value) : item.reject(outcomes[i].value)));
    const info = { head: this.headSeq, batchSize: batch.length, durationMs: performance.now() - started };
    for (const listener of this.listeners) {
      try {
        listener(info);
      } catch (error) {
        // A follower's fault (watchers, processors, timers) must not break the commit pipeline.
        this.onListenerError(error);
      }
    }
  }

  private runUnit(work: Work<unknown>, tx: Tx): { ok: boolean; value: unknown } {
    const mark = this.headSeq;
    this.db.exec("SAVEPOINT unit");
    try {
      const value = work(tx);
      this.db.exec("RELEASE unit");
      return { ok: true, value };
    } catch (error) {
      this.db.exec("ROLLBACK TO unit");
      this.db.exec("RELEASE unit");
      this.headSeq = mark;
      return { ok: false, value: error };
    }
  }

  private transaction(): Tx {
    // Commit times never go backwards, even if the wall clock does.
    const now = Math.max(this.clock.now(), this.lastCommitAt);
    this.lastCommitAt = now;
    return {
      now,
      db: this.db,
      events: this.events,
      append: (event) => {
        const record: EventRecord = { ...event, seq: this.headSeq + 1, at: now };
        this.events.insert(record);
        this.headSeq = record.seq;
        return record;
      },
    };
  }
}
