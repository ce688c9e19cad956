import type { JsonObject } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { Clock, TimerHost } from "../clock.js";
import { takeAnswer } from "../executors/answered.js";
import type { ExecutorSession } from "../executors/session.js";
import type { LiveCauses } from "../log/causes.js";
import type { Logger } from "../logger.js";
import type { AttemptEnd, Invocation, Run } from "./run.js";
import { traceCarrier } from "../tracing/trace-context.js";

// Sending a call's attempts to executors: the Invocation written on the session's stream (held
// for its moment when the executor holds, or held in the owner until then when it does not),
// its run timeout and grace, its cancel, and the executor's answer and progress.

/** An executor's answer to an invocation. */
export interface InvocationAnswer {
  ok: boolean;
  output: Record<string, unknown>;
  error: string;
  /** The executor marked the error final (Outcome.TERMINAL_ERROR, the SDKs' TerminalError): retrying the same input would fail the same way. */
  terminal: boolean;
  /** For a held invocation: ms after its hold ended that the action started (the executor's own delay). */
  startedLateMs: number;
}

/** How an executor's answer was taken: like acks, stale and unknown answers change nothing. */
export type ResultVerdict = "accepted" | "unknown" | "stale";

/** How long after a run's grace (past its timeout and cancel) an executor that still holds the invocation's credit is warned of, ms. */
export const unansweredWarnMs = 10_000;

/** Where the owner is in its stop (ActionCalls.stop sets it; its Invocations read it). */
export interface StopState {
  /** The owner began stopping: new calls are refused (but under a cause), held attempts are not sent, runs get the grace. */
  stopping: boolean;
  /** The grace is over: nothing more is started or written, callers still waiting get UNAVAILABLE. */
  stopped: boolean;
}

/** What {@link Invocations} needs (a part of the action calls' deps). */
export interface InvocationsDeps {
  live: LiveCauses;
  clock: Clock;
  /** Where an attempt started ahead of its moment waits to be sent (setTimeout; tests pass their ManualClock). */
  timers: TimerHost;
  logger: Logger;
}

/** The attempts of the action calls in flight to executors, by invocation id. */
export class Invocations {
  private readonly invocations = new Map<string, Invocation>();
  /** Attempts started ahead of their moment, waiting to be sent: woken at once when the owner stops. */
  private readonly held = new Set<() => void>();
  /** Sessions already warned of answering a held call before its hold ended. */
  private readonly warnedEarly = new WeakSet<ExecutorSession>();
  /**
   * Calls of time the owner had in time (an executor's credit taken before their moment) but sent
   * to an executor that holds after it, with hold_ms 0, since the owner started: its commit
   * and send path ran more than the clock's lookahead behind, so their lateness is the owner's.
   * Not counted: calls due when they were set or triggered, or that waited for a credit past
   * their moment (no executor, all busy, a lost one's retry).
   */
  sentLate = 0;

  constructor(
    private readonly deps: InvocationsDeps,
    private readonly state: StopState,
  ) {}

  /**
   * An executor's answer to invocation `invocationId`: frees the
   * session's credit, ends the attempt. Answers after the run timeout, and a
   * second answer of this session, are stale; ids this session never got are
   * unknown. Neither changes anything.
   */
  result(session: ExecutorSession, invocationId: string, answer: InvocationAnswer): ResultVerdict {
    const match = takeAnswer(session, invocationId);
    const invocation = this.invocations.get(invocationId);
    if (!invocation || invocation.session !== session) return match === "unknown" ? "unknown" : "stale";
    const { timedOut } = invocation;
    const end: AttemptEnd = answer.ok
      ? { kind: "ok", output: answer.output }
      : timedOut !== null
        ? { kind: "timeout", error: `${timedOut}, then failed: ${answer.error || "error"}` }
        : { kind: "error", error: answer.error || "error", terminal: answer.terminal };
    invocation.end(end, answer.startedLateMs);
    return "accepted";
  }

  /** Extends a running invocation's timeout to now + `extendMs` (default: the action's timeout). False when unknown or past its timeout. */
  progress(session: ExecutorSession, invocationId: string, extendMs: number): boolean {
    const invocation = this.invocations.get(invocationId);
    if (!invocation || invocation.session !== session || invocation.timedOut !== null) return false;
    this.armTimeout(invocation, extendMs || invocation.run.call.entry.timeoutMs);
    return true;
  }

  /** A session ended: its invocations go to other executors as retries; those past their timeout fail with it. */
  sessionGone(session: ExecutorSession): void {
    for (const invocation of [...this.invocations.values()]) {
      if (invocation.session === session) invocation.end(invocation.timedOut !== null ? { kind: "timeout", error: invocation.timedOut } : { kind: "gone" });
    }
  }

  /** The owner began stopping: attempts held for their moment wake now, and are not sent. */
  wakeHeld(): void {
    for (const wake of [...this.held]) wake();
  }

  /** The owner's grace is over: every attempt still in flight ends as `stopping`. */
  endAll(): void {
    for (const invocation of [...this.invocations.values()]) invocation.end({ kind: "stopping" });
  }

  /**
   * Sends one attempt to `session` and resolves when it ends (answer, timeout, session gone,
   * owner stopping). The Invocation is built when the stream writes it: a held one's `hold_ms`
   * (to an executor that holds, a call of time goes out at once and starts at its moment)
   * is counted from then, so time spent queued in the owner does not make it late.
   */
  invoke(run: Run, session: ExecutorSession, invocationId: string, cause: string, hostInTime: boolean): Promise<AttemptEnd> {
    const { call } = run;
    return new Promise((resolve) => {
      if (this.state.stopped) return resolve({ kind: "stopping" });
      if (session.closed) return resolve({ kind: "gone" });
      // A record:false run has no action.started: its call id is the cause of work under it while it runs.
      const release =
        cause === ""
          ? this.deps.live.hold(call.callId, call.actor, { action: call.entry.name }, { depth: call.chainDepth, parent: call.parentCause })
          : nothingHeld;
      const holdFrom = (now: number) => (session.hosting.holds ? Math.max(0, (call.scheduled?.sendAtMs ?? now) - now) : 0);
      /** When a held Invocation's hold ends (owner's clock), once written; null: not held or not written yet. */
      let heldUntil: number | null = null;
      /** When the stream wrote it (owner's clock). */
      let writtenAt = 0;
      const invocation: Invocation = {
        id: invocationId,
        run,
        session,
        timer: null,
        timedOut: null,
        end: (result, startedLateMs) => {
          if (this.invocations.get(invocationId) !== invocation) return;
          this.invocations.delete(invocationId);
          if (invocation.timer) clearTimeout(invocation.timer);
          run.invocation = null;
          release();
          if (heldUntil !== null && (result.kind === "ok" || result.kind === "error" || result.kind === "timeout"))
            started(run, this.heldStart(session, heldUntil, startedLateMs ?? 0), writtenAt);
          resolve(result);
        },
      };
      this.invocations.set(invocationId, invocation);
      run.invocation = invocation;
      run.cancelSent = false;
      const timeoutMs = call.entry.timeoutMs;
      this.armTimeout(invocation, timeoutMs, holdFrom(this.deps.clock.now()));
      session.send(() => {
        const now = this.deps.clock.now();
        const callerMs = maxRemaining(run);
        const holdMs = holdFrom(now);
        if (hostInTime && session.hosting.holds && now > (call.scheduled?.sendAtMs ?? now)) this.sentLate++;
        writtenAt = now;
        if (holdMs === 0) started(run, now, now);
        else heldUntil = now + holdMs;
        return {
          message: {
            case: "invocation",
            value: {
              invocationId,
              action: call.entry.name,
              input: call.input as JsonObject,
              callId: call.callId,
              causeEventId: cause,
              actor: call.actor ?? undefined,
              deadline: timestampFromMs(Math.floor(now + Math.min(holdMs + timeoutMs, callerMs))), // a caller's deadline in µs or ns leaves a fraction of a ms
              attempt: run.attempt,
              scheduled: call.scheduled && { timerId: call.scheduled.timerId, due: timestampFromMs(call.scheduled.dueMs), occurrenceId: call.callId },
              pulse: call.pulse && { pulse: call.pulse.pulse, interval: call.pulse.interval, due: timestampFromMs(call.pulse.dueMs) },
              chainDepth: call.chainDepth,
              holdMs,
              writtenAtMs: session.streamClockMs(),
              ...(run.trace && traceCarrier(run.trace)),
            },
          },
        };
      }, call.inputBytes);
      if (run.abandoned?.signal.aborted) this.cancel(invocation, "caller gone");
    });
  }

  /**
   * When a held Invocation's action started (owner's clock, ms): the hold's end plus the
   * executor's reported delay, which cannot exceed the time to its answer (so a bad value does
   * not spoil the histogram). An answer before the hold ended means the executor does not wait
   * `hold_ms`: warned once per session (its calls of time run early; the owner cannot see how early).
   */
  private heldStart(session: ExecutorSession, heldUntil: number, startedLateMs: number): number {
    const sinceHold = this.deps.clock.now() - heldUntil;
    if (sinceHold < 0 && !this.warnedEarly.has(session)) {
      this.warnedEarly.add(session);
      this.deps.logger.warn(
        { session: session.id, executor: session.hosting.executor, earlyMs: -sinceHold },
        "an executor that holds answered a call of time before its hold_ms ended: it runs such calls early",
      );
    }
    return heldUntil + Math.min(startedLateMs, Math.max(0, sinceHold));
  }

  /**
   * Resolves true at `atMs` on the owner's clock (ms since the epoch; at once when absent or
   * past), false as soon as the owner begins to stop before it: an attempt started ahead of its
   * moment waits here, its credit held, then is sent (true) or not (false).
   */
  holdUntil(atMs: number | undefined): Promise<boolean> {
    const { clock, timers } = this.deps;
    if (atMs === undefined || clock.now() >= atMs) return Promise.resolve(true);
    if (this.state.stopping) return Promise.resolve(false);
    return new Promise((resolve) => {
      const wake = () => {
        this.held.delete(wake);
        if (clock.now() >= atMs) return resolve(true);
        if (this.state.stopping) return resolve(false);
        this.held.add(wake); // woke early (a timer may ring a millisecond early): wait the rest
        timers.setTimer(wake, atMs - clock.now());
      };
      this.held.add(wake);
      timers.setTimer(wake, atMs - clock.now());
    });
  }

  /**
   * (Re-)arms the run timeout, `ms` after the action starts (`holdMs` from now for a held
   * Invocation): when it passes, the executor is told to cancel, and the attempt waits the
   * action's grace for its answer (an OK one completes the call; no other run of the call id
   * starts meanwhile), then fails. Its credit stays held until it answers (the handler may
   * still run: the credit is its slot); one not answered {@link unansweredWarnMs} after the
   * grace is logged as a warning.
   */
  private armTimeout(invocation: Invocation, ms: number, holdMs = 0): void {
    if (invocation.timer) clearTimeout(invocation.timer);
    invocation.timer = setTimeout(() => {
      const error = `timed out after ${ms} ms`;
      const graceMs = invocation.run.call.entry.timeoutGraceMs;
      invocation.timer = null;
      invocation.timedOut = error;
      this.cancel(invocation, error);
      const fail = () => {
        invocation.timer = null;
        if (invocation.session.inFlight.has(invocation.id)) invocation.session.abandoned.add(invocation.id);
        invocation.end({ kind: "timeout", error });
        this.warnIfUnanswered(invocation.session, invocation.id, invocation.run.call.entry.name, ms);
      };
      if (graceMs === 0) fail();
      else invocation.timer = setTimeout(fail, graceMs);
    }, holdMs + ms);
  }

  /** Logs a warning when `session` still holds the credit of timed-out invocation `id` {@link unansweredWarnMs} later (a handler that ignores its cancel signal). */
  private warnIfUnanswered(session: ExecutorSession, id: string, action: string, timeoutMs: number): void {
    setTimeout(() => {
      if (session.closed || !session.inFlight.has(id)) return;
      this.deps.logger.warn(
        { session: session.id, executor: session.hosting.executor, invocation: id, action, freeCredits: session.free },
        `executor ${session.hosting.executor} has not answered invocation ${id} of ${action} ${unansweredWarnMs} ms after its ${timeoutMs} ms timeout, cancel and grace: its credit stays held until it answers (does the handler ignore its signal?)`,
      );
    }, unansweredWarnMs).unref();
  }

  /** Sends CancelInvocation for the attempt in flight, once. */
  cancel(invocation: Invocation, reason: string): void {
    if (invocation.run.cancelSent || invocation.run.invocation !== invocation) return;
    invocation.run.cancelSent = true;
    invocation.session.send({ message: { case: "cancelInvocation", value: { invocationId: invocation.id, reason } } });
  }
}

/** Tells time when `run`'s action started (`atMs`) and when its invocation was written (`writtenAtMs`), owner's clock, once per run: its lateness is measured there. */
function started(run: Run, atMs: number, writtenAtMs: number): void {
  if (run.started) return;
  run.started = true;
  run.call.scheduled?.onStarted?.(atMs, writtenAtMs);
}

/** The longest time any waiter of `run` still gives it (ms); Infinity when one has no deadline. */
function maxRemaining(run: Run): number {
  let longest = 0;
  for (const waiter of run.waiters) longest = Math.max(longest, waiter.remainingMs() ?? Infinity);
  return longest;
}

/** The release of a run that holds no live cause (it records `action.started`). */
function nothingHeld(): void {}
