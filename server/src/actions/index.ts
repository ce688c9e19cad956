import type { Clock, TimerHost } from "../clock.js";
import type { ExecutorSession } from "../executors/session.js";
import type { LiveCauses } from "../log/causes.js";
import type { Logger } from "../logger.js";
import type { PluginRegistry } from "../plugins/registry.js";
import { callRowReads, callStatements, limitedCallsReader } from "../store/calls.js";
import type { Committer } from "../store/committer.js";
import type { Db } from "../store/sql.js";
import type { EventReads, EventStatements } from "../store/events.js";
import { ActionCalls } from "./calls.js";
import { HostQueue } from "./hosts.js";
import { restoreLimits } from "./limits-restore.js";

export { ActionCalls } from "./calls.js";
export { CallRetention, defaultCallRetentionMs } from "./retention.js";
export { notStartedInTime } from "./call-errors.js";
export { callEventId } from "./records.js";
export type { CallRequest, CallResult, PulseCallRequest, ScheduledCall } from "./call-request.js";
export type { InvocationAnswer, ResultVerdict } from "./invocations.js";
export { ownerCaller, type CallerContext } from "./run.js";
export type { ActionEntry } from "./declaration.js";

/** What {@link openActions} needs. */
export interface ActionsOptions {
  db: Db;
  registry: PluginRegistry;
  committer: Committer;
  events: EventStatements;
  /** The log's look-ups that do not block the event loop (the owner's). */
  logReads: Pick<EventReads, "findById">;
  /** Shared with the emitter and the collections: record:false runs are causes there. */
  live: LiveCauses;
  clock: Clock;
  /** Where attempts started ahead of their moment wait to be sent (time's lookahead). */
  timers: TimerHost;
  logger: Logger;
  /** The connected executor sessions (the hub's), searched for hosts of an action. */
  sessions(): Iterable<ExecutorSession>;
}

/** Opens the action calls of an owner on its database and executor sessions. */
export function openActions(options: ActionsOptions): ActionCalls {
  const { db, sessions, ...deps } = options;
  const calls = callStatements(db);
  const actions = new ActionCalls({ ...deps, calls, callRows: callRowReads(db, calls), hosts: new HostQueue(sessions) });
  const restored = restoreLimits(deps.registry.allActions(), limitedCallsReader(db), actions.slots, actions.rates, deps.clock.now());
  if (restored.slots + restored.starts > 0)
    deps.logger.info(restored, `actions' limits restored: ${restored.slots} slots of calls left running, ${restored.starts} recent starts in the rate buckets`);
  return actions;
}
