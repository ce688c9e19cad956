// The actions' flow limits for admins on the leader (AdminService.ListActions, polled every 2 s):
// each action that declares any, with the calls holding and waiting for a concurrency slot and
// its rate waits since the owner started. Shown above the calls.

import { useQuery } from "@tanstack/react-query";
import { admin, errorText } from "../api.js";
import { duration } from "../format.js";
import { useSession } from "../session.js";

export function ActionLimits() {
  const { admin: isAdmin, standby } = useSession();
  const shown = isAdmin && standby === null; // slots and waits are in the leader's memory
  const q = useQuery({ queryKey: ["actions"], queryFn: () => admin.listActions({}), refetchInterval: 2000, enabled: shown });
  if (!shown) return null;
  if (q.isError) return <p className="error">{errorText(q.error)}</p>;
  const limited = q.data?.actions.filter((a) => a.limits !== "") ?? [];
  if (limited.length === 0) return null;
  return (
    <table id="action-limits">
      <thead>
        <tr>
          <th>action</th>
          <th>limits</th>
          <th className="num" title="calls holding a concurrency slot (those left running by an owner before included)">
            running
          </th>
          <th className="num" title="calls waiting for a concurrency slot">
            waiting
          </th>
          <th title="calls that waited for a token of the rate, how long in all, and the calls waiting now">rate waits</th>
        </tr>
      </thead>
      <tbody>
        {limited.map((a) => (
          <tr key={a.name} data-action={a.name}>
            <td>{a.name}</td>
            <td className="limits">{a.limits}</td>
            <td className="num running">{a.running}</td>
            <td className="num waiting">{a.waiting}</td>
            <td className="rate-waits">
              {/(^|; )rate /.test(a.limits) ? `${String(a.rateWaits)} (${duration(Number(a.rateWaitMs))}), ${a.rateWaiting} waiting` : "—"}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
