import type { ExecutorSession } from "../executors/session.js";
import type { CallIdentity } from "./records.js";

/** The caller's side of a call: its cancellation and what is left of its deadline. */
export interface CallerContext {
  /** Aborted when the caller cancels or its deadline passes; absent when the caller never goes away (the owner's clock and pulses). */
  signal?: AbortSignal;
  /** ms left before the caller's deadline (<= 0: passed); undefined when it has none. */
  remainingMs(): number | undefined;
}

/**
 * The caller of a call the owner makes itself (time's occurrences, pulses): no signal, since it
 * never goes away (shutdown ends such calls through ActionCalls.stop), and no deadline. A new
 * object each time (a run counts its callers). Not a shared AbortSignal: Node's EventTarget scans
 * every listener already on a signal when one is added, so one signal for thousands of calls was
 * quadratic; nor an AbortController per call (5-10 µs a call, for a signal that never fires).
 */
export function ownerCaller(): CallerContext {
  return { remainingMs: noDeadline };
}

function noDeadline(): undefined {
  return undefined;
}

function ignore(): void {}

/** How one attempt ended, as the run sees it. */
export type AttemptEnd =
  | { kind: "ok"; output: Record<string, unknown> }
  /** `terminal`: the executor said the error is final (a TerminalError): time does not try the occurrence again. */
  | { kind: "error"; error: string; terminal: boolean }
  | { kind: "timeout"; error: string }
  /** The executor's session ended before it answered. */
  | { kind: "gone" }
  /** The owner is stopping: nothing more is written; the next owner runs the call again. */
  | { kind: "stopping" };

/** One attempt sent to an executor and not yet answered. */
export interface Invocation {
  /** `callId#attempt`. */
  id: string;
  run: Run;
  session: ExecutorSession;
  /** The run timeout, re-armed by progress; once it passed, the end of the action's grace. */
  timer: NodeJS.Timeout | null;
  /** Set when the run timeout passed (the executor was told to cancel): the error the call fails with unless an OK answer comes within the grace. */
  timedOut: string | null;
  /** Ends the attempt (once; later calls do nothing); `startedLateMs`: a held Invocation's reported delay (ms). */
  end(result: AttemptEnd, startedLateMs?: number): void;
}

/**
 * One call id being run in this owner: its attempts until it completes or
 * fails, and the callers waiting for it (a duplicate call with the same id
 * joins them instead of running again). `done` settles once, with the
 * output or the error every waiter gets.
 */
export class Run {
  /** The callers still waiting; when the last one leaves, `abandoned` aborts. */
  readonly waiters = new Set<CallerContext>();
  /**
   * Aborted (with the last caller's error) when every caller has gone; null when the caller that
   * made the run has no signal (the owner's clock and pulses): it never leaves, so the run is never
   * abandoned, and no AbortController is made for it (5-10 µs a call).
   */
  readonly abandoned: AbortController | null;
  readonly done: Promise<Record<string, unknown>>;
  /** The attempt in flight, if any. */
  invocation: Invocation | null = null;
  /** A CancelInvocation was sent for the attempt in flight. */
  cancelSent = false;
  /** Time was told when this run's action started (the first start's lateness counts). */
  started = false;
  /** The running attempt's trace context, sent with its invocation (tracing/work.ts); undefined when traces are not recorded. */
  trace: string | undefined = undefined;
  private settle!: { resolve(output: Record<string, unknown>): void; reject(error: unknown): void };

  constructor(
    readonly call: CallIdentity,
    /** The attempt about to run (from 1). */
    public attempt: number,
    /** Why the attempt before failed ("" for a first run): recorded in `action.retried`. */
    public previousError: string,
    /** The caller that made the run can leave (it has a signal). */
    abandonable: boolean,
  ) {
    this.abandoned = abandonable ? new AbortController() : null;
    this.done = new Promise((resolve, reject) => (this.settle = { resolve, reject }));
    this.done.catch(ignore); // waiters may all be gone; never an unhandled rejection
  }

  /** Settles `done` with the output. */
  resolve(output: Record<string, unknown>): void {
    this.settle.resolve(output);
  }

  /** Settles `done` with an error. */
  reject(error: unknown): void {
    this.settle.reject(error);
  }
}
