import { fail } from "../errors.js";
import type { ActorRecord, EventStatements } from "../store/events.js";

/**
 * Causes that are not events in the log (SPEC X5, A2): a `record: false`
 * action leaves no `action.started`, so work done under its invocation names
 * the call id as its cause (see Invocation.cause_event_id). While such an
 * invocation runs, the action calls hold its call id here with the call's
 * actor; emits, calls and collection writes under it take that actor, and
 * derive their ids from it as from any cause (E7). Once the run ends the
 * cause is released: late work under it fails with FAILED_PRECONDITION.
 * In memory only: an owner restart ends every run anyway.
 */
export class LiveCauses {
  private readonly live = new Map<string, { actor: ActorRecord | null; holds: number }>();

  /** Holds `id` as a live cause running as `actor` until the returned release is called (idempotent). */
  hold(id: string, actor: ActorRecord | null): () => void {
    const entry = this.live.get(id);
    if (entry) entry.holds++;
    else this.live.set(id, { actor, holds: 1 });
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const current = this.live.get(id);
      if (current && --current.holds === 0) this.live.delete(id);
    };
  }

  /** The live cause `id`, or undefined. */
  get(id: string): { actor: ActorRecord | null } | undefined {
    return this.live.get(id);
  }
}

/**
 * The actor of the cause `id` for work done under it (P5, X5): a live cause's
 * (checked first: a running record:false invocation), else the cause event's.
 * FAILED_PRECONDITION when neither exists.
 */
export function causeActor(id: string, events: EventStatements, live: LiveCauses | undefined): ActorRecord | null {
  const running = live?.get(id);
  if (running) return running.actor;
  const event = events.findById(id) ?? fail("failed_precondition", `cause event ${JSON.stringify(id)} is not in the log`);
  return event.actor;
}
