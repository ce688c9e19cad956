// Calls: the recent action calls, read from the log (the API has no list of calls): the
// `action.started`, `action.retried`, `action.completed` and `action.failed` events of the last
// seqs of the log, page by page from the server, grouped by `call_id`; a call made by a timer's
// trigger or backfill names that timer (from `timer.triggered` / `timer.backfilled` in the same
// seqs), another call of time without a cause says "time". A call's page is its
// `action.started` event's page (views/event.tsx), which lists its attempts.

import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { Link } from "wouter";
import type { Event } from "@chronolog/sdk/gen/chronolog/v1/event_pb";
import { errorText, log } from "../api.js";
import { actor, at, duration, ms } from "../format.js";
import { ActionLimits } from "./action-limits.js";

const actionTypes = ["action.started", "action.retried", "action.completed", "action.failed"];
/** Time's records that name the occurrences (= call ids) they made. */
const timerTypes = ["timer.triggered", "timer.backfilled"];
const pollMs = 2000;
/** Calls shown at most (newest first). */
const shown = 100;

interface Call {
  id: string;
  action: string;
  started?: Event;
  end?: Event;
  attempts: number;
  lastError: string;
  /** The timer that made it, when a trigger or backfill in the window says so. */
  timer?: { id: string; how: string; event: Event };
}

/** The calls among the action events of the last `span` seqs of the log, newest first. */
async function recentCalls(span: bigint): Promise<{ calls: Call[]; from: bigint; head: bigint }> {
  const { headSeq } = await log.readLog({ pageSize: 1 });
  const from = headSeq > span ? headSeq - span : 0n;
  const byId = new Map<string, Call>();
  const byTimer = new Map<string, Call["timer"]>();
  let pageToken = "";
  do {
    const page = await log.readLog({ afterSeq: from, pageToken, pageSize: 1000, types: [...actionTypes, ...timerTypes], fromFirstSeq: true });
    for (const e of page.events) {
      if (e.type === "timer.triggered" || e.type === "timer.backfilled") {
        const ids = e.type === "timer.triggered" ? [e.data?.occurrence_id] : ((e.data?.occurrence_ids as unknown[]) ?? []);
        for (const id of ids)
          byTimer.set(String(id), { id: String(e.data?.timer_id ?? ""), how: e.type === "timer.triggered" ? "triggered" : "backfilled", event: e });
        continue;
      }
      const id = String(e.data?.call_id ?? "");
      const call = byId.get(id) ?? { id, action: String(e.data?.action ?? ""), attempts: 0, lastError: "" };
      byId.set(id, call);
      call.attempts = Math.max(call.attempts, Number(e.data?.attempt ?? 1));
      if (e.type === "action.started") call.started = e;
      else if (e.type === "action.retried") call.lastError = String(e.data?.error ?? "");
      else {
        call.end = e;
        if (e.type === "action.failed") call.lastError = String(e.data?.error ?? "");
      }
    }
    pageToken = page.nextPageToken;
  } while (pageToken);
  const calls = [...byId.values()].reverse().slice(0, shown);
  for (const c of calls) c.timer = byTimer.get(c.id);
  return { calls, from, head: headSeq };
}

function status(c: Call): { text: string; className: string } {
  if (c.end?.type === "action.completed") return { text: "completed", className: "badge ok" };
  if (c.end?.type === "action.failed") return { text: "failed", className: "badge bad" };
  return { text: c.attempts > 1 ? "retrying" : "running", className: "badge warn" };
}

export function CallsView() {
  const [span, setSpan] = useState(2000n);
  const q = useQuery({ queryKey: ["calls", String(span)], queryFn: () => recentCalls(span), refetchInterval: pollMs });
  const now = Date.now();
  return (
    <section>
      <h2>Calls</h2>
      <div className="toolbar">
        <label htmlFor="calls-window">in the last</label>
        <select id="calls-window" value={String(span)} onChange={(e) => setSpan(BigInt(e.target.value))}>
          {[1000n, 2000n, 10000n, 50000n].map((n) => (
            <option key={String(n)} value={String(n)}>
              {String(n)} events of the log
            </option>
          ))}
        </select>
        {q.data && (
          <span className="muted">
            seqs {String(q.data.from + 1n)} to {String(q.data.head)}, newest first, at most {shown}
          </span>
        )}
      </div>
      {q.isError && <p className="error">{errorText(q.error)}</p>}
      <ActionLimits />
      <table id="calls">
        <colgroup>
          <col className="id" />
          <col className="action" />
          <col className="status" />
          <col className="attempts" />
          <col className="time" />
          <col className="duration" />
          <col className="who" />
          <col />
        </colgroup>
        <thead>
          <tr>
            <th>call</th>
            <th>action</th>
            <th>status</th>
            <th className="num">attempts</th>
            <th>started (UTC)</th>
            <th className="num">duration</th>
            <th>actor</th>
            <th>cause, timer / error</th>
          </tr>
        </thead>
        <tbody>
          {q.data?.calls.map((c) => {
            const s = status(c);
            const took = c.started ? (c.end ? ms(c.end.at) : now) - ms(c.started.at) : Number.NaN;
            return (
              <tr key={c.id} data-call={c.id} data-status={s.text}>
                <td title={c.id}>{c.started ? <Link href={`/events/${encodeURIComponent(c.started.id)}`}>{c.id}</Link> : c.id}</td>
                <td>{c.action}</td>
                <td>
                  <span className={s.className}>{s.text}</span>
                </td>
                <td className="num attempts">{c.attempts}</td>
                <td>{at(c.started?.at)}</td>
                <td className="num">{Number.isNaN(took) ? "" : duration(took)}</td>
                <td>{actor(c.started?.actor)}</td>
                <td className="error-text">
                  {c.started?.cause && <Link href={`/events/${encodeURIComponent(c.started.cause)}`}>cause {c.started.cause}</Link>}
                  {c.timer && (
                    <Link className="timer" href={`/events/${encodeURIComponent(c.timer.event.id)}`}>
                      timer {c.timer.id} ({c.timer.how})
                    </Link>
                  )}
                  {!c.timer && !c.started?.cause && c.started?.data?.chain_depth !== undefined && <span className="muted">time</span>}
                  {c.lastError && <span className="error"> {c.lastError}</span>}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {q.data && q.data.calls.length === 0 && <p className="note">No recorded action calls in this part of the log.</p>}
    </section>
  );
}
