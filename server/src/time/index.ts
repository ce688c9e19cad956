import type { ActionCalls } from "../actions/index.js";
import type { Clock, TimerHost } from "../clock.js";
import type { LiveCauses } from "../log/causes.js";
import type { Logger } from "../logger.js";
import type { PluginRegistry } from "../plugins/registry.js";
import type { TimerStages } from "../stages.js";
import type { Committer } from "../store/committer.js";
import type { Db } from "../store/sql.js";
import type { EventReads, EventStatements } from "../store/events.js";
import { claimReads } from "../store/claim-reads.js";
import { occurrenceStatements } from "../store/occurrences.js";
import { timerCancelStatements } from "../store/timer-cancels.js";
import { timerControlStatements } from "../store/timer-control.js";
import { timerRowReads, timerStatements } from "../store/timers.js";
import { CancelOn } from "./cancel-on.js";
import { DelayChains, defaultMaxChainDepth } from "./chains.js";
import { ClockArm, defaultLookaheadMs } from "./clock-arm.js";
import { reconcileDeclared } from "./declared.js";
import { TimerFiring, type OccurrenceOutcome } from "./fire.js";
import { LatenessHistogram } from "./lateness.js";
import { Timers } from "./service.js";

export { Timers } from "./service.js";
export { TimerReads } from "./timer-reads.js";
export type { BackfillInput, BackfilledOccurrence, DelayInput, PauseInput, ScheduleInput } from "./timer-requests.js";
export type { TimerPage } from "./timer-pages.js";
export type {
  CatchUpPolicy,
  DstPolicy,
  OverlapPolicy,
  Overdue,
  PauseState,
  SchedulePolicy,
  TimerKind,
  TimerRecord,
  TimerSpec,
} from "../store/timer-records.js";
export { isDefaultPolicy, type TimerView } from "./timers.js";
export { occurrenceId } from "./occurrence-ids.js";
export { checkMs, maxHorizonMs, minEveryMs } from "./spec-checks.js";
export { dstFromProto, dstToProto, schedulePolicyFromProto, schedulePolicyToProto } from "./policy-proto.js";
export type { OccurrenceOutcome } from "./fire.js";
export { LatenessHistogram, latenessBucketsMs, type LatenessSnapshot } from "./lateness.js";
export { Pulses } from "./pulses.js";
export { defaultTimerRetentionMs, TimerRetention } from "./retention.js";

/** What {@link openTime} needs. */
export interface TimeOptions {
  db: Db;
  registry: PluginRegistry;
  committer: Committer;
  events: EventStatements;
  /** The log's look-ups that do not block the event loop (the owner's). */
  logReads: Pick<EventReads, "findById">;
  live: LiveCauses;
  actions: ActionCalls;
  clock: Clock;
  /** Where the one timer is armed (default setTimeout; tests pass a ManualClock). */
  timers: TimerHost;
  /** How far ahead of their moment calls are claimed and started, ms (default 50): see ClockArm. */
  lookaheadMs?: number;
  /** Deepest chain a delay may continue (default 100); deeper delays are refused (`timer.chain_exceeded`). */
  maxChainDepth?: number;
  /** The owner's region (default 0): it makes only declared schedules of this region, and stamps it on the timers it sets. */
  region?: number;
  /** Where the stages of first calls are observed (the owner's stage histograms). */
  stages: TimerStages;
  logger: Logger;
}

/** An owner's time. */
export interface Time {
  /** The timer requests (TimeService). */
  timers: Timers;
  /** Lateness of every call time made. */
  lateness: LatenessHistogram;
  /** The clock, for tests and metrics: what it is armed for. */
  clock: ClockArm;
  /** Timers with a next due moment, read now (the `chronolog_timers_pending` gauge; on PostgreSQL without blocking the event loop). */
  pendingCount(): Promise<number>;
  /** Calls `listener` when an occurrence is skipped or one of its calls ends (tests wait on it). */
  onOccurrence(listener: (outcome: OccurrenceOutcome) => void): void;
  /**
   * Makes the declared timers match the registered manifests, calls occurrences a previous
   * owner left pending, and arms the clock (for timers and retries). Resolves once the
   * declared timers are committed.
   */
  start(): Promise<void>;
  /** Disarms the clock; claims nothing more (call before ActionCalls.stop). */
  stop(): void;
}

/**
 * Opens time on an owner's store, registry and action calls; call `start` once serving. From
 * here on, every registration that changes a plugin writes its declared timers in its own
 * commit.
 */
export function openTime(options: TimeOptions): Time {
  const { db, committer, clock, logger, registry } = options;
  const region = options.region ?? 0;
  const control = timerControlStatements(db);
  // Setting a timer indexes the events that cancel it; an appended event cancels the timers it matches, in its unit.
  const storedTimers = timerStatements(db);
  const cancels = timerCancelStatements(db);
  const cancelOn = new CancelOn(cancels, storedTimers, control);
  committer.afterAppend((tx, event) => cancelOn.cancelFor(tx, event));
  // PostgreSQL: the timers an emit's events may cancel, read before its batch.
  if (cancels.readsAhead) committer.readAheadOfAppends((events) => cancelOn.readAheadOf(events));
  const timerRows = cancelOn.indexing(storedTimers);
  const chains = new DelayChains({ committer, events: options.events, live: options.live, maxDepth: options.maxChainDepth ?? defaultMaxChainDepth });
  const occurrenceRows = occurrenceStatements(db);
  const timerReads = timerRowReads(db, timerRows, occurrenceRows);
  const lateness = new LatenessHistogram();
  const lookaheadMs = options.lookaheadMs ?? defaultLookaheadMs;
  const firing = new TimerFiring({
    committer,
    timers: timerRows,
    occurrences: occurrenceRows,
    control,
    actions: options.actions,
    clock,
    lateness,
    stages: options.stages,
    logger,
    lookaheadMs,
    dueCount: (nowMs, limit) => timerReads.dueCount(nowMs, limit),
    changed: (due) => arm.changed(due),
    claimReads: claimReads(db),
  });
  // A cancellable timer's claim waits for its moment (fire.ts): the clock rings for it then, not a lookahead before.
  const earliestDue = () => timerReads.earliestDue(lookaheadMs);
  const arm = new ClockArm({ clock, timers: options.timers, earliestDue, ring: () => firing.ring(), lookaheadMs, logger });
  const timers = new Timers({
    registry,
    committer,
    timers: timerRows,
    reads: timerReads,
    control,
    events: options.events,
    logReads: options.logReads,
    live: options.live,
    chains,
    clock,
    region,
    changed: (due) => arm.changed(due),
  });
  const log = (message: string, details: Record<string, unknown>) => logger.warn(details, message);
  registry.inRegistrationCommit((tx, plugins) => void reconcileDeclared(tx, timerRows, plugins, region, log, control));
  registry.onChange(() => arm.refresh()); // a declared timer may have moved later or gone
  return {
    timers,
    lateness,
    clock: arm,
    pendingCount: () => timerReads.pendingCount(),
    onOccurrence: (listener) => firing.onOccurrence(listener),
    async start() {
      await committer.submit((tx) => reconcileDeclared(tx, timerRows, registry.list(), region, log, control));
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
