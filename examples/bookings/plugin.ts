import { definePlugin } from "../../sdk/ts/src/plugin.js";

/**
 * The bookings example: a guest creates a booking (a document in the
 * `booking` collection, status "pending"); the collection writes
 * `booking.created`; processor `confirmer` (keyed on the booking's `_id`)
 * reacts to pending ones by calling action `bookings.confirm`, which sets the
 * status to "confirmed" (writing `booking.updated`) and arms a reminder delay
 * for 24 hours before check-in; the delayed call emits `booking.reminded`. A
 * declared schedule calls `bookings.report` every Monday at 09:00 in Berlin,
 * which counts bookings by status into a `booking.report` event. Every step
 * is on the log.
 */

/** How long before check-in the guest is reminded (ms). */
export const reminderLeadMs = 24 * 60 * 60 * 1000;
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
          check_in: { type: "string", format: "date-time" },
        },
      },
    },
  },
  events: {
    "booking.reminded": { description: "a guest was reminded of a booking", schema: { type: "object", required: ["booking_id"] } },
    "booking.report": { description: "bookings counted by status", schema: { type: "object", required: ["counts"] } },
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
        // Due exactly 24 h before check-in: an `at` moment computed from the check-in alone (an
        // interval from Date.now() would be off by however long this run took to get here).
        const remindAt = typeof booking.check_in === "string" ? Date.parse(booking.check_in) - reminderLeadMs : NaN;
        if (remindAt >= Date.now()) {
          // Stored by the owner: survives restarts; made at most 6 h late, or recorded as skipped.
          // A check-in less than 24 h away gets no reminder.
          await ctx.delay("bookings.remind", { booking_id: id }, { at: remindAt }, { maxLatenessMs: 6 * 60 * 60 * 1000 });
        }
        return { booking_id: id, status: "confirmed" };
      },
    },
    remind: {
      // Admins (the local admin of an owner without a config) may also call it, schedule it or delay it from outside.
      allow: ["role:admin"],
      inputSchema: { type: "object", required: ["booking_id"], properties: { booking_id: { type: "string" } } },
      async run(ctx, input) {
        const booking = await ctx.collections.get("booking", String(input.booking_id));
        if (booking.status !== "confirmed") return { reminded: false };
        await ctx.emit("booking.reminded", { booking_id: String(input.booking_id), guest: booking.guest ?? "", due: ctx.scheduled?.due.toISOString() ?? "" });
        return { reminded: true };
      },
    },
    report: {
      allow: ["role:admin"],
      async run(ctx) {
        const counts: Record<string, number> = {};
        for (const b of await ctx.collections.find("booking", { limit: 1000 })) counts[String(b.status)] = (counts[String(b.status)] ?? 0) + 1;
        await ctx.emit("booking.report", { counts, week_of: ctx.scheduled?.due.toISOString() ?? "" });
        return { counts };
      },
    },
  },
  schedules: {
    "weekly-report": { action: "report", cron: "0 9 * * 1", zone: "Europe/Berlin" },
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
