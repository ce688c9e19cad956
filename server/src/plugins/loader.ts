import { readdirSync, readFileSync, statSync } from "node:fs";
import { extname, join, resolve } from "node:path";
import { parse as parseYaml } from "yaml";
import type { PluginManifest } from "@chronolog/sdk/gen/chronolog/v1/plugin_pb";
import { fail } from "../errors.js";
import { manifestFromJson } from "./manifest.js";

const extensions = new Set([".json", ".yaml", ".yml"]);

/**
 * Reads every `*.json`, `*.yaml` and `*.yml` manifest in `dir` (not
 * recursive), in file-name order. INVALID_ARGUMENT names the file on a
 * syntax error or an unknown field; an Error names a folder that is missing or not a folder.
 */
export function loadManifests(dir: string): PluginManifest[] {
  const found = statSync(dir, { throwIfNoEntry: false });
  if (!found) throw new Error(`no plugins folder ${resolve(dir)} (--plugins): give a folder of plugin manifests (*.json, *.yaml)`);
  if (!found.isDirectory()) throw new Error(`the plugins path ${resolve(dir)} (--plugins) is not a folder: give a folder of plugin manifests (*.json, *.yaml)`);
  const files = readdirSync(dir)
    .filter((f) => extensions.has(extname(f)))
    .sort();
  return files.map((file) => {
    const path = join(dir, file);
    const text = readFileSync(path, "utf8");
    let json: unknown;
    try {
      json = extname(file) === ".json" ? JSON.parse(text) : parseYaml(text);
    } catch (e) {
      fail("invalid_manifest", `cannot parse plugin manifest ${path}: ${e instanceof Error ? e.message : String(e)}`);
    }
    return manifestFromJson(json, path);
  });
}
