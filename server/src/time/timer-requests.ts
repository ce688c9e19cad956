import type { CauseRef } from "../log/causes.js";
import type { ActorRecord } from "../store/events.js";
import type { CancelOnRecord, Overdue, SchedulePolicy, TimerSpec } from "../store/timer-records.js";

// The timer requests as time takes them (TimeService parses them): Schedule, Delay, PauseTimer
// and ResumeTimer, BackfillTimer, and what a backfill answers.

/** A Schedule, as parsed from the request. */
export interface ScheduleInput {
  /** The timer id; "" for one derived under the cause or, from outside, a fresh UUIDv7. */
  timerId: string;
  /** `plugin.action`. */
  action: string;
  input: Record<string, unknown>;
  spec: TimerSpec;
  overdue: Overdue;
  /** Jitter, bounds, maximum count, overlap and catch-up; absent: the defaults. */
  policy?: SchedulePolicy;
  /** Events that cancel it (time/cancel-on.ts); absent or []: none. */
  cancelOn?: CancelOnRecord[];
  /** Set when code under a delivery or an action run schedules. */
  cause: CauseRef | null;
  /** Asserted actor fields (from outside only). */
  actor: Partial<ActorRecord> | undefined;
}

/** A Delay, as parsed from the request. */
export interface DelayInput {
  action: string;
  input: Record<string, unknown>;
  /** After `ms` from now, or at `atMs` (ms since the epoch). */
  when: { kind: "interval"; ms: number } | { kind: "at"; atMs: number };
  /** Required by the API. */
  overdue: Overdue;
  cause: CauseRef | null;
  /** Start a new chain instead of continuing the cause's. */
  freshChain?: boolean;
  actor: Partial<ActorRecord> | undefined;
  /** The client's delay id (from outside only); ""/absent: derived under a cause, else a fresh UUIDv7. */
  delayId?: string;
  /** Events that cancel it (time/cancel-on.ts); absent or []: none. */
  cancelOn?: CancelOnRecord[];
}

/** Largest batch accepted by one DelayBatch. */
export const maxDelayBatch = 10_000;

/** A PauseTimer or ResumeTimer, as parsed from the request. */
export interface PauseInput {
  timerId: string;
  /** Why; at most {@link maxNoteLength} characters, recorded in the event. */
  note: string;
  cause: CauseRef | null;
}

/** A BackfillTimer, as parsed from the request: the range [startMs, endMs), ms since the epoch. */
export interface BackfillInput {
  timerId: string;
  startMs: number;
  endMs: number;
  cause: CauseRef | null;
}

/** One occurrence of a backfill. */
export interface BackfilledOccurrence {
  /** Occurrence id (also its call id). */
  occurrenceId: string;
  /** Its due moment, ms since the epoch (the action's `scheduled`). */
  dueMs: number;
  /** True when it had been made before (not made again). */
  existing: boolean;
}
