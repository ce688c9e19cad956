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

// Sizes of a batch's deliveries, computed once and used to write them: in scratch arrays shared by
// every batch (a batch is written at once, synchronously), so that no object is made per delivery.
// Per delivery, `perItem` numbers at `i * perItem + part` and `textsPerItem` strings.
const part = {
  id: 0,
  processor: 1,
  key: 2,
  eventId: 3,
  type: 4,
  cause: 5,
  actor: 6,
  at: 7,
  deadline: 8,
  data: 9,
  event: 10,
  trace: 11,
  eventTrace: 12,
  total: 13,
} as const;
const perItem = 14;
/** The event's data as JSON text; the try's trace context's headers; the event's own (ASCII by the W3C format; "" when none). */
const text = { data: 0, traceparent: 1, tracestate: 2, eventTraceparent: 3, eventTracestate: 4 } as const;
const textsPerItem = 5;
let sizes = new Float64Array(perItem * 256);
const texts: string[] = [];

/**
 * A length prefix and then a Delivery (`batch` false, one item) or a DeliveryBatch's body: the
 * data of a length-delimited unknown field.
 */
function lengthDelimited(items: DeliveryOut[], batch: boolean): Uint8Array {
  if (sizes.length < items.length * perItem) sizes = new Float64Array(items.length * perItem * 2);
  let body = 0;
  for (let i = 0; i < items.length; i++) {
    const total = size(items[i], i);
    body += batch ? fieldBytes(total) : total;
  }
  const buf = Buffer.allocUnsafe(varintBytes(body) + body);
  let at = writeVarint(buf, 0, body);
  for (let i = 0; i < items.length; i++) {
    if (batch) {
      at = writeTag(buf, at, batchDeliveries);
      at = writeVarint(buf, at, sizes[i * perItem + part.total]);
    }
    at = writeDelivery(buf, at, items[i], i);
  }
  texts.fill("", 0, items.length * textsPerItem); // the event data's text is not kept past the batch
  if (at !== buf.length) throw new Error(`delivery encoding wrote ${at} bytes of ${buf.length}`);
  return buf;
}

/** Computes the sizes of `item`, the `i`th of its batch, into the scratch arrays; returns its Delivery's bytes. */
function size(item: DeliveryOut, i: number): number {
  const e = item.event;
  const n = i * perItem;
  const t = i * textsPerItem;
  const dataJson = storedDataJson(e);
  texts[t + text.data] = dataJson;
  const idBytes = (sizes[n + part.id] = Buffer.byteLength(item.deliveryId));
  const processorBytes = (sizes[n + part.processor] = Buffer.byteLength(item.processor));
  const keyBytes = (sizes[n + part.key] = Buffer.byteLength(item.key));
  const eventIdBytes = (sizes[n + part.eventId] = Buffer.byteLength(e.id));
  const typeBytes = (sizes[n + part.type] = Buffer.byteLength(e.type));
  const causeBytes = (sizes[n + part.cause] = Buffer.byteLength(e.cause));
  const actor = (sizes[n + part.actor] = e.actor === null ? -1 : actorBytes(e.actor));
  const atBytes = (sizes[n + part.at] = timestampBytes(e.at));
  const deadlineBytes = (sizes[n + part.deadline] = timestampBytes(item.deadlineMs));
  const dataBytes = (sizes[n + part.data] = Buffer.byteLength(dataJson));
  let traceBytes = 0;
  let eventTraceBytes = 0;
  if (item.trace) {
    const { traceparent, tracestate } = traceCarrier(item.trace);
    texts[t + text.traceparent] = traceparent;
    texts[t + text.tracestate] = tracestate;
    traceBytes = wideStringField(Buffer.byteLength(traceparent)) + wideStringField(Buffer.byteLength(tracestate));
  }
  if (e.trace) {
    const { traceparent, tracestate } = traceCarrier(e.trace);
    texts[t + text.eventTraceparent] = traceparent;
    texts[t + text.eventTracestate] = tracestate;
    eventTraceBytes = wideStringField(Buffer.byteLength(traceparent)) + wideStringField(Buffer.byteLength(tracestate));
  }
  sizes[n + part.trace] = traceBytes;
  sizes[n + part.eventTrace] = eventTraceBytes;
  const eventBytes = (sizes[n + part.event] =
    (e.seq === 0 ? 0 : 1 + varintBytes(e.seq)) +
    stringField(eventIdBytes) +
    stringField(typeBytes) +
    stringField(causeBytes) +
    (actor < 0 ? 0 : fieldBytes(actor)) +
    fieldBytes(atBytes) +
    stringField(dataBytes) +
    eventTraceBytes);
  return (sizes[n + part.total] =
    stringField(idBytes) +
    stringField(processorBytes) +
    fieldBytes(eventBytes) +
    (item.attempt === 0 ? 0 : 1 + varintBytes(item.attempt)) +
    fieldBytes(deadlineBytes) +
    stringField(keyBytes) +
    traceBytes +
    (item.debounced ? debouncedTagBytes + varintBytes(item.debounced) : 0));
}

/** Writes `item`, the `i`th of its batch, with the sizes {@link size} computed. */
function writeDelivery(buf: Buffer, at: number, item: DeliveryOut, i: number): number {
  const e = item.event;
  const n = i * perItem;
  const t = i * textsPerItem;
  at = writeString(buf, at, delivery.id, item.deliveryId, sizes[n + part.id]);
  at = writeString(buf, at, delivery.processor, item.processor, sizes[n + part.processor]);
  at = writeTag(buf, at, delivery.event);
  at = writeVarint(buf, at, sizes[n + part.event]);
  if (e.seq !== 0) {
    buf[at++] = (event.seq << 3) | WireType.Varint;
    at = writeVarint(buf, at, e.seq);
  }
  at = writeString(buf, at, event.id, e.id, sizes[n + part.eventId]);
  at = writeString(buf, at, event.type, e.type, sizes[n + part.type]);
  at = writeString(buf, at, event.cause, e.cause, sizes[n + part.cause]);
  if (e.actor !== null) {
    at = writeTag(buf, at, event.actor);
    at = writeVarint(buf, at, sizes[n + part.actor]);
    for (let f = 0; f < actorFields.length; f++) {
      const v = e.actor[actorFields[f]];
      at = writeString(buf, at, f + 1, v, Buffer.byteLength(v));
    }
  }
  at = writeTimestamp(buf, at, event.at, e.at, sizes[n + part.at]);
  at = writeString(buf, at, event.dataJson, texts[t + text.data], sizes[n + part.data]);
  if (sizes[n + part.eventTrace] > 0) {
    at = writeWideString(buf, at, event.traceparent, texts[t + text.eventTraceparent]);
    at = writeWideString(buf, at, event.tracestate, texts[t + text.eventTracestate]);
  }
  if (item.attempt !== 0) {
    buf[at++] = (delivery.attempt << 3) | WireType.Varint;
    at = writeVarint(buf, at, item.attempt);
  }
  at = writeTimestamp(buf, at, delivery.deadline, item.deadlineMs, sizes[n + part.deadline]);
  at = writeString(buf, at, delivery.key, item.key, sizes[n + part.key]);
  if (sizes[n + part.trace] > 0) {
    at = writeWideString(buf, at, delivery.traceparent, texts[t + text.traceparent]);
    at = writeWideString(buf, at, delivery.tracestate, texts[t + text.tracestate]);
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

// google.protobuf.Timestamp of `ms` since the epoch (not before it), as timestampFromMs makes it:
// seconds = floor(ms / 1000), nanos = the rest in ns, rounded.

function timestampBytes(ms: number): number {
  const seconds = Math.floor(ms / 1000);
  const nanos = Math.round((ms - seconds * 1000) * 1_000_000);
  return (seconds === 0 ? 0 : 1 + varintBytes(seconds)) + (nanos === 0 ? 0 : 1 + varintBytes(nanos));
}

function writeTimestamp(buf: Buffer, at: number, no: number, ms: number, bytes: number): number {
  const seconds = Math.floor(ms / 1000);
  const nanos = Math.round((ms - seconds * 1000) * 1_000_000);
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
