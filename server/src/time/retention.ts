import { Counter, type Registry } from "prom-client";
import type { Clock, TimerHost } from "../clock.js";
import type { Logger } from "../logger.js";
import type { Committer } from "../store/committer.js";
import type { Db } from "../store/database.js";
import { retentionStatements, type RetentionStatements } from "../store/timers.js";
import { maxHorizonMs } from "./timers.js";

/** Default retention of spent timers and ended occurrences: 7 days, in ms. */
export const defaultTimerRetentionMs = 7 * 86_400_000;
/** Longest retention that may be set: 100 years, in ms (0 turns retention off). */
export const maxTimerRetentionMs = maxHorizonMs;
/** Default most rows one chunk (one committer unit) of a sweep deletes: 5,000. */
export const defaultRetentionChunkRows = 5_000;
/** Time between two sweeps: one hour, in ms. */
export const retentionSweepIntervalMs = 3_600_000;

/** The retention in ms for a config's `timers.retention_days` (absent: {@link defaultTimerRetentionMs}; 0: off). */
export function retentionMsOfDays(days: number | undefined): number {
  return days === undefined ? defaultTimerRetentionMs : Math.round(days * 86_400_000);
}

/** What one sweep did, for listeners (tests wait on it, STYLE 10) and the log. */
export interface SweepResult {
  /** The clock's time when the sweep began, ms since the epoch. */
  startedAtMs: number;
  /** Ended occurrences deleted. */
  occurrences: number;
  /** Spent timers deleted. */
  timers: number;
  /** Committer units (chunks of at most `chunkRows` rows) the sweep committed. */
  chunks: number;
  /** False when a chunk failed or the owner stopped mid-way (the rest waits for the next sweep). */
  complete: boolean;
}

/** What {@link TimerRetention} needs. */
export interface TimerRetentionOptions {
  db: Db;
  committer: Committer;
  clock: Clock;
  /** Where the hourly sweep is armed (the owner's TimerHost: setTimeout, or a ManualClock in tests). */
  timers: TimerHost;
  logger: Logger;
  /** Rows older than this are deleted, ms (0 to 100 years; 0: kept forever, no sweep). */
  retentionMs: number;
  /** Most rows one chunk deletes (default 5,000; at least 1). */
  chunkRows?: number;
}

/**
 * Retention of time's rows: without it, `timers` keeps every fired delay and one-shot and
 * `timer_occurrences` every occurrence ever made, so a million delays a day grow both without
 * bound. The log is never touched: `timer.*` and `action.*` events keep the history, and
 * `action_calls` keeps answering call ids.
 *
 * What a sweep deletes (store/timers.ts, retentionStatements), oldest first:
 * 1. occurrences that ended (completed, failed for good, skipped) and last changed longer than
 *    `retentionMs` ago; pending ones, ones waiting for a (re)try and buffered ones never;
 * 2. then spent timers (no next due moment and not paused, not disabled, not declared: fired
 *    delays and `at` timers, runtime schedules past their end bound or maximum count) last
 *    changed longer than `retentionMs` ago and with no occurrence active (one pending, waiting
 *    for a retry or buffered keeps it; an ended occurrence, a snapshot of what it called, may
 *    outlive its timer until its own age deletes it). Declared schedules are
 *    never deleted: the manifest owns them, and a deleted one would come back from the next
 *    registration with its occurrence count at 0.
 *
 * States:
 * - **off** (`retentionMs` 0): nothing armed, nothing deleted.
 * - **armed**: one timer on the owner's TimerHost, one hour after the last tick (a sweep runs at
 *   `start` too). Never a polling loop: one timer per hour.
 * - **sweeping**: chunks of at most `chunkRows` rows, each its own committer unit, with a turn of
 *   the event loop between chunks so requests and claims keep committing; occurrences first, then
 *   timers; a chunk smaller than `chunkRows` ends its table. A tick during a sweep re-arms and
 *   asks for one more sweep after it.
 * - **stopped**: disarmed; a running sweep ends after its current chunk (`stop` resolves then).
 *
 * Failure semantics: each chunk commits on its own and nothing depends on the rows being gone, so
 * a crash or a failed chunk (logged; the sweep ends there) leaves rows that the next sweep
 * deletes. A chunk is ordered by the committer with every other unit: a timer replaced, triggered
 * or given an occurrence in an earlier unit is no longer a candidate in a later one.
 *
 * Trade-off: work retried under a cause finds what its first run did. Schedule, Unschedule,
 * Delay and CancelDelay find their event in the log (service.ts), which the sweep never touches;
 * but TriggerTimer finds its occurrence row and BackfillTimer the moments already made, so a
 * repeat after those rows were swept (a redelivery or a replayed processor cursor older than the
 * retention, a backfill over an old range) makes the occurrences again, with the same occurrence
 * and call ids: ActionCalls answers a completed call from the log, a failed or skipped one
 * runs. So the retention must stay far longer than any retry horizon: the default 7 days against
 * seconds of processor and occurrence retries. ListTimers and GetTimer no longer show swept
 * timers.
 */
export class TimerRetention {
  private readonly rows: RetentionStatements;
  private readonly chunkRows: number;
  private readonly listeners: ((result: SweepResult) => void)[] = [];
  private handle: unknown = null;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;
  /** Rows deleted since the owner started, per table (the `chronolog_retention_swept_total` counter). */
  readonly totals = { timers: 0, timer_occurrences: 0 };
  /** Sweeps ended since the owner started. */
  sweeps = 0;

  constructor(private readonly options: TimerRetentionOptions) {
    const { retentionMs, chunkRows = defaultRetentionChunkRows } = options;
    if (!Number.isSafeInteger(retentionMs) || retentionMs < 0 || retentionMs > maxTimerRetentionMs) throw new Error(`timer retention must be from 0 to ${maxTimerRetentionMs} ms, got ${retentionMs}`);
    if (!Number.isSafeInteger(chunkRows) || chunkRows < 1) throw new Error(`timer retention chunk must be at least 1 row, got ${chunkRows}`);
    this.rows = retentionStatements(options.db);
    this.chunkRows = chunkRows;
  }

  /** The retention in ms (0: off). */
  get retentionMs(): number {
    return this.options.retentionMs;
  }

  /** Calls `listener` after every sweep (with what it deleted). */
  onSweep(listener: (result: SweepResult) => void): void {
    this.listeners.push(listener);
  }

  /** Arms the hourly sweep and starts one now (not awaited: a large backlog never delays the owner's start). Nothing when off. */
  start(): void {
    const { retentionMs, logger } = this.options;
    if (retentionMs === 0) {
      logger.info("timer retention off: spent timers and ended occurrences are kept forever");
      return;
    }
    logger.info({ retentionMs, chunkRows: this.chunkRows }, "timer retention: spent timers and ended occurrences older than the retention are deleted every hour");
    this.tick();
  }

  /** Disarms; resolves once a running sweep has ended (after its current chunk). Call before the store closes. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.handle !== null) this.options.timers.clearTimer(this.handle);
    this.handle = null;
    await this.running;
  }

  /** A tick of the hourly timer (and the one at start): arms the next, then sweeps (or asks for one more after a running sweep). */
  private tick(): void {
    this.handle = null;
    if (this.stopped) return;
    this.handle = this.options.timers.setTimer(() => this.tick(), retentionSweepIntervalMs);
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.loop().finally(() => (this.running = null));
  }

  private async loop(): Promise<void> {
    do {
      this.again = false;
      await this.sweep();
    } while (this.again && !this.stopped);
  }

  /** One sweep: chunks of ended occurrences, then of spent timers, until a chunk comes back short. Never rejects. */
  private async sweep(): Promise<void> {
    const { clock, committer, logger, retentionMs } = this.options;
    const result: SweepResult = { startedAtMs: clock.now(), occurrences: 0, timers: 0, chunks: 0, complete: false };
    const started = performance.now();
    const tables = [
      { table: "timer_occurrences", key: "occurrences", remove: (beforeMs: number) => this.rows.deleteEndedOccurrences(beforeMs, this.chunkRows) },
      { table: "timers", key: "timers", remove: (beforeMs: number) => this.rows.deleteSpentTimers(beforeMs, this.chunkRows) },
    ] as const;
    try {
      for (const { table, key, remove } of tables) {
        for (;;) {
          if (this.stopped) throw stopping;
          const deleted = await committer.submit((tx) => remove(tx.now - retentionMs));
          result.chunks++;
          result[key] += deleted;
          this.totals[table] += deleted;
          if (deleted < this.chunkRows) break;
          await new Promise((resolve) => setImmediate(resolve)); // a turn for everything else between chunks
        }
      }
      result.complete = true;
    } catch (e) {
      if (e !== stopping) logger.error({ err: e, ...result }, "timer retention: a sweep chunk failed; the next sweep tries again");
    }
    const details = { occurrences: result.occurrences, timers: result.timers, chunks: result.chunks, retentionMs, durationMs: Math.round(performance.now() - started) };
    if (result.occurrences + result.timers > 0) logger.info(details, "timer retention: deleted ended occurrences and spent timers older than the retention");
    else logger.debug(details, "timer retention: nothing to delete");
    this.sweeps++;
    for (const listener of this.listeners) listener(result);
  }
}

/** Thrown inside a sweep when the owner stops: ends it quietly. */
const stopping = Symbol("stopping");

/**
 * Registers `chronolog_retention_swept_total{table}` on an owner's registry (metrics.ts
 * style: read from the sweeper when scraped): rows the retention sweep deleted since the owner
 * started, `table` `timers` or `timer_occurrences`.
 */
export function retentionMetrics(registry: Registry, retention: TimerRetention): void {
  new Counter({
    name: "chronolog_retention_swept_total",
    help: "Rows the timer retention sweep deleted since the owner started: spent timers (table timers) and ended occurrences (table timer_occurrences) older than the retention.",
    labelNames: ["table"] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [table, n] of Object.entries(retention.totals)) this.inc({ table }, n);
    },
  });
}
