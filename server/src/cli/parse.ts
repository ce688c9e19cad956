import { InvalidArgumentError } from "commander";
import { DateTime } from "luxon";

/**
 * Checks of command-line values, made before any request so a bad value gets a usage
 * message instead of an error from encoding or from the owner. Functions named `…Option` are
 * commander argParsers: commander prints `error: option '--seq <n>' argument 'x' is invalid.
 * <message>` and exits with status 1.
 */

/** The largest seq the owner takes (2^53-1: seqs are JavaScript numbers in the owner). */
export const maxSeq = Number.MAX_SAFE_INTEGER;

/** A whole number from `min` to `max` (decimal digits only), or an Error naming `what`. */
export function wholeNumber(value: string, what: string, min: number, max: number): number {
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max)
    throw new Error(`${what} must be a whole number from ${min} to ${max}, got ${JSON.stringify(value)}`);
  return Number(value);
}

/** An argParser for a whole number from `min` to `max`. */
export function wholeNumberOption(min: number, max: number): (value: string) => number {
  return (value) => {
    if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) throw new InvalidArgumentError(`must be a whole number from ${min} to ${max}`);
    return Number(value);
  };
}

/** An argParser for an id flag: refuses the empty string, which would otherwise mean "no id" (a fresh one each time, so a retry would not be idempotent). */
export function idOption(value: string): string {
  if (value === "") throw new InvalidArgumentError("must not be empty (leave the flag out for an id the owner makes)");
  return value;
}

/** An argParser for a seq (0 to 2^53-1). */
export const seqOption = wholeNumberOption(0, maxSeq);

/** An argParser for a number of milliseconds (0 to 2^53-1; the owner checks each field's own range). */
export const msOption = wholeNumberOption(0, Number.MAX_SAFE_INTEGER);

/** RFC 3339's date-time: a date, a time of day from 00:00:00 to 23:59:59 with optional fraction, and `Z` or an offset. */
const rfc3339 = /^\d{4}-\d{2}-\d{2}T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/i;

/**
 * A moment given on the command line: an RFC 3339 time with its offset (e.g. `2026-03-01T00:00:00Z`,
 * `2026-03-01T09:00:00+01:00`), as the API's JSON takes it; precision ms (finer digits are dropped).
 * Throws an Error naming `flag` for anything else, a day the month does not have included
 * (`2027-02-30`: not moved to March) and a time without an offset (not read as local time).
 */
export function parseMoment(text: string, flag: string): Date {
  const moment = rfc3339.test(text) ? DateTime.fromISO(text, { setZone: true }) : null;
  if (!moment?.isValid)
    throw new Error(
      `${flag} must be an RFC 3339 time with its offset such as 2026-03-01T00:00:00Z, got ${JSON.stringify(text)}${moment ? " (no such date)" : ""}`,
    );
  return moment.toJSDate();
}

/**
 * An argParser for a repeatable `--cancel-on TYPE[:EVENT-PATH=INPUT-PATH,...]` (e.g.
 * `order.paid:data.order_id=input.order_id`): the entries given so far plus this one.
 */
export function cancelOnOption(value: string, previous: { type: string; match: Record<string, string> }[] = []) {
  const [type, pairs = ""] = value.split(/:(.*)/s, 2);
  if (type === "") throw new InvalidArgumentError("must be TYPE or TYPE:data.path=input.path[,...]");
  const match: Record<string, string> = {};
  for (const pair of pairs === "" ? [] : pairs.split(",")) {
    const [from, to] = pair.split("=");
    if (!from || !to) throw new InvalidArgumentError(`${JSON.stringify(pair)} must be data.path=input.path`);
    match[from] = to;
  }
  return [...previous, { type, match }];
}

/** An argParser for `--expected-version`: `no_stream`, `any` or a stream position. */
export function expectedVersionOption(value: string): "noStream" | "any" | number {
  if (value === "no_stream") return "noStream";
  if (value === "any") return "any";
  if (/^\d+$/.test(value) && Number(value) <= maxSeq) return Number(value);
  throw new InvalidArgumentError("must be no_stream, any or a stream position");
}
