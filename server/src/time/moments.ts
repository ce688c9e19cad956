import { ChronologError, fail } from "../errors.js";
import { defaultDstPolicy, parseCron, type CronSchedule } from "./cron.js";
import { sha256Bytes } from "../sha256.js";
import { defaultSchedulePolicy, type DstPolicy, type TimerRecord } from "../store/timer-records.js";

// A timer's nominal and due moments, and the cron schedules they come from (parsed once,
// cached). Pure functions of their arguments; instants are ms since the epoch, UTC.
//
// Schedule policies shape a recurring timer's moments. Its *nominal* moments are the
// spec's (cron fire times under its DST policy; or anchor + k·every), kept within
// [start, end). Each is *due* at nominal + jitter offset (deterministic per timer and moment,
// always before the next nominal moment: spread over the gap to it when the jitter is wider,
// {@link dueOf}; `every_ms` timers may not have such a jitter at all,
// {@link checkSchedulePolicy} in spec-checks.ts), so the due moments are strictly increasing and each
// nominal moment has exactly one occurrence (occurrence id from its due moment). The stored
// next_due_ms is a due moment; {@link nominalOf} maps it back. The timer is spent after its
// last moment before `end`, or once `max_count` occurrences were made (counted on `occurrences`;
// triggered and backfilled ones are not counted). Overlap ({@link claimDecision}, claim-rules.ts) and
// catch-up ({@link owedOccurrences}, owed.ts) decide at the claim.
//
// A recurring timer's nominal moments are its spec's: cron fire times (with its DST policy)
// or `anchor + k·every` (anchor: the policy's, else the next due moment, which is then on
// the lattice since jitter needs an anchor). `rawNext`/`rawPrev` ignore the bounds;
// `boundedNext` keeps within [start, end). `dueOf` adds the jitter.

const cronCache = new Map<string, CronSchedule>();

/**
 * The checked schedule of a cron spec (parsed once per expression, zone and DST policy,
 * cached). Throws INVALID_ARGUMENT with the field `<field>.cron.expression`,
 * `<field>.cron.zone` or `<field>.cron.dst` (parseCron's message names the bad cron field);
 * `field` defaults to "spec".
 */
export function cronOf(expression: string, zone: string, dst: DstPolicy = defaultDstPolicy, field = "spec"): CronSchedule {
  const key = `${zone}\n${expression}\n${dst.gap}\n${dst.repeated}`;
  let schedule = cronCache.get(key);
  if (!schedule) {
    try {
      schedule = parseCron(expression, zone, dst);
    } catch (e) {
      if (!(e instanceof ChronologError)) throw e;
      const which = e.violations[0]?.field;
      const at = `${field}.cron.${which === "zone" ? "zone" : which === "dstPolicy" ? "dst" : "expression"}`;
      fail("bad_request", e.message, [{ field: at, description: e.message }]);
    }
    if (cronCache.size >= 1_000) cronCache.clear();
    cronCache.set(key, schedule);
  }
  return schedule;
}

/** What the moment rules read of a timer; `id`, `policy` and `occurrences` default to "", the default policy and 0. */
export type TimerMoments = Pick<TimerRecord, "spec" | "nextDueMs"> & Partial<Pick<TimerRecord, "id" | "policy" | "occurrences">>;

/** The nominal moment strictly after `afterMs` (bounds ignored); null for a passed one-shot. */
export function rawNext(timer: TimerMoments, afterMs: number): number | null {
  const spec = timer.spec;
  switch (spec.kind) {
    case "at":
      return spec.atMs > afterMs ? spec.atMs : null;
    case "cron":
      return cronOf(spec.expression, spec.zone, spec.dst ?? defaultDstPolicy).next(afterMs);
    case "every": {
      const o = everyOrigin(timer);
      return o + (Math.floor((afterMs - o) / spec.everyMs) + 1) * spec.everyMs;
    }
  }
}

/** The nominal moment strictly before `beforeMs` (bounds ignored); null when none. */
export function rawPrev(timer: TimerMoments, beforeMs: number): number | null {
  const spec = timer.spec;
  switch (spec.kind) {
    case "at":
      return spec.atMs < beforeMs ? spec.atMs : null;
    case "cron":
      return cronOf(spec.expression, spec.zone, spec.dst ?? defaultDstPolicy).prev(beforeMs);
    case "every": {
      const o = everyOrigin(timer);
      return o + (Math.ceil((beforeMs - o) / spec.everyMs) - 1) * spec.everyMs;
    }
  }
}

/** The first nominal moment strictly after `afterMs` within [start, end), or null. */
export function boundedNext(timer: TimerMoments, afterMs: number): number | null {
  const policy = timer.policy ?? defaultSchedulePolicy;
  const n = rawNext(timer, policy.startMs !== null ? Math.max(afterMs, policy.startMs - 1) : afterMs);
  return n !== null && (policy.endMs === null || n < policy.endMs) ? n : null;
}

/** Where an `every_ms` timer's lattice is: its anchor, else its next due moment. */
function everyOrigin(timer: TimerMoments): number {
  return timer.policy?.anchorMs ?? timer.nextDueMs ?? 0;
}

/**
 * The due moment of nominal moment `n` of `timer`: `n` plus its jitter offset, a
 * deterministic function of the timer id and `n`, from 0 up to `min(jitterMs, gap - 1)` where
 * `gap` is the distance to the next nominal moment. So the offset never reaches the next
 * moment and due moments stay strictly increasing: a jitter below the gap gives its offsets
 * from 0 to `jitterMs` as always; a wider one (cron, whose gaps vary; `every_ms` timers set
 * before the check of {@link checkSchedulePolicy}) spreads them evenly over the whole gap
 * rather than piling them up at its last ms.
 */
export function dueOf(timer: TimerMoments, n: number): number {
  const jitter = timer.policy?.jitterMs ?? 0;
  if (jitter === 0) return n;
  const next = rawNext(timer, n);
  return n + jitterOffset(timer.id ?? "", n, next === null ? jitter : Math.min(jitter, next - n - 1));
}

/** The nominal moment whose due moment is `dueMs` (the inverse of {@link dueOf}): the last one at or before it, as a due moment is before the next nominal moment. */
export function nominalOf(timer: TimerMoments, dueMs: number): number {
  if ((timer.policy?.jitterMs ?? 0) === 0 || timer.spec.kind === "at") return timer.spec.kind === "at" ? timer.spec.atMs : dueMs;
  return rawPrev(timer, dueMs + 1) ?? dueMs;
}

/**
 * 0 to `maxMs` ms (inclusive), spread (near-)evenly over that range: from SHA-256 over the
 * timer id and the nominal moment. The same hash for any `maxMs`, so only the range
 * changes a moment's offset.
 */
function jitterOffset(timerId: string, nominalMs: number, maxMs: number): number {
  const h = sha256Bytes(`timer-jitter\n${timerId}\n${nominalMs}`);
  return h.readUIntBE(0, 6) % (maxMs + 1);
}
