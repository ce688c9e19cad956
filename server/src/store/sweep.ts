import { Counter, type Registry } from "prom-client";
import type { Clock, TimerHost } from "../clock.js";
import type { Logger } from "../logger.js";
import type { Committer } from "./committer.js";

/** Default most rows one chunk (one committer unit) of a sweep deletes: 5,000. */
const defaultRetentionChunkRows = 5_000;
/** Time between two sweeps: one hour, in ms. */
const retentionSweepIntervalMs = 3_600_000;
/** Longest retention that may be set: 100 years, in ms (0 turns retention off). */
const maxRetentionMs = 100 * 366 * 86_400_000;

/** A retention in ms from a config's `..._days` key (absent: `defaultMs`; 0: off). */
export function retentionMsOfDays(days: number | undefined, defaultMs: number): number {
  return days === undefined ? defaultMs : Math.round(days * 86_400_000);
}

/** One table a sweep deletes from: `remove` deletes up to `limit` rows last changed before `beforeMs`, oldest first, and returns how many. */
export interface SweptTable<K extends string> {
  table: string;
  /** The key of the count in a {@link SweepResult}. */
  key: K;
  remove(beforeMs: number, limit: number): number;
}

/** What one sweep did, for listeners (tests wait on it) and the log: rows deleted per table key. */
export type SweepResult<K extends string = string> = {
  /** The clock's time when the sweep began, ms since the epoch. */
  startedAtMs: number;
  /** Committer units (chunks of at most `chunkRows` rows) the sweep committed. */
  chunks: number;
  /** False when a chunk failed or the owner stopped mid-way (the rest waits for the next sweep). */
  complete: boolean;
} & Record<K, number>;

/** What a {@link RetentionSweep} needs. */
export interface RetentionSweepOptions {
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
 * An hourly sweep deleting rows older than a retention from some tables, in bounded chunks off
 * the hot path (time/retention.ts and actions/retention.ts say which rows).
 *
 * States:
 * - **off** (`retentionMs` 0): nothing armed, nothing deleted.
 * - **armed**: one timer on the owner's TimerHost, one hour after the last tick (a sweep runs at
 *   `start` too). Never a polling loop: one timer per hour.
 * - **sweeping**: chunks of at most `chunkRows` rows, each its own committer unit, with a turn of
 *   the event loop between chunks so requests keep committing; the tables in order; a chunk
 *   smaller than `chunkRows` ends its table. A tick during a sweep re-arms and asks for one more
 *   sweep after it.
 * - **stopped**: disarmed; a running sweep ends after its current chunk (`stop` resolves then).
 *
 * Failure semantics: each chunk commits on its own and nothing depends on the rows being gone, so
 * a crash or a failed chunk (logged; the sweep ends there) leaves rows that the next sweep
 * deletes. A chunk is ordered by the committer with every other unit.
 */
export class RetentionSweep<K extends string> {
  private readonly chunkRows: number;
  private readonly listeners: ((result: SweepResult<K>) => void)[] = [];
  private handle: unknown = null;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;
  /** Rows deleted since the owner started, per table (the `chronolog_retention_swept_total` counter). */
  readonly totals: Record<string, number> = {};
  /** Sweeps ended since the owner started. */
  sweeps = 0;

  /** `name` names the sweep in logs and errors (e.g. "timer retention"); `rows` says what it deletes (e.g. "spent timers and ended occurrences"). */
  constructor(
    private readonly options: RetentionSweepOptions,
    private readonly name: string,
    private readonly rows: string,
    private readonly tables: SweptTable<K>[],
  ) {
    const { retentionMs, chunkRows = defaultRetentionChunkRows } = options;
    if (!Number.isSafeInteger(retentionMs) || retentionMs < 0 || retentionMs > maxRetentionMs)
      throw new Error(`${name} must be from 0 to ${maxRetentionMs} ms, got ${retentionMs}`);
    if (!Number.isSafeInteger(chunkRows) || chunkRows < 1) throw new Error(`${name} chunk must be at least 1 row, got ${chunkRows}`);
    this.chunkRows = chunkRows;
    for (const { table } of tables) this.totals[table] = 0;
  }

  /** The retention in ms (0: off). */
  get retentionMs(): number {
    return this.options.retentionMs;
  }

  /** Calls `listener` after every sweep (with what it deleted). */
  onSweep(listener: (result: SweepResult<K>) => void): void {
    this.listeners.push(listener);
  }

  /** Arms the hourly sweep and starts one now (not awaited: a large backlog never delays the owner's start). Nothing when off. */
  start(): void {
    const { retentionMs, logger } = this.options;
    if (retentionMs === 0) {
      logger.info(`${this.name} off: ${this.rows} are kept forever`);
      return;
    }
    logger.info({ retentionMs, chunkRows: this.chunkRows }, `${this.name}: ${this.rows} older than the retention are deleted every hour`);
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

  /** One sweep: chunks of each table in turn, until a chunk comes back short. Never rejects. */
  private async sweep(): Promise<void> {
    const { clock, committer, logger, retentionMs } = this.options;
    const deleted = Object.fromEntries(this.tables.map((t) => [t.key, 0])) as Record<K, number>;
    const result = { startedAtMs: clock.now(), chunks: 0, complete: false, ...deleted } as SweepResult<K>;
    const started = performance.now();
    try {
      for (const { table, key, remove } of this.tables) {
        for (;;) {
          if (this.stopped) throw stopping;
          const n = await committer.submit((tx) => remove(tx.now - retentionMs, this.chunkRows));
          result.chunks++;
          (result as Record<K, number>)[key] += n;
          this.totals[table] += n;
          if (n < this.chunkRows) break;
          await new Promise((resolve) => setImmediate(resolve)); // a turn for everything else between chunks
        }
      }
      result.complete = true;
    } catch (e) {
      if (e !== stopping) logger.error({ err: e, ...(result as Record<string, unknown>) }, `${this.name}: a sweep chunk failed; the next sweep tries again`);
    }
    const counts = Object.fromEntries(this.tables.map((t) => [t.key, (result as Record<K, number>)[t.key]]));
    const details = { ...counts, chunks: result.chunks, retentionMs, durationMs: Math.round(performance.now() - started) };
    if (Object.values<number>(counts).some((n) => n > 0)) logger.info(details, `${this.name}: deleted ${this.rows} older than the retention`);
    else logger.debug(details, `${this.name}: nothing to delete`);
    this.sweeps++;
    for (const listener of this.listeners) listener(result);
  }
}

/** Thrown inside a sweep when the owner stops: ends it quietly. */
const stopping = Symbol("stopping");

/**
 * Registers `chronolog_retention_swept_total{table}` on an owner's registry (metrics.ts
 * style: read from the sweeps when scraped): rows the retention sweeps deleted since the owner
 * started, `table` `timers`, `timer_occurrences` or `action_calls`.
 */
export function retentionMetrics(registry: Registry, ...sweeps: { totals: Record<string, number> }[]): void {
  new Counter({
    name: "chronolog_retention_swept_total",
    help: "Rows the retention sweeps deleted since the owner started: spent timers (table timers), ended occurrences (table timer_occurrences) and finished action calls (table action_calls) older than their retention.",
    labelNames: ["table"] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const sweep of sweeps) for (const [table, n] of Object.entries(sweep.totals)) this.inc({ table }, n);
    },
  });
}
