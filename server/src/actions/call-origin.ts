import { allows, resolveActor, sameActor, systemPrincipal, type Principal } from "../auth/principal.js";
import { fail } from "../errors.js";
import { causeActor, causeChainDepth, type CauseRef, type LiveCauses } from "../log/causes.js";
import { checkId, derivedId, newId } from "../log/ids.js";
import type { ActorRecord, EventStatements } from "../store/events.js";
import type { CallRequest, PulseCallRequest, ScheduledCall } from "./call-request.js";
import type { ActionEntry } from "./declaration.js";
import type { CallIdentity } from "./records.js";

// Where a call comes from, and so its call id, who it runs as and where its chain stands: from
// outside (the action's allow), under a cause (the cause's actor, a derived id), from time or
// from a pulse (the owner's own, as the system); and the check that a call id used again names
// the same call.

/** A call from outside: the action's allow (PERMISSION_DENIED), the client's call id (checked) or a fresh one, the principal's actor. */
export function fromOutside(entry: ActionEntry, req: CallRequest, principal: Principal) {
  if (!allows(entry.allow, principal)) {
    const who = entry.allow.length === 0 ? "only code under a cause may call it" : `allow: ${entry.allow.join(", ")}`;
    fail("permission_denied", `principal ${principal.name} (role ${principal.role}) may not call ${entry.name} (${who})`, [], { action: entry.name });
  }
  if (req.callId !== "") checkId(req.callId, "call_id");
  return { callId: req.callId || newId(), actor: resolveActor(principal, req.actor), parentCause: "", chainDepth: 0 };
}

/** A call from code under a cause: id derived, actor the cause's. Executors and admins only. */
export function underCause(entry: ActionEntry, req: CallRequest, principal: Principal, events: EventStatements, live: LiveCauses) {
  const cause = req.cause as CauseRef;
  if (principal.role === "client")
    fail("permission_denied", `principal ${principal.name} (role client) may not call under a cause; only executors act under a cause`);
  if (req.actor && Object.values(req.actor).some((v) => v)) fail("bad_request", "actor must be empty under a cause: the actor is the cause's");
  const actor = causeActor(cause.eventId, events, live, principal);
  const callId = derivedId(cause.eventId, cause.position, { action: entry.name, input: req.input });
  if (req.callId && req.callId !== callId) fail("bad_request", "call_id must be empty under a cause: it is derived from the cause and position");
  return { callId, actor, parentCause: cause.eventId, chainDepth: causeChainDepth(cause.eventId, events, live) };
}

/** A call made by time: the occurrence id and the timer's actor, from the owner's clock only. Starts or continues a chain. */
export function fromTime(req: CallRequest, scheduled: ScheduledCall, principal: Principal) {
  if (principal !== systemPrincipal) fail("permission_denied", "only the owner's clock makes scheduled calls");
  const { timerId, dueMs, sendAtMs, latestStartMs, onStarted, onEnd, endAppends } = scheduled;
  return {
    callId: req.callId,
    actor: scheduled.actor,
    parentCause: "",
    scheduled: { timerId, dueMs, sendAtMs, latestStartMs, onStarted, onEnd, endAppends },
    chainDepth: scheduled.chainDepth ?? 0,
    chainStart: true,
  };
}

/** A call made by a pulse: the interval's call id, as the system, from the owner's pulses only. Starts a chain. */
export function fromPulse(req: CallRequest, pulse: PulseCallRequest, principal: Principal) {
  if (principal !== systemPrincipal) fail("permission_denied", "only the owner's pulses make pulse calls");
  return {
    callId: req.callId,
    actor: null,
    parentCause: "",
    pulse: { pulse: pulse.pulse, interval: pulse.interval, dueMs: pulse.dueMs },
    eligible: pulse.eligible,
    chainDepth: 0,
    chainStart: true,
  };
}

/** ALREADY_EXISTS unless a call id is used again for the same action and input. */
/**
 * A call id a client chose that names a call of another actor: refused as a taken id, saying
 * nothing of that call (its action, input, state or output), as an emit's taken event id is.
 * Calls from time, pulses and work under a cause have ids the owner derives: never refused here;
 * nor are admins, who may act as any actor.
 */
export function ownCallId(call: CallIdentity, actor: ActorRecord | null, clientChosen: boolean, principal: Principal): void {
  if (!clientChosen || principal.role === "admin" || sameActor(call.actor, actor)) return;
  fail("id_conflict", `call id ${JSON.stringify(call.callId)} is already in use; choose another id`, [{ field: "call_id", description: "already in use" }], {
    call_id: call.callId,
  });
}

export function sameCall(call: CallIdentity, action: string, inputHash: string): void {
  if (action === call.entry.name && inputHash === call.inputHash) return;
  fail(
    "id_conflict",
    `call id ${JSON.stringify(call.callId)} was already used for ${action === call.entry.name ? "a different input" : `action ${action}`}; the original stands`,
    [{ field: "call_id", description: "already used by a different call" }],
    { call_id: call.callId },
  );
}
