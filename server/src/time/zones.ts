import { IANAZone } from "luxon";

/** One day in milliseconds. */
export const DAY_MS = 86_400_000;
const MINUTE_MS = 60_000;

/**
 * How one local wall-clock time maps to real instants in a zone:
 * - `unique`: it happens once, at `at`;
 * - `repeated`: it happens twice (an offset moves back, e.g. autumn): `first` < `second`;
 * - `gap`: it never happens (an offset moves forward, e.g. spring); `shifted` is the
 *   wall time read with the offset in force before the gap, i.e. the instant "gap length
 *   after it" (RFC 5545, Temporal's "compatible"): 02:30 in a 02:00→03:00 gap → 03:30.
 * All instants are milliseconds since the epoch, UTC.
 */
export type WallTimeInstants =
  | { kind: "unique"; at: number }
  | { kind: "repeated"; first: number; second: number }
  | { kind: "gap"; shifted: number; gapMs: number };

/**
 * The UTC offsets of one IANA zone, read through luxon and cached (STACK: tz via luxon).
 *
 * A luxon offset lookup costs ~20 µs (an Intl formatToParts call), so this samples the
 * offset once per UTC day boundary (k · 1 day) and, where two neighbouring samples
 * differ, finds the transition inside that day by binary search (to the second) once.
 * After that every lookup is a Map read. Assumption: a zone changes offset at most once
 * within one UTC day and does not change and change back within one day (true of the zones
 * we know of; Morocco's Ramadan suspensions are weeks apart, and Samoa's 24-hour jump over
 * 2011-12-30 is one change, covered by test/cron.test.ts).
 *
 * Instances are shared per zone name (`ZoneOffsets.of`); the caches only grow with the
 * days actually looked at and are dropped wholesale past a bound.
 */
export class ZoneOffsets {
  private static readonly byName = new Map<string, ZoneOffsets>();
  /** Cache bound: samples (days) kept per zone before the cache is cleared. */
  private static readonly maxSamples = 200_000;

  /** Offset in minutes at k · DAY_MS. */
  private readonly samples = new Map<number, number>();
  /** For a UTC day k whose end offset differs from its start: the first ms at the new offset. */
  private readonly transitions = new Map<number, number>();

  private constructor(private readonly zone: IANAZone) {}

  /** The shared offsets of a zone; `name` must be valid (`isValidZoneName`). */
  static of(name: string): ZoneOffsets {
    let z = ZoneOffsets.byName.get(name);
    if (!z) {
      z = new ZoneOffsets(IANAZone.create(name));
      ZoneOffsets.byName.set(name, z);
    }
    return z;
  }

  /** The zone's offset from UTC, in minutes, at instant `ms` (ms since the epoch). */
  offsetMinutesAt(ms: number): number {
    const k = Math.floor(ms / DAY_MS);
    const a = this.sample(k);
    const b = this.sample(k + 1);
    if (a === b) return a;
    return ms < this.transition(k, a) ? a : b;
  }

  /** The offset in minutes if it is the same over the UTC days [k0·DAY, k1·DAY], else undefined. */
  constantOffsetOver(k0: number, k1: number): number | undefined {
    const o = this.sample(k0);
    for (let k = k0 + 1; k <= k1; k++) if (this.sample(k) !== o) return undefined;
    return o;
  }

  /**
   * The instants at which the local wall time `wallMs` (the local date and time written
   * as if it were UTC, in ms) happens. See WallTimeInstants.
   */
  instantsOf(wallMs: number): WallTimeInstants {
    const before = this.offsetMinutesAt(wallMs - DAY_MS);
    const after = this.offsetMinutesAt(wallMs + DAY_MS);
    const c1 = wallMs - Math.round(before * MINUTE_MS);
    if (before === after) return { kind: "unique", at: c1 };
    const c2 = wallMs - Math.round(after * MINUTE_MS);
    const ok1 = this.offsetMinutesAt(c1) === before;
    const ok2 = this.offsetMinutesAt(c2) === after;
    if (ok1 && ok2) return { kind: "repeated", first: Math.min(c1, c2), second: Math.max(c1, c2) };
    if (ok1) return { kind: "unique", at: c1 };
    if (ok2) return { kind: "unique", at: c2 };
    return { kind: "gap", shifted: c1, gapMs: Math.round((after - before) * MINUTE_MS) };
  }

  private sample(k: number): number {
    let o = this.samples.get(k);
    if (o === undefined) {
      if (this.samples.size >= ZoneOffsets.maxSamples) {
        this.samples.clear();
        this.transitions.clear();
      }
      o = this.zone.offset(k * DAY_MS);
      this.samples.set(k, o);
    }
    return o;
  }

  /** The first instant (whole second) in UTC day k whose offset is not `a`. */
  private transition(k: number, a: number): number {
    let t = this.transitions.get(k);
    if (t === undefined) {
      // Invariant: offset(lo) === a, offset(hi) !== a; luxon reads offsets to the second.
      let lo = (k * DAY_MS) / 1000;
      let hi = ((k + 1) * DAY_MS) / 1000;
      while (hi - lo > 1) {
        const mid = Math.floor((lo + hi) / 2);
        if (this.zone.offset(mid * 1000) === a) lo = mid;
        else hi = mid;
      }
      t = hi * 1000;
      this.transitions.set(k, t);
    }
    return t;
  }
}

/** True when `name` is an IANA zone name luxon (and Intl) can use, "UTC" included. */
export function isValidZoneName(name: string): boolean {
  return IANAZone.isValidZone(name);
}

/** Civil date of a day number (days since 1970-01-01), proleptic Gregorian. */
export interface CivilDate {
  year: number;
  /** 1-12 */
  month: number;
  /** 1-31 */
  day: number;
  /** 0 = Sunday … 6 = Saturday */
  weekday: number;
  /** Days in this month (28-31). */
  daysInMonth: number;
}

/** The civil date of day number `n` (H. Hinnant's civil_from_days; no Date allocation). */
export function civilFromDays(n: number): CivilDate {
  const z = n + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  const weekday = (((n + 4) % 7) + 7) % 7; // 1970-01-01 was a Thursday
  return { year, month, day, weekday, daysInMonth: daysInMonth(year, month) };
}

/** Days in `month` (1-12) of `year`. */
export function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

let zoneNames: Map<string, string> | undefined;

/**
 * The canonical spelling of IANA zone `name` (`utc` is stored as `UTC`,
 * `europe/berlin` as `Europe/Berlin`): the zone as Intl lists it, matched without regard to
 * case; a valid name Intl does not list (an alias such as `US/Eastern`, or `UTC`) keeps the
 * spelling Intl resolves it to when that differs only in case, else its own. "" stays "" (UTC).
 * Call with a valid name (`isValidZoneName`).
 */
export function canonicalZone(name: string): string {
  if (name === "") return "";
  zoneNames ??= new Map([...Intl.supportedValuesOf("timeZone"), "UTC", "Etc/UTC", "Etc/GMT", "GMT"].map((z) => [z.toLowerCase(), z]));
  const listed = zoneNames.get(name.toLowerCase());
  if (listed) return listed;
  try {
    const resolved = new Intl.DateTimeFormat("en-US", { timeZone: name }).resolvedOptions().timeZone;
    if (resolved.toLowerCase() === name.toLowerCase()) return resolved;
  } catch {
    /* not a zone Intl knows: keep it */
  }
  return name;
}
