import { definePlugin, type PluginDefinition } from "../../sdk/ts/src/plugin.js";
import type { ActionContext } from "../../sdk/ts/src/action.js";

/** The timers benchmark plugin: action `timers.fire` (allow *), called by the delays; `onCall` sees each call. */
export function timersPlugin(onCall: (ctx: ActionContext) => void = () => {}): PluginDefinition {
  return definePlugin({
    name: "timers",
    actions: { fire: { allow: ["*"], run: (ctx) => void onCall(ctx) } },
  });
}
