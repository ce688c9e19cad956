import { ActionStatusSchema } from "@chronolog/sdk/gen/chronolog/v1/admin_pb";
import { limitsText } from "../flow/limits-text.js";
import { client, type ClientFlags } from "./client-commands.js";
import { jsonLine } from "./json.js";
import { formatTable } from "./table.js";

/**
 * `chronolog limits`: the flow limits every registered plugin declares (PluginService.ListPlugins),
 * one row per processor or action with any (concurrency by key, rate, debounce, priority): KIND,
 * NAME, LIMITS; with `json`, JSON lines `{kind, name, limits}`. A processor's rate waits and
 * debounced bursts so far are in `chronolog cursors`.
 */
export async function limitsCommand(flags: ClientFlags & { json: boolean }): Promise<void> {
  const { plugins } = await client(flags).plugins.listPlugins({});
  const rows: { kind: string; name: string; limits: string }[] = [];
  for (const { manifest } of plugins) {
    if (!manifest) continue;
    for (const [name, decl] of Object.entries(manifest.processors))
      rows.push({ kind: "processor", name: `${manifest.name}.${name}`, limits: limitsText(decl) });
    for (const [name, decl] of Object.entries(manifest.actions)) rows.push({ kind: "action", name: `${manifest.name}.${name}`, limits: limitsText(decl) });
  }
  const limited = rows.filter((r) => r.limits !== "").sort((a, b) => a.name.localeCompare(b.name));
  if (flags.json) {
    for (const row of limited) console.log(JSON.stringify(row));
    return;
  }
  console.log(
    formatTable(
      ["KIND", "NAME", "LIMITS"],
      limited.map((r) => [r.kind, r.name, r.limits]),
      ["LIMITS"],
    ),
  );
}

/**
 * `chronolog actions`: every declared action from AdminService.ListActions (admin role) as a
 * table (NAME, RUNNING, WAITING, RATE WAITS, LIMITS): the calls holding and waiting for a
 * concurrency slot, the calls that waited for a rate token (`N (T s), W now`; "-" without a
 * rate), its limits; or, with `json`, JSON lines (the API's ActionStatus in proto3 JSON).
 */
export async function actionsCommand(flags: ClientFlags & { json: boolean }): Promise<void> {
  const { actions } = await client(flags).admin.listActions({});
  if (flags.json) {
    for (const a of actions) console.log(jsonLine(ActionStatusSchema, a));
    return;
  }
  const rows = actions.map((a) => [
    a.name,
    String(a.running),
    String(a.waiting),
    /(^|; )rate /.test(a.limits) ? `${a.rateWaits} (${(Number(a.rateWaitMs) / 1000).toFixed(1)} s), ${a.rateWaiting} now` : "-",
    a.limits || "-",
  ]);
  console.log(formatTable(["NAME", "RUNNING", "WAITING", "RATE WAITS", "LIMITS"], rows, ["LIMITS"]));
}
