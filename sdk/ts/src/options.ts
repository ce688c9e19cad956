// Checks of the TypeScript client's options, made before anything is sent: each turns a value
// into what its request field takes, or throws a ConnectError INVALID_ARGUMENT naming the
// option and showing the value (`intervalMs must be a non-negative integer number of ms (got -1)`).

import { timestampFromMs, type Timestamp } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";

/** INVALID_ARGUMENT for a request the client refuses before sending anything (the code the owner gives a bad request). */
export function invalid(message: string): ConnectError {
  return new ConnectError(message, Code.InvalidArgument);
}

/** `value` as a refusal shows it: `-1`, `NaN`, `"sometimes"`, `10n`, `an invalid Date`. */
export function shown(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "bigint") return `${value}n`;
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? "an invalid Date" : value.toISOString();
  if (Array.isArray(value)) return "an array";
  if (value !== null && typeof value === "object") return "an object";
  if (typeof value === "function") return "a function";
  return String(value);
}

/** `["a", "b", "c"]` as `"a", "b" or "c"`. */
function listed(names: string[]): string {
  const quoted = names.map((n) => JSON.stringify(n));
  return quoted.length < 2 ? quoted.join("") : `${quoted.slice(0, -1).join(", ")} or ${quoted[quoted.length - 1]}`;
}

const MAX_UINT32 = 4_294_967_295;
const MAX_UINT64 = 18_446_744_073_709_551_615n;
/** The most ms from the epoch a Date holds (either way); the owner names moments outside years 1-9999 itself. */
const MAX_DATE_MS = 8.64e15;
/** The longest deadline gRPC's `grpc-timeout` header can carry (8 digits of ms). */
const MAX_TIMEOUT_MS = 99_999_999;

/** A uint64 count: INVALID_ARGUMENT `<name> must be a non-negative integer[ number of <unit>] (got <value>)` unless `value` is a non-negative safe integer. */
export function countOf(value: unknown, name: string, unit = ""): bigint {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0)
    throw invalid(`${name} must be a non-negative integer${unit && ` number of ${unit}`} (got ${shown(value)})`);
  return BigInt(value);
}

/** A uint64 field in ms: {@link countOf} with its unit. */
export function msOf(value: unknown, name: string): bigint {
  return countOf(value, name, "ms");
}

/** A uint32 field: INVALID_ARGUMENT `<name> must be an integer from 0 to 4294967295 (got <value>)` otherwise. */
export function uint32Of(value: unknown, name: string): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0 || value > MAX_UINT32)
    throw invalid(`${name} must be an integer from 0 to ${MAX_UINT32} (got ${shown(value)})`);
  return value;
}

/** A seq (uint64), a number or a bigint: INVALID_ARGUMENT `<name> must be a non-negative integer (a number or a bigint) (got <value>)` otherwise. */
export function seqOf(value: unknown, name: string): bigint {
  if (typeof value === "bigint" && value >= 0n && value <= MAX_UINT64) return value;
  if (typeof value === "number" && Number.isSafeInteger(value) && value >= 0) return BigInt(value);
  throw invalid(`${name} must be a non-negative integer (a number or a bigint) (got ${shown(value)})`);
}

/** A call's deadline: INVALID_ARGUMENT unless a positive integer number of ms that gRPC can carry. */
export function timeoutOf(value: unknown): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1 || value > MAX_TIMEOUT_MS)
    throw invalid(`timeoutMs must be a positive integer number of ms, at most ${MAX_TIMEOUT_MS} (got ${shown(value)})`);
  return value;
}

/**
 * A moment (a Date or ms since the epoch) as a Timestamp, in whole ms: Timestamp.nanos is an
 * int32, so a fractional ms (e.g. from `performance` or arithmetic) is rounded, not sent as a
 * fraction. INVALID_ARGUMENT naming `name` for an invalid Date, a non-finite number or one
 * beyond a Date's range (±8.64e15 ms), or anything else. (Moments a Date holds but outside
 * years 1-9999 are the owner's to refuse: INVALID_ARGUMENT naming the field.)
 */
export function momentOf(at: unknown, name: string): Timestamp {
  const ms = typeof at === "number" ? Math.round(at) : at instanceof Date ? at.getTime() : NaN;
  if (!(Math.abs(ms) <= MAX_DATE_MS))
    throw invalid(`${name} must be a valid Date or a number of ms since the epoch within the range of a Date (got ${shown(at)})`);
  return timestampFromMs(ms);
}

/** `choices[value]`: INVALID_ARGUMENT `<name> must be "a", "b" or "c" (got <value>)` unless `value` is one of its keys. */
export function choiceOf<T>(value: unknown, name: string, choices: Record<string, T>): T {
  if (typeof value === "string" && Object.hasOwn(choices, value)) return choices[value];
  throw invalid(`${name} must be ${listed(Object.keys(choices))} (got ${shown(value)})`);
}

/** Which one of `keys` the object `when` has: INVALID_ARGUMENT unless exactly one. */
export function whenKeyOf<K extends string>(when: unknown, keys: K[]): K {
  const given = when !== null && typeof when === "object" ? keys.filter((k) => k in when) : [];
  if (given.length !== 1)
    throw invalid(
      `when must have exactly one of ${listed(keys)} (got ${given.length > 1 ? given.join(", ") : when !== null && typeof when === "object" ? "none" : shown(when)})`,
    );
  return given[0];
}

/** A cause as sent: INVALID_ARGUMENT unless an object whose `position` is a uint32. */
export function causeOf(cause: { eventId: string; position: number } | undefined): { eventId: string; position: number } | undefined {
  if (cause === undefined) return undefined;
  if (cause === null || typeof cause !== "object") throw invalid(`cause must be { eventId, position } (got ${shown(cause)})`);
  uint32Of(cause.position, "cause.position");
  return cause;
}

/** A boolean option: INVALID_ARGUMENT `<name> must be true or false (got <value>)` otherwise. */
export function boolOf(value: unknown, name: string): boolean {
  if (typeof value !== "boolean") throw invalid(`${name} must be true or false (got ${shown(value)})`);
  return value;
}

/** True for an http:// or https:// URL (an owner's). */
export function isHttpUrl(url: string): boolean {
  return URL.canParse(url) && /^https?:$/.test(new URL(url).protocol);
}

/** A string option: INVALID_ARGUMENT `<name> must be a string (got <value>)` otherwise. */
export function stringOf(value: unknown, name: string): string {
  if (typeof value !== "string") throw invalid(`${name} must be a string (got ${shown(value)})`);
  return value;
}
