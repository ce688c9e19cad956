import type { JsonObject } from "@bufbuild/protobuf";
import type { Actor, Cause } from "@chronolog/sdk/gen/chronolog/v1/event_pb";
import { fail } from "../errors.js";
import { checkJson } from "../json-limits.js";
import type { CauseRef } from "../log/causes.js";
import type { ActorRecord } from "../store/events.js";
import { rememberJsonText } from "../store/json-text.js";

/**
 * Translations of requests' protobuf values into the owner's checked domain values;
 * the values the domain builds for the executor protocol too are in proto-values.ts.
 */

/** The asserted actor fields of a request (undefined when none). */
export function actorFromProto(actor: Actor | undefined): Partial<ActorRecord> | undefined {
  if (!actor) return undefined;
  return { id: actor.id, for: actor.for, in: actor.in, via: actor.via };
}

/** A request's cause, or null when absent or empty. */
export function causeFromProto(cause: Cause | undefined): CauseRef | null {
  if (!cause || cause.eventId === "") return null;
  return { eventId: cause.eventId, position: cause.position };
}

/** A uint64 seq as a JS number; INVALID_ARGUMENT beyond 2^53. */
export function seqFromProto(seq: bigint, field: string): number {
  if (seq > BigInt(Number.MAX_SAFE_INTEGER)) fail("bad_request", `${field} is too large`, [{ field, description: "at most 2^53-1" }]);
  return Number(seq);
}

/** A page size: `fallback` when 0, INVALID_ARGUMENT above `max`. */
export function pageSizeFromProto(size: number, fallback: number, max: number): number {
  if (size === 0) return fallback;
  if (size > max) fail("bad_request", `page_size must be at most ${max}`, [{ field: "page_size", description: `at most ${max}` }]);
  return size;
}

/** A JSON object field that may be absent. */
export function objectFromProto(value: JsonObject | undefined): Record<string, unknown> {
  return (value ?? {}) as Record<string, unknown>;
}

/**
 * A JSON object field the owner keeps or passes on (event data, a document, an action's or
 * timer's input), absent as `{}`: INVALID_ARGUMENT naming `field` when nested deeper than
 * 32 levels (json-limits.ts).
 */
export function dataFromProto(value: JsonObject | undefined, field: string): Record<string, unknown> {
  const data = objectFromProto(value);
  checkJson(data, field);
  refuseLoneSurrogate(data, field); // a Struct sent as Connect's JSON can hold one; binary protobuf cannot
  return data;
}

/** INVALID_ARGUMENT when a string (key or value) in `data` holds a lone surrogate: it reads differently as UTF-8 and as JSON text. */
function refuseLoneSurrogate(data: Record<string, unknown>, dataField: string): void {
  const at = loneSurrogateAt(data);
  if (!at) return;
  const pointer = [dataField, ...at].join("/");
  fail("bad_request", `${dataField} holds a string with a lone surrogate (at ${pointer}): it cannot be sent as UTF-8`, [
    { field: pointer, description: "a lone surrogate" },
  ]);
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Event data sent as JSON text (EmitRequest.data_json), checked once here as the Struct form is
 * (an object, at most 32 levels (json-limits.ts)) and further as text: UTF-8, JSON, no string with
 * a lone surrogate (`"\ud800"`: the Struct form, UTF-8 in protobuf, cannot carry one, so readers
 * of either form would see different data). INVALID_ARGUMENT otherwise, naming `field` (e.g.
 * `data_json`) for text that is not JSON and `dataField` (`data`, as for the Struct) for JSON that
 * is not acceptable data. The object's compact JSON text is kept with it (stored and sent on as it is).
 */
export function dataFromJson(bytes: Uint8Array, field: string, dataField: string): Record<string, unknown> {
  let text: string;
  let value: unknown;
  try {
    text = utf8.decode(bytes);
  } catch {
    fail("bad_request", `${field} is not UTF-8`, [{ field, description: "not UTF-8" }]);
  }
  try {
    value = JSON.parse(text);
  } catch (e) {
    fail("bad_request", `${field} is not JSON: ${(e as Error).message}`, [{ field, description: "not JSON" }]);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    fail("bad_request", `${dataField} must be a JSON object (got ${value === null ? "null" : Array.isArray(value) ? "an array" : typeof value})`, [
      { field: dataField, description: "not a JSON object" },
    ]);
  }
  const data = value as Record<string, unknown>;
  checkJson(data, dataField);
  // Only text with an escaped surrogate (\uD800-\uDFFF) can hold a lone one.
  if (/\\u[dD][89a-fA-F]/.test(text)) refuseLoneSurrogate(data, dataField);
  rememberJsonText(data, JSON.stringify(data));
  return data;
}

/** No lone surrogate in `s` (String.prototype.isWellFormed, which TypeScript's ES2022 library does not declare). */
const wellFormed = (s: string): boolean => !/\p{Surrogate}/u.test(s);

/** The keys leading to the first string (key or value) in `value` that is not well-formed UTF-16, or undefined. */
function loneSurrogateAt(value: unknown): string[] | undefined {
  if (typeof value === "string") return wellFormed(value) ? undefined : [];
  if (value === null || typeof value !== "object") return undefined;
  for (const [key, item] of Object.entries(value)) {
    if (!wellFormed(key)) return [key];
    const path = loneSurrogateAt(item);
    if (path) return [key, ...path];
  }
  return undefined;
}
