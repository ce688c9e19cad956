import { ChronologError } from "../errors.js";
import type { DstPolicy } from "../store/timer-records.js";
import { civilFromDays, DAY_MS, isValidZoneName, ZoneOffsets, type CivilDate } from "./zones.js";

// Cron expressions in a time zone: the one module that owns the rules.
//
// Syntax: 5 fields, `minute hour day-of-month month day-of-week`; names jan-dec and sun-sat
// (any case), ranges `a-b`, steps `*/n`, `a-b/n`, `a/n`, lists `a,b`, `?` (day fields only),
// 0 or 7 for Sunday, `L` (last day of the month) in day-of-month, `nL` (last weekday n of the
// month) and `n#k` (k-th weekday n, k 1-5) in day-of-week. No seconds, years or macros.
//
// Days (Vixie cron): a day field that begins with `*` (so `*/n` too) or is `?` is
// unrestricted. When either day field is unrestricted a day must match both; when both are
// restricted either one is enough. `0 0 */2 * 1` = odd-numbered days that are Mondays;
// `0 0 1 * 1` = the 1st and every Monday.
//
// Daylight saving, for the wall times an expression names on a matching local day:
// - Fixed hour (the hour field is anything but `*` or `*/n`, e.g. `2`, `1-3`, `1,13`,
//   `0-23/2`): a wall time in a gap runs once, shifted forward by the gap's length (02:30 in
//   a 02:00→03:00 gap runs at 03:30; 01:30 in Antarctica/Troll's 01:00→03:00 gap at 03:30); a
//   wall time in a repeated stretch runs once, at its first occurrence. This holds for every
//   minute of a fixed hour: `*/30 2 * * *` on Berlin's fall-back day runs at 02:00 and 02:30
//   CEST only, not again in the CET copy of 02:xx (the hour is fixed; the minute step does
//   not make it a wildcard-hour job).
// - Wildcard or step hour (`*` or `*/n`): it runs at every real instant whose wall time
//   matches: both copies of a repeated hour (`0 * * * *` runs 25 times on Berlin's fall-back
//   day), and nothing for wall times that do not exist (`0 */2 * * *` does not run at the
//   missing 02:00 on spring-forward day: no real instant reads 02:00, and shifting it would
//   give 03:00, which the expression does not name). This is Vixie cron's behaviour.
// - The per-schedule DST policy refines the fixed-hour rule only: `gap` "shift" (default) or
//   "skip"; `repeated` "first" (default), "last" or "both". Wildcard-hour jobs always follow
//   real instants.
// Fire times form a set of instants; `next` returns the least one strictly after its
// argument, so nothing runs twice (a shifted time that lands on a real one, e.g. `0 2,3` on
// spring-forward day, is one run), nothing is skipped, and each next is strictly later.
//
// Never-matching expressions (`0 0 30 2 *`, `0 0 31 4,6 *`, `0 0 */20 * 5#5`) are rejected by
// parseCron: it checks every kind of month (12 months, February with 28 or 29 days, each
// starting on each weekday; all occur within the 400-year Gregorian cycle) for a matching
// day. So every accepted expression has a next fire time; the rarest (e.g. `0 0 * 2 5#5`, a
// fifth Friday in February: 2036-02-29, then 2064) recur within ~40 years, and `next` searches
// up to 100 years before giving up with an internal error, which cannot happen for an
// accepted expression. (`next` therefore returns a number, never null.)
//
// Why not cron-parser 5.10.5: the cases of test/cron.test.ts run through
// `CronExpressionParser.parse(expr, { currentDate, tz }).next()/.prev()`. Where it is wrong:
// - `*/n` day fields are read as restricted (OR) instead of Vixie's AND: `0 0 */2 * 1` from
//   2026-01-01 gives 01-03 (a Saturday), 01-05, 01-07, 01-09 instead of 01-05, 01-19, 02-09,
//   02-23; `0 0 1 * */6` gives 01-03, 01-04 instead of 02-01, 03-01; `0 0 */20 * 5#5` (never
//   runs) gives 2026-02-01, a Sunday.
// - `30 * * * *` Australia/Lord_Howe (30-minute fall back 02:00 → 01:30 on 2026-04-05): it
//   misses the second 01:30 (2026-04-04T15:00Z), going 14:30Z → 16:00Z.
// - `15 2 * * *` Australia/Lord_Howe (30-minute gap 02:00 → 02:30 on 2026-10-04): it skips that
//   day (2026-10-04T15:15Z, the 5th) instead of 02:45 +11 = 2026-10-03T15:45Z.
// - `0,1 * * * *` America/St_Johns from 2010-11-07T01:31Z (a 00:01 → 23:01 fall back, the
//   repeated stretch crossing midnight): it returns 01:30Z, 01:31Z, 01:30Z, 01:31Z — not after
//   the start, and looping — instead of 02:30Z, 02:31Z, 03:30Z, 03:31Z.
// - prev() skips the spring-forward day (`30 2 * * *` Berlin before 2026-03-30T12:00Z: 03-30
//   00:30Z, then 03-28 01:30Z, missing 03-29 01:30Z) and returns both fall-back copies of a
//   fixed hour (`0 2 * * *` before 2026-10-26T12:00Z: 10-25 01:00Z and 00:00Z).
// - It accepts 4- and 3-field expressions (`* * *`) silently and 6 fields as seconds; an
//   unknown zone fails with "CronDate: unhandled timestamp …" rather than naming the zone.
// - Not a fault but a choice makes differently: `0 */2 * * *` Berlin on 2026-03-29 runs at
//   03:00 CEST (01:00Z), shifting a step hour out of the gap; here it next runs at 04:00 CEST.
// It agrees with this module on the Berlin 02:30 gap, `0 2` / `0 *` / `*/30 2` on fall-back
// day, `0 2,3` on spring-forward day, Troll's 2-hour gap and repeat, Chicago's spring-forward
// Sunday, Santiago's midnight changes, Apia's skipped day, L, nL, n#k, names and 7.

const MINUTE_MS = 60_000;
/** How far `next`/`prev` look before failing (unreachable for accepted expressions). */
const MAX_SEARCH_DAYS = 366 * 100;

/** The default DST rules: shift gaps, first of a repeated time. */
export const defaultDstPolicy: Readonly<DstPolicy> = Object.freeze({ gap: "shift", repeated: "first" });

interface FieldSpec {
  index: number;
  name: string;
  min: number;
  max: number;
  names?: readonly string[];
}

const FIELD_SPECS: readonly FieldSpec[] = [
  { index: 1, name: "minute", min: 0, max: 59 },
  { index: 2, name: "hour", min: 0, max: 23 },
  { index: 3, name: "day-of-month", min: 1, max: 31 },
  {
    index: 4,
    name: "month",
    min: 1,
    max: 12,
    names: ["", "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"],
  },
  { index: 5, name: "day-of-week", min: 0, max: 7, names: ["sun", "mon", "tue", "wed", "thu", "fri", "sat"] },
];

const FIELD_LIST = "minute hour day-of-month month day-of-week";

/** The parsed day rule: which local calendar days an expression runs on. */
interface DayRule {
  months: boolean[]; // [1..12]
  dom: boolean[]; // [1..31]
  domLast: boolean; // `L`
  domUnrestricted: boolean;
  dow: boolean[]; // [0..6]
  dowLast: boolean[]; // `nL`, by weekday
  dowNth: boolean[][]; // `n#k`: [weekday][k]
  dowUnrestricted: boolean;
}

/**
 * A checked cron expression in a zone; immutable and safe to share. All instants are
 * milliseconds since the epoch, UTC. Made by `parseCron`.
 */
export class CronSchedule {
  /** Wall minutes of the day it names (hour·60 + minute), ascending. */
  private readonly minutesOfDay: Int32Array;
  /** Instants of recent transition days (local day number → sorted fire times). */
  private readonly transitionDays = new Map<number, number[]>();
  private readonly offsets: ZoneOffsets;

  /** @internal use parseCron */
  constructor(
    /** The expression as given (trimmed). */
    readonly expression: string,
    /** The IANA zone its wall times are read in ("UTC" when given ""). */
    readonly zone: string,
    /** True when the hour field is `*` or `*\/n` (runs at every real matching instant). */
    readonly hourIsWildcard: boolean,
    /** What fixed-hour wall times do across DST changes. */
    readonly dstPolicy: Readonly<DstPolicy>,
    hours: readonly number[],
    minutes: readonly number[],
    private readonly days: DayRule,
  ) {
    const mods: number[] = [];
    for (const h of hours) for (const m of minutes) mods.push(h * 60 + m);
    this.minutesOfDay = Int32Array.from(mods);
    this.offsets = ZoneOffsets.of(zone);
  }

  /**
   * The first fire time strictly after `afterMs`, in ms since the epoch (UTC), following
   * across DST changes. Never loops: accepted expressions always have a next time.
   * Throws ChronologError `bad_request` if `afterMs` is not a finite number.
   */
  next(afterMs: number): number {
    checkInstant(afterMs, "afterMs");
    let n = this.localDay(afterMs) - 1;
    let best = Infinity;
    let foundOn: number | undefined;
    for (let steps = 0; steps < MAX_SEARCH_DAYS; steps++) {
      // A day's fire times can precede the previous day's only across a transition
      // near midnight (e.g. a 23:30→00:30 gap), never by more than a day: look one day on.
      if (foundOn !== undefined && n > foundOn + 1) return best;
      const c = civilFromDays(n);
      if (!this.days.months[c.month]) {
        n += c.daysInMonth - c.day + 1; // first day of the next month
        continue;
      }
      if (dayMatches(this.days, c)) {
        const t = this.firstInDayAfter(n, afterMs);
        if (t !== undefined) {
          if (t < best) best = t;
          foundOn ??= n;
        }
      }
      n++;
    }
    if (foundOn !== undefined) return best;
    throw new ChronologError("internal", `cron "${this.expression}" found no fire time within 100 years`);
  }

  /**
   * The last fire time strictly before `beforeMs`, in ms since the epoch (UTC); the mirror
   * of `next` (e.g. the occurrence owed after an outage). Throws like `next`.
   */
  prev(beforeMs: number): number {
    checkInstant(beforeMs, "beforeMs");
    let n = this.localDay(beforeMs) + 1;
    let best = -Infinity;
    let foundOn: number | undefined;
    for (let steps = 0; steps < MAX_SEARCH_DAYS; steps++) {
      if (foundOn !== undefined && n < foundOn - 1) return best;
      const c = civilFromDays(n);
      if (!this.days.months[c.month]) {
        n -= c.day; // last day of the previous month
        continue;
      }
      if (dayMatches(this.days, c)) {
        const t = this.lastInDayBefore(n, beforeMs);
        if (t !== undefined) {
          if (t > best) best = t;
          foundOn ??= n;
        }
      }
      n--;
    }
    if (foundOn !== undefined) return best;
    throw new ChronologError("internal", `cron "${this.expression}" found no fire time within 100 years`);
  }

  /**
   * The next `count` fire times strictly after `afterMs`, ascending, in ms since the epoch
   * (UTC): a schedule preview. `count` is 0 to 10,000; otherwise `bad_request`.
   */
  take(afterMs: number, count: number): number[] {
    if (!Number.isInteger(count) || count < 0 || count > 10_000) {
      const msg = `count must be an integer from 0 to 10000, not ${count}`;
      throw new ChronologError("bad_request", msg, [{ field: "count", description: msg }]);
    }
    const out: number[] = [];
    let t = afterMs;
    for (let i = 0; i < count; i++) {
      t = this.next(t);
      out.push(t);
    }
    return out;
  }

  /** The local day number (days since 1970-01-01 on the zone's calendar) of instant `ms`. */
  private localDay(ms: number): number {
    return Math.floor((ms + this.offsets.offsetMinutesAt(ms) * MINUTE_MS) / DAY_MS);
  }

  /** The earliest fire time of local day `n` that is after `afterMs`, if any. */
  private firstInDayAfter(n: number, afterMs: number): number | undefined {
    const fixed = this.offsets.constantOffsetOver(n - 1, n + 2);
    if (fixed !== undefined) {
      // No transition near this day: fire time = wall time − offset, in wall-time order.
      const base = n * DAY_MS - Math.round(fixed * MINUTE_MS);
      const mods = this.minutesOfDay;
      let lo = 0;
      let hi = mods.length; // first index whose instant > afterMs
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (base + mods[mid]! * MINUTE_MS > afterMs) hi = mid;
        else lo = mid + 1;
      }
      return lo < mods.length ? base + mods[lo]! * MINUTE_MS : undefined;
    }
    const times = this.transitionDay(n);
    let lo = 0;
    let hi = times.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (times[mid]! > afterMs) hi = mid;
      else lo = mid + 1;
    }
    return lo < times.length ? times[lo] : undefined;
  }

  /** The latest fire time of local day `n` that is before `beforeMs`, if any. */
  private lastInDayBefore(n: number, beforeMs: number): number | undefined {
    const fixed = this.offsets.constantOffsetOver(n - 1, n + 2);
    const mods = this.minutesOfDay;
    if (fixed !== undefined) {
      const base = n * DAY_MS - Math.round(fixed * MINUTE_MS);
      let lo = 0;
      let hi = mods.length; // first index whose instant >= beforeMs
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (base + mods[mid]! * MINUTE_MS >= beforeMs) hi = mid;
        else lo = mid + 1;
      }
      return lo > 0 ? base + mods[lo - 1]! * MINUTE_MS : undefined;
    }
    const times = this.transitionDay(n);
    let lo = 0;
    let hi = times.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (times[mid]! >= beforeMs) hi = mid;
      else lo = mid + 1;
    }
    return lo > 0 ? times[lo - 1] : undefined;
  }

  /** All fire times of local day `n` near an offset change, by the rules; cached. */
  private transitionDay(n: number): number[] {
    let times = this.transitionDays.get(n);
    if (times) return times;
    const wildcard = this.hourIsWildcard;
    const { gap, repeated } = this.dstPolicy;
    const all: number[] = [];
    for (const mod of this.minutesOfDay) {
      const r = this.offsets.instantsOf(n * DAY_MS + mod * MINUTE_MS);
      if (r.kind === "unique") all.push(r.at);
      else if (r.kind === "repeated") {
        if (wildcard || repeated === "both") all.push(r.first, r.second);
        else all.push(repeated === "first" ? r.first : r.second);
      } else if (!wildcard && gap === "shift") all.push(r.shifted);
    }
    all.sort((a, b) => a - b);
    times = all.filter((t, i) => i === 0 || t !== all[i - 1]);
    if (this.transitionDays.size >= 64) this.transitionDays.clear();
    this.transitionDays.set(n, times);
    return times;
  }
}

/**
 * Parses and checks a 5-field cron expression in an IANA zone; `zone` "" means
 * "UTC". `dstPolicy` changes what fixed-hour jobs do in gaps and repeated hours; it
 * defaults to shift / first.
 *
 * Throws ChronologError `bad_request` (INVALID_ARGUMENT) with one violation whose `field` is
 * "cron", "zone" or "dstPolicy" and a message naming the bad field, e.g.
 * `cron field 2 (hour) "25" is out of range 0-23`. Expressions that can never run
 * (`0 0 30 2 *`) are rejected here too.
 */
export function parseCron(expression: string, zone: string, dstPolicy: Partial<DstPolicy> = {}): CronSchedule {
  const expr = expression.trim();
  const tz = zone === "" ? "UTC" : zone;
  if (!isValidZoneName(tz)) {
    invalid("zone", `zone "${zone}" is not an IANA time zone (e.g. "Europe/Berlin" or "UTC")`);
  }
  const policy = checkPolicy(dstPolicy);

  const parts = expr === "" ? [] : expr.split(/\s+/);
  if (parts.length !== 5) {
    // Name what was given without guessing what an extra field meant (a 6th may be seconds or a year).
    const given = parts.map((p) => JSON.stringify(p)).join(" ");
    let why = `cron expression "${expr}" has ${parts.length} field${parts.length === 1 ? "" : "s"}${parts.length > 0 ? ` (${given})` : ""}; expected 5: ${FIELD_LIST}`;
    if (parts.length > 5) why += " (seconds and year fields are not supported)";
    else if (parts.length === 1 && parts[0]!.startsWith("@")) why += ` (macros like "${parts[0]}" are not supported)`;
    invalid("cron", why);
  }
  const [minuteText, hourText, domText, monthText, dowText] = parts as [string, string, string, string, string];

  const minutes = parseField(minuteText, FIELD_SPECS[0]!).values;
  const hours = parseField(hourText, FIELD_SPECS[1]!).values;
  const dom = parseField(domText, FIELD_SPECS[2]!, "dom");
  const months = parseField(monthText, FIELD_SPECS[3]!).values;
  const dow = parseField(dowText, FIELD_SPECS[4]!, "dow");

  const days: DayRule = {
    months: flags(13, months),
    dom: flags(32, dom.values),
    domLast: dom.last,
    domUnrestricted: isUnrestricted(domText),
    dow: flags(
      7,
      dow.values.map((d) => d % 7),
    ),
    dowLast: flags(
      7,
      dow.lastOf.map((d) => d % 7),
    ),
    dowNth: Array.from({ length: 7 }, (_, wd) => {
      const ks = new Array<boolean>(6).fill(false);
      for (const [n, k] of dow.nth) if (n % 7 === wd) ks[k] = true;
      return ks;
    }),
    dowUnrestricted: isUnrestricted(dowText),
  };
  if (!canEverMatch(days)) {
    invalid("cron", `cron expression "${expr}" never runs: no date has day-of-month "${domText}", month "${monthText}" and day-of-week "${dowText}"`);
  }
  const hourIsWildcard = hourText === "*" || /^\*\/\d+$/.test(hourText);
  return new CronSchedule(expr, tz, hourIsWildcard, policy, hours, minutes, days);
}

// ---- fields ----

interface ParsedField {
  /** Plain values, ascending, unique (day-of-week 7 kept as 7; callers fold it to 0). */
  values: number[];
  /** Day-of-month `L`. */
  last: boolean;
  /** Day-of-week `nL`: the weekdays n. */
  lastOf: number[];
  /** Day-of-week `n#k`: [n, k] pairs. */
  nth: [number, number][];
}

function parseField(text: string, spec: FieldSpec, day?: "dom" | "dow"): ParsedField {
  const where = `cron field ${spec.index} (${spec.name})`;
  const fail = (why: string): never => invalid("cron", `${where} ${why}`);
  const out: ParsedField = { values: [], last: false, lastOf: [], nth: [] };
  const set = new Set<number>();

  const value = (token: string): number => {
    if (/^\d+$/.test(token)) {
      const v = Number(token);
      if (v < spec.min || v > spec.max) fail(`"${token}" is out of range ${spec.min}-${spec.max}`);
      return v;
    }
    const i = spec.names?.indexOf(token.toLowerCase()) ?? -1;
    if (i > 0 || (i === 0 && spec.names![0] !== "")) return i;
    return fail(`"${token}" is not a number${spec.names ? " or name" : ""}`);
  };

  if (text === "?") {
    if (!day) fail(`"?" is only allowed in day-of-month and day-of-week`);
    for (let v = spec.min; v <= Math.min(spec.max, day === "dow" ? 6 : spec.max); v++) set.add(v);
    out.values = [...set];
    return out;
  }
  for (const item of text.split(",")) {
    if (item === "") fail(`"${text}" has an empty list item`);
    if (item === "?") fail(`"?" must be the whole field`);
    if (day === "dom" && /^l$/i.test(item)) {
      out.last = true;
      continue;
    }
    if (day === "dow") {
      const lastOf = /^([a-z0-9]+)l$/i.exec(item);
      if (lastOf) {
        out.lastOf.push(value(lastOf[1]!));
        continue;
      }
      const nth = /^([a-z0-9]+)#(.*)$/i.exec(item);
      if (nth) {
        const n = value(nth[1]!);
        const k = /^[1-5]$/.test(nth[2]!) ? Number(nth[2]) : fail(`"${item}": the occurrence after # must be 1-5`);
        out.nth.push([n, k]);
        continue;
      }
    }
    const pieces = item.split("/");
    if (pieces.length > 2) fail(`"${item}" has more than one "/"`);
    const [base, stepText] = pieces as [string, string | undefined];
    let step = 1;
    if (stepText !== undefined) {
      const span = spec.max - spec.min + 1;
      if (!/^\d+$/.test(stepText) || Number(stepText) < 1 || Number(stepText) > span) {
        fail(`"${item}": the step must be a whole number from 1 to ${span}`);
      }
      step = Number(stepText);
    }
    let lo: number;
    let hi: number;
    if (base === "*") {
      lo = spec.min;
      hi = day === "dow" ? 6 : spec.max;
    } else {
      const ends = base.split("-");
      if (ends.length > 2 || ends.some((e) => e === "")) fail(`"${item}" is not a value, range or step`);
      lo = value(ends[0]!);
      if (ends.length === 2) {
        hi = value(ends[1]!);
        if (lo > hi) fail(`range "${base}" runs backwards (write it as a list)`);
      } else {
        hi = stepText !== undefined ? spec.max : lo;
      }
    }
    for (let v = lo; v <= hi; v += step) set.add(v);
  }
  out.values = [...set].sort((a, b) => a - b);
  return out;
}

/** Vixie cron: a day field that begins with `*` or is `?` does not restrict on its own. */
function isUnrestricted(text: string): boolean {
  return text.startsWith("*") || text === "?";
}

function dayMatches(r: DayRule, c: CivilDate): boolean {
  if (!r.months[c.month]) return false;
  const dom = r.dom[c.day]! || (r.domLast && c.day === c.daysInMonth);
  const dow = r.dow[c.weekday]! || (r.dowLast[c.weekday]! && c.day + 7 > c.daysInMonth) || r.dowNth[c.weekday]![Math.ceil(c.day / 7)]!;
  return r.domUnrestricted || r.dowUnrestricted ? dom && dow : dom || dow;
}

/**
 * Whether any date can match: tries every kind of month (each month, February with 28 and
 * 29 days, starting on each weekday). Each kind occurs in the 400-year Gregorian cycle.
 */
function canEverMatch(r: DayRule): boolean {
  for (let month = 1; month <= 12; month++) {
    if (!r.months[month]) continue;
    const lengths = month === 2 ? [28, 29] : [month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31];
    for (const daysInMonth of lengths) {
      for (let first = 0; first < 7; first++) {
        for (let day = 1; day <= daysInMonth; day++) {
          const c: CivilDate = { year: 0, month, day, weekday: (first + day - 1) % 7, daysInMonth };
          if (dayMatches(r, c)) return true;
        }
      }
    }
  }
  return false;
}

function flags(size: number, on: readonly number[]): boolean[] {
  const f = new Array<boolean>(size).fill(false);
  for (const v of on) f[v] = true;
  return f;
}

function checkPolicy(p: Partial<DstPolicy>): Readonly<DstPolicy> {
  const gap = p.gap ?? defaultDstPolicy.gap;
  const repeated = p.repeated ?? defaultDstPolicy.repeated;
  if (gap !== "shift" && gap !== "skip") invalid("dstPolicy", `dstPolicy.gap "${String(gap)}" must be "shift" or "skip"`);
  if (repeated !== "first" && repeated !== "last" && repeated !== "both") {
    invalid("dstPolicy", `dstPolicy.repeated "${String(repeated)}" must be "first", "last" or "both"`);
  }
  return gap === defaultDstPolicy.gap && repeated === defaultDstPolicy.repeated ? defaultDstPolicy : Object.freeze({ gap, repeated });
}

function checkInstant(ms: number, name: string): void {
  if (!Number.isFinite(ms)) {
    const msg = `${name} must be a finite number of ms since the epoch, not ${ms}`;
    throw new ChronologError("bad_request", msg, [{ field: name, description: msg }]);
  }
}

function invalid(field: string, message: string): never {
  throw new ChronologError("bad_request", message, [{ field, description: message }]);
}
