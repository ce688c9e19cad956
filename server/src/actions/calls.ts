import type { JsonObject } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { allows, resolveActor, systemPrincipal, type Principal } from "../auth/principal.js";
import type { Clock, TimerHost } from "../clock.js";
import { ChronologError, fail } from "../errors.js";
import { takeAnswer } from "../executors/answered.js";
import type { ExecutorSession } from "../executors/session.js";
import { canonicalJson } from "../log/canonical.js";
import { causeActor, causeChainDepth, type LiveCauses } from "../log/causes.js";
import type { CauseRef } from "../log/emit.js";
import { checkId, derivedId, newId } from "../log/ids.js";
import type { Logger } from "../logger.js";
import type { PluginRegistry } from "../plugins/registry.js";
import type { CallStatements } from "../store/calls.js";
import type { Committer, Tx } from "../store/committer.js";
import type { ActorRecord, EventStatements } from "../store/events.js";
import type { ActionEntry } from "./declaration.js";
import type { HostQueue } from "./hosts.js";
import { callFromLog, recordAttempt, recordCompleted, recordFailed, recordLeftRunningFailed, storedOutput, type CallIdentity } from "./records.js";
import { Run, type AttemptEnd, type AttemptOutcome, type CallerContext, type Invocation } from "./run.js";
import { sha256Hex } from "../sha256.js";

/** One call, as parsed from the request. */
export interface CallRequest {
  /** `plugin.action`. */
  action: string;
  input: Record<string, unknown>;
  /** Client-chosen call id, or "" for none (a fresh one, or derived under a cause). */
  callId: string;
  /** Set when code under a delivery or an action run calls; null from outside. */
  cause: CauseRef | null;
  /** Asserted actor fields (from outside only). */
  actor: Partial<ActorRecord> | undefined;
  /**
   * Set only by the owner's clock when time makes the call, with
   * {@link systemPrincipal}; never from a request. `callId` is then the
   * occurrence id, and the call runs as `scheduled.actor` without an allow
   * check (the allow was checked when the timer was set).
   */
  scheduled?: ScheduledCall;
  /**
   * Set only by the owner's pulses, with {@link systemPrincipal}; never
   * from a request. `callId` is then the interval's call id; the call runs
   * as the system, only on a session `pulse.eligible` accepts, and only if
   * one has a free credit at once (a pulse never waits for a host: a busy or
   * absent host means the interval is missed).
   */
  pulse?: PulseCallRequest;
}

/** What a pulse tells a call it makes, and where the call may run. */
export interface PulseCallRequest {
  /** `plugin.pulse`. */
  pulse: string;
  /** Index of the interval within the cycle, 0-based. */
  interval: number;
  /** Start of the interval, ms since the epoch (UTC). */
  dueMs: number;
  /** The sessions that may run it: the pulse's hosts (scope component) or one session (scope replica). */
  eligible(session: ExecutorSession): boolean;
}

/** What time tells a call it makes, and who the call runs as. */
export interface ScheduledCall {
  /** The timer, schedule or delay id. */
  timerId: string;
  /** The moment the occurrence was due, ms since the epoch (UTC). */
  dueMs: number;
  /** The timer's actor (whoever set it, `in` included); null: the system (declared schedules). */
  actor: ActorRecord | null;
  /** Chain depth of the call: the delay's, 0 for schedules (default 0). */
  chainDepth?: number;
  /**
   * The clock starts time's calls ahead of their moment (the claim's lookahead): the
   * attempt is started (credit held, `action.started` committed) at once, and the action
   * starts no earlier than this, ms since the epoch (UTC): an executor that holds gets the
   * Invocation at once with `hold_ms` to wait; to others it is sent at this moment. Absent
   * or past: at once.
   */
  sendAtMs?: number;
  /**
   * The occurrence's lateness bound, for its first call only: the last moment (ms since
   * the epoch, owner's clock) its attempt may start. The call waits for an executor's credit
   * only until then; one not started by then is not made, and the call rejects with an error
   * {@link notStartedInTime} recognises (nothing written). Absent: no bound.
   */
  latestStartMs?: number;
  /**
   * Told, once per run, when its action started (ms since the epoch, owner's clock): the
   * first send, or for a held Invocation the end of its hold plus the executor's reported
   * delay (at its answer). Time measures its lateness there.
   */
  onStarted?: (startedAtMs: number) => void;
  /**
   * Runs inside the commit unit that records this run's end (`action.completed`, or
   * `action.failed` with the action's error or timeout; `error` is then the message the
   * caller gets), so time's own record of the occurrence commits with it instead
   * of in a unit of its own. Not called when the call ends otherwise (answered from
   * the log, joined another run, no host, owner stopping).
   */
  onEnd?: (tx: Tx, end: AttemptOutcome) => void;
}

/** A call's answer. */
export interface CallResult {
  callId: string;
  output: Record<string, unknown>;
  /** True when answered from the stored record of a completed call, without running. */
  fromLog: boolean;
}

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

/** What the action calls need from the owner. */
export interface ActionCallsDeps {
  registry: PluginRegistry;
  committer: Committer;
  events: EventStatements;
  calls: CallStatements;
  live: LiveCauses;
  hosts: HostQueue;
  clock: Clock;
  /** Where an attempt started ahead of its moment waits to be sent (setTimeout; tests pass their ManualClock). */
  timers: TimerHost;
  logger: Logger;
}

/** How long after a run's grace (past its timeout and cancel) an executor that still holds the invocation's credit is warned of, ms. */
export const unansweredWarnMs = 10_000;

/** At most this much of a caller's deadline is kept back to answer it (ms), so it learns why. */
const maxAnswerMarginMs = 500;

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
  private readonly invocations = new Map<string, Invocation>();
  /** Attempts started ahead of their moment, waiting to be sent: woken at once when the owner stops. */
  private readonly held = new Set<() => void>();
  /** Sessions already warned of answering a held call before its hold ended. */
  private readonly warnedEarly = new WeakSet<ExecutorSession>();
  /** The owner began stopping: new calls are refused (but under a cause), held attempts are not sent, runs get the grace. */
  private stopping = false;
  /** The grace is over: nothing more is started or written, callers still waiting get UNAVAILABLE. */
  private stopped = false;
  /** Told when the last run ends while the owner is stopping (the grace ends early). */
  private idle: (() => void) | null = null;
  /**
   * Calls of time the owner had in time (an executor's credit taken before their moment) but sent
   * to an executor that holds after it, with hold_ms 0, since the owner started: its commit
   * and send path ran more than the clock's lookahead behind, so their lateness is the owner's.
   * Not counted: calls due when they were set or triggered, or that waited for a credit past
   * their moment (no executor, all busy, a lost one's retry).
   */
  sentLate = 0;

  constructor(private readonly deps: ActionCallsDeps) {}

  /** Whether call `callId` ever started an attempt (its `action_calls` row exists: written when a host's credit was taken). */
  everStarted(callId: string): boolean {
    return this.deps.calls.get(callId) !== undefined;
  }

  /** Whether `plugin.action` is declared. */
  has(action: string): boolean {
    return this.deps.registry.action(action) !== undefined;
  }

  /** Calls an action as `principal` and waits for its answer; errors as in the class comment. */
  async call(req: CallRequest, principal: Principal, caller: CallerContext): Promise<CallResult> {
    // While the owner stops, only work under a cause (deliveries and runs finishing in the grace) may still call.
    if (this.stopped || (this.stopping && !req.cause)) throw stoppingError();
    const entry = this.deps.registry.action(req.action) ?? fail("not_found", `action ${JSON.stringify(req.action)} is not declared by any plugin (use plugin.action)`, [{ field: "action", description: "undeclared action" }], { action: req.action });
    const who = req.scheduled
      ? fromTime(req, req.scheduled, principal)
      : req.pulse
        ? fromPulse(req, req.pulse, principal)
        : req.cause
          ? this.underCause(entry, req, principal)
          : this.fromOutside(entry, req, principal);
    const violations = entry.validate(req.input);
    if (violations.length > 0) {
      fail("schema_violation", `input of ${entry.name} does not match its schema: ${violations.map((v) => `${v.field}: ${v.description}`).join("; ")}`, violations, { action: entry.name });
    }
    const canonicalInput = canonicalJson(req.input);
    const call: CallIdentity = { ...who, entry, input: req.input, inputHash: sha256Hex(canonicalInput), inputBytes: Buffer.byteLength(canonicalInput) };
    // From here to the Run's creation nothing awaits: two calls with one id cannot both start it.
    const running = this.runs.get(call.callId);
    if (running) {
      sameCall(call, running.call.entry.name, running.call.inputHash);
      return this.wait(running, caller);
    }
    // A recorded call whose row the retention deleted is answered from its events, as by its row.
    const row = this.deps.calls.get(call.callId) ?? callFromLog(this.deps.events, call, this.deps.clock.now());
    if (row) {
      sameCall(call, row.action, row.inputHash);
      if (row.state === "completed") return { callId: call.callId, output: storedOutput(row, this.deps.events), fromLog: true };
    }
    const previousError = !row ? "" : row.state === "failed" ? row.error : `the owner stopped during attempt ${row.attempt}`;
    const run = new Run(row ? { ...call, actor: row.actor } : call, row ? row.attempt + 1 : 1, previousError, caller.signal !== undefined);
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

  /**
   * In unit `tx`: ends call `callId` as failed with `error` when an owner that stopped left its
   * last attempt `running` and no run of it is going on here (`action.failed`). Time uses it
   * for a started call it then does not make (too late after a restart).
   */
  failLeftRunning(tx: Tx, callId: string, error: string): void {
    const row = this.deps.calls.get(callId);
    if (row && !this.runs.has(callId)) recordLeftRunningFailed(tx, this.deps.calls, row, error);
  }

  /** Extends a running invocation's timeout to now + `extendMs` (default: the action's timeout). False when unknown or past its timeout. */
  progress(session: ExecutorSession, invocationId: string, extendMs: number): boolean {
    const invocation = this.invocations.get(invocationId);
    if (!invocation || invocation.session !== session || invocation.timedOut !== null) return false;
    this.armTimeout(invocation, extendMs || invocation.run.call.entry.timeoutMs);
    return true;
  }

  /** A session has (new) free credits: calls waiting for a host it offers get them. */
  pumpFor(session: ExecutorSession): void {
    this.deps.hosts.offer(session);
  }

  /** A session ended: its invocations go to other executors as retries; those past their timeout fail with it. */
  sessionGone(session: ExecutorSession): void {
    for (const invocation of [...this.invocations.values()]) {
      if (invocation.session === session) invocation.end(invocation.timedOut !== null ? { kind: "timeout", error: invocation.timedOut } : { kind: "gone" });
    }
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
    this.stopping = true;
    for (const wake of [...this.held]) wake();
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
    this.stopped = true;
    this.deps.hosts.stop();
    for (const invocation of [...this.invocations.values()]) invocation.end({ kind: "stopping" });
    await Promise.allSettled([...this.runs.values()].map((run) => run.done));
  }

  /** A run ended: forgets it; the last one while the owner stops ends the grace. */
  private ended(callId: string): void {
    this.runs.delete(callId);
    if (this.runs.size === 0) this.idle?.();
  }

  private fromOutside(entry: ActionEntry, req: CallRequest, principal: Principal) {
    if (!allows(entry.allow, principal)) {
      const who = entry.allow.length === 0 ? "only code under a cause may call it" : `allow: ${entry.allow.join(", ")}`;
      fail("permission_denied", `principal ${principal.name} (role ${principal.role}) may not call ${entry.name} (${who})`, [], { action: entry.name });
    }
    if (req.callId !== "") checkId(req.callId, "call_id");
    return { callId: req.callId || newId(), actor: resolveActor(principal, req.actor), parentCause: "", chainDepth: 0 };
  }

  /** A call from code under a cause: id derived, actor the cause's. Executors and admins only. */
  private underCause(entry: ActionEntry, req: CallRequest, principal: Principal) {
    const cause = req.cause as CauseRef;
    if (principal.role === "client") fail("permission_denied", `principal ${principal.name} (role client) may not call under a cause; only executors act under a cause`);
    if (req.actor && Object.values(req.actor).some((v) => v)) fail("bad_request", "actor must be empty under a cause: the actor is the cause's");
    const actor = causeActor(cause.eventId, this.deps.events, this.deps.live);
    const callId = derivedId(cause.eventId, cause.position, { action: entry.name, input: req.input });
    if (req.callId && req.callId !== callId) fail("bad_request", "call_id must be empty under a cause: it is derived from the cause and position");
    return { callId, actor, parentCause: cause.eventId, chainDepth: causeChainDepth(cause.eventId, this.deps.events, this.deps.live) };
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
        const error = this.stopped ? stoppingError() : callerGone(caller);
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
    if (run.invocation) this.cancel(run.invocation, error.kind === "deadline_exceeded" ? "deadline exceeded" : "caller cancelled");
  }

  /** Runs `run`'s attempts until one completes or the call fails (see the class comment). */
  private async drive(run: Run): Promise<Record<string, unknown>> {
    const { call } = run;
    const { committer, calls, hosts } = this.deps;
    let lostAttempt = 0;
    /** The call's `action.started` id ("" when it does not record): the cause of its runs and of its end. */
    let cause = "";
    for (;;) {
      const invocationId = `${call.callId}#${run.attempt}`;
      let session: ExecutorSession;
      // A call of time with a lateness bound waits for a host only until its latest start, until it has started once.
      const latest = lostAttempt === 0 ? call.scheduled?.latestStartMs : undefined;
      const budgetMs = this.budgetMs(run);
      const waitMs = latest === undefined ? budgetMs : Math.min(budgetMs, latest - this.deps.clock.now());
      try {
        // A pulse's call is taken at once or not at all: it never waits for a host.
        session = await hosts.acquire(call.entry.name, invocationId, call.eligible ? 0 : waitMs, run.abandoned?.signal, call.eligible);
      } catch (e) {
        // No host by its latest start (the wait ended there, or a wait as long as the action's timeout ended past it): not made.
        const pastLatest = latest !== undefined && (waitMs < budgetMs || this.deps.clock.now() >= latest);
        if (pastLatest && e instanceof ChronologError && e.kind === "unavailable" && !this.stopped) throw notStartedError(call.entry.name, latest);
        if (lostAttempt > 0 && !this.stopped) {
          const error = `${run.previousError}; ${e instanceof Error ? e.message : String(e)}`;
          await committer.submit((tx) => recordFailed(tx, calls, call, lostAttempt, error, cause));
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
        cause = await committer.submit((tx) => recordAttempt(tx, calls, call, run.attempt, run.previousError), { deferrable: hasSlack(call, this.deps.clock.now()) });
      } catch (e) {
        session.inFlight.delete(invocationId);
        hosts.offer(session);
        throw e;
      }
      // An attempt held for its moment when the owner begins to stop is not sent: the next owner sends it at its moment.
      const due = session.hosting.holds || (await this.holdUntil(call.scheduled?.sendAtMs));
      if (!due) session.inFlight.delete(invocationId);
      let end: AttemptEnd = due ? await this.invoke(run, session, invocationId, cause, hostInTime) : { kind: "stopping" };
      if (end.kind === "gone" && this.stopping) end = { kind: "stopping" }; // no new attempt while the owner stops: the row stays running
      switch (end.kind) {
        case "ok":
          await committer.submit((tx) => recordCompleted(tx, calls, call, run.attempt, end.output, cause) && call.scheduled?.onEnd?.(tx, { ok: true, error: "", terminal: false }), { deferrable: call.scheduled !== undefined });
          return end.output;
        case "error":
        case "timeout": {
          const error = new ChronologError("action_failed", `action ${call.entry.name} failed (attempt ${run.attempt}): ${end.error}`, [], { action: call.entry.name, call_id: call.callId, attempt: String(run.attempt) });
          await committer.submit((tx) => recordFailed(tx, calls, call, run.attempt, end.error, cause) && call.scheduled?.onEnd?.(tx, { ok: false, error: error.message, terminal: end.kind === "error" && end.terminal }), { deferrable: call.scheduled !== undefined });
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
      await this.deps.committer.submit((tx) => recordFailed(tx, this.deps.calls, call, attempt, "the owner stopped during the call; a pulse's interval is not made up", cause));
    } catch (e) {
      this.deps.logger.warn({ err: e, call: call.callId }, "recording the end of a pulse's call at the owner's stop failed");
    }
  }

  /**
   * Sends one attempt to `session` and resolves when it ends (answer, timeout, session gone,
   * owner stopping). The Invocation is built when the stream writes it: a held one's `hold_ms`
   * (to an executor that holds, a call of time goes out at once and starts at its moment)
   * is counted from then, so time spent queued in the owner does not make it late.
   */
  private invoke(run: Run, session: ExecutorSession, invocationId: string, cause: string, hostInTime: boolean): Promise<AttemptEnd> {
    const { call } = run;
    return new Promise((resolve) => {
      if (this.stopped) return resolve({ kind: "stopping" });
      if (session.closed) return resolve({ kind: "gone" });
      // A record:false run has no action.started: its call id is the cause of work under it while it runs.
      const release = cause === "" ? this.deps.live.hold(call.callId, call.actor, { depth: call.chainDepth, parent: call.parentCause }) : nothingHeld;
      const holdFrom = (now: number) => (session.hosting.holds ? Math.max(0, (call.scheduled?.sendAtMs ?? now) - now) : 0);
      /** When a held Invocation's hold ends (owner's clock), once written; null: not held or not written yet. */
      let heldUntil: number | null = null;
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
          if (heldUntil !== null && (result.kind === "ok" || result.kind === "error" || result.kind === "timeout")) started(run, this.heldStart(session, heldUntil, startedLateMs ?? 0));
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
        if (holdMs === 0) started(run, now);
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
              deadline: timestampFromMs(now + Math.min(holdMs + timeoutMs, callerMs)),
              attempt: run.attempt,
              scheduled: call.scheduled && { timerId: call.scheduled.timerId, due: timestampFromMs(call.scheduled.dueMs), occurrenceId: call.callId },
              pulse: call.pulse && { pulse: call.pulse.pulse, interval: call.pulse.interval, due: timestampFromMs(call.pulse.dueMs) },
              chainDepth: call.chainDepth,
              holdMs,
              writtenAtMs: session.streamClockMs(),
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
      this.deps.logger.warn({ session: session.id, executor: session.hosting.executor, earlyMs: -sinceHold }, "an executor that holds answered a call of time before its hold_ms ended: it runs such calls early");
    }
    return heldUntil + Math.min(startedLateMs, Math.max(0, sinceHold));
  }

  /**
   * Resolves true at `atMs` on the owner's clock (ms since the epoch; at once when absent or
   * past), false as soon as the owner begins to stop before it: an attempt started ahead of its
   * moment waits here, its credit held, then is sent (true) or not (false).
   */
  private holdUntil(atMs: number | undefined): Promise<boolean> {
    const { clock, timers } = this.deps;
    if (atMs === undefined || clock.now() >= atMs) return Promise.resolve(true);
    if (this.stopping) return Promise.resolve(false);
    return new Promise((resolve) => {
      const wake = () => {
        this.held.delete(wake);
        if (clock.now() >= atMs) return resolve(true);
        if (this.stopping) return resolve(false);
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
  private cancel(invocation: Invocation, reason: string): void {
    if (invocation.run.cancelSent || invocation.run.invocation !== invocation) return;
    invocation.run.cancelSent = true;
    invocation.session.send({ message: { case: "cancelInvocation", value: { invocationId: invocation.id, reason } } });
  }

  /** How long the next attempt may wait for a host: the action's timeout or the callers' deadline (less a margin), whichever is first. */
  private budgetMs(run: Run): number {
    let callers = run.waiters.size === 0 ? 0 : -Infinity;
    for (const waiter of run.waiters) {
      const remaining = waiter.remainingMs();
      if (remaining === undefined) {
        callers = Infinity;
        break;
      }
      callers = Math.max(callers, remaining - Math.min(maxAnswerMarginMs, Math.floor(remaining / 4)));
    }
    return Math.min(run.call.entry.timeoutMs, callers);
  }
}

/** A call made by time: the occurrence id and the timer's actor, from the owner's clock only. Starts or continues a chain. */
function fromTime(req: CallRequest, scheduled: ScheduledCall, principal: Principal) {
  if (principal !== systemPrincipal) fail("permission_denied", "only the owner's clock makes scheduled calls");
  const { timerId, dueMs, sendAtMs, latestStartMs, onStarted, onEnd } = scheduled;
  return { callId: req.callId, actor: scheduled.actor, parentCause: "", scheduled: { timerId, dueMs, sendAtMs, latestStartMs, onStarted, onEnd }, chainDepth: scheduled.chainDepth ?? 0, chainStart: true };
}

/** Tells time when `run`'s action started (`atMs`, owner's clock), once per run: its lateness is measured there. */
function started(run: Run, atMs: number): void {
  if (run.started) return;
  run.started = true;
  run.call.scheduled?.onStarted?.(atMs);
}

/** A call made by a pulse: the interval's call id, as the system, from the owner's pulses only. Starts a chain. */
function fromPulse(req: CallRequest, pulse: PulseCallRequest, principal: Principal) {
  if (principal !== systemPrincipal) fail("permission_denied", "only the owner's pulses make pulse calls");
  return { callId: req.callId, actor: null, parentCause: "", pulse: { pulse: pulse.pulse, interval: pulse.interval, dueMs: pulse.dueMs }, eligible: pulse.eligible, chainDepth: 0, chainStart: true };
}

/** The longest time any waiter of `run` still gives it (ms); Infinity when one has no deadline. */
function maxRemaining(run: Run): number {
  let longest = 0;
  for (const waiter of run.waiters) longest = Math.max(longest, waiter.remainingMs() ?? Infinity);
  return longest;
}

/** ALREADY_EXISTS unless a call id is used again for the same action and input. */
function sameCall(call: CallIdentity, action: string, inputHash: string): void {
  if (action === call.entry.name && inputHash === call.inputHash) return;
  fail(
    "id_conflict",
    `call id ${JSON.stringify(call.callId)} was already used for ${action === call.entry.name ? "a different input" : `action ${action}`}; the original stands`,
    [{ field: "call_id", description: "already used by a different call" }],
    { call_id: call.callId },
  );
}

/**
 * A client cancels at its own deadline, which comes a little before the owner's copy of it
 * (the request took time to arrive): a cancellation this close to the deadline is the deadline.
 */
const deadlineToleranceMs = 250;

/** The error a caller that left gets: DEADLINE_EXCEEDED when its deadline passed, CANCELLED otherwise. */
function callerGone(caller: CallerContext): ChronologError {
  const remaining = caller.remainingMs();
  return remaining !== undefined && remaining <= deadlineToleranceMs
    ? new ChronologError("deadline_exceeded", "the caller's deadline passed before the action answered")
    : new ChronologError("cancelled", "the caller cancelled the call");
}

/** The release of a run that holds no live cause (it records `action.started`). */
function nothingHeld(): void {}

/** Metadata key marking the error of a call of time not started by its latest start. */
const notStartedKey = "not_started_by_ms";

/** The error of a call of time that found no executor's credit by `latestMs` (its lateness bound): not made. */
function notStartedError(action: string, latestMs: number): ChronologError {
  return new ChronologError("deadline_exceeded", `no executor of ${action} had a free credit by ${new Date(latestMs).toISOString()}, the occurrence's lateness bound: not made`, [], { [notStartedKey]: String(latestMs) });
}

/** True for the error of a call of time not started by its `latestStartMs` (ScheduledCall): nothing was written for it. */
export function notStartedInTime(error: unknown): boolean {
  return error instanceof ChronologError && error.metadata?.[notStartedKey] !== undefined;
}

function stoppingError(): ChronologError {
  return new ChronologError("unavailable", "the owner is stopping; call again when it is back");
}

/**
 * The least time a call of time must have to spare before its moment for its start to be committed
 * as deferrable (Committer.submit: it may wait up to 10 ms longer under load), ms.
 */
const startSlackMs = 30;

/** True for a call made by time whose moment is at least {@link startSlackMs} away (it was claimed inside the clock's lookahead); `nowMs` on the owner's clock. */
function hasSlack(call: CallIdentity, nowMs: number): boolean {
  return call.scheduled?.sendAtMs !== undefined && call.scheduled.sendAtMs - nowMs >= startSlackMs;
}
