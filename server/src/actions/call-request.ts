import type { ExecutorSession } from "../executors/session.js";
import type { CauseRef } from "../log/causes.js";
import type { Tx } from "../store/committer.js";
import type { ActorRecord } from "../store/events.js";
import type { AppendAhead } from "../store/read-ahead.js";

// What a call of an action is made with and answered with: the request as parsed, what time
// and pulses tell the calls they make, and the call's answer.

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

/** How a run of a call of time ended, as its `onEnd` is told: `terminal` when the executor marked the error final (no retry). */
export interface AttemptOutcome {
  ok: boolean;
  error: string;
  terminal: boolean;
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
   * The occurrence was claimed by this owner just now: its call has no row and no event yet, so
   * nothing is looked up before its first attempt starts.
   */
  fresh?: boolean;
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
   * delay (at its answer); and when that invocation was written to the executor's stream.
   * Time measures its lateness there.
   */
  onStarted?: (startedAtMs: number, writtenAtMs: number) => void;
  /**
   * Runs inside the commit unit that records this run's end (`action.completed`, or
   * `action.failed` with the action's error or timeout; `error` is then the message the
   * caller gets), so time's own record of the occurrence commits with it instead
   * of in a unit of its own. Not called when the call ends otherwise (answered from
   * the log, joined another run, no host, owner stopping).
   */
  onEnd?: (tx: Tx, end: AttemptOutcome) => void;
  /**
   * The events `onEnd` may append for a run that ended `ok` or not, as far as known (Committer.submit's
   * `appends`: what a `cancel_on` names is read ahead for them); none when absent.
   */
  endAppends?: (ok: boolean) => AppendAhead[];
}

/** A call's answer. */
export interface CallResult {
  callId: string;
  output: Record<string, unknown>;
  /** True when answered from the stored record of a completed call, without running. */
  fromLog: boolean;
}
