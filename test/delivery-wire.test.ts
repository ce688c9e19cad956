// Deliveries written as wire bytes from stored events decode to the messages protobuf builds,
// with the try's trace context (traceparent alone, with a tracestate, or none) and the event's.
import { create, equals, fromBinary, toBinary } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { SubscribeResponseSchema } from "@chronolog/sdk/gen/chronolog/v1/executor_pb";
import { deliveriesMessage, type DeliveryOut } from "../server/src/executors/delivery-wire.js";
import { eventToProto } from "../server/src/proto-values.js";
import type { EventRecord } from "../server/src/store/events.js";
import { traceCarrier } from "../server/src/tracing/trace-context.js";

const events: EventRecord[] = [
  {
    seq: 1,
    id: "01JBQ0000000000000000000A1",
    type: "shop.order_placed",
    data: { order_id: "o-1", amount: 12.5 },
    cause: "",
    actor: null,
    at: 1_764_000_000_123,
  },
  {
    seq: 2 ** 40 + 7,
    id: "e-2",
    type: "shop.überweisung",
    data: { text: "naïve — 日本語 🎉", nested: { list: [1, "two", null, true] } },
    cause: "01JBQ0000000000000000000A1",
    actor: { id: "ana", for: "", in: "tenant-7", via: "" },
    at: 1_000,
  },
  {
    seq: 300,
    id: "e-3",
    type: "t.x",
    data: {},
    cause: "",
    actor: { id: "", for: "", in: "", via: "" },
    at: 0,
    trace: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 congo=t61rcWkgMzE",
  },
  {
    seq: 128,
    id: "e-4",
    type: "t.big",
    data: { blob: "x".repeat(70_000) },
    cause: "c",
    actor: { id: "a", for: "b", in: "c", via: "d" },
    at: 1_764_000_000_999,
  },
];

const deliveries: DeliveryOut[] = events.map((event, i) => ({
  deliveryId: `shop.bill/${event.seq}/${i + 1}`,
  processor: "shop.bill",
  event,
  attempt: i + 1,
  deadlineMs: 1_764_000_030_000 + i * 333.5,
  key: i === 1 ? "ключ" : i === 2 ? "" : `k${i}`,
  ...(i === 0 && { trace: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" }),
  ...(i === 1 && { trace: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00 congo=t61rcWkgMzE,rojo=00f067aa0ba902b7" }),
}));

/** The same delivery built as a message (the event's data as JSON text), as protobuf-es writes it. */
function built(d: DeliveryOut) {
  return {
    deliveryId: d.deliveryId,
    processor: d.processor,
    event: eventToProto(d.event, true),
    attempt: d.attempt,
    deadline: timestampFromMs(d.deadlineMs),
    key: d.key,
    ...traceCarrier(d.trace),
  };
}

describe("deliveries written from stored events", () => {
  it("decode to the Delivery protobuf-es builds, one at a time", () => {
    for (const d of deliveries) {
      const bytes = toBinary(SubscribeResponseSchema, deliveriesMessage([d]));
      const expected = create(SubscribeResponseSchema, { message: { case: "delivery", value: built(d) } });
      const decoded = fromBinary(SubscribeResponseSchema, bytes);
      expect(decoded.message.case).toBe("delivery");
      expect(equals(SubscribeResponseSchema, decoded, expected)).toBe(true);
      expect(Buffer.from(bytes).equals(Buffer.from(toBinary(SubscribeResponseSchema, expected)))).toBe(true);
    }
  });

  it("decode to the DeliveryBatch protobuf-es builds, in order", () => {
    const bytes = toBinary(SubscribeResponseSchema, deliveriesMessage(deliveries));
    const expected = create(SubscribeResponseSchema, { message: { case: "deliveries", value: { deliveries: deliveries.map(built) } } });
    const decoded = fromBinary(SubscribeResponseSchema, bytes);
    expect(decoded.message.case === "deliveries" && decoded.message.value.deliveries.map((x) => x.event?.seq)).toEqual(events.map((e) => BigInt(e.seq)));
    expect(equals(SubscribeResponseSchema, decoded, expected)).toBe(true);
    expect(JSON.parse(Buffer.from(decoded.message.case === "deliveries" ? decoded.message.value.deliveries[1].event!.dataJson : []).toString())).toEqual(
      events[1].data,
    );
    expect(decoded.message.case === "deliveries" && decoded.message.value.deliveries.map((x) => [x.traceparent, x.tracestate])).toEqual([
      ["00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", ""],
      ["00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"],
      ["", ""],
      ["", ""],
    ]);
  });
});
