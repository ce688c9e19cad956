// Moments as text: the CLI's flags and the API's JSON take RFC 3339 times and refuse a day
// the month does not have, hour 24 and (on the command line) a time without an offset, instead of
// moving them as JavaScript's Date.parse does (2027-02-30 would become 2027-03-02).

import { fromJson } from "@bufbuild/protobuf";
import { timestampMs, TimestampSchema } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { parseMoment } from "../server/src/cli/parse.js";

const refusedOnTheCommandLine = [
  "2027-02-30T00:00:00Z",
  "2027-02-29T12:00:00Z",
  "2027-04-31T00:00:00Z",
  "2027-01-01T24:00:00Z",
  "2027-03-01T00:00:00",
  "yesterday",
  "2027-03-01",
];

describe("parseMoment (the CLI's --at, --start, --end)", () => {
  it("takes RFC 3339 times with Z or an offset, to the ms", () => {
    expect(parseMoment("2028-02-29T23:59:59Z", "--at").toISOString()).toBe("2028-02-29T23:59:59.000Z");
    expect(parseMoment("2026-03-29T03:30:00+02:00", "--at").toISOString()).toBe("2026-03-29T01:30:00.000Z");
    expect(parseMoment("2026-12-01T00:00:00.123456789Z", "--at").toISOString()).toBe("2026-12-01T00:00:00.123Z");
  });

  it.each(refusedOnTheCommandLine)("refuses %s, naming the flag", (text) => {
    expect(() => parseMoment(text, "--start")).toThrow(/^--start must be an RFC 3339 time with its offset/);
  });
});

describe("google.protobuf.Timestamp from JSON (Connect JSON requests, manifests)", () => {
  it("refuses a day the month does not have and hour 24", () => {
    for (const text of ["2027-02-30T00:00:00Z", "2027-02-29T00:00:00Z", "2027-06-31T00:00:00Z", "2100-02-29T00:00:00Z", "2027-01-01T24:00:00Z"]) {
      expect(() => fromJson(TimestampSchema, text), text).toThrow(/invalid RFC 3339 string/);
    }
  });

  it("takes the last day of every month, leap days of leap years included", () => {
    expect(timestampMs(fromJson(TimestampSchema, "2028-02-29T00:00:00Z"))).toBe(Date.UTC(2028, 1, 29));
    expect(timestampMs(fromJson(TimestampSchema, "2000-02-29T00:00:00Z"))).toBe(Date.UTC(2000, 1, 29));
    for (let month = 1; month <= 12; month++) {
      const last = new Date(Date.UTC(2027, month, 0)).getUTCDate();
      const text = `2027-${String(month).padStart(2, "0")}-${last}T23:59:59+01:00`;
      expect(timestampMs(fromJson(TimestampSchema, text)), text).toBe(Date.UTC(2027, month - 1, last, 22, 59, 59));
    }
  });
});
