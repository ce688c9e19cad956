import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import {
  CatchUpPolicy as CatchUpPb,
  DstGap,
  DstPolicySchema,
  DstRepeated,
  OverlapPolicy as OverlapPb,
  SchedulePolicySchema,
  type DstPolicy as DstPolicyPb,
  type SchedulePolicy as SchedulePolicyPb,
} from "@chronolog/sdk/gen/chronolog/v1/time_pb";
import { msFromTimestamp } from "../proto-values.js";
import { fail } from "../errors.js";
import { checkMs, maxHorizonMs } from "./spec-checks.js";
import { defaultSchedulePolicy, type CatchUpPolicy, type DstPolicy, type OverlapPolicy, type SchedulePolicy } from "../store/timer-records.js";

// The API forms of schedule policies and DST policies, shared by TimeService and
// plugin manifests (ScheduleDeclaration, SchedulePatch). Unspecified fields take the defaults
// defaults. Errors are INVALID_ARGUMENT naming the field under the given prefix, e.g.
// `policy.jitter_ms` or `schedules.nightly.policy.overlap`.

const overlaps: Record<number, OverlapPolicy> = {
  [OverlapPb.UNSPECIFIED]: "allow",
  [OverlapPb.ALLOW]: "allow",
  [OverlapPb.SKIP]: "skip",
  [OverlapPb.BUFFER_ONE]: "bufferOne",
};
const catchUps: Record<number, CatchUpPolicy> = {
  [CatchUpPb.UNSPECIFIED]: "latest",
  [CatchUpPb.LATEST]: "latest",
  [CatchUpPb.ALL_WITHIN_WINDOW]: "allWithinWindow",
  [CatchUpPb.NONE]: "none",
};
const gaps: Record<number, DstPolicy["gap"]> = { [DstGap.UNSPECIFIED]: "shift", [DstGap.SHIFT]: "shift", [DstGap.SKIP]: "skip" };
const repeats: Record<number, DstPolicy["repeated"]> = {
  [DstRepeated.UNSPECIFIED]: "first",
  [DstRepeated.FIRST]: "first",
  [DstRepeated.LAST]: "last",
  [DstRepeated.BOTH]: "both",
};

/**
 * A SchedulePolicy message as the domain policy; absent: the default. Ms fields are 0 to
 * 100 years; `max_count` at most 2^53-1; enums must be known values. INVALID_ARGUMENT names
 * `<field>.<name>`. (Cross-field rules are checkSchedulePolicy's.)
 */
export function schedulePolicyFromProto(pb: SchedulePolicyPb | undefined, field = "policy"): SchedulePolicy {
  if (!pb) return { ...defaultSchedulePolicy };
  const overlap =
    overlaps[pb.overlap] ??
    fail("bad_request", `${field}.overlap ${pb.overlap} is not an OverlapPolicy`, [{ field: `${field}.overlap`, description: "unknown value" }]);
  const catchUp =
    catchUps[pb.catchUp] ??
    fail("bad_request", `${field}.catch_up ${pb.catchUp} is not a CatchUpPolicy`, [{ field: `${field}.catch_up`, description: "unknown value" }]);
  if (pb.maxCount > BigInt(Number.MAX_SAFE_INTEGER))
    fail("bad_request", `${field}.max_count is too large`, [{ field: `${field}.max_count`, description: "at most 2^53-1" }]);
  return {
    jitterMs: checkMs(pb.jitterMs, `${field}.jitter_ms`, 0, maxHorizonMs),
    startMs: pb.start ? msFromTimestamp(pb.start, `${field}.start`) : null,
    endMs: pb.end ? msFromTimestamp(pb.end, `${field}.end`) : null,
    maxCount: Number(pb.maxCount),
    overlap,
    catchUp,
    catchUpWindowMs: checkMs(pb.catchUpWindowMs, `${field}.catch_up_window_ms`, 0, maxHorizonMs),
    anchorMs: null,
  };
}

/** The domain policy as a SchedulePolicy message (the anchor is internal and not shown; ms fields in ms). */
export function schedulePolicyToProto(policy: SchedulePolicy): SchedulePolicyPb {
  const overlap = policy.overlap === "skip" ? OverlapPb.SKIP : policy.overlap === "bufferOne" ? OverlapPb.BUFFER_ONE : OverlapPb.ALLOW;
  const catchUp = policy.catchUp === "allWithinWindow" ? CatchUpPb.ALL_WITHIN_WINDOW : policy.catchUp === "none" ? CatchUpPb.NONE : CatchUpPb.LATEST;
  return create(SchedulePolicySchema, {
    jitterMs: BigInt(policy.jitterMs),
    start: policy.startMs === null ? undefined : timestampFromMs(policy.startMs),
    end: policy.endMs === null ? undefined : timestampFromMs(policy.endMs),
    maxCount: BigInt(policy.maxCount),
    overlap,
    catchUp,
    catchUpWindowMs: BigInt(policy.catchUpWindowMs),
  });
}

/** A DstPolicy message as the domain DST policy; absent: undefined (shift / first). INVALID_ARGUMENT names `<field>.gap` or `.repeated` for unknown values. */
export function dstFromProto(pb: DstPolicyPb | undefined, field: string): DstPolicy | undefined {
  if (!pb) return undefined;
  const gap = gaps[pb.gap] ?? fail("bad_request", `${field}.gap ${pb.gap} is not a DstGap`, [{ field: `${field}.gap`, description: "unknown value" }]);
  const repeated =
    repeats[pb.repeated] ??
    fail("bad_request", `${field}.repeated ${pb.repeated} is not a DstRepeated`, [{ field: `${field}.repeated`, description: "unknown value" }]);
  return { gap, repeated };
}

/** The domain DST policy as a DstPolicy message (absent: shift / first, spelled out). */
export function dstToProto(dst: DstPolicy | undefined): DstPolicyPb {
  const gap = dst?.gap === "skip" ? DstGap.SKIP : DstGap.SHIFT;
  const repeated = dst?.repeated === "last" ? DstRepeated.LAST : dst?.repeated === "both" ? DstRepeated.BOTH : DstRepeated.FIRST;
  return create(DstPolicySchema, { gap, repeated });
}
