import type { Principal } from "../auth/principal.js";
import { ChronologError, fail } from "../errors.js";
import type { ExecutorSession } from "../executors/session.js";
import { canonicalJson } from "../log/canonical.js";
import type { PluginRegistry } from "../plugins/registry.js";
import type { CallStatements } from "../store/calls.js";
import type { Committer, Tx } from "../store/committer.js";
import type { EventStatements } from "../store/events.js";
import { callerGone, notStartedError, stoppingError } from "./call-errors.js";
import { fromOutside, fromPulse, fromTime, ownCallId, sameCall, underCause } from "./call-origin.js";
import type { CallRequest, CallResult } from "./call-request.js";
import type { HostQueue } from "./hosts.js";
import { Invocations, type InvocationAnswer, type InvocationsDeps, type ResultVerdict, type StopState } from "./invocations.js";
import {
  callAppends,
  recordAttempt,
  recordCompleted,
  recordFailed,
  recordLeftRunningFailed,
  startedLookups,
  storedOutput,
  type CallIdentity,
} from "./records.js";
import { Run, type AttemptEnd, type CallerContext } from "./run.js";
import { CallSlots } from "./slots.js";
import { CallRates } from "./rates.js";
import type { RateWaits } from "../flow/rate-metrics.js";
import { sha256Hex } from "../sha256.js";
import type { Span } from "@opentelemetry/api";
import { tracing } from "../tracing/tracer.js";
import { traceText } from "../tracing/trace-context.js";
import { endSpan, endTry, spanTrace } from "../tracing/messaging.js";
import { attemptSpan, callSpan } from "../tracing/work.js";
import { StoredCalls, type StoredCallsDeps } from "./stored-calls.js";
import { attemptBudgetMs, hasSlack } from "./call-budget.js";

/** What the action calls need from the owner: what their {@link Invocations} need, and more. */
export interface ActionCallsDeps extends InvocationsDeps, StoredCallsDeps {
  registry: PluginRegistry;
  committer: Committer;
  events: EventStatements;
  calls: CallStatements;
  hosts: HostQueue;
}

/** An action's limits and what they hold now, as ListActions shows it. */
export interface ActionStatus {
  name: string;
  /** Its flow limits in a few words ("" without any). */
  limits: string;
  /** Calls holding a concurrency slot, and waiting for one. */
  running: number;
  waiting: number;
  /** Calls that waited for a rate token since the owner started, the ms they waited, and the calls waiting now. */
  rateWaits: number;
  rateWaitMs: number;
  rateWaiting: number;
}

/**
 * Action calls.
 *
 * A call id goes through these states (the row in `action_calls`, and a
 * {@link Run} in memory while this owner works on it):
 *
 * - **new** (no row): checks pass (declared: NOT_FOUND; allow or cause:
 *   PERMISSION_DENIED; input schema: INVALID_ARGUMENT with `input/...`).
 * - **waiting for a host** (in memory only, nothing written): up to the
 *   caller's deadline (less a small margin to answer) or the action's
 *   `timeoutMs`, whichever is first; then UNAVAILABLE "no executor hosts
 *   <action>" and the call is as if never made.
 * - **running** (committed when a host's credit is taken: the row at
 *   attempt n, plus `action.started` for the first attempt or
 *   `action.retried` for later ones, then the Invocation is sent).
 * - running → **completed** (the executor's OK: row + `action.completed`;
 *   final: later calls with the id are answered from the record, `fromLog`).
 * - running → **failed** (an error, a TerminalError or the run timeout: row
 *   + `action.failed`; the caller gets ABORTED with the action's error). At
 *   the run timeout the executor is told to cancel, and the call stays running
 *   for the action's `timeoutGraceMs`: an OK answer meanwhile completes it, an
 *   error, the executor's end or the grace's end fails it ("timed out").
 * - running → waiting for a host (the executor's session ended: attempt n+1
 *   goes to another executor while a caller's deadline allows, recording
 *   `action.retried`; if none takes it in time, attempt n is recorded failed
 *   and the caller gets UNAVAILABLE).
 * - failed → waiting for a host (a later call with the same id runs again,
 *   recording `action.retried`). A row left running by an owner that
 *   stopped or crashed is treated the same way.
 * - at the owner's stop ({@link ActionCalls.stop}): runs going on get the
 *   shutdown grace to end as above; what still runs after it stays running
 *   (its caller gets UNAVAILABLE).
 *
 * Failure semantics: nothing is written before an executor's credit is
 * held, so a call that found no executor leaves nothing behind. Each state
 * change commits the row and its event in one unit. A duplicate call
 * (same id) while one runs joins it and gets its answer: the action never
 * runs twice at once for one id. The same id with another action or input
 * is ALREADY_EXISTS. A caller that cancels or whose deadline passes gets
 * CANCELLED or DEADLINE_EXCEEDED; when every caller of a running call has
 * gone, the executor gets a CancelInvocation (the SDK aborts the action's
 * signal) and the run's end is still recorded. The owner never retries a
 * failed action by itself: the caller decides. `record: false` actions write
 * the row only: same idempotency, no events; work under such a run names the
 * call id as its cause (LiveCauses). Every attempt runs as the actor of the
 * call's first caller (the actor recorded on `action.started`).
 */
export class ActionCalls {
  private readonly runs = new Map<string, Run>();
  /** What is stored of a call, read before it starts a run. */
  private readonly stored: StoredCalls;
  /** The actions' concurrency limits. */
  readonly slots = new CallSlots();
  /** The actions' rates. */
  readonly rates: CallRates;
  /** The attempts in flight to executors. */
  private readonly invocations: Invocations;
  /** Where the owner is in its stop, shared with {@link invocations}. */
  private readonly state: StopState = { stopping: false, stopped: false };
  /** Told when the last run ends while the owner is stopping (the grace ends early). */
  private idle: (() => void) | null = null;

  constructor(private readonly deps: ActionCallsDeps) {
    this.invocations = new Invocations(deps, this.state);
    this.rates = new CallRates(deps.clock);
    this.stored = new StoredCalls(deps);
  }

  /** Calls of time sent late to an executor that holds, since the owner started: see {@link Invocations.sentLate}. */
  get sentLate(): number {
    return this.invocations.sentLate;
  }

  /** The actions' rate waits so far (for the metrics). */
  rateWaits(): Iterable<RateWaits> {
    return this.rates.waits();
  }

  /** Every declared action's limits and what they hold now (AdminService.ListActions), by name. */
  statuses(): ActionStatus[] {
    const waits = new Map<string, RateWaits>();
    for (const w of this.rates.waits()) waits.set(w.name, w);
    return [...this.deps.registry.allActions()]
      .map((entry) => {
        const w = waits.get(entry.name);
        return {
          name: entry.name,
          limits: entry.limits,
          ...this.slots.held(entry.name),
          rateWaits: w?.waits ?? 0,
          rateWaitMs: Math.round(w?.waitedMs ?? 0),
          rateWaiting: w?.waiting ?? 0,
        };
      })
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Whether call `callId` ever started an attempt (its `action_calls` row exists: written when a host's credit was taken), read without blocking the event loop. */
  async everStarted(callId: string): Promise<boolean> {
    return (await this.deps.callRows(callId)) !== undefined;
  }

  /** Whether `plugin.action` is declared. */
  has(action: string): boolean {
    return this.deps.registry.action(action) !== undefined;
  }

  /** Calls an action as `principal` and waits for its answer; errors as in the class comment. */
  async call(req: CallRequest, principal: Principal, caller: CallerContext): Promise<CallResult> {
    // While the owner stops, only work under a cause (deliveries and runs finishing in the grace) may still call.
    if (this.state.stopped || (this.state.stopping && !req.cause)) throw stoppingError();
    const entry =
      this.deps.registry.action(req.action) ??
      fail(
        "not_found",
        `action ${JSON.stringify(req.action)} is not declared by any plugin (use plugin.action)`,
        [{ field: "action", description: "undeclared action" }],
        { action: req.action },
      );
    const who = req.scheduled
      ? fromTime(req, req.scheduled, principal)
      : req.pulse
        ? fromPulse(req, req.pulse, principal)
        : req.cause
          ? underCause(entry, req, principal, this.deps.events, this.deps.live)
          : fromOutside(entry, req, principal);
    const violations = entry.validate(req.input);
    if (violations.length > 0) {
      fail(
        "schema_violation",
        `input of ${entry.name} does not match its schema: ${violations.map((v) => `${v.field}: ${v.description}`).join("; ")}`,
        violations,
        { action: entry.name },
      );
    }
    const canonicalInput = canonicalJson(req.input);
    const call: CallIdentity = { ...who, entry, input: req.input, inputHash: sha256Hex(canonicalInput), inputBytes: Buffer.byteLength(canonicalInput) };
    // The caller's span (a call's, an occurrence's); a pulse's call starts a trace of its own (what ran
    // the clock's timer is no cause of it).
    if (tracing.on && !req.pulse) call.trace = traceText();
    const clientChosen = !req.cause && !req.scheduled && !req.pulse && req.callId !== "";
    // Its stored row (or, for a recorded call whose row the retention deleted, its events) unless a run of it is going on.
    const row = req.scheduled?.fresh ? undefined : await this.stored.read(call, (id) => this.runs.has(id));
    if (this.state.stopped || (this.state.stopping && !req.cause)) throw stoppingError();
    // From here to the Run's creation nothing awaits: two calls with one id cannot both start it.
    const running = this.runs.get(call.callId);
    if (running) {
      ownCallId(call, running.call.actor, clientChosen, principal);
      sameCall(call, running.call.entry.name, running.call.inputHash);
      return this.wait(running, caller);
    }
    if (row) {
      ownCallId(call, row.actor, clientChosen, principal);
      sameCall(call, row.action, row.inputHash);
      if (row.state === "completed") return { callId: call.callId, output: storedOutput(row, this.deps.events), fromLog: true };
    }
    const previousError = !row ? "" : row.state === "failed" ? row.error : `the owner stopped during attempt ${row.attempt}`;
    const run = new Run(
      row ? { ...call, actor: row.actor, trace: call.trace ?? row.trace } : call,
      row ? row.attempt + 1 : 1,
      previousError,
      caller.signal !== undefined,
    );
    this.runs.set(call.callId, run);
    const answer = this.wait(run, caller);
    this.drive(run).then(
      (output) => {
        this.ended(call.callId);
        run.resolve(output);
      },
      (error) => {
        this.ended(call.callId);
        run.reject(error);
      },
    );
    return answer;
  }

  /** An executor's answer to invocation `invocationId`: see {@link Invocations.result}. */
  result(session: ExecutorSession, invocationId: string, answer: InvocationAnswer): ResultVerdict {
    return this.invocations.result(session, invocationId, answer);
  }

  /**
   * In unit `tx`: ends call `callId` as failed with `error` when an owner that stopped left its
   * last attempt `running` and no run of it is going on here (`action.failed`). Time uses it
   * for a started call it then does not make (too late after a restart).
   */
  failLeftRunning(tx: Tx, callId: string, error: string): void {
    const row = this.deps.calls.get(callId);
    if (row && !this.runs.has(callId)) recordLeftRunningFailed(tx, this.deps.calls, row, error);
  }

  /** Extends a running invocation's timeout: see {@link Invocations.progress}. */
  progress(session: ExecutorSession, invocationId: string, extendMs: number): boolean {
    return this.invocations.progress(session, invocationId, extendMs);
  }

  /** A session has (new) free credits: calls waiting for a host it offers get them. */
  pumpFor(session: ExecutorSession): void {
    this.deps.hosts.offer(session);
  }

  /** A session ended: its invocations go to other executors as retries (see {@link Invocations.sessionGone}). */
  sessionGone(session: ExecutorSession): void {
    this.invocations.sessionGone(session);
  }

  /**
   * Owner shutdown, with the grace deliveries get: new calls are refused with UNAVAILABLE
   * (but those under a cause, made by the work finishing meanwhile), attempts held for their
   * moment are not sent, and the runs going on get up to `graceMs` (real time) to end as usual,
   * their ends recorded and their callers answered; an executor lost meanwhile is not replaced.
   * Then callers still waiting for a host or an answer get UNAVAILABLE and nothing more is
   * written: those calls stay `running` in their row, and a later call with the same id runs them
   * again (`action.retried`). The grace ends early once no run goes on and `alongside` (the
   * deliveries' grace, whose work may still call) has settled. Resolves once every run has
   * settled, so callers are answered before the transport closes (its shutdown aborts their
   * requests). Call once.
   */
  async stop(graceMs = 0, alongside: Promise<unknown> = Promise.resolve()): Promise<void> {
    this.state.stopping = true;
    this.invocations.wakeHeld();
    if (graceMs > 0) {
      let timer: NodeJS.Timeout | undefined;
      const idle = async () => {
        await alongside.catch(() => undefined);
        while (this.runs.size > 0) await new Promise<void>((resolve) => (this.idle = resolve));
      };
      await Promise.race([new Promise((resolve) => (timer = setTimeout(resolve, graceMs))), idle()]);
      clearTimeout(timer);
      this.idle = null;
    }
    this.state.stopped = true;
    this.deps.hosts.stop();
    this.slots.stop();
    this.invocations.endAll();
    await Promise.allSettled([...this.runs.values()].map((run) => run.done));
  }

  /** A run ended: forgets it; the last one while the owner stops ends the grace. */
  private ended(callId: string): void {
    this.runs.delete(callId);
    this.stored.ended(callId);
    if (this.runs.size === 0) this.idle?.();
  }

  /** Waits for `run`'s answer as `caller`; leaves (and, last to leave, abandons the run) when the caller goes. */
  private wait(run: Run, caller: CallerContext): Promise<CallResult> {
    if (!caller.signal) {
      // A caller without a signal (the owner's clock and pulses) never leaves before the answer: one
      // derived promise, no listener (fewer objects held per call in flight: each is copied by every scavenge).
      run.waiters.add(caller);
      return run.done.then(
        (output) => {
          run.waiters.delete(caller);
          return { callId: run.call.callId, output, fromLog: false };
        },
        (error) => {
          run.waiters.delete(caller);
          throw error;
        },
      );
    }
    return new Promise((resolve, reject) => {
      const leave = () => {
        caller.signal?.removeEventListener("abort", onAbort);
        run.waiters.delete(caller);
      };
      const onAbort = () => {
        leave();
        // Past the owner's grace, the transport's shutdown aborts every request still open: not the caller's doing.
        const error = this.state.stopped ? stoppingError() : callerGone(caller);
        reject(error);
        if (run.waiters.size === 0) this.abandon(run, error);
      };
      if (caller.signal?.aborted) return onAbort();
      run.waiters.add(caller);
      caller.signal?.addEventListener("abort", onAbort, { once: true });
      run.done.then(
        (output) => {
          leave();
          resolve({ callId: run.call.callId, output, fromLog: false });
        },
        (error) => {
          leave();
          reject(error);
        },
      );
    });
  }

  /** Every caller of `run` has gone: stop waiting for a host; cancel the attempt in flight. */
  private abandon(run: Run, error: ChronologError): void {
    run.abandoned?.abort(error);
    if (run.invocation) this.invocations.cancel(run.invocation, error.kind === "deadline_exceeded" ? "deadline exceeded" : "caller cancelled");
  }

  /** Runs `run` within its action's concurrency limits (a slot held from before its first attempt to its end) and rate, as {@link attempts}, in the call's span while traces are recorded. */
  private async drive(run: Run): Promise<Record<string, unknown>> {
    const { entry, input, eligible } = run.call;
    const limits = entry.concurrency;
    const span = tracing.on ? callSpan(entry.name, run.call.callId, run.call.trace) : undefined;
    let release: (() => void) | undefined;
    try {
      release = limits
        ? await this.slots.acquire(entry.name, limits, input, entry.priorityOf({ input }), eligible ? 0 : attemptBudgetMs(run), run.abandoned?.signal)
        : undefined;
      await this.rates.wait(entry, input, eligible ? 0 : attemptBudgetMs(run), run.abandoned?.signal);
      const output = await this.attempts(run, span);
      if (span) endSpan(span);
      return output;
    } catch (e) {
      if (span) endSpan(span, e);
      throw e;
    } finally {
      release?.();
    }
  }

  /** Runs `run`'s attempts until one completes or the call fails (see the class comment); `span`: the call's, each attempt's span goes under it. */
  private async attempts(run: Run, span?: Span): Promise<Record<string, unknown>> {
    const { call } = run;
    const { committer, calls, hosts } = this.deps;
    let lostAttempt = 0;
    /** The call's `action.started` id ("" when it does not record): the cause of its runs and of its end. */
    let cause = "";
    /** The events a unit of the call says it will append, where something is read ahead for them (a `cancel_on` may name their type). */
    const appends = (...end: Parameters<typeof callAppends>) => (committer.readsAheadOfAppends ? callAppends(...end) : undefined);
    /** The same for a unit that records the run's end, with what time appends in it (`scheduled.endAppends`). */
    const endAppends = (...end: Parameters<typeof callAppends>) => {
      const more = committer.readsAheadOfAppends ? call.scheduled?.endAppends?.("ok" in end[2] && end[2].ok) : undefined;
      const own = appends(...end);
      return more?.length ? [...(own ?? []), ...more] : own;
    };
    for (;;) {
      const invocationId = `${call.callId}#${run.attempt}`;
      let session: ExecutorSession;
      // A call of time with a lateness bound waits for a host only until its latest start, until it has started once.
      const latest = lostAttempt === 0 ? call.scheduled?.latestStartMs : undefined;
      const budgetMs = attemptBudgetMs(run);
      const waitMs = latest === undefined ? budgetMs : Math.min(budgetMs, latest - this.deps.clock.now());
      try {
        // A pulse's call is taken at once or not at all: it never waits for a host.
        session = await hosts.acquire(call.entry.name, invocationId, call.eligible ? 0 : waitMs, run.abandoned?.signal, call.eligible);
      } catch (e) {
        // No host by its latest start (the wait ended there, or a wait as long as the action's timeout ended past it): not made.
        const pastLatest = latest !== undefined && (waitMs < budgetMs || this.deps.clock.now() >= latest);
        if (pastLatest && e instanceof ChronologError && e.kind === "unavailable" && !this.state.stopped) throw notStartedError(call.entry.name, latest);
        if (lostAttempt > 0 && !this.state.stopped) {
          const error = `${run.previousError}; ${e instanceof Error ? e.message : String(e)}`;
          await committer.submit((tx) => recordFailed(tx, calls, call, lostAttempt, error, cause), {
            appends: appends(call, lostAttempt, { ok: false, error }),
          });
        }
        throw e;
      }
      const sendAtMs = call.scheduled?.sendAtMs;
      const hostInTime = sendAtMs !== undefined && this.deps.clock.now() < sendAtMs;
      if (latest !== undefined && this.deps.clock.now() > latest) {
        session.inFlight.delete(invocationId);
        hosts.offer(session);
        throw notStartedError(call.entry.name, latest);
      }
      try {
        // A later attempt finds its call's action.started: known to the run after its first attempt here, else read ahead.
        const startedId = cause;
        cause = await committer.submit((tx) => recordAttempt(tx, calls, call, run.attempt, run.previousError, startedId), {
          deferrable: hasSlack(call, this.deps.clock.now()),
          lookups: run.attempt > 1 && startedId === "" && call.entry.record ? startedLookups(call.callId) : undefined,
          appends: appends(call, run.attempt, { started: true, previousError: run.previousError }),
        });
      } catch (e) {
        session.inFlight.delete(invocationId);
        hosts.offer(session);
        throw e;
      }
      // Work under the call's action.started finds its actor and chain depth without reading the log.
      if (cause !== "") this.deps.live.remember(cause, call.actor, { action: call.entry.name }, { depth: call.chainDepth, parent: call.parentCause });
      // An attempt held for its moment when the owner begins to stop is not sent: the next owner sends it at its moment.
      const due = session.hosting.holds || (await this.invocations.holdUntil(call.scheduled?.sendAtMs));
      if (!due) session.inFlight.delete(invocationId);
      const attempt = span && attemptSpan(span, call.entry.name, call.callId, run.attempt);
      run.trace = attempt && spanTrace(attempt);
      let end: AttemptEnd = due ? await this.invocations.invoke(run, session, invocationId, cause, hostInTime) : { kind: "stopping" };
      if (attempt)
        endTry(
          attempt,
          end.kind === "ok" ? "ok" : end.kind === "error" ? (end.terminal ? "terminal_error" : "error") : end.kind === "timeout" ? "timeout" : "lost",
          "error" in end ? end.error : "",
        );
      if (end.kind === "gone" && this.state.stopping) end = { kind: "stopping" }; // no new attempt while the owner stops: the row stays running
      switch (end.kind) {
        case "ok":
          await committer.submit(
            (tx) =>
              recordCompleted(tx, calls, call, run.attempt, end.output, cause, true) && call.scheduled?.onEnd?.(tx, { ok: true, error: "", terminal: false }),
            { deferrable: call.scheduled !== undefined, appends: endAppends(call, run.attempt, { ok: true, output: end.output }) },
          );
          return end.output;
        case "error":
        case "timeout": {
          const error = new ChronologError("action_failed", `action ${call.entry.name} failed (attempt ${run.attempt}): ${end.error}`, [], {
            action: call.entry.name,
            call_id: call.callId,
            attempt: String(run.attempt),
          });
          await committer.submit(
            (tx) =>
              recordFailed(tx, calls, call, run.attempt, end.error, cause, true) &&
              call.scheduled?.onEnd?.(tx, { ok: false, error: error.message, terminal: end.kind === "error" && end.terminal }),
            { deferrable: call.scheduled !== undefined, appends: endAppends(call, run.attempt, { ok: false, error: end.error }) },
          );
          throw error;
        }
        case "stopping":
          if (call.eligible) await this.endPulseCallAtStop(call, run.attempt, cause);
          throw stoppingError();
        case "gone":
          lostAttempt = run.attempt;
          run.previousError = `executor disconnected during attempt ${run.attempt}`;
          run.attempt++;
          this.deps.logger.info({ action: call.entry.name, call: call.callId, attempt: lostAttempt }, "executor gone mid-run: trying the call elsewhere");
      }
    }
  }

  /**
   * A pulse's call the owner stops during: nothing calls its interval again (a restarted
   * owner does not make it up, unlike a timer's occurrence), so its start gets its end now:
   * `action.failed`, attempt `attempt`, in a unit the owner's last commit covers. A failure to
   * write it is logged.
   */
  private async endPulseCallAtStop(call: CallIdentity, attempt: number, cause: string): Promise<void> {
    try {
      await this.deps.committer.submit((tx) =>
        recordFailed(tx, this.deps.calls, call, attempt, "the owner stopped during the call; a pulse's interval is not made up", cause),
      );
    } catch (e) {
      this.deps.logger.warn({ err: e, call: call.callId }, "recording the end of a pulse's call at the owner's stop failed");
    }
  }
}
