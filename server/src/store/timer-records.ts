import type { ActorRecord } from "./events.js";

// A timer as the store keeps it (the `timers` rows, read by timers.ts) and what it is set with:
// its spec (a cron spec with its DST policy), lateness bound, schedule policy and pause state, in
// their stored JSON forms in timer-json.ts. time/ holds the rules over them (time/timers.ts: the
// states a timer goes through). All instants are ms since the epoch, UTC.

/** The kinds of timers. */
export type TimerKind = "runtime" | "declared" | "delay";

/** What a fixed-hour job does in a DST gap and in a repeated stretch. */
export interface DstPolicy {
  /** "shift" (default): run once, moved forward by the gap's length; "skip": not that day. */
  gap: "shift" | "skip";
  /** "first" (default), "last" or "both" occurrences of a repeated wall time. */
  repeated: "first" | "last" | "both";
}

/** When a timer fires. */
export type TimerSpec =
  /** Once, at `atMs`. */
  | { kind: "at"; atMs: number }
  /** By a 5-field cron expression in an IANA zone ("" = UTC); `dst` absent: shift / first. */
  | { kind: "cron"; expression: string; zone: string; dst?: DstPolicy }
  /** Every `everyMs` ms, the first one interval after it was set. */
  | { kind: "every"; everyMs: number };

/** How late an occurrence may be made; later ones are skipped. */
export type Overdue =
  | { kind: "unbounded" }
  /** Made only if at most `maxLatenessMs` late. */
  | { kind: "max"; maxLatenessMs: number }
  /** Made only within `onTimeToleranceMs` (time/claim-rules.ts) of its moment. */
  | { kind: "onTimeOrNever" };

/** Whether an occurrence may start while the previous one of its timer still runs; by default "allow". */
export type OverlapPolicy = "allow" | "skip" | "bufferOne";

/** Which missed occurrences a recurring timer owes after an outage; by default "latest". */
export type CatchUpPolicy = "latest" | "allWithinWindow" | "none";

/** How a recurring timer runs. Times in ms; instants ms since the epoch, UTC. */
export interface SchedulePolicy {
  /**
   * Each occurrence is made up to this many ms after its nominal moment (deterministic offset,
   * `dueOf`, time/moments.ts); 0: none. Below `every_ms` for `every_ms` timers; a cron timer's wider
   * jitter spreads each offset over the gap to the next moment instead.
   */
  jitterMs: number;
  /** No nominal moment before this instant; null: none. */
  startMs: number | null;
  /** No nominal moment at or after this instant; null: none. */
  endMs: number | null;
  /** Spent once this many occurrences were made (`occurrences`); 0: no limit. */
  maxCount: number;
  overlap: OverlapPolicy;
  catchUp: CatchUpPolicy;
  /** With catch-up "allWithinWindow": how far back (ms) missed occurrences are owed; 0 otherwise. */
  catchUpWindowMs: number;
  /**
   * `every_ms` timers: the first nominal moment, from which the others are counted (set by the
   * owner when the timer is set; null for timers set before schedule policies existed, whose moments are counted from
   * their next due moment).
   */
  anchorMs: number | null;
}

/** The default policy: no jitter, no bounds, no limit, calls may overlap, latest only after an outage. */
export const defaultSchedulePolicy: Readonly<SchedulePolicy> = Object.freeze({
  jitterMs: 0,
  startMs: null,
  endMs: null,
  maxCount: 0,
  overlap: "allow",
  catchUp: "latest",
  catchUpWindowMs: 0,
  anchorMs: null,
});

/** A paused timer's state. */
/** An event that cancels a pending timer: of `type`, its data at each key's path equal to the timer's input at the value's path. */
export interface CancelOnRecord {
  type: string;
  /** Event path (`data.order_id`) → input path (`input.order_id`); {}: every event of the type. */
  match: Record<string, string>;
}

export interface PauseState {
  /** The note given to PauseTimer ("" when none). */
  note: string;
  /** Commit time of the pause, ms since the epoch. */
  atMs: number;
  /** The due moment it held when paused (null: it had none, e.g. disabled), ms since the epoch. */
  heldDueMs: number | null;
}

/** A stored timer: a document of `sys.timers`. */
export interface TimerRecord {
  id: string;
  kind: TimerKind;
  /** `plugin.action`. */
  action: string;
  /** Input of every call, private fields included. */
  input: Record<string, unknown>;
  spec: TimerSpec;
  /** The next moment it is due, ms since the epoch (UTC); null when spent or disabled. */
  nextDueMs: number | null;
  /** Who its calls run as, `in` included; null: the system. */
  actor: ActorRecord | null;
  /** Declared schedules: plugin and schedule name ("" otherwise). */
  plugin: string;
  schedule: string;
  overdue: Overdue;
  /** Chain depth of its calls (0 in this increment). */
  chainDepth: number;
  /** Occurrences called so far (skipped ones not counted). */
  occurrences: number;
  /** Region whose owner makes it: declared schedules as declared, others the region of the owner that set them. */
  region: number;
  /** A declared schedule switched off by its manifest or a patch; nextDueMs is then null. */
  disabled: boolean;
  /** Waits between the tries of a failed occurrence, ms: one retry per entry. */
  retryDelaysMs: number[];
  /** Jitter, bounds, maximum count, overlap and catch-up; delays always have the default. */
  policy: SchedulePolicy;
  /** Set while paused; nextDueMs is then null. */
  paused: PauseState | null;
  /** Events that cancel it while pending (time/cancel-on.ts); absent or []: none. */
  cancelOn?: CancelOnRecord[];
  /** Commit time of the Schedule/Delay that set it, ms since the epoch. */
  createdAt: number;
  /** Commit time of its last change, ms since the epoch. */
  updatedAt: number;
  /** Trace context of the span that set it (as EventRecord.trace): its occurrences link to it. Absent: none recorded. */
  trace?: string;
}
