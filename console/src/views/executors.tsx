// Executors (AdminService.ListExecutors), polled once a second: each connected session, what it
// hosts, its credits and deliveries in flight, and when it connected.

import { useQuery } from "@tanstack/react-query";
import { admin, errorText } from "../api.js";
import { at, duration, ms } from "../format.js";

export function ExecutorsView() {
  const q = useQuery({ queryKey: ["executors"], queryFn: () => admin.listExecutors({}), refetchInterval: 1000 });
  if (q.isPending) return <p className="note">loading…</p>;
  if (q.isError) return <p className="error">{errorText(q.error)}</p>;
  const now = Date.now();
  return (
    <section>
      <h2>Executors</h2>
      <table id="executors">
        <colgroup>
          <col />
          <col />
          <col />
          <col className="hosts" />
          <col className="num" />
          <col className="num" />
          <col className="connected" />
          <col className="heard" />
          <col />
        </colgroup>
        <thead>
          <tr>
            <th>executor</th>
            <th>instance</th>
            <th>principal</th>
            <th>hosts</th>
            <th className="num">credits</th>
            <th className="num">in flight</th>
            <th>connected (UTC)</th>
            <th>last heard</th>
            <th>session</th>
          </tr>
        </thead>
        <tbody>
          {q.data.executors.map((x) => (
            <tr key={x.sessionId} data-session={x.sessionId} data-executor={x.executor}>
              <td>{x.executor}</td>
              <td>{x.instanceId}</td>
              <td>{x.principal}</td>
              <td className="hosts">
                {x.processors.length > 0 && <div>processors: {x.processors.join(", ")}</div>}
                {x.actions.length > 0 && <div>actions: {x.actions.join(", ")}</div>}
                {x.pulses.length > 0 && <div>pulses: {x.pulses.join(", ")}</div>}
              </td>
              <td className="num">{x.credits}</td>
              <td className="num">{x.inFlight}</td>
              <td className="connected">
                {at(x.connectedAt)} <span className="muted">({duration(now - ms(x.connectedAt))} ago)</span>
              </td>
              <td className="heard">{x.lastSeenAt ? `${duration(now - ms(x.lastSeenAt))} ago` : ""}</td>
              <td className="muted">{x.sessionId}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {q.data.executors.length === 0 && <p className="note">No executor is connected.</p>}
    </section>
  );
}
