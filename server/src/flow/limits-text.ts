import type { ActionDeclaration, ProcessorDeclaration } from "@chronolog/sdk/gen/chronolog/v1/plugin_pb";

/** `ms` in the unit it reads best in: `250 ms`, `2 s`, `1.5 s`, `10 min`. */
function span(ms: number): string {
  if (ms >= 60_000 && ms % 60_000 === 0) return `${ms / 60_000} min`;
  if (ms >= 1_000) return `${ms / 1_000} s`;
  return `${ms} ms`;
}

/**
 * A processor's or an action's flow limits in a few words, for listings (ListProcessors'
 * `limits`, the CLI, the console): its concurrency by key, rate, debounce and priority, "; "
 * between them; "" when it declares none. E.g. `2 per data.customer, 6 in all; rate 10 per 1 s
 * per data.customer (burst 10); debounce 2 s by data.doc, at most 3 s; priority data.priority`.
 */
export function limitsText(decl: ProcessorDeclaration | ActionDeclaration): string {
  const parts: string[] = [];
  const c = decl.concurrencyLimit;
  if (c) {
    const key = c.key || ("key" in decl ? decl.key : ""); // a processor's concurrency without a key of its own is by the processor's key
    const words = [key ? `${c.limit || 1} per ${key}` : `${c.limit || "no bound"} in flight`];
    if (c.total) words.push(`${c.total} in all`);
    if (c.ifActive && c.ifActive !== "queue") words.push(`if active: ${c.ifActive}`);
    const weights = Object.entries(c.weights ?? {});
    if (weights.length > 0) words.push(`weights ${weights.map(([key, w]) => `${key}=${w}`).join(" ")}`);
    parts.push(words.join(", "));
  }
  const r = decl.rate;
  if (r) parts.push(`rate ${r.limit} per ${span(r.periodMs || 1_000)}${r.key ? ` per ${r.key}` : ""} (burst ${r.burst || r.limit})`);
  if ("debounce" in decl && decl.debounce) {
    const d = decl.debounce;
    parts.push(`debounce ${span(d.periodMs)}${d.key ? ` by ${d.key}` : ""}${d.maxWaitMs ? `, at most ${span(d.maxWaitMs)}` : ""}`);
  }
  if (decl.priority) parts.push(`priority ${decl.priority}`);
  return parts.join("; ");
}
