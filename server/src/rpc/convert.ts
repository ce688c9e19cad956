import { create, type JsonObject } from "@bufbuild/protobuf";
import { timestampFromMs, timestampMs, type Timestamp } from "@bufbuild/protobuf/wkt";
import { ActorSchema, EventSchema, type Actor, type Cause, type Event } from "../../../sdk/ts/src/gen/chronolog/v1/event_pb.js";
import { fail } from "../errors.js";
import type { CauseRef } from "../log/emit.js";
import { storedDataJson, type ActorRecord, type EventRecord } from "../store/events.js";
import { rememberJsonText } from "../store/json-text.js";

/**
 * Translations between protobuf messages and the owner's checked domain
 * values (STYLE 4). Only the rpc layer sees protobuf types.
 */

/**
 * A stored event as the API's Event; with `dataJson`, its data goes as the stored JSON text
 * (Event.data_json, no Struct built) for readers that asked for it.
 */
export function eventToProto(e: EventRecord, dataJson = false): Event {
  return create(EventSchema, {
    seq: BigInt(e.seq),
    id: e.id,
    type: e.type,
    ...(dataJson ? { dataJson: Buffer.from(storedDataJson(e)) } : { data: e.data as JsonObject }),
    cause: e.cause,
    actor: e.actor ? create(ActorSchema, e.actor) : undefined,
    at: timestampFromMs(e.at),
  });
}

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
 * The deepest JSON the owner takes in data it keeps or passes on: event data, collection
 * documents (a patch's paths count), action inputs and outputs, timer and delay inputs, the
 * Structs of plugin manifests. Levels are objects and arrays: `{}` and `{"a": 1}` are 1 level,
 * `{"a": [1]}` 2.
 *
 * Why 32: binary protobuf decoders (protobuf-es in the SDK and the owner, grpc-js, grpcurl,
 * Python) stop at 100 nested messages, and each JSON level is two (google.protobuf.Value plus
 * Struct or ListValue), so an Event's data decodes to 49 levels at most, a delivery's (in a
 * DeliveryBatch) to 48. The owner's own events hold such data a level or two deeper
 * (`action.completed`'s output, `<collection>.updated`'s doc, `timer.scheduled`'s input), and the
 * rest of the margin is for clients that wrap events in messages of their own. Connect JSON
 * requests decode to about 98 levels: without this limit one request could write an event that
 * no binary client can read (its every read and watch, and executors' streams, failing).
 */
export const maxJsonDepth = 32;

/**
 * Why `value` cannot be taken as JSON, or undefined when it can: "<field> is nested deeper than
 * 32 levels (at <JSON pointer of the first value past the limit>)" (see {@link maxJsonDepth}), or
 * "<field>/<pointer> is NaN, not a JSON number" for a number JSON cannot hold (a Struct's double may
 * be NaN or ±Infinity; stored as JSON it would become null). `above`: how many levels hold the
 * value where it is put (a patch's `set` path of k segments puts its value k levels down).
 */
export function jsonProblem(value: unknown, field: string, above = 0): string | undefined {
  const found = above > maxJsonDepth ? { path: [], number: undefined } : firstProblem(value, above + 1);
  if (!found) return undefined;
  let at = [field, ...found.path.map((key) => key.replaceAll("~", "~0").replaceAll("/", "~1"))].join("/");
  if (at.length > 200) at = `${at.slice(0, 200)}...`;
  if (found.number !== undefined) return `${at} is ${found.number}, not a JSON number`;
  return `${field} is nested deeper than ${maxJsonDepth} levels (at ${at}): binary gRPC clients could not read it back`;
}

/** INVALID_ARGUMENT naming `field` when `value` cannot be taken as JSON (see {@link jsonProblem}). */
export function checkJson(value: unknown, field: string, above = 0): void {
  const problem = jsonProblem(value, field, above);
  if (problem) fail("bad_request", problem, [{ field, description: problem.includes("deeper") ? `nested deeper than ${maxJsonDepth} levels` : "not a JSON number" }]);
}

/**
 * A JSON object field the owner keeps or passes on (event data, a document, an action's or
 * timer's input), absent as `{}`: INVALID_ARGUMENT naming `field` when nested deeper than
 * {@link maxJsonDepth} levels.
 */
export function dataFromProto(value: JsonObject | undefined, field: string): Record<string, unknown> {
  const data = objectFromProto(value);
  checkJson(data, field);
  return data;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Event data sent as JSON text (EmitRequest.data_json), checked once here as the Struct form is
 * (an object, at most {@link maxJsonDepth} levels) and further as text: UTF-8, JSON, no string with
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
    fail("bad_request", `${dataField} must be a JSON object (got ${value === null ? "null" : Array.isArray(value) ? "an array" : typeof value})`, [{ field: dataField, description: "not a JSON object" }]);
  }
  const data = value as Record<string, unknown>;
  checkJson(data, dataField);
  // Only text with an escaped surrogate (\uD800-\uDFFF) can hold a lone one.
  if (/\\u[dD][89a-fA-F]/.test(text)) {
    const at = loneSurrogateAt(data);
    if (at) {
      const pointer = [dataField, ...at].join("/");
      fail("bad_request", `${dataField} holds a string with a lone surrogate (at ${pointer}): it cannot be sent as UTF-8`, [{ field: pointer, description: "a lone surrogate" }]);
    }
  }
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

/**
 * The keys leading from `value` to its first object or array past {@link maxJsonDepth} (`number`
 * undefined), or to its first number that is not finite (`number` set: NaN, Infinity or
 * -Infinity), when `value` sits at `level`; undefined when there is none. Recursion stops at the
 * limit, so it is never deeper than it.
 */
function firstProblem(value: unknown, level: number): { path: string[]; number: string | undefined } | undefined {
  if (typeof value === "number") return Number.isFinite(value) ? undefined : { path: [], number: String(value) };
  if (value === null || typeof value !== "object") return undefined;
  if (level > maxJsonDepth) return { path: [], number: undefined };
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = firstProblem(value[i], level + 1);
      if (found) return { ...found, path: [String(i), ...found.path] };
    }
    return undefined;
  }
  for (const key in value) {
    const found = firstProblem((value as Record<string, unknown>)[key], level + 1);
    if (found) return { ...found, path: [key, ...found.path] };
  }
  return undefined;
}

/**
 * A Timestamp as ms since the epoch (nanos rounded to the ms). INVALID_ARGUMENT naming `field`
 * when its nanos are outside 0-999,999,999 (protobuf's rule: a negative or overflowing nanos would
 * otherwise move the moment silently).
 */
export function msFromTimestamp(t: Timestamp, field: string): number {
  if (!Number.isInteger(t.nanos) || t.nanos < 0 || t.nanos > 999_999_999) {
    fail("bad_request", `${field}.nanos must be 0 to 999999999 (got ${t.nanos})`, [{ field: `${field}.nanos`, description: "out of range" }]);
  }
  return timestampMs(t); // finite even past JavaScript's Date range (a Date there is NaN): range checks then refuse it
}
