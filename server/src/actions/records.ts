import { limitKeysOf } from "./limits-restore.js";
import type { ExecutorSession } from "../executors/session.js";
import { canonicalJson } from "../log/canonical.js";
import { derivedId } from "../log/ids.js";
import type { Tx } from "../store/committer.js";
import type { CallRow, CallStatements } from "../store/calls.js";
import type { ActorRecord, EventReads, EventRecord, EventStatements } from "../store/events.js";
import type { AppendAhead } from "../store/read-ahead.js";
import type { AttemptOutcome } from "./call-request.js";
import { recordedInput, type ActionEntry } from "./declaration.js";

/**
 * What an action call writes: the `action_calls` row and,
 * when the action records, its events, in one commit unit each.
 *
 * Events (all with the call's actor; `cause` = the `action.started` id except
 * for `action.started` itself, whose cause is the event the call was made
 * under, or empty from outside):
 * - `action.started` `{ call_id, action, input, attempt[, chain_depth] }`:
 *   the input without the action's private fields; once per call;
 *   `chain_depth` for calls made by time and calls deeper than 0;
 * - `action.retried` `{ call_id, action, attempt, error }`: a later attempt,
 *   with why the one before failed;
 * - `action.completed` `{ call_id, action, attempt, output }`;
 * - `action.failed` `{ call_id, action, attempt, error }`.
 * Their ids are derived from the call id, so a call id's events are found
 * again by id and never collide with the ids of other calls.
 */

/** One call, as every attempt of it runs. */
export interface CallIdentity {
  callId: string;
  entry: ActionEntry;
  /** The whole input, private fields included. */
  input: Record<string, unknown>;
  /** sha256 (hex) of the canonical input. */
  inputHash: string;
  /** UTF-8 bytes of the canonical input: what its Invocation weighs in a batch (executors/session.ts). */
  inputBytes: number;
  /** Who the call runs as (null: the system). */
  actor: ActorRecord | null;
  /** Id of the event the call was made under, "" from outside. */
  parentCause: string;
  /** Set when time made the call: sent with every attempt as Invocation.scheduled; `onEnd` and `endAppends` as in ScheduledCall. */
  scheduled?: {
    timerId: string;
    dueMs: number;
    sendAtMs?: number;
    latestStartMs?: number;
    onStarted?: (startedAtMs: number, writtenAtMs: number) => void;
    onEnd?: (tx: Tx, end: AttemptOutcome) => void;
    endAppends?: (ok: boolean) => AppendAhead[];
  };
  /** Set when a pulse made the call: sent with every attempt as Invocation.pulse. */
  pulse?: { pulse: string; interval: number; dueMs: number };
  /** Pulse calls: the only sessions that may run it; such a call never waits for a host. */
  eligible?: (session: ExecutorSession) => boolean;
  /** Its chain depth: 0 for a call that starts a chain; under a cause, the cause's. */
  chainDepth: number;
  /** Trace context of what made the call (tracing/trace-context.ts), stored with it; absent: none. */
  trace?: string;
  /** Made by time (a schedule, delay or pulse): its chain depth is recorded even when 0. */
  chainStart?: boolean;
}

type CallEventKind = "started" | "retried" | "completed" | "failed";

/** A call's runtime event as a unit appends it (Tx.append). */
type CallEvent = Omit<EventRecord, "seq" | "at">;

/**
 * The id of a call's runtime event; `attempt` is 0 for the once-per-call `started` and
 * `completed`. 32 hex characters derived from the call id. When the call id is
 * time-ordered (an occurrence id, which leads with its due moment in 12 hex characters, or an
 * owner-made UUIDv7) its 12 hex time characters lead the event id, so the log's id index is
 * appended to rather than written at random pages (half the WAL bytes of a timer's call).
 */
export function callEventId(callId: string, what: CallEventKind, attempt = 0): string {
  return ledByTime(callId, derivedId(callId, attempt, `action.${what}`));
}

/** `derived` with its first 12 characters replaced by the call id's 12 hex time characters, when it has them (dash dropped from a UUIDv7). */
function ledByTime(callId: string, derived: string): string {
  const time = timeCharacters(callId);
  return time === undefined ? derived : time + derived.slice(12);
}

/** The 12 hex time characters a time-ordered call id leads with (an occurrence id's due moment, a UUIDv7's ms, dash dropped), or undefined. */
function timeCharacters(callId: string): string | undefined {
  if (/^[0-9a-f]{12}/.test(callId)) return callId.slice(0, 12);
  if (/^[0-9a-f]{8}-[0-9a-f]{4}-7/.test(callId)) return callId.slice(0, 8) + callId.slice(9, 13);
  return undefined;
}

/**
 * A call id leading with a moment this close to now (ms) was first used at most about this long
 * ago, far inside the shortest call retention (one day): its row, if it ever had one, is still
 * there, so {@link callFromLog} need not look in the log (the calls of time and owner-made ids).
 */
const recentCallIdMs = 3_600_000;

/**
 * A call's runtime event in the log: under {@link callEventId}, or under the plain derived id
 * an owner before the time-ordered ids gave it (a call it started and this one continues).
 */
export function findCallEvent(events: EventStatements, callId: string, what: CallEventKind, attempt = 0): EventRecord | undefined {
  const [id, legacy] = callEventIds(callId, what, attempt);
  return events.findById(id) ?? (legacy === undefined ? undefined : events.findById(legacy));
}

/** {@link findCallEvent} without blocking the event loop: both ids looked up together (one round trip on PostgreSQL). */
async function readCallEvent(reads: Pick<EventReads, "findById">, callId: string, what: CallEventKind, attempt = 0): Promise<EventRecord | undefined> {
  const [id, legacy] = callEventIds(callId, what, attempt);
  const [found, old] = await Promise.all([reads.findById(id), legacy === undefined ? undefined : reads.findById(legacy)]);
  return found ?? old;
}

/** The ids a call's runtime event may have: {@link callEventId}'s, and the older plain derived one when it differs. */
function callEventIds(callId: string, what: CallEventKind, attempt: number): [id: string, legacy: string | undefined] {
  const legacy = derivedId(callId, attempt, `action.${what}`);
  const id = ledByTime(callId, legacy);
  return [id, legacy === id ? undefined : legacy];
}

/**
 * The call `call.callId` as its `action.*` events tell it, for a recorded call whose
 * `action_calls` row the retention deleted (actions/retention.ts), or undefined when the log has
 * no `action.started` for it (not looked up for a call id leading with a recent moment: see
 * {@link recentCallIdMs}). Completed: with `action.completed`; otherwise failed at its last
 * attempt (the highest `action.retried`, found by id one attempt after another). `inputHash` is
 * the call's own when the recorded input (private fields aside) and action match, else one that
 * matches no input, so the caller refuses the reuse (ALREADY_EXISTS).
 */
export async function callFromLog(reads: Pick<EventReads, "findById">, call: CallIdentity, nowMs: number): Promise<CallRow | undefined> {
  const { callId, entry } = call;
  const time = timeCharacters(callId);
  if (time !== undefined && Math.abs(nowMs - parseInt(time, 16)) <= recentCallIdMs) return undefined;
  const find = (what: CallEventKind, attempt = 0) => readCallEvent(reads, callId, what, attempt);
  const started = await find("started");
  if (!started) return undefined;
  const same = started.data.action === entry.name && canonicalJson(started.data.input) === canonicalJson(recordedInput(entry, call.input));
  const completed = await find("completed");
  let attempt = completed ? Number(completed.data.attempt) : 1;
  if (!completed) while (await find("retried", attempt + 1)) attempt++;
  const failed = completed ? undefined : await find("failed", attempt);
  return {
    callId,
    action: String(started.data.action),
    inputHash: same ? call.inputHash : "",
    actor: started.actor,
    recorded: true,
    state: completed ? "completed" : "failed",
    attempt,
    output: undefined,
    error: failed ? String(failed.data.error) : `the owner stopped during attempt ${attempt}`,
    updatedAt: (completed ?? failed ?? started).at,
  };
}

/**
 * The ids under which a later attempt of call `callId` looks up its `action.started`
 * ({@link recordAttempt}): what the unit that starts it reads ahead (Committer.submit's `lookups`).
 */
export function startedLookups(callId: string): string[] {
  const [id, legacy] = callEventIds(callId, "started", 0);
  return legacy === undefined ? [id] : [id, legacy];
}

/**
 * Commit unit: starts attempt `attempt` of `call` (state `running`). Records
 * `action.started` if the call has none in the log yet, else
 * `action.retried` with `previousError`. Returns the invocation's cause: the
 * `action.started` id, or "" when the action does not record (then the call
 * id is the cause, see LiveCauses). `startedId`: the call's `action.started` id when the run
 * knows it (an attempt before this one in the same run recorded it); else a later attempt looks it
 * up (read ahead of the batch with {@link startedLookups}).
 */
export function recordAttempt(tx: Tx, calls: CallStatements, call: CallIdentity, attempt: number, previousError: string, startedId = ""): string {
  const { callId, entry } = call;
  // Attempt 1 is only ever a call id with no row (ActionCalls.call looked): no row or event to look up again.
  const first = attempt === 1;
  const row = {
    callId,
    action: entry.name,
    inputHash: call.inputHash,
    actor: call.actor,
    recorded: entry.record,
    attempt,
    trace: call.trace,
    limitKeys: limitKeysOf(entry, call.input),
  };
  if (first) calls.insert(row, tx.now);
  else calls.startAgain(row, tx.now); // its row, or a new one if the retention deleted it
  if (!entry.record) return "";
  const started = first ? undefined : startedId !== "" ? { id: startedId } : findCallEvent(tx.events, callId, "started");
  if (started) {
    tx.append(retriedEvent(call, attempt, previousError, started.id));
    return started.id;
  }
  return tx.append(startedEvent(call, attempt)).id;
}

/** `action.started` of `call`, at its attempt `attempt` (see the module comment). */
function startedEvent(call: CallIdentity, attempt: number): CallEvent {
  const { callId, entry } = call;
  const chain = call.chainStart || call.chainDepth > 0 ? { chain_depth: call.chainDepth } : {};
  // A call of time names its timer: the way up from it to the work that set the timer (it has no cause).
  const timer = call.scheduled ? { timer_id: call.scheduled.timerId } : {};
  return {
    id: callEventId(callId, "started"),
    type: "action.started",
    data: { call_id: callId, action: entry.name, input: recordedInput(entry, call.input), attempt, ...chain, ...timer },
    cause: call.parentCause,
    actor: call.actor,
  };
}

function retriedEvent(call: CallIdentity, attempt: number, previousError: string, startedId: string): CallEvent {
  return {
    id: callEventId(call.callId, "retried", attempt),
    type: "action.retried",
    data: { call_id: call.callId, action: call.entry.name, attempt, error: previousError },
    cause: startedId,
    actor: call.actor,
  };
}

function completedEvent(call: CallIdentity, attempt: number, output: Record<string, unknown>, startedId: string): CallEvent {
  return {
    id: callEventId(call.callId, "completed"),
    type: "action.completed",
    data: { call_id: call.callId, action: call.entry.name, attempt, output },
    cause: startedId,
    actor: call.actor,
  };
}

function failedEvent(call: Pick<CallRow, "callId" | "action" | "actor">, attempt: number, error: string, startedId: string): CallEvent {
  return {
    id: callEventId(call.callId, "failed", attempt),
    type: "action.failed",
    data: { call_id: call.callId, action: call.action, attempt, error },
    cause: startedId,
    actor: call.actor,
  };
}

/**
 * The events a unit of {@link recordAttempt}, {@link recordCompleted} or {@link recordFailed} of
 * a recorded call may append (Committer.submit's `appends`: what is read ahead for them, the
 * timers a `cancel_on` naming their type waits on); none for a call that does not record. A later
 * attempt says both `action.retried` and `action.started` (which one is known inside the unit).
 */
export function callAppends(
  call: CallIdentity,
  attempt: number,
  end: { started: true; previousError: string } | { ok: true; output: Record<string, unknown> } | { ok: false; error: string },
): AppendAhead[] | undefined {
  if (!call.entry.record) return undefined;
  if ("started" in end)
    return attempt === 1 ? [startedEvent(call, attempt)] : [retriedEvent(call, attempt, end.previousError, ""), startedEvent(call, attempt)];
  return [
    end.ok
      ? completedEvent(call, attempt, end.output, "")
      : failedEvent({ callId: call.callId, action: call.entry.name, actor: call.actor }, attempt, end.error, ""),
  ];
}

/**
 * Commit unit: attempt `attempt` completed with `output`: records
 * `action.completed` under `startedId`, the call's `action.started` (or, unrecorded,
 * keeps the output in the row). Returns false, writing nothing, when the call has
 * moved past that attempt. `held`: the attempt is one this owner's run started and holds (its
 * row is at it: nothing is read back, CallStatements.completeHeld).
 */
export function recordCompleted(
  tx: Tx,
  calls: CallStatements,
  call: CallIdentity,
  attempt: number,
  output: Record<string, unknown>,
  startedId: string,
  held = false,
): boolean {
  const { callId, entry } = call;
  const stored = entry.record ? undefined : output;
  if (held) calls.completeHeld(callId, attempt, stored, tx.now);
  else if (!calls.complete(callId, attempt, stored, tx.now)) return false;
  if (entry.record) tx.append(completedEvent(call, attempt, output, startedId));
  return true;
}

/**
 * Commit unit: attempt `attempt` failed with `error`: records `action.failed`
 * under `startedId` (recorded actions). Returns false, writing nothing, when the
 * call has moved past that attempt. `held`: as for {@link recordCompleted}.
 */
export function recordFailed(tx: Tx, calls: CallStatements, call: CallIdentity, attempt: number, error: string, startedId: string, held = false): boolean {
  return failAttempt(
    tx,
    calls,
    { callId: call.callId, action: call.entry.name, recorded: call.entry.record, actor: call.actor },
    attempt,
    error,
    startedId,
    held,
  );
}

/**
 * Commit unit: the last attempt of call `row`, left `running` by an owner that stopped, failed
 * with `error` (`action.failed`, recorded calls), so the log never keeps a start without an end
 * when that call is not run again. False, writing nothing, when it is not running.
 */
export function recordLeftRunningFailed(tx: Tx, calls: CallStatements, row: CallRow, error: string): boolean {
  if (row.state !== "running") return false;
  const startedId = findCallEvent(tx.events, row.callId, "started")?.id ?? callEventId(row.callId, "started");
  return failAttempt(tx, calls, row, row.attempt, error, startedId);
}

function failAttempt(
  tx: Tx,
  calls: CallStatements,
  call: Pick<CallRow, "callId" | "action" | "recorded" | "actor">,
  attempt: number,
  error: string,
  startedId: string,
  held = false,
): boolean {
  const { callId } = call;
  if (held) calls.failHeld(callId, attempt, error, tx.now);
  else if (!calls.fail(callId, attempt, error, tx.now)) return false;
  if (call.recorded) tx.append(failedEvent(call, attempt, error, startedId));
  return true;
}

/**
 * The output of a completed call: from its `action.completed` event in
 * the log when recorded, else from its row.
 */
export function storedOutput(row: CallRow, events: EventStatements): Record<string, unknown> {
  if (!row.recorded) return row.output ?? {};
  const completed = findCallEvent(events, row.callId, "completed");
  return (completed?.data.output as Record<string, unknown> | undefined) ?? row.output ?? {};
}
