import type { EventRecord, EventStatements } from "./events.js";
import type { Db } from "./sql.js";
import type { Transactions } from "./transactions.js";

/**
 * What a unit of work sees inside a commit: the commit's time, the events
 * table, and `append`, which gives the next dense seq.
 */
export interface Tx {
  /** Commit time in ms since the epoch (UTC), the same for the whole transaction (a batch, or a slice of a large one). */
  readonly now: number;
  readonly db: Db;
  readonly events: EventStatements;
  /** Appends an event with the next seq and the commit time; returns it. */
  append(event: Omit<EventRecord, "seq" | "at">): EventRecord;
}

/** A unit of work run inside the group commit; it may throw to undo itself only. */
export type Work<T> = (tx: Tx) => T;

/**
 * A unit of work in steps (Committer.submitInSteps): a generator that yields between its steps
 * and returns the unit's result; it may throw to undo itself only, as a {@link Work}.
 */
export type StepWork<T> = (tx: Tx) => Generator<void, T, void>;

/** What a unit came to: its result, or (`ok` false) what it threw. */
export interface Outcome {
  ok: boolean;
  value: unknown;
}

/** A unit in steps that has begun ({@link startSteps}): its savepoint is set; `mark` is the head before it. */
export interface SteppingUnit {
  work: StepWork<unknown>;
  steps: Generator<void, unknown, void> | undefined;
  mark: number;
}

/** Runs `work` inside its savepoint: released when it returns, rolled back to when it throws. */
export function runUnit(control: Transactions, work: Work<unknown>, tx: Tx): Outcome {
  control.savepoint();
  try {
    const value = work(tx);
    control.release();
    return { ok: true, value };
  } catch (error) {
    control.rollbackTo();
    return { ok: false, value: error };
  }
}

/** Begins a unit in steps: sets its savepoint; its first step runs with {@link step}. */
export function startSteps(control: Transactions, work: StepWork<unknown>, head: number): SteppingUnit {
  control.savepoint();
  return { work, steps: undefined, mark: head };
}

/**
 * Runs `unit`'s steps until it ends (its outcome: its savepoint released, or rolled back to when
 * it threw) or, between two steps, `until` (performance.now(), ms) has passed (undefined). At least
 * one step runs.
 */
export function step(control: Transactions, unit: SteppingUnit, tx: Tx, until: number): Outcome | undefined {
  try {
    unit.steps ??= unit.work(tx);
    for (;;) {
      const next = unit.steps.next();
      if (next.done) {
        control.release();
        return { ok: true, value: next.value };
      }
      if (performance.now() >= until) return undefined;
    }
  } catch (error) {
    control.rollbackTo();
    return { ok: false, value: error };
  }
}

/** A {@link StepWork} body that maps `items` with `f`, one item a step; returns the results in order. */
export function* stepEach<I, R>(items: readonly I[], f: (item: I, index: number) => R): Generator<void, R[], void> {
  const results: R[] = [];
  for (let i = 0; i < items.length; i++) {
    if (i > 0) yield;
    results.push(f(items[i], i));
  }
  return results;
}
