// The Chronolog side of the comparison: the ingest event type (the emit benchmark's ~200-byte
// order, with its schema) and the names shared by the owner, the generator and the consumers.
// Delivery uses bench/deliver's plugin (`bench.placed`, processor `bench.drain` keyed on
// data.key) and delays bench/timers' plugin (action `timers.fire`).
import { definePlugin, type PluginDefinition } from "../../sdk/ts/src/plugin.js";

export const INGEST_TYPE = "compare.order";
export const DELIVER_TYPE = "bench.placed";

export function comparePlugin(): PluginDefinition {
  return definePlugin({
    name: "compare",
    events: {
      [INGEST_TYPE]: {
        allow: ["*"],
        description: "an order, about 200 bytes of JSON",
        schema: {
          type: "object",
          required: ["order", "customer", "amount", "currency", "items", "status"],
          additionalProperties: false,
          properties: {
            order: { type: "string", pattern: "^ord-[0-9]+$" },
            customer: { type: "string", minLength: 1 },
            amount: { type: "number", minimum: 0 },
            currency: { type: "string", enum: ["EUR", "USD", "GBP"] },
            items: { type: "integer", minimum: 1 },
            status: { type: "string" },
            channel: { type: "string" },
            note: { type: "string", maxLength: 1000 },
          },
        },
      },
    },
  });
}
