import { defaultSchedulePolicy, type DstPolicy, type Overdue, type PauseState, type SchedulePolicy, type TimerSpec } from "./timer-records.js";

// The stored JSON forms of what a timer is set with: its spec (with a cron spec's DST
// policy), its lateness bound, its schedule policy and its pause state, as the `timers` and
// `timer_occurrences` rows and the `timer.*` events hold them.

/** A spec's stored JSON form: `{"at": ms}`, `{"cron": expr, "zone": iana}` or `{"every_ms": ms}`. */
export function specToJson(spec: TimerSpec): Record<string, unknown> {
  switch (spec.kind) {
    case "at":
      return { at: spec.atMs };
    case "cron":
      return { cron: spec.expression, zone: spec.zone, ...dstToJson(spec.dst) };
    case "every":
      return { every_ms: spec.everyMs };
  }
}

/** The spec of its stored JSON form. */
export function specFromJson(json: Record<string, unknown>): TimerSpec {
  if (typeof json.at === "number") return { kind: "at", atMs: json.at };
  if (typeof json.cron === "string") return { kind: "cron", expression: json.cron, zone: String(json.zone ?? ""), ...dstFromJson(json) };
  return { kind: "every", everyMs: Number(json.every_ms) };
}

/** An overdue bound's stored JSON form, as in the proto: `{"unbounded": true}`, `{"max_lateness_ms": n}`, `{"on_time_or_never": true}`. */
export function overdueToJson(overdue: Overdue): Record<string, unknown> {
  switch (overdue.kind) {
    case "unbounded":
      return { unbounded: true };
    case "max":
      return { max_lateness_ms: overdue.maxLatenessMs };
    case "onTimeOrNever":
      return { on_time_or_never: true };
  }
}

/** The lateness bound of its stored JSON form. */
export function overdueFromJson(json: Record<string, unknown>): Overdue {
  if (typeof json.max_lateness_ms === "number") return { kind: "max", maxLatenessMs: json.max_lateness_ms };
  if (json.on_time_or_never) return { kind: "onTimeOrNever" };
  return { kind: "unbounded" };
}

/** A cron spec's DST policy in stored JSON: nothing for the default (shift / first), so specs stored before read the same. */
function dstToJson(dst: DstPolicy | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (dst && dst.gap !== "shift") out.dst_gap = dst.gap;
  if (dst && dst.repeated !== "first") out.dst_repeated = dst.repeated;
  return out;
}

function dstFromJson(json: Record<string, unknown>): { dst?: DstPolicy } {
  if (json.dst_gap === undefined && json.dst_repeated === undefined) return {};
  return {
    dst: { gap: json.dst_gap === "skip" ? "skip" : "shift", repeated: json.dst_repeated === "last" ? "last" : json.dst_repeated === "both" ? "both" : "first" },
  };
}

/** A schedule policy's stored JSON form: only the fields that differ from the default (so `{}` is the default). */
export function policyToJson(policy: SchedulePolicy): Record<string, unknown> {
  const d = defaultSchedulePolicy;
  const out: Record<string, unknown> = {};
  if (policy.jitterMs !== d.jitterMs) out.jitter_ms = policy.jitterMs;
  if (policy.startMs !== null) out.start_ms = policy.startMs;
  if (policy.endMs !== null) out.end_ms = policy.endMs;
  if (policy.maxCount !== d.maxCount) out.max_count = policy.maxCount;
  if (policy.overlap !== d.overlap) out.overlap = policy.overlap;
  if (policy.catchUp !== d.catchUp) out.catch_up = policy.catchUp;
  if (policy.catchUpWindowMs !== d.catchUpWindowMs) out.catch_up_window_ms = policy.catchUpWindowMs;
  if (policy.anchorMs !== null) out.anchor_ms = policy.anchorMs;
  return out;
}

/** The schedule policy of its stored JSON form (missing fields: the default). */
export function policyFromJson(json: Record<string, unknown>): SchedulePolicy {
  const num = (v: unknown, fallback: number) => (typeof v === "number" ? v : fallback);
  const overlap = json.overlap === "skip" || json.overlap === "bufferOne" ? json.overlap : "allow";
  const catchUp = json.catch_up === "allWithinWindow" || json.catch_up === "none" ? json.catch_up : "latest";
  return {
    jitterMs: num(json.jitter_ms, 0),
    startMs: typeof json.start_ms === "number" ? json.start_ms : null,
    endMs: typeof json.end_ms === "number" ? json.end_ms : null,
    maxCount: num(json.max_count, 0),
    overlap,
    catchUp,
    catchUpWindowMs: num(json.catch_up_window_ms, 0),
    anchorMs: typeof json.anchor_ms === "number" ? json.anchor_ms : null,
  };
}

/** The pause state of its stored JSON text (`{note, at_ms, held_due_ms}`); null: not paused. */
export function pausedFromJson(text: string | null): PauseState | null {
  if (text === null) return null;
  const json = JSON.parse(text) as Record<string, unknown>;
  return { note: String(json.note ?? ""), atMs: Number(json.at_ms), heldDueMs: typeof json.held_due_ms === "number" ? json.held_due_ms : null };
}
