import type { CauseRef } from "../log/causes.js";
import { newId } from "../log/ids.js";
import type { ActorRecord } from "../store/events.js";
import { overdueToJson, policyToJson, specToJson } from "../store/timer-json.js";
import type { SchedulePolicy, TimerRecord } from "../store/timer-records.js";
import { isDefaultPolicy } from "./timers.js";

// The `timer.*` events that timer requests and declared schedules record, each in the commit
// unit of the change it describes.

/**
 * `timer.scheduled`: a timer was set or changed. Data: timer_id, kind, action, spec,
 * overdue, next_due_ms (null: disabled, spent, paused or another region's), replaced; declared
 * schedules add plugin, schedule, disabled, region and retry_delays_ms; a timer with a policy
 * other than the default adds `policy`; a delay armed from outside with a client `delay_id` adds
 * `delay_request` (see Timers.delay). Actor and cause: whoever set it (declared schedules: the
 * system, no cause). Id: `id` (derived under a cause, see changeEventId), else fresh.
 */
export function scheduledEvent(timer: TimerRecord, replaced: boolean, cause: string, actor: ActorRecord | null, id = newId()) {
  const declared =
    timer.kind === "declared"
      ? { plugin: timer.plugin, schedule: timer.schedule, disabled: timer.disabled, region: timer.region, retry_delays_ms: timer.retryDelaysMs }
      : {};
  return {
    id,
    type: "timer.scheduled",
    data: {
      timer_id: timer.id,
      kind: timer.kind,
      action: timer.action,
      spec: specToJson(timer.spec),
      overdue: overdueToJson(timer.overdue),
      next_due_ms: timer.nextDueMs,
      replaced,
      ...declared,
      ...policyData(timer.policy),
      ...(timer.cancelOn?.length ? { cancel_on: timer.cancelOn } : {}),
    },
    cause,
    actor,
  };
}

/** `timer.unscheduled`: timer `timer` was removed. Data: timer_id, kind, action, next_due_ms. Id: `id` (derived under a cause), else fresh. */
export function unscheduledEvent(timer: TimerRecord, cause: string, actor: ActorRecord | null, id = newId()) {
  return { id, type: "timer.unscheduled", data: { timer_id: timer.id, kind: timer.kind, action: timer.action, next_due_ms: timer.nextDueMs }, cause, actor };
}

/**
 * A `timer.paused`, `.resumed`, `.triggered` or `.backfilled` event: data timer_id, kind,
 * action and `data`; the actor of whoever made the change; the cause it was made under. Id:
 * `id` (derived under a cause, see changeEventId), else fresh.
 */
export function controlEvent(
  type: "timer.paused" | "timer.resumed" | "timer.triggered" | "timer.backfilled",
  timer: TimerRecord,
  data: Record<string, unknown>,
  cause: CauseRef | null,
  actor: ActorRecord | null,
  id: string,
) {
  return { id, type, data: { timer_id: timer.id, kind: timer.kind, action: timer.action, ...data }, cause: cause?.eventId ?? "", actor };
}

/** `{ policy }` (its stored JSON without the anchor) when `policy` is not the default, else nothing. */
export function policyData(policy: SchedulePolicy): { policy?: Record<string, unknown> } {
  if (isDefaultPolicy(policy)) return {};
  const { anchor_ms: _anchor, ...json } = policyToJson(policy);
  return { policy: json };
}
