import { create, type JsonObject } from "@bufbuild/protobuf";
import { traceCarrier } from "./tracing/trace-context.js";
import { timestampFromMs, timestampMs, type Timestamp } from "@bufbuild/protobuf/wkt";
import { ActorSchema, EventSchema, type Event } from "@chronolog/sdk/gen/chronolog/v1/event_pb";
import { fail } from "./errors.js";
import { storedDataJson, type EventRecord } from "./store/events.js";

/* Protobuf values shared by the services and the executor protocol (deliveries, policies). */

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
    ...(e.trace && traceCarrier(e.trace)),
  });
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
