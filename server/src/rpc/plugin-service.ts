import type { ServiceImpl } from "@connectrpc/connect";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { PluginService } from "@chronolog/sdk/gen/chronolog/v1/plugin_pb";
import { fail } from "../errors.js";
import type { RegisteredPlugin } from "../plugins/manifest.js";
import type { PluginRegistry } from "../plugins/registry.js";
import { principalOf } from "./context.js";

/** PluginService's reads (ListPlugins, GetPlugin): any principal may list the registered plugins. */
export function pluginReads(registry: PluginRegistry): Pick<ServiceImpl<typeof PluginService>, "listPlugins" | "getPlugin"> {
  return {
    listPlugins() {
      return { plugins: registry.list().map(pluginToProto) };
    },
    getPlugin(req) {
      return { plugin: pluginToProto(registry.get(req.name)) };
    },
  };
}

/** PluginService: registration needs the admin role. */
export function pluginService(registry: PluginRegistry): ServiceImpl<typeof PluginService> {
  return {
    ...pluginReads(registry),
    async registerPlugin(req, ctx) {
      const principal = principalOf(ctx);
      if (principal.role !== "admin")
        fail("permission_denied", `principal ${principal.name} (role ${principal.role}) may not register plugins; the admin role is needed`);
      if (!req.manifest) fail("bad_request", "manifest is required", [{ field: "manifest", description: "required" }]);
      const { plugin, changed } = await registry.register(req.manifest);
      return { plugin: pluginToProto(plugin), changed };
    },
  };
}

function pluginToProto(p: RegisteredPlugin) {
  return { manifest: p.compiled.manifest, revision: p.revision, registeredAt: timestampFromMs(p.registeredAt) };
}
