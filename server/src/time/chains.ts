import { fail } from "../errors.js";
import { causeChainDepth, type CauseRef, type LiveCauses } from "../log/causes.js";
import { derivedId } from "../log/ids.js";
import type { Committer } from "../store/committer.js";
import type { ActorRecord, EventStatements } from "../store/events.js";

/** Default deepest chain a delay may continue: 100 delays armed one under another. */
export const defaultMaxChainDepth = 100;

/** What {@link DelayChains} needs. */
export interface DelayChainsDeps {
  committer: Committer;
  events: EventStatements;
  live: LiveCauses;
  /** Deepest chain depth a delay may get (>= 0; default {@link defaultMaxChainDepth}). */
  maxDepth: number;
}

/** A delay about to be armed, as far as chains are concerned. */
export interface DelayInChain {
  /** The cause it is armed under; null from outside. */
  cause: CauseRef | null;
  /** It starts a new chain instead of continuing the cause's (DelayRequest.fresh_chain). */
  freshChain: boolean;
  /** `plugin.action` it would call. */
  action: string;
  /** Its id (derived under a cause). */
  delayId: string;
  /** Who it runs as (the cause's actor). */
  actor: ActorRecord | null;
}

/**
 * Chains of delayed calls. A pulse's or a schedule's call starts a
 * chain (depth 0), as does a client's call or a delay set from outside; work
 * under a call is at the call's depth; a delay armed under a cause continues
 * that chain one deeper (the cause's depth + 1, found by following cause links
 * to the nearest call that recorded its depth, see causeChainDepth), unless it
 * asks for a fresh chain (depth 0). The depth is stored on the delay's timer
 * row and reaches its call (Invocation.chain_depth, `action.started`'s
 * `chain_depth`), so a delay that re-arms itself counts up.
 *
 * A delay deeper than the owner's maximum is refused: FAILED_PRECONDITION, and
 * a `timer.chain_exceeded` event records it (data: action, delay_id,
 * chain_depth, max_chain_depth; the cause and its actor). Its id is derived
 * from the cause and position, so a retried run that tries again records it
 * once. Nothing else is written.
 */
export class DelayChains {
  constructor(private readonly deps: DelayChainsDeps) {}

  /** The deepest depth allowed. */
  get maxDepth(): number {
    return this.deps.maxDepth;
  }

  /** The chain depth of `delay` (see the class comment); records `timer.chain_exceeded` and throws FAILED_PRECONDITION past the maximum. */
  async depthOf(delay: DelayInChain): Promise<number> {
    if (!delay.cause || delay.freshChain) return 0;
    const { committer, events, live, maxDepth } = this.deps;
    const cause = delay.cause;
    const depth = causeChainDepth(cause.eventId, events, live) + 1;
    if (depth <= maxDepth) return depth;
    const id = derivedId(cause.eventId, cause.position, "timer.chain_exceeded");
    await committer.submit((tx) => {
      if (tx.events.findById(id)) return;
      tx.append({
        id,
        type: "timer.chain_exceeded",
        data: { action: delay.action, delay_id: delay.delayId, chain_depth: depth, max_chain_depth: maxDepth },
        cause: cause.eventId,
        actor: delay.actor,
      });
    });
    fail(
      "failed_precondition",
      `delay of ${delay.action} refused: it would continue a chain to depth ${depth}, past the owner's maximum of ${maxDepth} (a delay that re-arms itself? set fresh_chain to start a new chain)`,
      [{ field: "cause", description: `chain depth ${depth} > ${maxDepth}` }],
      { action: delay.action, chain_depth: String(depth) },
    );
  }
}
