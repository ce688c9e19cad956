import type { CauseWork } from "../auth/cause-access.js";
import type { Principal } from "../auth/principal.js";
import { fail } from "../errors.js";
import type { ActorRecord, EventRecord, EventStatements } from "../store/events.js";

/**
 * Names the work a call is made under (the proto's Cause): the event `eventId` (a delivery's
 * event, an invocation's `action.started`, or a live cause's call id) and the call's 0-based
 * `position` among those made under it; ids made under a cause derive from both.
 */
export interface CauseRef {
  eventId: string;
  position: number;
}

/**
 * Causes that are not events in the log: a `record: false`
 * action leaves no `action.started`, so work done under its invocation names
 * the call id as its cause (see Invocation.cause_event_id). While such an
 * invocation runs, the action calls hold its call id here with the call's
 * actor; emits, calls and collection writes under it take that actor, and
 * derive their ids from it as from any cause. Once the run ends the
 * cause is released: late work under it fails with FAILED_PRECONDITION.
 * In memory only: an owner restart ends every run anyway.
 */
export class LiveCauses {
  private readonly live = new Map<string, LiveCause & { holds: number }>();
  /** Events in the log the owner just delivered or started calls under ({@link remember}), oldest first. */
  private readonly recent = new Map<string, LiveCause>();

  /** `mayWork`: whether a principal may work under a cause that is such work (auth/cause-access.ts). */
  constructor(readonly mayWork: (principal: Principal, work: CauseWork) => boolean) {}

  /**
   * Holds `id` as a live cause running as `actor` until the returned release is called
   * (idempotent). `chain` places it in its chain: its own depth when known, else the
   * cause it was made under ("" for none).
   */
  hold(id: string, actor: ActorRecord | null, work: CauseWork, chain: LiveCause["chain"] = { parent: "" }): () => void {
    const entry = this.live.get(id);
    if (entry) entry.holds++;
    else this.live.set(id, { actor, work, chain, holds: 1 });
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const current = this.live.get(id);
      if (current && --current.holds === 0) this.live.delete(id);
    };
  }

  /**
   * Remembers the event `id` of the log, just delivered or just recorded as a call's
   * `action.started`, as a cause with its actor and place in its chain: work under it finds them
   * here instead of reading the log (on PostgreSQL a round trip the owner's thread would wait
   * for). Events never change, so what is remembered stays true; the oldest of
   * {@link recentCauses} is forgotten first, and a cause forgotten is read from the log again.
   */
  remember(id: string, actor: ActorRecord | null, work: CauseWork, chain: LiveCause["chain"]): void {
    if (this.recent.has(id)) return;
    this.recent.set(id, { actor, work, chain });
    if (this.recent.size > recentCauses) this.recent.delete(this.recent.keys().next().value as string);
  }

  /** The live cause `id`, or a remembered one; undefined when neither. */
  get(id: string): LiveCause | undefined {
    return this.live.get(id) ?? this.recent.get(id);
  }
}

/** Remembers `event` as a cause (LiveCauses.remember), in its chain as {@link causeChainDepth} would place it. */
export function rememberCause(causes: LiveCauses, event: EventRecord): void {
  const depth = event.type === "action.started" ? event.data.chain_depth : undefined;
  causes.remember(event.id, event.actor, workOf(event), typeof depth === "number" ? { depth, parent: event.cause } : { parent: event.cause });
}

/** What event `event` is the work of as a cause: a call (its `action.started`), else a delivery of its type. */
function workOf(event: EventRecord): CauseWork {
  return event.type === "action.started" && typeof event.data.action === "string" ? { action: event.data.action } : { type: event.type };
}

/** Events remembered as causes at most ({@link LiveCauses.remember}): well past the deliveries and calls in flight at once. */
const recentCauses = 16_384;

/** A cause held in memory (a running `record: false` invocation, or an event remembered as a cause). */
export interface LiveCause {
  actor: ActorRecord | null;
  /** What it is the work of (who may work under it: {@link causeActor}). */
  work: CauseWork;
  /** Its place in a chain: `depth` when the call recorded one, else the cause it was made under. */
  chain: { depth?: number; parent: string };
}

/** Most causes {@link causeChainDepth} follows before giving up (a chain that long is reported as depth 0 from there). */
const maxChainWalk = 1_000;

/**
 * The chain depth of work done under cause `id`: follows the cause links of the log
 * (and of live causes) up to the nearest call that recorded its depth, `action.started` with
 * `chain_depth` (calls made by time, and calls deeper than 0), and returns that depth; 0 when
 * the links end first (work that began with a client's request, an event emitted from
 * outside, or a call that starts a chain). An unknown id counts as 0 (callers check the cause
 * exists separately). Reads only.
 */
export function causeChainDepth(id: string, events: EventStatements, live: LiveCauses | undefined): number {
  for (let steps = 0; id !== "" && steps < maxChainWalk; steps++) {
    const running = live?.get(id);
    if (running) {
      if (running.chain.depth !== undefined) return running.chain.depth;
      id = running.chain.parent;
      continue;
    }
    const event = events.findById(id);
    if (!event) return 0;
    const depth = event.type === "action.started" ? event.data.chain_depth : undefined;
    if (typeof depth === "number") return depth;
    id = event.cause;
  }
  return 0;
}

/**
 * The actor of the cause `id` for work `principal` does under it: a live cause's
 * (checked first: a running record:false invocation, or an event remembered as a cause), else the
 * cause event's, read from the log and remembered. FAILED_PRECONDITION when neither exists;
 * PERMISSION_DENIED when the principal may not work under it (its token may not host the plugin
 * whose work the cause is: {@link LiveCauses.mayWork}).
 */
export function causeActor(id: string, events: EventStatements, live: LiveCauses, principal: Principal): ActorRecord | null {
  let cause = live.get(id);
  if (!cause) {
    const event = events.findById(id) ?? fail("failed_precondition", `cause event ${JSON.stringify(id)} is not in the log`);
    cause = { actor: event.actor, work: workOf(event), chain: { parent: event.cause } };
    rememberCause(live, event); // the next work under it reads nothing
  }
  // The message names nothing of the cause: it may be another space's event.
  if (!live.mayWork(principal, cause.work))
    fail("permission_denied", `principal ${principal.name} may not work under cause ${JSON.stringify(id)}: it is the work of no plugin its token may host`);
  return cause.actor;
}
