// A processor's failed deliveries with their errors, a page at a time: redriven (delivered again)
// or dismissed (forgotten, recorded as `processor.dismissed`) one, several or all at once.

import { useMutation, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { admin, errorText } from "../api.js";
import { at } from "../format.js";
import { useSession } from "../session.js";
import { Pager, usePageTokens } from "./pager.js";

const failedPageSize = 20;

export function FailedDeliveries({ processor, onDone, onError }: { processor: string; onDone: (t: string) => void; onError: (e: unknown) => void }) {
  const changes = useSession().standby === null;
  const pages = usePageTokens();
  const { token } = pages;
  // What is chosen is on the page shown: another page starts with nothing chosen.
  const [picked, setPicked] = useState<{ page: string; seqs: Set<string> }>({ page: "", seqs: new Set() });
  const chosen = picked.page === token ? picked.seqs : new Set<string>();
  const setChosen = (seqs: Set<string>) => setPicked({ page: token, seqs });
  const q = useQuery({
    queryKey: ["failed", processor, token],
    queryFn: () => admin.listFailedDeliveries({ processor, pageSize: failedPageSize, pageToken: token }),
    refetchInterval: 2000,
  });
  const redrive = useMutation({
    mutationFn: (seqs: bigint[]) => admin.redeliverFailed({ processor, seqs }),
    onSuccess: (r) => {
      setChosen(new Set());
      onDone(`${processor}: ${r.count} failed deliveries queued again`);
    },
    onError,
  });
  const dismiss = useMutation({
    mutationFn: (seqs: bigint[]) => admin.dismissFailed({ processor, seqs, all: seqs.length === 0 }),
    onSuccess: (r) => {
      setChosen(new Set());
      onDone(`${processor}: ${r.count} failed deliveries dismissed`);
    },
    onError,
  });
  const busy = redrive.isPending || dismiss.isPending;
  const toggle = (seq: string) => {
    const next = new Set(chosen);
    if (next.has(seq)) next.delete(seq);
    else next.add(seq);
    setChosen(next);
  };
  if (q.isError) return <p className="error">{errorText(q.error)}</p>;
  const rows = q.data?.deliveries ?? [];
  return (
    <>
      <h3>Failed deliveries</h3>
      {changes && (
        <div className="toolbar">
          <button
            id="redrive-selected"
            type="button"
            className="admin"
            disabled={chosen.size === 0 || busy}
            onClick={() => redrive.mutate([...chosen].map(BigInt))}
          >
            Redrive selected ({chosen.size})
          </button>
          <button
            id="redrive-all"
            type="button"
            className="admin"
            disabled={rows.length === 0 || busy}
            onClick={() => window.confirm(`Deliver every failed event of ${processor} again?`) && redrive.mutate([])}
          >
            Redrive all
          </button>
          <button
            id="dismiss-selected"
            type="button"
            className="admin"
            disabled={chosen.size === 0 || busy}
            onClick={() =>
              window.confirm(`Dismiss ${chosen.size} failed deliveries of ${processor}? They are not delivered again.`) &&
              dismiss.mutate([...chosen].map(BigInt))
            }
          >
            Dismiss selected ({chosen.size})
          </button>
        </div>
      )}
      <table id="failed">
        <colgroup>
          <col className="pick" />
          <col className="seq" />
          <col className="event" />
          <col className="type" />
          <col className="time" />
          <col className="attempts" />
          <col />
          <col className="redrive" />
        </colgroup>
        <thead>
          <tr>
            <th />
            <th className="num">seq</th>
            <th>event</th>
            <th>type</th>
            <th>committed</th>
            <th className="num">attempts</th>
            <th>error</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {rows.map((d) => {
            const seq = String(d.seq);
            return (
              <tr key={seq} data-seq={seq}>
                <td>{changes && <input type="checkbox" className="admin" checked={chosen.has(seq)} onChange={() => toggle(seq)} />}</td>
                <td className="num">{seq}</td>
                {d.event ? (
                  <>
                    <td>{d.event.id}</td>
                    <td>{d.event.type}</td>
                    <td>{at(d.event.at)}</td>
                  </>
                ) : (
                  <td colSpan={3} className="muted">
                    removed from the log
                  </td>
                )}
                <td className="num">{d.attempts}</td>
                <td className="error-text" title={d.error}>
                  {d.error}
                </td>
                <td>
                  {changes && (
                    <>
                      <button type="button" className="admin redrive" disabled={busy} onClick={() => redrive.mutate([BigInt(seq)])}>
                        Redrive
                      </button>
                      <button
                        type="button"
                        className="admin dismiss"
                        disabled={busy}
                        onClick={() => window.confirm(`Dismiss the failed delivery of seq ${seq}? It is not delivered again.`) && dismiss.mutate([BigInt(seq)])}
                      >
                        Dismiss
                      </button>
                    </>
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {q.data && rows.length === 0 && <p className="note">{pages.back ? "No more failed deliveries after the previous page." : "No failed deliveries."}</p>}
      <Pager pages={pages} next={q.data?.nextPageToken} />
    </>
  );
}
