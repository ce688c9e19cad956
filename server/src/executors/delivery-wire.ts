import { create } from "@bufbuild/protobuf";
import { WireType } from "@bufbuild/protobuf/wire";
import { SubscribeResponseSchema } from "@chronolog/sdk/gen/chronolog/v1/executor_pb";
import type { TimedTry } from "../stages.js";
import { storedDataJson, type EventRecord } from "../store/events.js";
import { traceCarrier } from "../tracing/trace-context.js";

/**
 * Deliveries written as protobuf wire bytes straight from the stored events, for executors that
 * take event data as JSON text (Hello.data_json): the stored text goes out as it is, and no
 * message objects are built per delivery (building and encoding them through protobuf's
 * reflection cost the owner several times what writing the bytes does). The bytes are those of
 * chronolog.v1.Delivery and DeliveryBatch (proto/chronolog/v1/executor.proto); fields holding
 * their default are left out, as protobuf encoders do.
 */

/** One delivery to write: a try of `event` for `processor`. */
export interface DeliveryOut {
  deliveryId: string;
  processor: string;
  event: EventRecord;
  attempt: number;
  /** Its ack deadline, ms since the epoch. */
  deadlineMs: number;
  /** The lane key; "" for none. */
  key: string;
  /** The events a debounced delivery stands for; 0 or absent for none. */
  debounced?: number;
  /** Its try, stamped written when the stream writes it (stages.ts); absent: not timed. */
  timed?: TimedTry;
  /** The try's trace context (tracing/trace-context.ts: traceparent, a space, tracestate); absent: none. */
  trace?: string;
}

// Field numbers of executor.proto and event.proto.
const response = { delivery: 2, deliveries: 7 } as const;
const batchDeliveries = 1;
const delivery = { id: 1, processor: 2, event: 3, attempt: 4, deadline: 5, key: 6, traceparent: 50, tracestate: 51, debounced: 80 } as const;
/** Bytes of the tag of Delivery.debounced (field 80: past the one-byte tags). */
const debouncedTagBytes = 2;
const event = { seq: 1, id: 2, type: 3, cause: 5, actor: 6, at: 7, dataJson: 8, traceparent: 50, tracestate: 51 } as const;
const actorFields = ["id", "for", "in", "via"] as const;

/**
 * The SubscribeResponse of `items`: one Delivery, or a DeliveryBatch of several (in order).
 * Its bytes ride in the message's unknown fields, which protobuf-es writes as they are: on the
 * wire it is the message a Delivery or DeliveryBatch would have made.
 */
export function deliveriesMessage(items: DeliveryOut[]): ReturnType<typeof create<typeof SubscribeResponseSchema>> {
  const message = create(SubscribeResponseSchema);
  message.$unknown = [
    items.length === 1
      ? { no: response.delivery, wireType: WireType.LengthDelimited, data: lengthDelimited([items[0]], false) }
      : { no: response.deliveries, wireType: WireType.LengthDelimited, data: lengthDelimited(items, true) },
  ];
  return message;
}

/** Sizes of one delivery's parts, computed once and used to write it. */
interface Sized {
  item: DeliveryOut;
  idBytes: number;
  processorBytes: number;
  keyBytes: number;
  eventIdBytes: number;
  typeBytes: number;
  causeBytes: number;
  actorBytes: number;
  atBytes: number;
  deadlineBytes: number;
  dataJson: string;
  dataBytes: number;
  eventBytes: number;
  /** The try's trace context's headers and their UTF-8 bytes (ASCII by the W3C format); "" and 0 when none. */
  traceparent: string;
  tracestate: string;
  traceBytes: number;
  /** The same of the event's own trace context (Event.traceparent, tracestate). */
  eventTraceparent: string;
  eventTracestate: string;
  eventTraceBytes: number;
  total: number;
}

/**
 * A length prefix and then a Delivery (`batch` false, one item) or a DeliveryBatch's body: the
 * data of a length-delimited unknown field.
 */
function lengthDelimited(items: DeliveryOut[], batch: boolean): Uint8Array {
  const sized = items.map(size);
  let body = 0;
  for (const s of sized) body += batch ? fieldBytes(s.total) : s.total;
  const buf = Buffer.allocUnsafe(varintBytes(body) + body);
  let at = writeVarint(buf, 0, body);
  for (const s of sized) {
    if (batch) {
      at = writeTag(buf, at, batchDeliveries);
      at = writeVarint(buf, at, s.total);
    }
    at = writeDelivery(buf, at, s);
  }
  if (at !== buf.length) throw new Error(`delivery encoding wrote ${at} bytes of ${buf.length}`);
  return buf;
}

function size(item: DeliveryOut): Sized {
  const e = item.event;
  const dataJson = storedDataJson(e);
  const s: Sized = {
    item,
    idBytes: Buffer.byteLength(item.deliveryId),
    processorBytes: Buffer.byteLength(item.processor),
    keyBytes: Buffer.byteLength(item.key),
    eventIdBytes: Buffer.byteLength(e.id),
    typeBytes: Buffer.byteLength(e.type),
    causeBytes: Buffer.byteLength(e.cause),
    actorBytes: e.actor === null ? -1 : actorBytes(e.actor),
    atBytes: timestampBytes(e.at),
    deadlineBytes: timestampBytes(item.deadlineMs),
    dataJson,
    dataBytes: Buffer.byteLength(dataJson),
    eventBytes: 0,
    traceparent: "",
    tracestate: "",
    traceBytes: 0,
    eventTraceparent: "",
    eventTracestate: "",
    eventTraceBytes: 0,
    total: 0,
  };
  if (item.trace) {
    const { traceparent, tracestate } = traceCarrier(item.trace);
    s.traceparent = traceparent;
    s.tracestate = tracestate;
    s.traceBytes = wideStringField(Buffer.byteLength(traceparent)) + wideStringField(Buffer.byteLength(tracestate));
  }
  if (e.trace) {
    const { traceparent, tracestate } = traceCarrier(e.trace);
    s.eventTraceparent = traceparent;
    s.eventTracestate = tracestate;
    s.eventTraceBytes = wideStringField(Buffer.byteLength(traceparent)) + wideStringField(Buffer.byteLength(tracestate));
  }
  s.eventBytes =
    (e.seq === 0 ? 0 : 1 + varintBytes(e.seq)) +
    stringField(s.eventIdBytes) +
    stringField(s.typeBytes) +
    stringField(s.causeBytes) +
    (s.actorBytes < 0 ? 0 : fieldBytes(s.actorBytes)) +
    fieldBytes(s.atBytes) +
    stringField(s.dataBytes) +
    s.eventTraceBytes;
  s.total =
    stringField(s.idBytes) +
    stringField(s.processorBytes) +
    fieldBytes(s.eventBytes) +
    (item.attempt === 0 ? 0 : 1 + varintBytes(item.attempt)) +
    fieldBytes(s.deadlineBytes) +
    stringField(s.keyBytes) +
    s.traceBytes +
    (item.debounced ? debouncedTagBytes + varintBytes(item.debounced) : 0);
  return s;
}

function writeDelivery(buf: Buffer, at: number, s: Sized): number {
  const { item } = s;
  const e = item.event;
  at = writeString(buf, at, delivery.id, item.deliveryId, s.idBytes);
  at = writeString(buf, at, delivery.processor, item.processor, s.processorBytes);
  at = writeTag(buf, at, delivery.event);
  at = writeVarint(buf, at, s.eventBytes);
  if (e.seq !== 0) {
    buf[at++] = (event.seq << 3) | WireType.Varint;
    at = writeVarint(buf, at, e.seq);
  }
  at = writeString(buf, at, event.id, e.id, s.eventIdBytes);
  at = writeString(buf, at, event.type, e.type, s.typeBytes);
  at = writeString(buf, at, event.cause, e.cause, s.causeBytes);
  if (e.actor !== null) {
    at = writeTag(buf, at, event.actor);
    at = writeVarint(buf, at, s.actorBytes);
    for (let i = 0; i < actorFields.length; i++) {
      const v = e.actor[actorFields[i]];
      at = writeString(buf, at, i + 1, v, Buffer.byteLength(v));
    }
  }
  at = writeTimestamp(buf, at, event.at, e.at, s.atBytes);
  at = writeString(buf, at, event.dataJson, s.dataJson, s.dataBytes);
  if (s.eventTraceBytes > 0) {
    at = writeWideString(buf, at, event.traceparent, s.eventTraceparent);
    at = writeWideString(buf, at, event.tracestate, s.eventTracestate);
  }
  if (item.attempt !== 0) {
    buf[at++] = (delivery.attempt << 3) | WireType.Varint;
    at = writeVarint(buf, at, item.attempt);
  }
  at = writeTimestamp(buf, at, delivery.deadline, item.deadlineMs, s.deadlineBytes);
  at = writeString(buf, at, delivery.key, item.key, s.keyBytes);
  if (s.traceBytes > 0) {
    at = writeWideString(buf, at, delivery.traceparent, s.traceparent);
    at = writeWideString(buf, at, delivery.tracestate, s.tracestate);
  }
  if (!item.debounced) return at;
  at = writeVarint(buf, at, (delivery.debounced << 3) | WireType.Varint); // a two-byte tag
  return writeVarint(buf, at, item.debounced);
}

/** Bytes of a string field numbered 16..2047 (a two-byte tag) of `n` bytes: nothing when empty. */
function wideStringField(n: number): number {
  return n === 0 ? 0 : 2 + varintBytes(n) + n;
}

/** Writes a string field numbered 16..2047 (the trace fields, 50 and 51); nothing when empty. */
function writeWideString(buf: Buffer, at: number, no: number, value: string): number {
  const bytes = Buffer.byteLength(value);
  if (bytes === 0) return at;
  at = writeVarint(buf, at, (no << 3) | WireType.LengthDelimited);
  at = writeVarint(buf, at, bytes);
  return at + buf.write(value, at, bytes, "utf8");
}

function actorBytes(actor: NonNullable<EventRecord["actor"]>): number {
  let n = 0;
  for (const f of actorFields) n += stringField(Buffer.byteLength(actor[f]));
  return n;
}

/** google.protobuf.Timestamp of `ms` since the epoch (not before it), as timestampFromMs makes it. */
function timestampParts(ms: number): { seconds: number; nanos: number } {
  const seconds = Math.floor(ms / 1000);
  return { seconds, nanos: Math.round((ms - seconds * 1000) * 1_000_000) };
}

function timestampBytes(ms: number): number {
  const { seconds, nanos } = timestampParts(ms);
  return (seconds === 0 ? 0 : 1 + varintBytes(seconds)) + (nanos === 0 ? 0 : 1 + varintBytes(nanos));
}

function writeTimestamp(buf: Buffer, at: number, no: number, ms: number, bytes: number): number {
  const { seconds, nanos } = timestampParts(ms);
  at = writeTag(buf, at, no);
  at = writeVarint(buf, at, bytes);
  if (seconds !== 0) {
    buf[at++] = (1 << 3) | WireType.Varint;
    at = writeVarint(buf, at, seconds);
  }
  if (nanos !== 0) {
    buf[at++] = (2 << 3) | WireType.Varint;
    at = writeVarint(buf, at, nanos);
  }
  return at;
}

/** Bytes of a string or bytes field of `n` bytes: nothing when empty (proto3's default). */
function stringField(n: number): number {
  return n === 0 ? 0 : fieldBytes(n);
}

/** Bytes of a length-delimited field of `n` bytes with a one-byte tag (field numbers below 16). */
function fieldBytes(n: number): number {
  return 1 + varintBytes(n) + n;
}

function writeString(buf: Buffer, at: number, no: number, value: string, bytes: number): number {
  if (bytes === 0) return at;
  at = writeTag(buf, at, no);
  at = writeVarint(buf, at, bytes);
  return at + buf.write(value, at, bytes, "utf8");
}

function writeTag(buf: Buffer, at: number, no: number): number {
  buf[at] = (no << 3) | WireType.LengthDelimited;
  return at + 1;
}

/** Bytes of `n` (a non-negative integer up to 2^53) as a varint. */
function varintBytes(n: number): number {
  let bytes = 1;
  while (n >= 128) {
    n = Math.floor(n / 128);
    bytes++;
  }
  return bytes;
}

function writeVarint(buf: Buffer, at: number, n: number): number {
  while (n >= 128) {
    buf[at++] = (n % 128) | 0x80;
    n = Math.floor(n / 128);
  }
  buf[at++] = n;
  return at;
}
