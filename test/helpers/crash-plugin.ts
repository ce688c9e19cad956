import { create, toJson } from "@bufbuild/protobuf";
import { PluginManifestSchema } from "@chronolog/sdk/gen/chronolog/v1/plugin_pb";
import { definePlugin, manifestOf, type PluginDefinition } from "../../sdk/ts/src/plugin.js";

/**
 * The plugin of the crash tests: processor `crash.track` on `job.queued`
 * (lanes by data.key). Each finished run prints one JSON line
 * {"seq","attempt","pid"} before its ack is sent. A run of `hangOnSeq` never ends.
 */
export function crashPlugin(delayMs = 2, hangOnSeq = 0): PluginDefinition {
  return definePlugin({
    name: "crash",
    events: { "job.queued": { allow: ["*"] } },
    processors: {
      track: {
        on: "job.queued",
        key: "data.key",
        concurrency: 8,
        start: "beginning",
        retryDelaysMs: [20, 40],
        async run(ctx) {
          if (Number(ctx.event.seq) === hangOnSeq) await new Promise(() => {});
          await new Promise((r) => setTimeout(r, delayMs));
          process.stdout.write(`${JSON.stringify({ seq: Number(ctx.event.seq), attempt: ctx.attempt, pid: process.pid })}\n`);
        },
      },
    },
  });
}

/** The crash plugin's manifest in its JSON form (for a --plugins folder). */
export function crashPluginManifest(): unknown {
  return toJson(PluginManifestSchema, create(PluginManifestSchema, manifestOf(crashPlugin())));
}
