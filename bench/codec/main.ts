// Event data as google.protobuf.Struct against JSON text in bytes (Event.data_json,
// EmitRequest.data_json), per ~200-byte event (bench/emit's event), in one process:
// `npm run bench:codec`.
//
// - out (the owner's reads: Watch, deliveries): the stored JSON text becomes an Event message on
//   the wire and the SDK turns it back into an object. Struct: JSON.parse, build the Struct,
//   encode; decode the Struct into an object. Bytes: the text as bytes, encode; decode, JSON.parse.
// - in (emits): the SDK turns an object into an EmitRequest and the owner gets the object and
//   the text it stores. Struct: encode the Struct; decode it, JSON.stringify to store. Bytes:
//   JSON.stringify, encode; decode, JSON.parse, JSON.stringify (checked and kept compact).
// Each figure is the median of 7 rounds of BENCH_EVENTS (default 20,000) events, µs per event.

import { create, fromBinary, toBinary, type JsonObject } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { EventSchema } from "@chronolog/sdk/gen/chronolog/v1/event_pb";
import { EmitRequestSchema } from "@chronolog/sdk/gen/chronolog/v1/log_pb";
import { eventData } from "../emit/load.js";

const n = Number(process.env.BENCH_EVENTS ?? 20_000);
const rounds = 7;
const encoder = new TextEncoder();
const decoder = new TextDecoder();
const texts = Array.from({ length: 256 }, (_, i) => JSON.stringify(eventData(i)));
const objects = texts.map((t) => JSON.parse(t) as JsonObject);
let sink = 0;

/** Median µs per event of `step` run `n` times, in `rounds` rounds (the first, a warm-up, dropped). */
function measure(step: (i: number) => void): number {
  const times: number[] = [];
  for (let r = 0; r <= rounds; r++) {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) step(i);
    if (r > 0) times.push(((performance.now() - t0) * 1000) / n);
  }
  return times.sort((a, b) => a - b)[Math.floor(times.length / 2)];
}

const event = (i: number) => ({
  seq: BigInt(i + 1),
  id: "0190f3b4-7c1d-7000-8000-000000000000",
  type: "bench.order_placed",
  cause: "",
  at: timestampFromMs(1_700_000_000_000),
});

// Out: stored text → wire → object.
const structWire = texts.map((t, i) => toBinary(EventSchema, create(EventSchema, { ...event(i), data: JSON.parse(t) })));
const bytesWire = texts.map((t, i) => toBinary(EventSchema, create(EventSchema, { ...event(i), dataJson: Buffer.from(t) })));
const outStructEncode = measure((i) => (sink += toBinary(EventSchema, create(EventSchema, { ...event(i), data: JSON.parse(texts[i & 255]) })).length));
const outBytesEncode = measure((i) => (sink += toBinary(EventSchema, create(EventSchema, { ...event(i), dataJson: Buffer.from(texts[i & 255]) })).length));
const outStructDecode = measure((i) => (sink += Object.keys(fromBinary(EventSchema, structWire[i & 255]).data!).length));
const outBytesDecode = measure((i) => (sink += Object.keys(JSON.parse(decoder.decode(fromBinary(EventSchema, bytesWire[i & 255]).dataJson))).length));

// In: object → wire → object + stored text.
const inStructWire = objects.map((o) => toBinary(EmitRequestSchema, create(EmitRequestSchema, { type: "bench.order_placed", data: o, id: "x" })));
const inBytesWire = objects.map((o) =>
  toBinary(EmitRequestSchema, create(EmitRequestSchema, { type: "bench.order_placed", dataJson: encoder.encode(JSON.stringify(o)), id: "x" })),
);
const inStructEncode = measure(
  (i) => (sink += toBinary(EmitRequestSchema, create(EmitRequestSchema, { type: "bench.order_placed", data: objects[i & 255], id: "x" })).length),
);
const inBytesEncode = measure(
  (i) =>
    (sink += toBinary(
      EmitRequestSchema,
      create(EmitRequestSchema, { type: "bench.order_placed", dataJson: encoder.encode(JSON.stringify(objects[i & 255])), id: "x" }),
    ).length),
);
const inStructDecode = measure((i) => (sink += JSON.stringify(fromBinary(EmitRequestSchema, inStructWire[i & 255]).data).length));
const inBytesDecode = measure((i) => {
  const data = JSON.parse(decoder.decode(fromBinary(EmitRequestSchema, inBytesWire[i & 255]).dataJson));
  sink += JSON.stringify(data).length;
});

const f = (x: number) => x.toFixed(2).padStart(6);
console.log(`event data: ${texts[0].length} bytes of JSON; ${n} events a round, median of ${rounds} rounds; µs per event`);
console.log(`                                   encode  decode   total`);
console.log(`out (Watch, deliveries)  Struct   ${f(outStructEncode)}  ${f(outStructDecode)}  ${f(outStructEncode + outStructDecode)}`);
console.log(`                         bytes    ${f(outBytesEncode)}  ${f(outBytesDecode)}  ${f(outBytesEncode + outBytesDecode)}`);
console.log(`in (emits)               Struct   ${f(inStructEncode)}  ${f(inStructDecode)}  ${f(inStructEncode + inStructDecode)}`);
console.log(`                         bytes    ${f(inBytesEncode)}  ${f(inBytesDecode)}  ${f(inBytesEncode + inBytesDecode)}`);
if (sink === 0) console.log("");
