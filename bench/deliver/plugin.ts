import type { Event } from "@chronolog/sdk/gen/chronolog/v1/event_pb";
import { definePlugin, type PluginDefinition } from "../../sdk/ts/src/plugin.js";

/** The benchmark plugin: `bench.placed` events (allow *) and processor `bench.drain` keyed on data.key, acking at once. */
export function benchPlugin(onEvent: (event: Event) => void = () => {}): PluginDefinition {
  return definePlugin({
    name: "bench",
    events: { "bench.placed": { allow: ["*"], schema: { type: "object", required: ["key"], properties: { key: { type: "string" } } } } },
    processors: {
      drain: { on: "bench.placed", key: "data.key", concurrency: 1024, start: "beginning", run: (ctx) => onEvent(ctx.event) },
    },
  });
}
