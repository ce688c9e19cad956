// Cron in a time zone: server/src/time/cron.ts. Pure functions, no
// clock: every expectation is an exact instant written as an ISO string (UTC).
//
// Besides the hand-written cases, two independent checks:
// - an oracle that scans every minute of the three local days around each DST transition
//   of 2026-2027 with luxon and applies by itself (first copy / every copy / luxon's own
//   forward shift for gaps), compared with what the schedule yields;
// - long walks (2,000 next() calls) asserting strictly increasing results whose wall time
//   matches the expression or is a gap shift, no local day missing, and prev() mirroring next().
// cron-parser 5.10.5 was run on the same cases; where it is wrong is listed at the top of
// server/src/time/cron.ts.

import { DateTime } from "luxon";
import { describe, expect, it } from "vitest";
import { ChronologError } from "../server/src/errors.js";
import { parseCron, type CronSchedule } from "../server/src/time/cron.js";

const ms = (iso: string): number => Date.parse(iso);
const iso = (t: number): string => new Date(t).toISOString();
const take = (s: CronSchedule, fromIso: string, n: number): string[] => s.take(ms(fromIso), n).map(iso);
/** Fire times in [fromIso, toIso). */
const between = (s: CronSchedule, fromIso: string, toIso: string): string[] => {
  const out: string[] = [];
  for (let t = s.next(ms(fromIso) - 1); t < ms(toIso); t = s.next(t)) out.push(iso(t));
  return out;
};

describe("daylight saving", () => {
  it("0 8 * * 0 America/Chicago: the spring-forward Sunday itself, not a week later", () => {
    const s = parseCron("0 8 * * 0", "America/Chicago");
    // 2026-03-08 05:45Z = 23:45 CST Saturday; 08:00 CDT (UTC-5) Sunday = 13:00Z.
    expect(take(s, "2026-03-08T05:45:00Z", 2)).toEqual(["2026-03-08T13:00:00.000Z", "2026-03-15T13:00:00.000Z"]);
  });

  it("30 1 * * * Antarctica/Troll: the 2-hour gap day runs once at 03:30 local, no day missing", () => {
    const s = parseCron("30 1 * * *", "Antarctica/Troll");
    // Troll goes +00 → +02 at 2026-03-29T01:00Z (local 01:00 → 03:00). 01:30 does not exist
    // that day: shifted by the gap (2 h) to 03:30 +02 = 01:30Z. The day after runs at 01:30 +02.
    expect(take(s, "2026-03-27T00:00:00Z", 4)).toEqual([
      "2026-03-27T01:30:00.000Z",
      "2026-03-28T01:30:00.000Z",
      "2026-03-29T01:30:00.000Z",
      "2026-03-29T23:30:00.000Z",
    ]);
    // Fall back +02 → +00 at 2026-10-25T01:00Z (local 03:00 → 01:00): 01:30 twice, first only.
    expect(take(s, "2026-10-23T12:00:00Z", 3)).toEqual([
      "2026-10-23T23:30:00.000Z",
      "2026-10-24T23:30:00.000Z", // 01:30 +02 on the 25th (the +00 copy at 01:30Z does not run)
      "2026-10-26T01:30:00.000Z",
    ]);
  });

  it("0 2 * * * Europe/Berlin on fall-back day: once, at 02:00 CEST; then 02:00 CET", () => {
    const s = parseCron("0 2 * * *", "Europe/Berlin");
    expect(take(s, "2026-10-24T12:00:00Z", 2)).toEqual(["2026-10-25T00:00:00.000Z", "2026-10-26T01:00:00.000Z"]);
    expect(between(s, "2026-10-24T22:00:00Z", "2026-10-25T23:00:00Z")).toEqual(["2026-10-25T00:00:00.000Z"]);
  });

  it("0 * * * * Europe/Berlin runs in both copies of the repeated hour: 25 runs that day", () => {
    const s = parseCron("0 * * * *", "Europe/Berlin");
    // Local 2026-10-25 is [2026-10-24T22:00Z, 2026-10-25T23:00Z): 25 hours.
    const day = between(s, "2026-10-24T22:00:00Z", "2026-10-25T23:00:00Z");
    expect(day).toHaveLength(25);
    expect(day.slice(0, 4)).toEqual([
      "2026-10-24T22:00:00.000Z", // 00:00 CEST
      "2026-10-24T23:00:00.000Z", // 01:00 CEST
      "2026-10-25T00:00:00.000Z", // 02:00 CEST
      "2026-10-25T01:00:00.000Z", // 02:00 CET
    ]);
    // Spring-forward day: 23 runs, no 02:00.
    expect(between(s, "2026-03-28T23:00:00Z", "2026-03-29T22:00:00Z")).toHaveLength(23);
  });

  it("30 2 * * * Europe/Berlin on spring-forward day: 03:30 CEST", () => {
    const s = parseCron("30 2 * * *", "Europe/Berlin");
    expect(take(s, "2026-03-28T12:00:00Z", 3)).toEqual(["2026-03-29T01:30:00.000Z", "2026-03-30T00:30:00.000Z", "2026-03-31T00:30:00.000Z"]);
  });

  it("*/30 2 * * * Europe/Berlin on fall-back day: first copy only", () => {
    // interpretation: the hour field is fixed (2), so every wall time it names is a fixed
    // wall time and runs once, at its first occurrence; a minute step does not make it a
    // wildcard-hour job. So 02:00 and 02:30 CEST (00:00Z, 00:30Z), not the CET copy.
    const s = parseCron("*/30 2 * * *", "Europe/Berlin");
    expect(take(s, "2026-10-24T12:00:00Z", 4)).toEqual([
      "2026-10-25T00:00:00.000Z",
      "2026-10-25T00:30:00.000Z",
      "2026-10-26T01:00:00.000Z",
      "2026-10-26T01:30:00.000Z",
    ]);
  });

  it("0 */2 * * * Europe/Berlin: a step hour runs only at real instants (no shifted 02:00)", () => {
    const s = parseCron("0 */2 * * *", "Europe/Berlin");
    // 00:00 CET = 23:00Z; 02:00 does not exist; 04:00 CEST = 02:00Z.
    expect(take(s, "2026-03-28T22:30:00Z", 2)).toEqual(["2026-03-28T23:00:00.000Z", "2026-03-29T02:00:00.000Z"]);
  });

  it("Australia/Lord_Howe's 30-minute changes", () => {
    // Fall back 2026-04-05 02:00 +11 → 01:30 +10:30 (at 15:00Z): 01:30-01:59 twice.
    expect(take(parseCron("30 * * * *", "Australia/Lord_Howe"), "2026-04-04T14:00:00Z", 3)).toEqual([
      "2026-04-04T14:30:00.000Z", // 01:30 +11
      "2026-04-04T15:00:00.000Z", // 01:30 +10:30 (cron-parser 5.10.5 misses this one)
      "2026-04-04T16:00:00.000Z", // 02:30 +10:30
    ]);
    expect(take(parseCron("45 1 * * *", "Australia/Lord_Howe"), "2026-04-04T12:00:00Z", 2)).toEqual([
      "2026-04-04T14:45:00.000Z", // first 01:45 only
      "2026-04-05T15:15:00.000Z",
    ]);
    // Spring 2026-10-04 02:00 +10:30 → 02:30 +11 (at 15:30Z): 02:15 shifts 30 min to 02:45 +11.
    expect(take(parseCron("15 2 * * *", "Australia/Lord_Howe"), "2026-10-03T12:00:00Z", 2)).toEqual([
      "2026-10-03T15:45:00.000Z", // (cron-parser 5.10.5 skips this day)
      "2026-10-04T15:15:00.000Z",
    ]);
  });

  it("a shifted time landing on a real one runs once (0 2,3 * * * on spring-forward day)", () => {
    const s = parseCron("0 2,3 * * *", "Europe/Berlin");
    expect(between(s, "2026-03-28T23:00:00Z", "2026-03-29T22:00:00Z")).toEqual(["2026-03-29T01:00:00.000Z"]);
  });

  it("America/Santiago: transitions at local midnight", () => {
    // 2026-09-06 00:00 -04 → 01:00 -03 (04:00Z): 00:30 shifts to 01:30 -03 = 04:30Z.
    expect(take(parseCron("30 0 * * *", "America/Santiago"), "2026-09-05T00:00:00Z", 3)).toEqual([
      "2026-09-05T04:30:00.000Z",
      "2026-09-06T04:30:00.000Z",
      "2026-09-07T03:30:00.000Z",
    ]);
    // 2026-04-05 00:00 -03 → 2026-04-04 23:00 -04 (03:00Z): 23:30 on the 4th happens twice.
    expect(take(parseCron("30 23 * * *", "America/Santiago"), "2026-04-03T12:00:00Z", 3)).toEqual([
      "2026-04-04T02:30:00.000Z",
      "2026-04-05T02:30:00.000Z", // 23:30 -03, first copy (the -04 copy is 03:30Z)
      "2026-04-06T03:30:00.000Z",
    ]);
    expect(take(parseCron("30 * * * *", "America/Santiago"), "2026-04-05T02:00:00Z", 3)).toEqual([
      "2026-04-05T02:30:00.000Z",
      "2026-04-05T03:30:00.000Z",
      "2026-04-05T04:30:00.000Z",
    ]);
  });

  it("America/St_Johns 2010: a repeated stretch across midnight (00:01 NDT → 23:01 NST)", () => {
    // From 23:01 NDT on Nov 6 (01:31Z): 00:00 NDT Nov 7 (02:30Z) comes before the second
    // 23:01 of Nov 6 (NST, 02:31Z): the next day's first fire time precedes this day's last.
    expect(take(parseCron("0,1 * * * *", "America/St_Johns"), "2010-11-07T01:31:00Z", 4)).toEqual([
      "2010-11-07T02:30:00.000Z",
      "2010-11-07T02:31:00.000Z",
      "2010-11-07T03:30:00.000Z", // 00:00 NST, the second copy
      "2010-11-07T03:31:00.000Z",
    ]);
  });

  it("Pacific/Apia skipped 2011-12-30: its noon shifts by the 24-hour gap onto Dec 31's noon, once", () => {
    expect(take(parseCron("0 12 * * *", "Pacific/Apia"), "2011-12-29T00:00:00Z", 3)).toEqual([
      "2011-12-29T22:00:00.000Z", // Dec 29 12:00 -10
      "2011-12-30T22:00:00.000Z", // Dec 31 12:00 +14 (and Dec 30's, shifted)
      "2011-12-31T22:00:00.000Z",
    ]);
    expect(take(parseCron("0 * * * *", "Pacific/Apia"), "2011-12-30T08:30:00Z", 2)).toEqual([
      "2011-12-30T09:00:00.000Z", // Dec 29 23:00 -10
      "2011-12-30T10:00:00.000Z", // Dec 31 00:00 +14
    ]);
  });

  it("policy: gap skip; repeated last or both (fixed hours only)", () => {
    const skip = parseCron("30 2 * * *", "Europe/Berlin", { gap: "skip" });
    expect(take(skip, "2026-03-28T12:00:00Z", 2)).toEqual(["2026-03-30T00:30:00.000Z", "2026-03-31T00:30:00.000Z"]);
    const last = parseCron("30 2 * * *", "Europe/Berlin", { repeated: "last" });
    expect(take(last, "2026-10-24T12:00:00Z", 2)).toEqual(["2026-10-25T01:30:00.000Z", "2026-10-26T01:30:00.000Z"]);
    const both = parseCron("30 2 * * *", "Europe/Berlin", { repeated: "both" });
    expect(take(both, "2026-10-24T12:00:00Z", 3)).toEqual(["2026-10-25T00:30:00.000Z", "2026-10-25T01:30:00.000Z", "2026-10-26T01:30:00.000Z"]);
    // Wildcard hours ignore the policy: both copies, nothing shifted.
    const hourly = parseCron("0 * * * *", "Europe/Berlin", { repeated: "first", gap: "shift" });
    expect(between(hourly, "2026-10-24T22:00:00Z", "2026-10-25T23:00:00Z")).toHaveLength(25);
    expect(() => parseCron("0 2 * * *", "UTC", { gap: "later" as never })).toThrow(/dstPolicy.gap/);
  });

  it("prev() mirrors next() across the gap and the repeated hour (cron-parser's prev skips the gap day)", () => {
    const s = parseCron("30 2 * * *", "Europe/Berlin");
    expect(iso(s.prev(ms("2026-03-30T12:00:00Z")))).toBe("2026-03-30T00:30:00.000Z");
    expect(iso(s.prev(ms("2026-03-30T00:30:00Z")))).toBe("2026-03-29T01:30:00.000Z");
    expect(iso(s.prev(ms("2026-03-29T01:30:00Z")))).toBe("2026-03-28T01:30:00.000Z");
    const f = parseCron("0 2 * * *", "Europe/Berlin");
    expect(iso(f.prev(ms("2026-10-26T01:00:00Z")))).toBe("2026-10-25T00:00:00.000Z");
  });

  it("next is strictly after its argument, also from a fire time and between copies", () => {
    const s = parseCron("0 * * * *", "Europe/Berlin");
    expect(iso(s.next(ms("2026-10-25T00:00:00Z")))).toBe("2026-10-25T01:00:00.000Z");
    expect(iso(s.next(ms("2026-10-25T00:00:00Z") - 1))).toBe("2026-10-25T00:00:00.000Z");
    expect(iso(s.next(ms("2026-10-25T00:59:59.999Z")))).toBe("2026-10-25T01:00:00.000Z");
  });
});

describe("days (Vixie) and syntax", () => {
  const utc = (e: string, from: string, n: number) => take(parseCron(e, "UTC"), from, n);

  it("0 0 */2 * 1: odd-numbered days that are Mondays", () => {
    const runs = parseCron("0 0 */2 * 1", "UTC").take(ms("2026-01-01T00:00:00Z"), 30);
    expect(runs.map(iso).slice(0, 4)).toEqual(["2026-01-05T00:00:00.000Z", "2026-01-19T00:00:00.000Z", "2026-02-09T00:00:00.000Z", "2026-02-23T00:00:00.000Z"]);
    for (const t of runs) {
      const d = new Date(t);
      expect(d.getUTCDay()).toBe(1);
      expect(d.getUTCDate() % 2).toBe(1);
    }
  });

  it("0 0 1 * 1: the 1st and every Monday", () => {
    expect(utc("0 0 1 * 1", "2026-01-20T00:00:00Z", 5)).toEqual([
      "2026-01-26T00:00:00.000Z",
      "2026-02-01T00:00:00.000Z", // a Sunday, the 1st
      "2026-02-02T00:00:00.000Z",
      "2026-02-09T00:00:00.000Z",
      "2026-02-16T00:00:00.000Z",
    ]);
  });

  it("? and * day fields: 0 0 * * 1 = 0 0 ? * 1 = 0 0 ? * mon; 0 0 1 * ? = the 1st", () => {
    const mondays = ["2026-01-05T00:00:00.000Z", "2026-01-12T00:00:00.000Z", "2026-01-19T00:00:00.000Z"];
    expect(utc("0 0 * * 1", "2026-01-01T00:00:00Z", 3)).toEqual(mondays);
    expect(utc("0 0 ? * 1", "2026-01-01T00:00:00Z", 3)).toEqual(mondays);
    expect(utc("0 0 ? * MON", "2026-01-01T00:00:00Z", 3)).toEqual(mondays);
    expect(utc("0 0 1 * ?", "2026-01-01T00:00:00Z", 2)).toEqual(["2026-02-01T00:00:00.000Z", "2026-03-01T00:00:00.000Z"]);
    // */n in day-of-week is unrestricted too: with a restricted day-of-month both must match.
    expect(utc("0 0 1 * */6", "2026-01-01T00:00:00Z", 2)).toEqual(["2026-02-01T00:00:00.000Z", "2026-03-01T00:00:00.000Z"]);
  });

  it("L, 5L (last Friday), 1#2 (second Monday)", () => {
    expect(utc("0 0 L * *", "2026-01-01T00:00:00Z", 4)).toEqual([
      "2026-01-31T00:00:00.000Z",
      "2026-02-28T00:00:00.000Z",
      "2026-03-31T00:00:00.000Z",
      "2026-04-30T00:00:00.000Z",
    ]);
    expect(utc("0 0 L 2 *", "2027-03-01T00:00:00Z", 2)).toEqual(["2028-02-29T00:00:00.000Z", "2029-02-28T00:00:00.000Z"]);
    expect(utc("0 0 * * 5L", "2026-01-01T00:00:00Z", 3)).toEqual(["2026-01-30T00:00:00.000Z", "2026-02-27T00:00:00.000Z", "2026-03-27T00:00:00.000Z"]);
    expect(utc("0 0 * * 1#2", "2026-01-01T00:00:00Z", 3)).toEqual(["2026-01-12T00:00:00.000Z", "2026-02-09T00:00:00.000Z", "2026-03-09T00:00:00.000Z"]);
    expect(utc("0 0 * * fri#5", "2026-01-01T00:00:00Z", 2)).toEqual(["2026-01-30T00:00:00.000Z", "2026-05-29T00:00:00.000Z"]);
    // Both restricted: L or Mondays.
    expect(utc("0 0 L * 1", "2026-01-25T00:00:00Z", 2)).toEqual(["2026-01-26T00:00:00.000Z", "2026-01-31T00:00:00.000Z"]);
  });

  it("names, ranges, lists, steps; 7 and 0 are Sunday", () => {
    expect(utc("0 9 * jan mon-fri", "2026-01-01T00:00:00Z", 4)).toEqual([
      "2026-01-01T09:00:00.000Z",
      "2026-01-02T09:00:00.000Z",
      "2026-01-05T09:00:00.000Z",
      "2026-01-06T09:00:00.000Z",
    ]);
    expect(utc("0 9 * JAN MON-FRI", "2027-01-29T10:00:00Z", 1)).toEqual(["2028-01-03T09:00:00.000Z"]);
    const sundays = ["2026-01-04T00:00:00.000Z", "2026-01-11T00:00:00.000Z"];
    expect(utc("0 0 * * 7", "2026-01-01T00:00:00Z", 2)).toEqual(sundays);
    expect(utc("0 0 * * 0", "2026-01-01T00:00:00Z", 2)).toEqual(sundays);
    expect(utc("0 0 * * sun", "2026-01-01T00:00:00Z", 2)).toEqual(sundays);
    expect(utc("0 0 * * 5-7", "2026-01-01T00:00:00Z", 4)).toEqual([
      "2026-01-02T00:00:00.000Z",
      "2026-01-03T00:00:00.000Z",
      "2026-01-04T00:00:00.000Z",
      "2026-01-09T00:00:00.000Z",
    ]);
    expect(utc("5,10-20/5,50/5 3 * * *", "2026-01-01T00:00:00Z", 6)).toEqual([
      "2026-01-01T03:05:00.000Z",
      "2026-01-01T03:10:00.000Z",
      "2026-01-01T03:15:00.000Z",
      "2026-01-01T03:20:00.000Z",
      "2026-01-01T03:50:00.000Z",
      "2026-01-01T03:55:00.000Z",
    ]);
  });

  it("0 0 1 * * runs once a month: 12 runs in 12 months", () => {
    const s = parseCron("0 0 1 * *", "Asia/Kolkata");
    const runs = between(s, "2025-12-31T18:30:00Z", "2026-12-31T18:30:00Z");
    expect(runs).toHaveLength(12);
    expect(runs[0]).toBe("2025-12-31T18:30:00.000Z"); // 2026-01-01 00:00 +05:30
    expect(runs[11]).toBe("2026-11-30T18:30:00.000Z");
  });

  it("rare but possible days are found; zone '' is UTC", () => {
    // A fifth Friday in February: only when Feb 29 is a Friday.
    expect(utc("0 0 * 2 5#5", "2026-01-01T00:00:00Z", 2)).toEqual(["2036-02-29T00:00:00.000Z", "2064-02-29T00:00:00.000Z"]);
    const s = parseCron(" 0 0 1 1 * ", "");
    expect(s.zone).toBe("UTC");
    expect(s.expression).toBe("0 0 1 1 *");
    expect(take(s, "2026-06-01T00:00:00Z", 1)).toEqual(["2027-01-01T00:00:00.000Z"]);
  });
});

describe("parseCron rejections (INVALID_ARGUMENT naming the field)", () => {
  const rejects = (expr: string, zone: string, field: "cron" | "zone", message: RegExp) => {
    let err: unknown;
    try {
      parseCron(expr, zone);
    } catch (e) {
      err = e;
    }
    expect(err, `${expr} [${zone}]`).toBeInstanceOf(ChronologError);
    const ce = err as ChronologError;
    expect(ce.kind).toBe("bad_request");
    expect(ce.code).toBe(3); // Code.InvalidArgument
    expect(ce.message).toMatch(message);
    expect(ce.violations).toEqual([{ field, description: ce.message }]);
  };

  it.each([
    [
      "* * * * * *",
      /has 6 fields \("\*" "\*" "\*" "\*" "\*" "\*"\); expected 5: minute hour day-of-month month day-of-week \(seconds and year fields are not supported\)$/,
    ],
    ["0 9 * * 1 2026", /^cron expression "0 9 \* \* 1 2026" has 6 fields \("0" "9" "\*" "\*" "1" "2026"\); expected 5: minute hour/],
    ["0 0 0 * * * 2026", /has 7 fields \(.*\); expected 5: .*seconds and year/],
    ["* * * *", /has 4 fields \("\*" "\*" "\*" "\*"\); expected 5/],
    ["61 * * * *", /^cron field 1 \(minute\) "61" is out of range 0-59$/],
    ["* 24 * * *", /^cron field 2 \(hour\) "24" is out of range 0-23$/],
    ["* 1,25 * * *", /^cron field 2 \(hour\) "25" is out of range 0-23$/],
    ["* * 0 * *", /^cron field 3 \(day-of-month\) "0" is out of range 1-31$/],
    ["* * * 13 *", /^cron field 4 \(month\) "13" is out of range 1-12$/],
    ["* * * * 8", /^cron field 5 \(day-of-week\) "8" is out of range 0-7$/],
    ["garbage", /"garbage" has 1 field \("garbage"\); expected 5/],
    ["@daily", /macros like "@daily" are not supported/],
    ["", /has 0 fields/],
    ["a b c d e", /cron field 1 \(minute\) "a" is not a number/],
    ["0 0 * foo *", /cron field 4 \(month\) "foo" is not a number or name/],
    ["*/0 * * * *", /cron field 1 \(minute\) "\*\/0": the step/],
    ["5-1 * * * *", /cron field 1 \(minute\) range "5-1" runs backwards/],
    ["1,,2 * * * *", /cron field 1 \(minute\) "1,,2" has an empty list item/],
    ["? * * * *", /cron field 1 \(minute\) "\?" is only allowed in day-of-month and day-of-week/],
    ["0 0 L * L", /cron field 5 \(day-of-week\) "L" is not a number or name/],
    ["0 0 * * 5#6", /cron field 5 \(day-of-week\) "5#6": the occurrence after # must be 1-5/],
    ["0 0 15W * *", /cron field 3 \(day-of-month\) "15W" is not a number/],
    ["0 0 30 2 *", /never runs/],
    ["0 0 31 4,6,9,11 *", /never runs/],
    ["0 0 */20 * 5#5", /never runs/],
  ])("%j", (expr, message) => rejects(expr, "UTC", "cron", message));

  it("unknown zone", () => {
    rejects("0 0 * * *", "Mars/Olympus", "zone", /^zone "Mars\/Olympus" is not an IANA time zone/);
    rejects("0 0 * * *", "+01:00", "zone", /is not an IANA time zone/);
  });

  it("accepts UTC and real IANA names", () => {
    for (const z of ["UTC", "Etc/UTC", "Europe/Berlin", "Antarctica/Troll", "Australia/Lord_Howe", "Asia/Kolkata"]) {
      expect(parseCron("0 0 * * *", z).zone).toBe(z);
    }
  });

  it("next/take check their arguments", () => {
    const s = parseCron("0 0 * * *", "UTC");
    expect(() => s.next(Number.NaN)).toThrow(ChronologError);
    expect(() => s.take(0, -1)).toThrow(/count/);
    expect(s.take(0, 0)).toEqual([]);
  });
});

// ---- independent checks ----

/** Wall-clock fields of a local time, from luxon. */
interface Wall {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  /** 0 = Sunday … 6 = Saturday */
  weekday: number;
  daysInMonth: number;
}

const wallOf = (dt: DateTime): Wall => ({
  year: dt.year,
  month: dt.month,
  day: dt.day,
  hour: dt.hour,
  minute: dt.minute,
  weekday: dt.weekday % 7,
  daysInMonth: dt.daysInMonth!,
});

interface Case {
  expr: string;
  zone: string;
  /** Hand-written matcher for the expression's wall-clock fields (not the module's parser). */
  matches: (w: Wall) => boolean;
  /** Hour field is `*` or `*\/n`. */
  wildHour: boolean;
}

const daily = (minutes: number[], hours: number[] | "*" | number, zone: string, expr: string): Case => ({
  expr,
  zone,
  wildHour: typeof hours !== "object",
  matches: (w) => minutes.includes(w.minute) && (hours === "*" ? true : typeof hours === "number" ? w.hour % hours === 0 : hours.includes(w.hour)),
});

/** Local dates (UTC-midnight ms of the date) on which `zone` changes offset in [from, to). */
function transitionDates(zone: string, fromIso: string, toIso: string): string[] {
  const out: string[] = [];
  let prev = DateTime.fromMillis(ms(fromIso), { zone }).offset;
  for (let t = ms(fromIso); t < ms(toIso); t += 15 * 60_000) {
    const dt = DateTime.fromMillis(t, { zone });
    if (dt.offset !== prev) {
      out.push(dt.toISODate()!);
      prev = dt.offset;
    }
  }
  return out;
}

/** One real minute of a local day: its instant, wall time and whether it is the first copy. */
interface Minute {
  t: number;
  wall: Wall;
  first: boolean;
}

/**
 * The local dates [date-1, date+1] in `zone`, minute by minute with luxon: every real minute
 * (in instant order), and every wall time that never happens with luxon's forward shift.
 */
function scanDays(zone: string, date: string): { from: number; to: number; real: Minute[]; gaps: { t: number; wall: Wall }[] } {
  const mid = DateTime.fromISO(`${date}T12:00:00`, { zone });
  const days = [mid.minus({ days: 1 }), mid, mid.plus({ days: 1 })].map((d) => d.toISODate()!);
  const from = mid.minus({ days: 1 }).startOf("day").toMillis();
  const to = mid.plus({ days: 2 }).startOf("day").toMillis();
  const seen = new Set<string>();
  const real: Minute[] = [];
  for (let t = from - 3 * 3_600_000; t < to + 3 * 3_600_000; t += 60_000) {
    const dt = DateTime.fromMillis(t, { zone });
    if (!days.includes(dt.toISODate()!)) continue;
    const key = dt.toFormat("yyyy-MM-dd HH:mm");
    real.push({ t, wall: wallOf(dt), first: !seen.has(key) });
    seen.add(key);
  }
  const gaps: { t: number; wall: Wall }[] = [];
  for (const d of days) {
    const noon = DateTime.fromISO(`${d}T12:00:00`, { zone });
    for (let h = 0; h < 24; h++) {
      for (let m = 0; m < 60; m++) {
        const key = `${d} ${String(h).padStart(2, "0")}:${String(m).padStart(2, "0")}`;
        if (seen.has(key)) continue;
        const wall = { ...wallOf(noon), hour: h, minute: m };
        const t = DateTime.fromObject({ year: wall.year, month: wall.month, day: wall.day, hour: h, minute: m }, { zone }).toMillis();
        gaps.push({ t, wall });
      }
    }
  }
  return { from, to, real, gaps };
}

/**
 * applied by brute force: every real minute whose wall time matches; fixed hours keep the
 * first copy of each wall time and add luxon's forward shift for wall times that never
 * happen; wildcard hours keep every real instant and nothing else.
 */
function oracle(c: Case, scan: ReturnType<typeof scanDays>): string[] {
  const times = scan.real.filter((m) => c.matches(m.wall) && (c.wildHour || m.first)).map((m) => m.t);
  if (!c.wildHour) for (const g of scan.gaps) if (c.matches(g.wall)) times.push(g.t);
  return [...new Set(times)]
    .sort((a, b) => a - b)
    .filter((t) => t >= scan.from && t < scan.to)
    .map(iso);
}

describe("against a brute-force oracle around every DST transition (2026-2027; St_Johns 2010)", () => {
  // [zone, from, to, transitions expected]. St_Johns changed at 00:01 local until 2011: its
  // repeated stretch (23:01-00:00) crosses midnight, so a day's last fire time can come after
  // the next day's first.
  const zones: [string, string, string, number][] = [
    ["Europe/Berlin", "2026-01-01T00:00:00Z", "2028-01-01T00:00:00Z", 4],
    ["America/Chicago", "2026-01-01T00:00:00Z", "2028-01-01T00:00:00Z", 4],
    ["Antarctica/Troll", "2026-01-01T00:00:00Z", "2028-01-01T00:00:00Z", 4],
    ["Australia/Lord_Howe", "2026-01-01T00:00:00Z", "2028-01-01T00:00:00Z", 4],
    ["America/Santiago", "2026-01-01T00:00:00Z", "2028-01-01T00:00:00Z", 4],
    ["America/St_Johns", "2010-01-01T00:00:00Z", "2011-01-01T00:00:00Z", 2],
  ];
  const shapes: [string, number[], number[] | "*" | number][] = [
    ["30 2 * * *", [30], [2]],
    ["0 2 * * *", [0], [2]],
    ["*/30 2 * * *", [0, 30], [2]],
    ["* 2 * * *", Array.from({ length: 60 }, (_, i) => i), [2]],
    ["30 1 * * *", [30], [1]],
    ["15,45 0-3 * * *", [15, 45], [0, 1, 2, 3]],
    ["30 23 * * *", [30], [23]],
    ["0 * * * *", [0], "*"],
    ["*/15 * * * *", [0, 15, 30, 45], "*"],
    ["0 */2 * * *", [0], 2],
    ["0,1 * * * *", [0, 1], "*"],
    ["0,1 0,23 * * *", [0, 1], [0, 23]],
  ];
  for (const [zone, from, to, count] of zones) {
    const dates = transitionDates(zone, from, to);
    it(`${zone}: ${dates.join(", ")}`, () => {
      expect(dates).toHaveLength(count);
      for (const date of dates) {
        const scan = scanDays(zone, date);
        for (const [expr, minutes, hours] of shapes) {
          const s = parseCron(expr, zone);
          const got: string[] = [];
          for (let t = s.next(scan.from - 1); t < scan.to; t = s.next(t)) got.push(iso(t));
          const want = oracle(daily(minutes, hours, zone, expr), scan);
          expect(got, `${expr} ${zone} around ${date}`).toEqual(want);
          const back: string[] = [];
          for (let t = s.prev(scan.to); t >= scan.from; t = s.prev(t)) back.push(iso(t));
          expect(back.reverse(), `prev: ${expr} ${zone} around ${date}`).toEqual(want);
        }
      }
    });
  }
});

describe("long walks: 2,000 next() calls", () => {
  const dayRule = (dom: (w: Wall) => boolean, dow: (w: Wall) => boolean, vixieAnd: boolean) => (w: Wall) => (vixieAnd ? dom(w) && dow(w) : dom(w) || dow(w));
  const walks: (Case & { from: string; perDay?: number })[] = [
    { ...daily([0], "*", "Europe/Berlin", "0 * * * *"), from: "2026-03-01T00:00:00Z" },
    { ...daily([0], "*", "Europe/Berlin", "0 * * * *"), from: "2026-10-01T00:00:00Z" },
    { ...daily([0, 30], [2], "Europe/Berlin", "*/30 2 * * *"), from: "2026-01-01T00:00:00Z", perDay: 2 },
    { ...daily([30], [1], "Antarctica/Troll", "30 1 * * *"), from: "2026-01-01T00:00:00Z", perDay: 1 },
    { ...daily([15], [2], "Australia/Lord_Howe", "15 2 * * *"), from: "2026-01-01T00:00:00Z", perDay: 1 },
    { ...daily([30], "*", "Australia/Lord_Howe", "30 * * * *"), from: "2026-03-20T00:00:00Z" },
    { ...daily([0, 7, 14, 21, 28, 35, 42, 49, 56], "*", "Asia/Kolkata", "*/7 * * * *"), from: "2026-01-01T00:00:00Z" },
    { ...daily([30], [2], "America/Chicago", "30 2 * * *"), from: "2026-01-01T00:00:00Z", perDay: 1 },
    {
      expr: "0 8 * * 0",
      zone: "America/Chicago",
      wildHour: false,
      matches: (w) => w.minute === 0 && w.hour === 8 && w.weekday === 0,
      from: "2026-01-01T00:00:00Z",
    },
    {
      expr: "45 2 * * 1-5",
      zone: "Europe/Berlin",
      wildHour: false,
      matches: (w) => w.minute === 45 && w.hour === 2 && w.weekday >= 1 && w.weekday <= 5,
      from: "2026-01-01T00:00:00Z",
    },
    {
      expr: "0 0 */2 * 1",
      zone: "Europe/Berlin",
      wildHour: false,
      matches: (w) =>
        w.minute === 0 &&
        w.hour === 0 &&
        dayRule(
          (x) => x.day % 2 === 1,
          (x) => x.weekday === 1,
          true,
        )(w),
      from: "2026-01-01T00:00:00Z",
    },
    {
      expr: "0 12 1,L * 5L",
      zone: "Australia/Lord_Howe",
      wildHour: false,
      matches: (w) =>
        w.minute === 0 &&
        w.hour === 12 &&
        dayRule(
          (x) => x.day === 1 || x.day === x.daysInMonth,
          (x) => x.weekday === 5 && x.day + 7 > x.daysInMonth,
          false,
        )(w),
      from: "2026-01-01T00:00:00Z",
    },
    {
      expr: "30 9 * jan,jul mon#2,fri",
      zone: "Asia/Kolkata",
      wildHour: false,
      matches: (w) =>
        w.minute === 30 && w.hour === 9 && (w.month === 1 || w.month === 7) && ((w.weekday === 1 && Math.ceil(w.day / 7) === 2) || w.weekday === 5),
      from: "2026-01-01T00:00:00Z",
    },
  ];

  for (const c of walks) {
    it(`${c.expr} ${c.zone} from ${c.from}`, () => {
      const s = parseCron(c.expr, c.zone);
      const runs: number[] = [];
      let t = ms(c.from);
      for (let i = 0; i < 2000; i++) {
        const n = s.next(t);
        expect(n, `after ${iso(t)}`).toBeGreaterThan(t);
        runs.push(n);
        t = n;
      }
      const perDate = new Map<string, number>();
      for (const r of runs) {
        const dt = DateTime.fromMillis(r, { zone: c.zone });
        if (!c.matches(wallOf(dt))) {
          // Must be a fixed wall time shifted out of a gap: read it back by the gap's length.
          expect(c.wildHour, `${iso(r)} (${dt.toISO()}) does not match`).toBe(false);
          const before = DateTime.fromMillis(r - 86_400_000, { zone: c.zone }).offset;
          const gapMinutes = dt.offset - before;
          expect(gapMinutes, `${iso(r)} is not after a gap`).toBeGreaterThan(0);
          // The wall time it stands for: its own wall time minus the gap (same date here).
          const wallMinute = dt.hour * 60 + dt.minute - gapMinutes;
          expect(wallMinute, `${iso(r)}: shifted across midnight`).toBeGreaterThanOrEqual(0);
          const wall = { ...wallOf(dt), hour: Math.floor(wallMinute / 60), minute: wallMinute % 60 };
          expect(c.matches(wall), `${iso(r)} (${dt.toISO()}) is not a shifted match`).toBe(true);
          const attempt = DateTime.fromObject({ year: wall.year, month: wall.month, day: wall.day, hour: wall.hour, minute: wall.minute }, { zone: c.zone });
          expect(attempt.hour * 60 + attempt.minute, `${iso(r)}: wall time exists`).not.toBe(wall.hour * 60 + wall.minute);
        }
        const date = dt.toISODate()!;
        perDate.set(date, (perDate.get(date) ?? 0) + 1);
      }
      if (c.perDay !== undefined) {
        // No local day missing or doubled.
        const first = DateTime.fromMillis(runs[0]!, { zone: c.zone }).startOf("day");
        const last = DateTime.fromMillis(runs[runs.length - 1]!, { zone: c.zone }).startOf("day");
        for (let d = first; d <= last; d = d.plus({ days: 1 })) {
          expect(perDate.get(d.toISODate()!) ?? 0, d.toISODate()!).toBe(c.perDay);
        }
      }
      // prev() walks the same instants backwards.
      for (let i = runs.length - 1; i > 0; i--) {
        if (s.prev(runs[i]!) !== runs[i - 1]) expect(iso(s.prev(runs[i]!)), `prev(${iso(runs[i]!)})`).toBe(iso(runs[i - 1]!));
      }
    });
  }
});
