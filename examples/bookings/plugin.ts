import { definePlugin } from "../../sdk/ts/src/plugin.js";

/**
 * The bookings example: a guest creates a booking (a document in the
 * `booking` collection, status "pending"); the collection writes
 * `booking.created`; processor `confirmer` (keyed on the booking's `_id`)
 * reacts to pending ones by calling action `bookings.confirm`, which sets the
 * status to "confirmed" (writing `booking.updated`). Every step is on the log.
 */
export const bookings = definePlugin({
  name: "bookings",
  version: "1",
  collections: {
    booking: {
      allow: ["*"],
      privateFields: ["card"],
      schema: {
        type: "object",
        required: ["_id", "guest", "room", "nights", "status"],
        additionalProperties: false,
        properties: {
          _id: { type: "string" },
          guest: { type: "string", minLength: 1 },
          room: { type: "string", pattern: "^[0-9]{3}$" },
          nights: { type: "integer", minimum: 1, maximum: 30 },
          status: { enum: ["pending", "confirmed", "cancelled"] },
          card: { type: "string" },
          confirmed_by: { type: "string" },
        },
      },
    },
  },
  actions: {
    confirm: {
      inputSchema: { type: "object", required: ["booking_id"], properties: { booking_id: { type: "string" } } },
      timeoutMs: 10_000,
      async run(ctx, input) {
        const id = String(input.booking_id);
        const booking = await ctx.collections.get("booking", id);
        if (booking.status !== "pending") return { booking_id: id, status: booking.status ?? "" };
        await ctx.collections.patch("booking", id, { set: { status: "confirmed", confirmed_by: "bookings.confirm" } });
        return { booking_id: id, status: "confirmed" };
      },
    },
  },
  processors: {
    confirmer: {
      on: "booking.created",
      where: { "doc.status": "pending" },
      key: "data._id",
      concurrency: 8,
      async run(ctx) {
        await ctx.call("bookings.confirm", { booking_id: String(ctx.data._id) });
      },
    },
  },
});
