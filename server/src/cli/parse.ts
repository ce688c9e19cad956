import { InvalidArgumentError } from "commander";

/**
 * Checks of command-line values (O1), made before any request so a bad value gets a usage
 * message instead of an error from encoding or from the owner. Functions named `…Option` are
 * commander argParsers: commander prints `error: option '--seq <n>' argument 'x' is invalid.
 * <message>` and exits with status 1.
 */

/** The largest seq the owner takes (2^53-1: seqs are JavaScript numbers in the owner). */
export const maxSeq = Number.MAX_SAFE_INTEGER;

/** A whole number from `min` to `max` (decimal digits only), or an Error naming `what`. */
export function wholeNumber(value: string, what: string, min: number, max: number): number {
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) throw new Error(`${what} must be a whole number from ${min} to ${max}, got ${JSON.stringify(value)}`);
  return Number(value);
}

/** An argParser for a whole number from `min` to `max`. */
export function wholeNumberOption(min: number, max: number): (value: string) => number {
  return (value) => {
    if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) throw new InvalidArgumentError(`must be a whole number from ${min} to ${max}`);
    return Number(value);
  };
}

/** An argParser for a seq (0 to 2^53-1). */
export const seqOption = wholeNumberOption(0, maxSeq);

/** An argParser for a number of milliseconds (0 to 2^53-1; the owner checks each field's own range). */
export const msOption = wholeNumberOption(0, Number.MAX_SAFE_INTEGER);

/** A moment given on the command line: an ISO-8601 time (e.g. `2026-03-01T00:00:00Z`), or an Error naming `flag`. */
export function parseMoment(text: string, flag: string): Date {
  const d = new Date(text);
  if (Number.isNaN(d.getTime())) throw new Error(`${flag} must be an ISO-8601 time such as 2026-03-01T00:00:00Z, got ${JSON.stringify(text)}`);
  return d;
}
