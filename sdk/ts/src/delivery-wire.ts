import { clone, create, createFileRegistry, fromBinary, type DescFile, type DescMessage, type DescMethod, type DescService } from "@bufbuild/protobuf";
import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import { DescriptorProtoSchema, FieldDescriptorProto_Type, FileDescriptorProtoSchema, type Timestamp } from "@bufbuild/protobuf/wkt";
import type { Actor, Event } from "./gen/chronolog/v1/event_pb.js";
import { EventSchema } from "./gen/chronolog/v1/event_pb.js";
import { ExecutorService, SubscribeResponseSchema, file_chronolog_v1_executor, type Delivery, type SubscribeResponse } from "./gen/chronolog/v1/executor_pb.js";

/**
 * The executor's Subscribe stream read with deliveries left as bytes, and those bytes decoded
 * here: an executor takes thousands of deliveries a second, and protobuf's reflective decoding
 * of each (a Delivery, its Event, two Timestamps) cost more than the handler of most. The
 * stream's responses are read with a copy of SubscribeResponse whose `delivery` and `deliveries`
 * fields are declared `bytes` (the same wire form: length-delimited), so every other message
 * decodes as before. The objects made are those protobuf-es makes for the same bytes.
 */

// SubscribeResponse's fields holding deliveries (executor.proto).
const deliveryField = 2;
const deliveriesField = 7;

/** SubscribeResponse with `delivery` and `deliveries` as bytes. */
const responseWire: DescMessage = (() => {
  const message = clone(DescriptorProtoSchema, SubscribeResponseSchema.proto);
  message.name = "SubscribeResponseWire";
  for (const field of message.field) {
    if (field.number === deliveryField || field.number === deliveriesField) {
      field.type = FieldDescriptorProto_Type.BYTES;
      field.typeName = "";
    }
  }
  const base = file_chronolog_v1_executor;
  const file = create(FileDescriptorProtoSchema, { name: "chronolog/v1/executor_wire.proto", package: base.proto.package, dependency: [base.proto.name], messageType: [message], syntax: "proto3" });
  const known = new Map<string, DescFile>();
  const add = (f: DescFile) => {
    known.set(f.proto.name, f);
    f.dependencies.forEach(add);
  };
  add(base);
  return createFileRegistry(file, (name) => known.get(name)).getMessage(`${base.proto.package}.SubscribeResponseWire`)!;
})();

/** The Subscribe method reading {@link responseWire}; the same path and request. */
const subscribeWire: DescMethod = { ...ExecutorService.method.subscribe, output: responseWire as never };

/**
 * ExecutorService with Subscribe read as {@link responseWire}, for `createClient`. Typed as
 * ExecutorService: its responses are SubscribeResponse once passed through {@link responseOf}.
 */
export const executorServiceWire = { ...ExecutorService, methods: [subscribeWire], method: { subscribe: subscribeWire } } as DescService as typeof ExecutorService;

/**
 * A response as the stream read it, with its delivery or deliveries decoded: the
 * SubscribeResponse protobuf-es would have decoded from the same bytes.
 */
export function responseOf(wire: SubscribeResponse): SubscribeResponse {
  const m = wire.message as { case: string | undefined; value?: unknown };
  if (m.case === "delivery") return create(SubscribeResponseSchema, { message: { case: "delivery", value: readDelivery(new BinaryReader(m.value as Uint8Array)) } });
  if (m.case === "deliveries") {
    const reader = new BinaryReader(m.value as Uint8Array);
    const deliveries: Delivery[] = [];
    while (reader.pos < reader.len) {
      const [no, wireType] = reader.tag();
      if (no === 1 && wireType === WireType.LengthDelimited) deliveries.push(readDelivery(sub(reader)));
      else reader.skip(wireType, no);
    }
    return create(SubscribeResponseSchema, { message: { case: "deliveries", value: { deliveries } } });
  }
  return create(SubscribeResponseSchema, { message: wire.message }); // the other messages as decoded, under SubscribeResponse's name
}

/** A reader of the length-delimited field at `reader`'s position; `reader` moves past it. */
function sub(reader: BinaryReader): BinaryReader {
  return new BinaryReader(reader.bytes());
}

function readDelivery(r: BinaryReader): Delivery {
  const d: Delivery = { $typeName: "chronolog.v1.Delivery", deliveryId: "", processor: "", attempt: 0, key: "" };
  while (r.pos < r.len) {
    const [no, wireType] = r.tag();
    if (no === 1 && wireType === WireType.LengthDelimited) d.deliveryId = r.string();
    else if (no === 2 && wireType === WireType.LengthDelimited) d.processor = r.string();
    else if (no === 3 && wireType === WireType.LengthDelimited) d.event = readEvent(r.bytes());
    else if (no === 4 && wireType === WireType.Varint) d.attempt = r.uint32();
    else if (no === 5 && wireType === WireType.LengthDelimited) d.deadline = readTimestamp(sub(r));
    else if (no === 6 && wireType === WireType.LengthDelimited) d.key = r.string();
    else r.skip(wireType, no);
  }
  return d;
}

/** An Event; one carrying its data as a Struct (field 4) is decoded by protobuf-es instead. */
function readEvent(bytes: Uint8Array): Event {
  const r = new BinaryReader(bytes);
  const e: Event = { $typeName: "chronolog.v1.Event", seq: 0n, id: "", type: "", cause: "", dataJson: new Uint8Array(0) };
  while (r.pos < r.len) {
    const [no, wireType] = r.tag();
    if (no === 1 && wireType === WireType.Varint) e.seq = BigInt(r.uint64());
    else if (no === 2 && wireType === WireType.LengthDelimited) e.id = r.string();
    else if (no === 3 && wireType === WireType.LengthDelimited) e.type = r.string();
    else if (no === 5 && wireType === WireType.LengthDelimited) e.cause = r.string();
    else if (no === 6 && wireType === WireType.LengthDelimited) e.actor = readActor(sub(r));
    else if (no === 7 && wireType === WireType.LengthDelimited) e.at = readTimestamp(sub(r));
    else if (no === 8 && wireType === WireType.LengthDelimited) e.dataJson = r.bytes();
    else return fromBinary(EventSchema, bytes);
  }
  return e;
}

function readActor(r: BinaryReader): Actor {
  const a: Actor = { $typeName: "chronolog.v1.Actor", id: "", for: "", in: "", via: "" };
  while (r.pos < r.len) {
    const [no, wireType] = r.tag();
    if (wireType !== WireType.LengthDelimited || no < 1 || no > 4) r.skip(wireType, no);
    else a[(["id", "for", "in", "via"] as const)[no - 1]] = r.string();
  }
  return a;
}

function readTimestamp(r: BinaryReader): Timestamp {
  const t: Timestamp = { $typeName: "google.protobuf.Timestamp", seconds: 0n, nanos: 0 };
  while (r.pos < r.len) {
    const [no, wireType] = r.tag();
    if (no === 1 && wireType === WireType.Varint) t.seconds = BigInt(r.int64());
    else if (no === 2 && wireType === WireType.Varint) t.nanos = r.int32();
    else r.skip(wireType, no);
  }
  return t;
}
