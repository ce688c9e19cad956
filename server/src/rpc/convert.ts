import { create, type JsonObject } from "@bufbuild/protobuf";
import { timestampFromMs, timestampMs, type Timestamp } from "@bufbuild/protobuf/wkt";
import { ActorSchema, EventSchema, type Actor, type Cause, type Event } from "../../../sdk/ts/src/gen/chronolog/v1/event_pb.js";
import { fail } from "../errors.js";
import type { CauseRef } from "../log/emit.js";
import type { ActorRecord, EventRecord } from "../store/events.js";

/**
 * Translations between protobuf messages and the owner's checked domain
 * values (STYLE 4). Only the rpc layer sees protobuf types.
 */

/** A stored event as the API's Event. */
export function eventToProto(e: EventRecord): Event {
  return create(EventSchema, {
    seq: BigInt(e.seq),
    id: e.id,
    type: e.type,
    data: e.data as JsonObject,
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
