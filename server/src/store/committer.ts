import type { Clock } from "../clock.js";
import { ChronologError } from "../errors.js";
import type { Trust } from "../trust.js";
import type { EventRecord, EventStatements } from "./events.js";
import { readBatchAhead, type AppendAhead, type AppendsReadAhead, type ReadAheadKeys } from "./read-ahead.js";
import { GuardFailedError, type Db } from "./sql.js";
import type { Transactions } from "./transactions.js";
import { runUnit, startSteps, step, type Outcome, type StepWork, type SteppingUnit, type Tx, type Work } from "./units.js";

export { stepEach, type StepWork, type Tx, type Work } from "./units.js";

/** What a commit changed, published after the fsync. */
export interface CommitInfo {
  /** The log's last seq after the commit. */
  head: number;
  /** Units of work in the batch. */
  batchSize: number;
  /** Time from the transaction's start until it was durable (ms). */
  durationMs: number;
  /** The events the batch appended, in seq order (through `head`). */
  events: EventRecord[];
}

/** How a unit is queued ({@link Committer.submit}). */
export interface SubmitOptions {
  deferrable?: boolean;
  lookups?: string[];
  readAhead?: ReadAheadKeys | ReadAheadKeys[];
  appends?: AppendAhead[];
  pure?: boolean;
  first?: boolean;
}

/** How a {@link Committer} runs its transactions and reports faults. */
export interface CommitterOptions {
  /** How transactions begin, end and become durable: the store's (Store.transactions). */
  transactions: Transactions;
  /** Told about an exception thrown by an onCommit listener (default: printed to stderr). */
  onListenerError?: (error: unknown) => void;
  /**
   * Told when the committer can no longer trust its state (the owner stops): making a commit
   * durable failed, or the next seq was already taken (another writer on the same database).
   */
  onFatal?: (error: unknown) => void;
  /** Under load, the least time between the starts of two batches, ms (default {@link defaultBatchSpacingMs}). */
  batchSpacingMs?: number;
  /** The same when every queued unit is deferrable (see {@link Committer.submit}), ms (default {@link defaultDeferredSpacingMs}). */
  deferredSpacingMs?: number;
  /** Durable commits are answered, and told to the listeners, only while trusted (a leader's lease: trust.ts). */
  trust?: Trust;
}

/** Most time one slice of a batch runs units before it commits and yields the event loop, ms. */
const sliceMs = 2;
/**
 * Under load, the least time between the starts of two batches, ms: after a batch of at least
 * {@link loadedBatchUnits} units the next one waits this long from its start, and the units that
 * arrive meanwhile join it. Fewer, larger commits: every page a commit touches is written to the
 * WAL once per commit (bench/timers at 2,000 calls/s: 63 KB written and 479 µs of owner CPU per
 * call without it, 51-58 KB and 390-415 µs with it). A small batch (one caller waiting on each
 * answer, an idle owner) is followed at once.
 */
const defaultBatchSpacingMs = 5;
/**
 * The spacing when every queued unit is deferrable, ms: work no caller waits on that has time to
 * spare (a timer's claim and its call's start inside the clock's lookahead, a time-made call's end).
 * bench/timers at 2,000 calls/s: 41 units per commit instead of 16, the owner's CPU per call
 * 389-439 µs instead of 472-482, p99 lateness 6-9 ms in 4 runs against 7-42 at 5 ms. Callers
 * waiting on a commit (Emit, Call) keep {@link defaultBatchSpacingMs}: 16 callers in a closed
 * loop would otherwise be held to 16 commits per 10 ms.
 */
const defaultDeferredSpacingMs = 10;
/** A batch this large (units) means load: the next one is spaced ({@link defaultBatchSpacingMs}). */
const loadedBatchUnits = 16;

/** A slice whose unit in steps yielded the event loop: its transaction stays open, and the unit goes on on the next turn. */
interface OpenSlice {
  tx: Tx;
  from: number;
  headBefore: number;
  unit: SteppingUnit;
}

interface Pending {
  work: Work<unknown>;
  /** Event ids the unit looks up ({@link Committer.submit}'s `lookups`). */
  lookups: string[] | undefined;
  /** Keys of other tables it looks up ({@link Committer.submit}'s `readAhead`). */
  readAhead: ReadAheadKeys | ReadAheadKeys[] | undefined;
  /** Events it will append ({@link Committer.submit}'s `appends`). */
  appends: AppendAhead[] | undefined;
  /** The unit does nothing outside its transaction: it may be run again ({@link Committer.submit}'s `pure`). */
  pure: boolean;
  /** Runs before the batch's other units ({@link Committer.submit}'s `first`). */
  first: boolean;
  /** `work` is a {@link StepWork} ({@link Committer.submitInSteps}). */
  steps: boolean;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/**
 * The single writer (ARCHITECTURE "One writer, one commit pipeline").
 *
 * Group commit: units of work submitted while the event loop is busy are
 * collected and run in one transaction on the next turn (`setImmediate`) or,
 * after a loaded batch, {@link defaultBatchSpacingMs} after that one started;
 * each unit runs inside its own savepoint, so one failing unit undoes only
 * itself. A large batch runs in slices: after {@link sliceMs} of units the slice commits and the
 * rest continues on the next turn, so timers and I/O (a call sent at its moment)
 * never wait behind a whole batch; one fsync after the last slice covers them
 * all. Callers' promises settle, and commit listeners hear of it, only once the
 * commit is durable (`Transactions.sync`: on SQLite the WAL's fdatasync off the event loop, on PostgreSQL its COMMIT).
 * While a batch waits for its fsync, the next one collects and commits when
 * that fsync ends: commits follow the disk's pace, each as large as the load
 * makes it (fewer, larger WAL writes), and no caller waits longer than it
 * would anyway (it needs the next fsync either way). {@link head} is the
 * last durable seq: readers of the log never see further.
 *
 * Failure semantics: a unit that throws is rolled back to its savepoint and
 * its caller gets the error; if COMMIT itself fails (disk full, I/O error),
 * that slice is rolled back and its callers, and those of the batch's slices
 * not yet run, get the error (the slices before it are made durable and
 * answered as usual). If the
 * fsync fails, every caller waiting for it gets the error and
 * `onFatal` is told (the owner stops: the page cache can no longer be
 * trusted). So is an append whose seq is already in the table: only another
 * writer on the same database can have taken it (should prevent that). Nothing is acknowledged that was not durable.
 */
export class Committer {
  private queue: Pending[] = [];
  /** Writes on another connection waiting for their turn between two batches ({@link outside}). */
  private turns: (() => Promise<void>)[] = [];
  /** Queued units that are not deferrable: while there is one, the batch keeps the shorter spacing. */
  private urgent = 0;
  /** When the scheduled flush runs (performance.now(), ms): by `flushTimer`, or on the next turn (-Infinity); Infinity: none is scheduled. */
  private flushAt = Infinity;
  private flushTimer: NodeJS.Timeout | undefined;
  /** A batch runs its slices or waits for its fsync: the next batch collects meanwhile and commits after it. */
  private busy = false;
  /** {@link stop} was called. */
  private stopped = false;
  /** The last committed seq (appends continue from it). */
  private headSeq: number;
  /** The last durable seq. */
  private durableSeq: number;
  private lastCommitAt = 0;
  /** When the last batch of at least {@link loadedBatchUnits} units started (performance.now(), ms). */
  private lastLoadedFlushAt = -Infinity;
  private readonly listeners: ((info: CommitInfo) => void)[] = [];
  private readonly appendListeners: ((tx: Tx, event: EventRecord) => void)[] = [];
  private readonly appendsReadAheads: AppendsReadAhead[] = [];
  /** The running batch's start: the head before it, and whether it took its lookups to be new. */
  private batchStart = { head: 0, assumeAbsent: false };
  /** The events appended by the running batch's units, those of units undone included (their seqs are appended again). */
  private appended: EventRecord[] = [];
  private readonly control: Transactions;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly events: EventStatements,
    private readonly options: CommitterOptions,
  ) {
    this.headSeq = events.head();
    this.durableSeq = this.headSeq;
    this.control = options.transactions;
  }

  /** The last durable seq (what the log's readers may see). */
  get head(): number {
    return this.durableSeq;
  }

  /**
   * Stops taking work (a later submit is refused UNAVAILABLE) and resolves once what was queued
   * is committed and durable: the store may close then (its WAL's fsync must not be cut off).
   */
  async stop(): Promise<void> {
    this.stopped = true;
    while (this.busy || this.queue.length > 0 || this.turns.length > 0) await new Promise((resolve) => setTimeout(resolve, 1));
  }

  /** Calls `listener` after every commit that succeeded. */
  onCommit(listener: (info: CommitInfo) => void): void {
    this.listeners.push(listener);
  }

  /**
   * Calls `listener` inside the unit after each event it appends, with the unit's transaction: what
   * the event does to other rows commits with it (a cancel on an event, time/cancel-on.ts); what
   * the listener throws undoes the unit.
   */
  afterAppend(listener: (tx: Tx, event: EventRecord) => void): void {
    this.appendListeners.push(listener);
  }

  /**
   * Reads ahead of each batch what `readAhead` names for the events the batch's units say they
   * will append (their `appends`): what an {@link afterAppend} listener looks up for them. Where
   * it names nothing (SQLite's reads are not round trips), nothing is read.
   */
  readAheadOfAppends(readAhead: AppendsReadAhead): void {
    this.appendsReadAheads.push(readAhead);
  }

  /** Whether anything is read ahead for the events units will append ({@link readAheadOfAppends}): else they need not say. */
  get readsAheadOfAppends(): boolean {
    return this.appendsReadAheads.length > 0;
  }

  /**
   * Queues `work` for the next group commit; resolves with its result once durable.
   * `deferrable`: no caller waits on this unit and it has time to spare, so under load its batch
   * may start up to {@link defaultDeferredSpacingMs} after the last one (fewer, larger commits);
   * a unit that is not deferrable brings the batch forward again. `lookups`: event ids the unit
   * looks up (`tx.events.findById`), read for the whole batch in one statement where each lookup
   * would be a round trip (EventStatements.prefetch); `readAhead`: the same for the keys it looks
   * up in other tables (the timers of delays with client ids, the streams emits append to), of
   * one table or several;
   * `appends`: the events it will append, as far as known ({@link readAheadOfAppends}). `pure`: the unit does nothing but through
   * its transaction (no state of its own changes), so it may run again: a batch of pure units
   * takes the ids it looks up to be new without reading them, and runs again, reading them, in the
   * rare case one is found (GuardFailedError). `first`: the unit runs before the batch's units
   * submitted without it (in the order of submission within each group), so what its readAhead
   * read is what it finds; no caller has an answer from the batch before all of it is durable,
   * so the batch's units may run in any order.
   */
  submit<T>(work: Work<T>, options: SubmitOptions = {}): Promise<T> {
    return this.enqueue(work, false, options);
  }

  /**
   * Queues a large unit that runs in steps ({@link StepWork}): while its slice's time is up between
   * two steps it yields the event loop (timers, I/O, the lease) and goes on on the next turn, its
   * transaction and savepoint kept open, so no caller waits behind the whole unit and it still
   * commits, or is undone, as one (a DelayBatch of 1,000 delays, say). Between its steps the
   * store's other readers are as between the slices of a batch: on SQLite, whose one connection
   * reads inside the open transaction, they may see what its steps wrote so far (a unit that then
   * throws takes that back); on PostgreSQL they read what is committed. Options as {@link submit}'s.
   */
  submitInSteps<T>(work: StepWork<T>, options: SubmitOptions = {}): Promise<T> {
    return this.enqueue(work, true, options);
  }

  /**
   * Runs `write`, another connection's write to the database (free pages returned in SQLite's checkpoint worker), between
   * two batches: after the running one, before the next. The owner's connection never waits on the write lock; the event
   * loop stays free; queued units wait as long as `write` takes (keep it short).
   */
  outside<T>(write: () => Promise<T>): Promise<T> {
    if (this.stopped) return Promise.reject(new ChronologError("unavailable", "the owner is stopping: nothing was written"));
    return new Promise<T>((resolve, reject) => {
      this.turns.push(async () => {
        try {
          resolve(await write());
        } catch (error) {
          reject(error);
        }
      });
      this.schedule();
    });
  }

  private enqueue<T>(work: Work<T> | StepWork<T>, steps: boolean, options: SubmitOptions): Promise<T> {
    if (this.stopped) return Promise.reject(new ChronologError("unavailable", "the owner is stopping: nothing was written"));
    return new Promise<T>((resolve, reject) => {
      this.queue.push({
        work: work as Work<unknown>,
        steps,
        lookups: options.lookups,
        readAhead: options.readAhead,
        appends: this.appendsReadAheads.length > 0 ? options.appends : undefined,
        pure: options.pure ?? false,
        first: options.first ?? false,
        resolve: resolve as (v: unknown) => void,
        reject,
      });
      if (!options.deferrable) this.urgent++;
      this.schedule();
    });
  }

  /**
   * Flushes on the next turn or, after a loaded batch, {@link defaultBatchSpacingMs} after it started
   * ({@link defaultDeferredSpacingMs} while every queued unit is deferrable); a scheduled flush is
   * brought forward when an urgent unit arrives. Not while a batch runs or waits for its fsync (its
   * end schedules the flush).
   */
  private schedule(): void {
    if (this.busy) return;
    const turn = this.turns.shift();
    if (turn) {
      this.busy = true;
      void turn().finally(() => {
        this.busy = false;
        this.schedule();
      });
      return;
    }
    if (this.queue.length === 0) return;
    const spacing = this.urgent > 0 ? (this.options.batchSpacingMs ?? defaultBatchSpacingMs) : (this.options.deferredSpacingMs ?? defaultDeferredSpacingMs);
    const at = this.lastLoadedFlushAt + spacing;
    if (at >= this.flushAt) return; // the scheduled flush comes no later
    clearTimeout(this.flushTimer);
    const wait = at - performance.now();
    if (wait > 0) {
      this.flushAt = at;
      this.flushTimer = setTimeout(() => this.flush(), wait);
    } else {
      this.flushAt = -Infinity;
      this.flushTimer = undefined;
      setImmediate(() => this.flush());
    }
  }

  private flush(): void {
    this.flushAt = Infinity;
    this.flushTimer = undefined;
    if (this.busy) return; // a write outside the batches took its turn first: its end schedules the flush
    this.urgent = 0;
    const queued = this.queue;
    this.queue = [];
    if (queued.length === 0) return;
    const batch = queued.some((item) => item.first) ? [...queued.filter((item) => item.first), ...queued.filter((item) => !item.first)] : queued;
    if (batch.length >= loadedBatchUnits) this.lastLoadedFlushAt = performance.now();
    this.busy = true;
    this.begin(
      batch,
      performance.now(),
      batch.every((item) => item.pure),
    );
  }

  /** Runs `batch` from its start; `assumeAbsent`: the ids it looks up are taken to be new (EventStatements.prefetch). */
  private begin(batch: Pending[], started: number, assumeAbsent: boolean): void {
    this.appended = [];
    this.batchStart = { head: this.headSeq, assumeAbsent };
    let reading: Promise<void> | undefined;
    try {
      reading = this.prefetch(batch, assumeAbsent);
    } catch (error) {
      return this.afterSlice(this.sliceFailed(batch, 0, this.headSeq, error), [], started);
    }
    if (!reading) return this.runSlice(batch, [], started);
    reading.then(
      () => this.runSlice(batch, [], started),
      (error) => this.afterSlice(this.sliceFailed(batch, 0, this.headSeq, error), [], started),
    );
  }

  /** Reads what the batch's units look up, before they run ({@link readBatchAhead}). */
  private prefetch(batch: Pending[], assumeAbsent: boolean): Promise<void> | undefined {
    return readBatchAhead(this.db, this.events, batch, this.appendsReadAheads, assumeAbsent);
  }

  /**
   * Runs the batch's next units for up to {@link sliceMs} in one transaction, then ends the slice
   * ({@link afterSlice}); `open`: a slice whose unit in steps yielded, continued.
   */
  private runSlice(batch: Pending[], outcomes: Outcome[], started: number, open?: OpenSlice): void {
    const from = open?.from ?? outcomes.length;
    const headBefore = open?.headBefore ?? this.headSeq;
    const tx = open?.tx ?? this.transaction();
    const until = performance.now() + sliceMs;
    let ended: void | Promise<void>;
    try {
      if (open) this.control.resume();
      else this.control.begin();
      let unit = open?.unit;
      do {
        if (!unit) {
          const item = batch[outcomes.length];
          if (!item.steps) {
            outcomes.push(this.runUnit(item.work, tx));
            continue;
          }
          unit = startSteps(this.control, item.work as unknown as StepWork<unknown>, this.headSeq);
        }
        const outcome = step(this.control, unit, tx, until);
        if (!outcome) {
          this.control.pause();
          const slice = { tx, from, headBefore, unit };
          setImmediate(() => this.runSlice(batch, outcomes, started, slice));
          return;
        }
        if (!outcome.ok) this.headSeq = unit.mark;
        outcomes.push(outcome);
        unit = undefined;
      } while (outcomes.length < batch.length && performance.now() < until);
      ended = this.control.commitSlice(outcomes.length === batch.length);
    } catch (error) {
      return this.afterSlice(this.sliceFailed(batch, from, headBefore, error), outcomes.slice(0, from), started);
    }
    if (!ended) return this.afterSlice(batch, outcomes, started);
    ended.then(
      () => this.afterSlice(batch, outcomes, started),
      (error) => {
        if (this.runAgainReading(batch, error, started)) return this.control.rollback(true);
        this.afterSlice(this.sliceFailed(batch, from, headBefore, error), outcomes.slice(0, from), started);
      },
    );
  }

  /**
   * When `error` says an id the batch took to be new is in the log (GuardFailedError): nothing of
   * it was committed, so its pure units run again, reading the ids first; true then.
   */
  private runAgainReading(batch: Pending[], error: unknown, started: number): boolean {
    if (!(error instanceof GuardFailedError) || !this.batchStart.assumeAbsent) return false;
    this.headSeq = this.batchStart.head;
    setImmediate(() => this.begin(batch, started, false));
    return true;
  }

  /** Undoes a slice that failed outside its units (from unit `from` on) and rejects those units; returns the batch without them. */
  private sliceFailed(batch: Pending[], from: number, headBefore: number, error: unknown): Pending[] {
    this.control.rollback();
    this.headSeq = headBefore;
    for (const item of batch.slice(from)) item.reject(error);
    return batch.slice(0, from);
  }

  /** Continues with the next slice on the next turn, or makes the batch durable and answers it. */
  private afterSlice(batch: Pending[], outcomes: Outcome[], started: number): void {
    if (outcomes.length < batch.length) {
      setImmediate(() => this.runSlice(batch, outcomes, started));
      return;
    }
    if (batch.length === 0) {
      this.busy = false;
      return this.schedule();
    }
    const head = this.headSeq;
    const events = committedEvents(this.appended, head);
    this.control.sync().then(
      () => {
        const settle = () => {
          this.busy = false;
          this.settle(batch, outcomes, { head, batchSize: batch.length, durationMs: performance.now() - started, events });
          this.schedule();
        };
        const trust = this.options.trust;
        if (!trust || trust.trusted()) settle();
        else void trust.whenTrusted().then(settle);
      },
      (error) => {
        if (this.runAgainReading(batch, error, started)) return;
        this.busy = false;
        for (const item of batch) item.reject(error);
        this.options.onFatal?.(error);
        this.schedule();
      },
    );
  }

  /** Answers a durable batch's callers, then tells the listeners. */
  private settle(batch: Pending[], outcomes: Outcome[], info: CommitInfo): void {
    this.durableSeq = info.head;
    batch.forEach((item, i) => (outcomes[i].ok ? item.resolve(outcomes[i].value) : item.reject(outcomes[i].value)));
    for (const listener of this.listeners) {
      try {
        listener(info);
      } catch (error) {
        // A follower's fault (watchers, processors, timers) must not break the commit pipeline.
        (this.options.onListenerError ?? console.error)(error);
      }
    }
  }

  private runUnit(work: Work<unknown>, tx: Tx): Outcome {
    const mark = this.headSeq;
    const outcome = runUnit(this.control, work, tx);
    if (!outcome.ok) this.headSeq = mark;
    return outcome;
  }

  private transaction(): Tx {
    // Commit times never go backwards, even if the wall clock does.
    const now = Math.max(this.clock.now(), this.lastCommitAt);
    this.lastCommitAt = now;
    const tx: Tx = {
      now,
      db: this.db,
      events: this.events,
      append: (event) => {
        const record: EventRecord = { ...event, seq: this.headSeq + 1, at: now };
        try {
          this.events.insert(record);
        } catch (error) {
          if (isSeqTaken(error))
            this.options.onFatal?.(new Error(`seq ${record.seq} is already in the log: another writer uses this database (${(error as Error).message})`));
          throw error;
        }
        this.headSeq = record.seq;
        this.appended.push(record);
        for (const listener of this.appendListeners) listener(tx, record);
        return record;
      },
    };
    return tx;
  }
}

/** The error of an insert whose seq is in the events table already (SQLite's or PostgreSQL's words: the key of the table or of one of its partitions). */
function isSeqTaken(error: unknown): boolean {
  return error instanceof Error && (error.message.includes("UNIQUE constraint failed: events.seq") || /"events(_\d+)?_pkey"/.test(error.message));
}

/**
 * The events a batch committed, through `head`, from those its units appended: a unit undone
 * gave its seqs back, and the next unit's events took them (the later record of a seq is the one
 * committed); seqs past `head` were given back for good.
 */
function committedEvents(appended: EventRecord[], head: number): EventRecord[] {
  const first = appended[0]?.seq;
  if (first === undefined) return [];
  const events: EventRecord[] = [];
  for (const record of appended) if (record.seq <= head) events[record.seq - first] = record;
  return events;
}
