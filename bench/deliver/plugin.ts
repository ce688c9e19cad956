import type { Event } from "@chronolog/sdk/gen/chronolog/v1/event_pb";
import { definePlugin, type PluginDefinition } from "../../sdk/ts/src/plugin.js";

/**
 * The benchmark plugin: `bench.placed` events (allow *) and processor `bench.drain` keyed on data.key, acking at once.
 * BENCH_LIMITS=on declares it with the flow limits instead (the same lanes and total as
 * `concurrency: {limit: 1, key: data.key, total: 1024}`, and a rate per key that never binds), to
 * measure what they cost per delivery.
 */
export function benchPlugin(onEvent: (event: Event) => void = () => {}): PluginDefinition {
  return definePlugin({
    name: "bench",
    events: { "bench.placed": { allow: ["*"], schema: { type: "object", required: ["key"], properties: { key: { type: "string" } } } } },
    processors: {
      drain: {
        on: "bench.placed",
        ...(process.env.BENCH_LIMITS === "on"
          ? { concurrency: { limit: 1, key: "data.key", total: 1024 }, rate: { limit: 1_000_000, periodMs: 1_000, key: "data.key" } }
          : { key: "data.key", concurrency: 1024 }),
        start: "beginning",
        run: (ctx) => onEvent(ctx.event),
      },
    },
  });
}
