// Plugins (PluginService.ListPlugins): each registered plugin's revision, its declared event
// types with their `allow` and schema, its processors, actions and schedules, and links to its
// collections' browsers (views/collections.tsx).

import type { ActionDeclaration, ProcessorDeclaration } from "@chronolog/sdk/gen/chronolog/v1/plugin_pb";
import { useQuery } from "@tanstack/react-query";
import { Link } from "wouter";
import { errorText, plugins } from "../api.js";
import { at, json } from "../format.js";

export function PluginsView() {
  const q = useQuery({ queryKey: ["plugins"], queryFn: () => plugins.listPlugins({}) });
  if (q.isPending) return <p className="note">loading…</p>;
  if (q.isError) return <p className="error">{errorText(q.error)}</p>;
  return (
    <section>
      <h2>Plugins</h2>
      {q.data.plugins.map((p) => {
        const m = p.manifest!;
        return (
          <article key={m.name} className="plugin" data-name={m.name}>
            <h3>
              {m.name}{" "}
              <small>
                {m.version && `version ${m.version}, `}revision {p.revision}, registered {at(p.registeredAt)} UTC
              </small>
            </h3>
            <table className="event-types">
              <thead>
                <tr>
                  <th>event type</th>
                  <th>allow</th>
                  <th>schema</th>
                </tr>
              </thead>
              <tbody>
                {Object.entries(m.events).map(([type, d]) => (
                  <tr key={type} data-type={type}>
                    <td>{type}</td>
                    <td>{d.allow.join(", ")}</td>
                    <td>
                      <details>
                        <summary>{d.description || "schema"}</summary>
                        <pre>{json(d.schema, 2)}</pre>
                      </details>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            <p className="muted">
              processors:{" "}
              {Object.entries(m.processors)
                .map(([n, d]) => `${n} (on ${d.on.join(", ")}${flowLimits(d) ? `; ${flowLimits(d)}` : ""})`)
                .join("; ") || "none"}
              <br />
              actions:{" "}
              {Object.entries(m.actions)
                .map(([n, d]) => (flowLimits(d) ? `${n} (${flowLimits(d)})` : n))
                .join(", ") || "none"}
              <br />
              schedules: {Object.keys(m.schedules).join(", ") || "none"}
            </p>
            <p className="collections">
              collections:{" "}
              {Object.keys(m.collections).map((c) => (
                <Link key={c} href={`/collections/${encodeURIComponent(c)}`} data-collection={c}>
                  {c}
                </Link>
              ))}
              {Object.keys(m.collections).length === 0 && <span className="muted">none</span>}
            </p>
          </article>
        );
      })}
      {q.data.plugins.length === 0 && <p className="note">No plugins are registered.</p>}
    </section>
  );
}

/** A processor's or an action's flow limits in a few words ("" without any): concurrency by key, rate, debounce, priority. */
function flowLimits(d: ProcessorDeclaration | ActionDeclaration): string {
  const words: string[] = [];
  const c = d.concurrencyLimit;
  if (c) words.push(`${c.limit || 1} ${c.key ? `per ${c.key}` : "in flight"}${c.total ? `, ${c.total} in all` : ""}`);
  if (c && Object.keys(c.weights).length > 0)
    words.push(
      `weights ${Object.entries(c.weights)
        .map(([k, w]) => `${k}=${w}`)
        .join(" ")}`,
    );
  if (d.rate) words.push(`rate ${d.rate.limit} per ${d.rate.periodMs || 1000} ms${d.rate.key ? ` per ${d.rate.key}` : ""}`);
  if ("debounce" in d && d.debounce) words.push(`debounce ${d.debounce.periodMs} ms${d.debounce.key ? ` by ${d.debounce.key}` : ""}`);
  if (d.priority) words.push(`priority ${d.priority}`);
  return words.join(", ");
}
