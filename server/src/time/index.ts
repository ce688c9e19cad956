import type { ActionCalls } from "../actions/index.js";
import type { Clock, TimerHost } from "../clock.js";
import type { LiveCauses } from "../log/causes.js";
import type { Logger } from "../logger.js";
import type { PluginRegistry } from "../plugins/registry.js";
import type { Committer } from "../store/committer.js";
import type { Db } from "../store/database.js";
import type { EventStatements } from "../store/events.js";
import { occurrenceStatements, timerStatements } from "../store/timers.js";
import { DelayChains, defaultMaxChainDepth } from "./chains.js";
import { ClockArm } from "./clock-arm.js";
import { TimerFiring, type OccurrenceOutcome } from "./fire.js";
import { LatenessHistogram } from "./lateness.js";
import { Timers } from "./service.js";

export { Timers, type DelayInput, type ScheduleInput, type TimerPage } from "./service.js";
export type { Overdue, TimerKind, TimerRecord, TimerSpec } from "./timers.js";
export type { OccurrenceOutcome } from "./fire.js";
export { LatenessHistogram, type LatenessSnapshot } from "./lateness.js";

/** What {@link openTime} needs. */
export interface TimeOptions {
  db: Db;
  registry: PluginRegistry;
  committer: Committer;
  events: EventStatements;
  live: LiveCauses;
  actions: ActionCalls;
  clock: Clock;
  /** Where the one timer is armed (default setTimeout; tests pass a ManualClock). */
  timers: TimerHost;
  /** Deepest chain a delay may continue (K5, default 100); deeper delays are refused (`timer.chain_exceeded`). */
  maxChainDepth?: number;
  logger: Logger;
}

/** An owner's time (SPEC T1-T6, T8, T9, K2-K4). */
export interface Time {
  /** The timer requests (TimeService). */
  timers: Timers;
  /** Lateness of every call time made (K4). */
  lateness: LatenessHistogram;
  /** The clock, for tests and metrics: what it is armed for. */
  clock: ClockArm;
  /** Calls `listener` when an occurrence is skipped or one of its calls ends (tests wait on it). */
  onOccurrence(listener: (outcome: OccurrenceOutcome) => void): void;
  /** Arms the clock and calls occurrences a previous owner left pending. */
  start(): void;
  /** Disarms the clock; claims nothing more (call before ActionCalls.stop). */
  stop(): void;
}

/** Opens time on an owner's store, registry and action calls; call `start` once serving. */
export function openTime(options: TimeOptions): Time {
  const { db, committer, clock, logger } = options;
  const timerRows = timerStatements(db);
  const chains = new DelayChains({ committer, events: options.events, live: options.live, maxDepth: options.maxChainDepth ?? defaultMaxChainDepth });
  const lateness = new LatenessHistogram();
  const firing = new TimerFiring({ committer, timers: timerRows, occurrences: occurrenceStatements(db), actions: options.actions, clock, lateness, logger });
  const arm = new ClockArm({ clock, timers: options.timers, earliestDue: () => timerRows.earliestDue(), ring: () => firing.ring(), logger });
  const timers = new Timers({ registry: options.registry, committer, timers: timerRows, events: options.events, live: options.live, chains, clock, changed: (due) => arm.changed(due) });
  return {
    timers,
    lateness,
    clock: arm,
    onOccurrence: (listener) => firing.onOccurrence(listener),
    start() {
      const pending = firing.recover();
      if (pending > 0) logger.info({ pending }, "calling occurrences a previous owner left pending");
      arm.start();
    },
    stop() {
      arm.stop();
      firing.stop();
    },
  };
}
