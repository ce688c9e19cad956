// Time (TimeService): schedules, timers and pending delays, paged from the server and ordered by
// their next due moment; a timer's next fire times (GetTimer's preview), pause and resume with a
// note, trigger now, backfill a range, cancel for delays, and the lateness histogram.

import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { CatchUpPolicy, OverlapPolicy, TimerKind, type Timer } from "@chronolog/sdk/gen/chronolog/v1/time_pb";
import { errorText, time } from "../api.js";
import { actor, at, duration, json, ms, relative } from "../format.js";
import { useSession } from "../session.js";
import { LatenessChart } from "./lateness.js";
import { Pager, usePageTokens } from "./pager.js";

const pageSize = 50;
const pollMs = 2000;

function when(t: Timer): string {
  const w = t.spec?.when;
  switch (w?.case) {
    case "cron":
      return `cron ${w.value.expression} (${w.value.zone || "UTC"})`;
    case "everyMs":
      return `every ${duration(Number(w.value))}`;
    case "at":
      return `at ${at(w.value)}`;
    default:
      return "";
  }
}

function overdue(t: Timer): string {
  const b = t.overdue?.bound;
  switch (b?.case) {
    case "maxLatenessMs":
      return `≤ ${duration(Number(b.value))} late`;
    case "onTimeOrNever":
      return "on time or never";
    case "unbounded":
      return "any lateness";
    default:
      return "";
  }
}

/** Whether a recurring timer's policy ended it: its end passed, or its maximum count was made. */
function endedByPolicy(t: Timer, now: number): boolean {
  const p = t.policy;
  return p !== undefined && ((p.maxCount > 0n && t.occurrences >= p.maxCount) || (p.end !== undefined && ms(p.end) <= now));
}

/**
 * A timer's state: paused, disabled (a declared schedule turned off by its manifest or a patch),
 * active (it has a next due moment), another region's (a declared schedule this owner does not
 * make), or spent: no occurrence is left to make (a delay or a one-shot whose call was made, a
 * schedule past its end or maximum count).
 */
function timerState(t: Timer, now: number): { key: string; text: string; className: string; title?: string } {
  if (t.paused)
    return { key: "paused", text: `paused${t.pauseNote ? `: ${t.pauseNote}` : ""}`, className: "badge warn", title: `${t.pauseNote} (${at(t.pausedAt)})` };
  if (t.disabled) return { key: "disabled", text: "disabled", className: "badge" };
  if (t.nextDue) return { key: "active", text: "active", className: "badge ok" };
  if (t.kind === TimerKind.DECLARED && !endedByPolicy(t, now))
    return { key: "other-region", text: `region ${t.region}`, className: "badge", title: `made by the owners of region ${t.region}` };
  return { key: "spent", text: "spent", className: "badge", title: `${String(t.occurrences)} made, none left to make` };
}

const kindName: Record<number, string> = { [TimerKind.RUNTIME]: "runtime", [TimerKind.DECLARED]: "declared", [TimerKind.DELAY]: "delay" };

/** Backfills a range of a recurring timer: every occurrence due in [start, end) is made, once. */
function Backfill({ id }: { id: string }) {
  const [start, setStart] = useState("");
  const [end, setEnd] = useState("");
  const [result, setResult] = useState<{ ok: boolean; text: string }>({ ok: true, text: "" });
  const run = useMutation({
    mutationFn: () => {
      const from = new Date(start.trim());
      const to = new Date(end.trim() || Date.now());
      if (Number.isNaN(from.getTime()) || Number.isNaN(to.getTime())) throw new Error("start and end are times, e.g. 2026-12-01T00:00:00Z");
      return time.backfillTimer({ timerId: id, start: timestampFromDate(from), end: timestampFromDate(to) });
    },
    onSuccess: (r) => {
      const before = r.occurrences.filter((o) => o.existing).length;
      setResult({ ok: true, text: `${r.occurrences.length} occurrences in the range: ${r.occurrences.length - before} made now, ${before} made before` });
    },
    onError: (e) => setResult({ ok: false, text: e instanceof Error && !("code" in e) ? e.message : errorText(e) }),
  });
  return (
    <form
      className="inline backfill"
      onSubmit={(e) => {
        e.preventDefault();
        run.mutate();
      }}
    >
      <label>
        Backfill from <input className="backfill-start" placeholder="2026-12-01T00:00:00Z" value={start} onChange={(e) => setStart(e.target.value)} />
      </label>
      <label>
        to <input className="backfill-end" placeholder="now" value={end} onChange={(e) => setEnd(e.target.value)} />
      </label>
      <button type="submit" className="backfill-run" disabled={run.isPending}>
        Backfill
      </button>
      <span className={`backfill-result ${result.ok ? "ok" : "error"}`}>{result.text}</span>
    </form>
  );
}

function Preview({ id }: { id: string }) {
  const { admin, standby } = useSession();
  const q = useQuery({ queryKey: ["timer", id], queryFn: () => time.getTimer({ timerId: id, previewCount: 5 }) });
  if (q.isError) return <p className="error">{errorText(q.error)}</p>;
  const t = q.data?.timer;
  if (!t) return <p className="note">loading…</p>;
  const p = t.policy;
  return (
    <div className="preview" data-timer={id}>
      <strong>Next fire times</strong>
      <ol className="preview-times">
        {t.preview.map((ts) => (
          <li key={`${String(ts.seconds)}:${ts.nanos}`}>
            {at(ts)} UTC <span className="muted">({relative(ts)})</span>
          </li>
        ))}
        {t.preview.length === 0 && <li className="muted">none</li>}
      </ol>
      <span className="muted">
        actor {actor(t.actor)}; input{" "}
        {t.inputWithheld ? <span className="input-withheld">withheld (this token may not read {t.action}'s work)</span> : json(t.input)}; chain depth{" "}
        {t.chainDepth}
        {p &&
          `; jitter ${duration(Number(p.jitterMs))}, max count ${p.maxCount || "none"}, overlap ${OverlapPolicy[p.overlap]}, catch-up ${CatchUpPolicy[p.catchUp]}`}
      </span>
      {!standby && t.kind !== TimerKind.DELAY && (admin || t.kind !== TimerKind.DECLARED) && <Backfill id={id} />}
    </div>
  );
}

export function TimeView() {
  const client = useQueryClient();
  // Declared schedules are changed by admins only (the owner refuses others); a standby changes nothing.
  const { admin, standby } = useSession();
  const changes = standby === null;
  const [kind, setKind] = useState<TimerKind>(TimerKind.UNSPECIFIED);
  const pages = usePageTokens();
  const [open, setOpen] = useState("");
  const [note, setNote] = useState("");
  const [result, setResult] = useState<{ ok: boolean; text: string }>({ ok: true, text: "" });
  const { token } = pages;
  const q = useQuery({ queryKey: ["timers", kind, token], queryFn: () => time.listTimers({ pageSize, pageToken: token, kind }), refetchInterval: pollMs });
  const act = useMutation({
    mutationFn: async (v: { op: "pause" | "resume" | "trigger" | "cancel"; id: string }): Promise<string> => {
      switch (v.op) {
        case "pause": {
          const r = await time.pauseTimer({ timerId: v.id, note });
          return `${v.id} paused${r.unchanged ? " (it already was)" : ""}`;
        }
        case "resume": {
          const r = await time.resumeTimer({ timerId: v.id, note });
          return `${v.id} resumed${r.unchanged ? " (it was not paused)" : ""}`;
        }
        case "trigger": {
          const r = await time.triggerTimer({ timerId: v.id });
          return `${v.id} triggered: occurrence ${r.occurrenceId}`;
        }
        case "cancel":
          await time.cancelDelay({ delayId: v.id });
          return `delay ${v.id} cancelled`;
      }
    },
    onSuccess: (text) => {
      setResult({ ok: true, text });
      void client.invalidateQueries({ queryKey: ["timers"] });
      void client.invalidateQueries({ queryKey: ["timer"] });
    },
    onError: (e) => setResult({ ok: false, text: errorText(e) }),
  });
  const now = Date.now();
  return (
    <section>
      <h2>Time</h2>
      <div className="toolbar">
        <select
          id="timer-kind"
          value={kind}
          onChange={(e) => {
            setKind(Number(e.target.value) as TimerKind);
            pages.reset();
          }}
        >
          <option value={TimerKind.UNSPECIFIED}>all timers</option>
          <option value={TimerKind.DECLARED}>declared schedules</option>
          <option value={TimerKind.RUNTIME}>runtime schedules</option>
          <option value={TimerKind.DELAY}>delays</option>
        </select>
        {changes && (
          <input
            id="timer-note"
            className="wide"
            placeholder="note for pause / resume (recorded in the log)"
            value={note}
            onChange={(e) => setNote(e.target.value)}
          />
        )}
      </div>
      {q.isError && <p className="error">{errorText(q.error)}</p>}
      <table id="timers">
        <colgroup>
          <col className="id" />
          <col className="kind" />
          <col className="action" />
          <col className="when" />
          <col className="due" />
          <col className="made" />
          <col className="lateness" />
          <col className="state" />
          <col />
        </colgroup>
        <thead>
          <tr>
            <th>timer</th>
            <th>kind</th>
            <th>action</th>
            <th>when</th>
            <th>next due (UTC)</th>
            <th className="num">made</th>
            <th>lateness</th>
            <th>state</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {q.data?.timers.flatMap((t) => {
            const state = timerState(t, now);
            const row = (
              <tr key={t.id} data-id={t.id} data-paused={String(t.paused)} data-state={state.key}>
                <td title={t.id}>
                  <button type="button" className="link" onClick={() => setOpen(open === t.id ? "" : t.id)} title="next fire times">
                    {t.id}
                  </button>
                </td>
                <td>{kindName[t.kind] ?? ""}</td>
                <td>{t.action}</td>
                <td title={when(t)}>
                  {when(t)}
                  {t.cancelOn.length > 0 && <div className="muted cancel-on">{cancelOnText(t)}</div>}
                </td>
                <td className="next-due">
                  {t.nextDue ? (
                    <>
                      {at(t.nextDue)} <span className="muted">({relative(t.nextDue, now)})</span>
                    </>
                  ) : (
                    <span className="muted">—</span>
                  )}
                </td>
                <td className="num occurrences">{String(t.occurrences)}</td>
                <td>{overdue(t)}</td>
                <td className="state">
                  <span className={state.className} title={state.title}>
                    {state.text}
                  </span>
                </td>
                <td className="actions">
                  {changes && t.kind !== TimerKind.DELAY && (admin || t.kind !== TimerKind.DECLARED) && (
                    <>
                      <button
                        type="button"
                        className={t.kind === TimerKind.DECLARED ? "admin pause" : "pause"}
                        disabled={act.isPending}
                        onClick={() => act.mutate({ op: t.paused ? "resume" : "pause", id: t.id })}
                      >
                        {t.paused ? "Resume" : "Pause"}
                      </button>
                      <button
                        type="button"
                        className={t.kind === TimerKind.DECLARED ? "admin trigger" : "trigger"}
                        disabled={act.isPending}
                        onClick={() => act.mutate({ op: "trigger", id: t.id })}
                      >
                        Trigger now
                      </button>
                    </>
                  )}
                  {changes && t.kind === TimerKind.DELAY && t.nextDue && (
                    <button type="button" className="cancel danger" disabled={act.isPending} onClick={() => act.mutate({ op: "cancel", id: t.id })}>
                      Cancel
                    </button>
                  )}
                </td>
              </tr>
            );
            return open === t.id
              ? [
                  row,
                  <tr key={`${t.id}/preview`}>
                    <td colSpan={9}>
                      <Preview id={t.id} />
                    </td>
                  </tr>,
                ]
              : [row];
          })}
        </tbody>
      </table>
      {q.data && q.data.timers.length === 0 && <p className="note">No timers.</p>}
      <Pager pages={pages} next={q.data?.nextPageToken} />
      <p id="time-result" className={result.ok ? "ok" : "error"}>
        {result.text}
      </p>
      {admin && changes && <LatenessChart />}
      {admin && !changes && <p className="note">The lateness of time's calls is measured where they are made: on the leader's console.</p>}
    </section>
  );
}

/** What cancels a timer: `cancelled by order.paid (data.order_id = input.order_id)`, ", " between events. */
function cancelOnText(t: Timer): string {
  const events = t.cancelOn.map((c) => {
    const match = Object.entries(c.match).map(([event, input]) => `${event} = ${input}`);
    return match.length > 0 ? `${c.type} (${match.join(", ")})` : c.type;
  });
  return `cancelled by ${events.join(", ")}`;
}
