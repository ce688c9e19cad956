import type { PluginManifest } from "@chronolog/sdk/gen/chronolog/v1/plugin_pb";
import { mayUsePlugin, type Principal } from "./principal.js";

/** What a cause is the work of: a call of `action` (its `action.started`, or a running `record: false` call), or a delivery of an event of `type`. */
export type CauseWork = { action: string } | { type: string };

/** What the rule needs from the registered plugins (the owner's PluginRegistry). */
export interface CauseDeclarations {
  /** The action `name` with its plugin, if declared. */
  action(name: string): { plugin: string } | undefined;
  /** Every registered plugin. */
  list(): { compiled: { manifest: PluginManifest } }[];
}

/**
 * Whether `principal` may work under a cause that is `work` (emit, call, write, read a document or
 * change a timer under it): admins always; an executor when it may host the plugin whose work the
 * cause is, the action's for a call, or a plugin with a processor on the event's type for a
 * delivery (so a token limited to some plugins acts only under what those plugins' processors and
 * actions are given). Clients never work under a cause (each service refuses them first).
 */
export function mayWorkUnder(declarations: CauseDeclarations, principal: Principal, work: CauseWork): boolean {
  if (principal.role === "admin") return true;
  if (principal.role !== "executor") return false;
  if ((principal.plugins ?? ["*"]).includes("*")) return true;
  if ("action" in work) {
    const plugin = declarations.action(work.action)?.plugin;
    return plugin !== undefined && mayUsePlugin(principal, plugin);
  }
  return declarations
    .list()
    .some(
      ({ compiled: { manifest } }) =>
        mayUsePlugin(principal, manifest.name) && Object.values(manifest.processors).some((p) => p.on.length === 0 || p.on.includes(work.type)),
    );
}
