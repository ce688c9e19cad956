// Plugins (PluginService.ListPlugins): each registered plugin's revision, its declared event
// types with their `allow` and schema, its processors, actions and schedules, and links to its
// collections' browsers (views/collections.tsx).

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
                .map(([n, d]) => `${n} (on ${d.on.join(", ")})`)
                .join("; ") || "none"}
              <br />
              actions: {Object.keys(m.actions).join(", ") || "none"}
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
