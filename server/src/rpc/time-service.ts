import { create, type JsonObject } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { ActorSchema } from "@chronolog/sdk/gen/chronolog/v1/event_pb";
import {
  type CancelOn,
  CronSpecSchema,
  type TimeService,
  TimerKind as TimerKindPb,
  TimerSchema,
  type DelayRequest,
  type Overdue as OverduePb,
  type Timer,
  type TimerSpec as TimerSpecPb,
} from "@chronolog/sdk/gen/chronolog/v1/time_pb";
import { asItem, fail } from "../errors.js";
import type { CancelOnRecord } from "../store/timer-records.js";
import {
  checkMs,
  dstFromProto,
  dstToProto,
  isDefaultPolicy,
  maxHorizonMs,
  minEveryMs,
  schedulePolicyFromProto,
  schedulePolicyToProto,
  type DelayInput,
  type Overdue,
  type TimerKind,
  type TimerReads,
  type TimerRecord,
  type TimerSpec,
  type Timers,
  type TimerView,
} from "../time/index.js";
import { principalOf } from "./context.js";
import { msFromTimestamp } from "../proto-values.js";
import { actorFromProto, causeFromProto, dataFromProto, pageSizeFromProto } from "./convert.js";

/** TimeService's reads (ListTimers, GetTimer), which a standby serves too. */
export function timeReads(timers: Pick<TimerReads, "list" | "get">): Pick<ServiceImpl<typeof TimeService>, "listTimers" | "getTimer"> {
  return {
    async listTimers(req, ctx) {
      const page = await timers.list(pageSizeFromProto(req.pageSize, 100, 1000), req.pageToken, kindFromProto(req.kind), principalOf(ctx));
      return { timers: page.timers.map((t) => timerToProto(t, [])), nextPageToken: page.nextPageToken };
    },
    async getTimer(req, ctx) {
      const { timer, previewMs } = await timers.get(req.timerId, req.previewCount, principalOf(ctx));
      return { timer: timerToProto(timer, previewMs) };
    },
  };
}

/**
 * TimeService: translation only; the rules live in time/.
 * Requests become checked domain values here: a missing spec, `when`,
 * (for Delay) `overdue` or (for BackfillTimer) `start`/`end` is INVALID_ARGUMENT
 * naming the field; ms fields are checked with the one message of `checkMs`.
 * These shape checks come first, before any permission check (see Timers).
 */
export function timeService(timers: Timers): ServiceImpl<typeof TimeService> {
  return {
    ...timeReads(timers),
    async schedule(req, ctx) {
      const timer = await timers.schedule(
        {
          timerId: req.timerId,
          action: req.action,
          input: dataFromProto(req.input, "input"),
          spec: specFromProto(req.spec),
          overdue: req.overdue ? overdueFromProto(req.overdue) : { kind: "unbounded" },
          policy: schedulePolicyFromProto(req.policy),
          cancelOn: cancelOnFromProto(req.cancelOn),
          cause: causeFromProto(req.cause),
          actor: actorFromProto(req.actor),
        },
        principalOf(ctx),
      );
      return { timer: timerToProto(timer, []) };
    },
    async unschedule(req, ctx) {
      await timers.unschedule(req.timerId, causeFromProto(req.cause), principalOf(ctx));
      return {};
    },
    async delay(req, ctx) {
      const result = await timers.delay(delayInput(req), principalOf(ctx));
      return { delayId: result.delayId, due: timestampFromMs(result.dueMs) };
    },
    async delayBatch(req, ctx) {
      const inputs = req.delays.map((d, i) => asItem(`delays[${i}]`, () => delayInput(d)));
      const results = await timers.delayBatch(inputs, principalOf(ctx));
      return { results: results.map((r) => ({ delayId: r.delayId, due: timestampFromMs(r.dueMs) })) };
    },
    async cancelDelay(req, ctx) {
      await timers.cancelDelay(req.delayId, causeFromProto(req.cause), principalOf(ctx));
      return {};
    },
    async pauseTimer(req, ctx) {
      const { timer, unchanged } = await timers.pause({ timerId: req.timerId, note: req.note, cause: causeFromProto(req.cause) }, principalOf(ctx));
      return { timer: timerToProto(timer, []), unchanged };
    },
    async resumeTimer(req, ctx) {
      const { timer, unchanged } = await timers.resume({ timerId: req.timerId, note: req.note, cause: causeFromProto(req.cause) }, principalOf(ctx));
      return { timer: timerToProto(timer, []), unchanged };
    },
    async triggerTimer(req, ctx) {
      const { occurrenceId, dueMs } = await timers.trigger(req.timerId, causeFromProto(req.cause), principalOf(ctx));
      return { occurrenceId, due: timestampFromMs(dueMs) };
    },
    async backfillTimer(req, ctx) {
      if (!req.start) fail("bad_request", "start is required: the first moment of the range", [{ field: "start", description: "required" }]);
      if (!req.end) fail("bad_request", "end is required: the end of the range (exclusive)", [{ field: "end", description: "required" }]);
      const made = await timers.backfill(
        { timerId: req.timerId, startMs: msFromTimestamp(req.start, "start"), endMs: msFromTimestamp(req.end, "end"), cause: causeFromProto(req.cause) },
        principalOf(ctx),
      );
      return { occurrences: made.map((o) => ({ occurrenceId: o.occurrenceId, due: timestampFromMs(o.dueMs), existing: o.existing })) };
    },
  };
}

/** A TimerSpec as a domain spec; INVALID_ARGUMENT naming `spec` when absent or empty. */
function specFromProto(spec: TimerSpecPb | undefined): TimerSpec {
  switch (spec?.when.case) {
    case "at":
      return { kind: "at", atMs: msFromTimestamp(spec.when.value, "spec.at") };
    case "cron": {
      const dst = dstFromProto(spec.when.value.dst, "spec.cron.dst");
      return { kind: "cron", expression: spec.when.value.expression, zone: spec.when.value.zone, ...(dst ? { dst } : {}) };
    }
    case "everyMs":
      return { kind: "every", everyMs: checkMs(spec.when.value, "spec.every_ms", minEveryMs, maxHorizonMs) };
    default:
      fail("bad_request", "spec is required: set at, cron or every_ms", [{ field: "spec", description: "required" }]);
  }
}

/** An Overdue as a domain bound; INVALID_ARGUMENT naming `overdue` when no bound is chosen. */
function overdueFromProto(overdue: OverduePb): Overdue {
  switch (overdue.bound.case) {
    case "unbounded":
      if (overdue.bound.value) return { kind: "unbounded" };
      break;
    case "maxLatenessMs":
      return { kind: "max", maxLatenessMs: checkMs(overdue.bound.value, "overdue.max_lateness_ms", 0, maxHorizonMs) };
    case "onTimeOrNever":
      if (overdue.bound.value) return { kind: "onTimeOrNever" };
      break;
  }
  fail("bad_request", "overdue must choose a bound: unbounded: true, max_lateness_ms or on_time_or_never: true", [
    { field: "overdue", description: "no bound chosen" },
  ]);
}

const kinds: Record<TimerKind, TimerKindPb> = { runtime: TimerKindPb.RUNTIME, declared: TimerKindPb.DECLARED, delay: TimerKindPb.DELAY };

/** ListTimers' `kind` filter: "" (all) for UNSPECIFIED; INVALID_ARGUMENT for a value the API does not define. */
function kindFromProto(kind: TimerKindPb): TimerKind | "" {
  if (kind === TimerKindPb.UNSPECIFIED) return "";
  const found = (Object.keys(kinds) as TimerKind[]).find((k) => kinds[k] === kind);
  return (
    found ??
    fail("bad_request", `kind ${kind} is not a timer kind (TIMER_KIND_RUNTIME, _DECLARED, _DELAY; unspecified lists all)`, [
      { field: "kind", description: "unknown enum value" },
    ])
  );
}

/** A timer as the API's Timer, with `previewMs` as its preview: as read ({@link TimerView}), or as Schedule set it (its caller's own input). */
function timerToProto(t: TimerRecord | TimerView, previewMs: number[]): Timer {
  return create(TimerSchema, {
    id: t.id,
    kind: kinds[t.kind],
    action: t.action,
    input: t.input as JsonObject,
    inputWithheld: "inputWithheld" in t && t.inputWithheld,
    spec: { when: specToProto(t.spec) },
    nextDue: t.nextDueMs === null ? undefined : timestampFromMs(t.nextDueMs),
    actor: t.actor ? create(ActorSchema, t.actor) : undefined,
    plugin: t.plugin,
    schedule: t.schedule,
    region: t.region,
    occurrences: BigInt(t.occurrences),
    disabled: t.disabled,
    overdue: { bound: overdueToProto(t.overdue) },
    chainDepth: t.chainDepth,
    preview: previewMs.map(timestampFromMs),
    policy: t.kind === "delay" && isDefaultPolicy(t.policy) ? undefined : schedulePolicyToProto(t.policy),
    paused: t.paused !== null,
    pauseNote: t.paused?.note ?? "",
    pausedAt: t.paused ? timestampFromMs(t.paused.atMs) : undefined,
    cancelOn: (t.cancelOn ?? []).map((c) => ({ type: c.type, match: c.match })),
  });
}

function specToProto(spec: TimerSpec): TimerSpecPb["when"] {
  switch (spec.kind) {
    case "at":
      return { case: "at", value: timestampFromMs(spec.atMs) };
    case "cron":
      return { case: "cron", value: create(CronSpecSchema, { expression: spec.expression, zone: spec.zone, dst: dstToProto(spec.dst) }) };
    case "every":
      return { case: "everyMs", value: BigInt(spec.everyMs) };
  }
}

function overdueToProto(overdue: Overdue): OverduePb["bound"] {
  switch (overdue.kind) {
    case "unbounded":
      return { case: "unbounded", value: true };
    case "max":
      return { case: "maxLatenessMs", value: BigInt(overdue.maxLatenessMs) };
    case "onTimeOrNever":
      return { case: "onTimeOrNever", value: true };
  }
}

/** A Delay request as the time service takes it; INVALID_ARGUMENT naming the field when it is not one. */
function delayInput(req: DelayRequest): DelayInput {
  if (!req.overdue)
    fail("bad_request", "overdue is required: set unbounded, max_lateness_ms or on_time_or_never", [{ field: "overdue", description: "required" }]);
  let when: DelayInput["when"];
  if (req.when.case === "intervalMs") when = { kind: "interval", ms: checkMs(req.when.value, "interval_ms", 0, maxHorizonMs) };
  else if (req.when.case === "at") when = { kind: "at", atMs: msFromTimestamp(req.when.value, "at") };
  else fail("bad_request", "give interval_ms or at", [{ field: "when", description: "required" }]);
  return {
    action: req.action,
    input: dataFromProto(req.input, "input"),
    when,
    overdue: overdueFromProto(req.overdue),
    cause: causeFromProto(req.cause),
    actor: actorFromProto(req.actor),
    freshChain: req.freshChain,
    delayId: req.delayId,
    cancelOn: cancelOnFromProto(req.cancelOn),
  };
}

/** `cancel_on` entries as time takes them (checked there). */
function cancelOnFromProto(cancelOn: CancelOn[]): CancelOnRecord[] {
  return cancelOn.map((c) => ({ type: c.type, match: { ...c.match } }));
}
