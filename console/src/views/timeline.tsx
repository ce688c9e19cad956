// An event's causal tree as a timeline (timeline.ts builds the rows): from the event at the top of
// its chain — up its causes, and from a call of time to the timer.scheduled (or trigger, or
// backfill) that made it — down to everything made under it (ReadLog's cause filter with
// `descendants`, page by page up to `maxShown` events). Read again every 2 s while something in
// it is still going (every 15 s once all has ended), so a delay's call appears when it is made. A row's bar spans its time on the tree's scale; an event carrying a trace id links to
// the trace viewer the owner's config names (`console.trace_url`).

import { useQuery } from "@tanstack/react-query";
import { Link } from "wouter";
import type { Event } from "@chronolog/sdk/gen/chronolog/v1/event_pb";
import { admin, consoleSettings, errorText, log, plugins } from "../api.js";
import type { ChainLink } from "../cause-chain.js";
import { duration, ms } from "../format.js";
import { useSession } from "../session.js";
import { timelineRows, traceHref, traceIdOf, type Row } from "../timeline.js";

/** Events of the tree read at most. */
const maxShown = 2000;
/** Causes followed upwards at most, in all. */
const maxUp = 50;
/** Pages of `timer.*` events read at most to find what made a call of time. */
const maxTimerPages = 10;
/** How often the tree is read again while something in it is still going (a call running, a timer not yet due, a delivery pending)... */
const pollMs = 2000;
/** ...and once everything in it has ended (work may still come under it, e.g. a processor started later). */
const settledPollMs = 15_000;

/** True when a row of the tree is still going. */
function going(rows: Row[]): boolean {
  return rows.some((r) => r.tone === "warn");
}

/** The event that made the call of time `started` (its timer's `timer.scheduled` before it, or the trigger or backfill naming it), if found. */
async function madeBy(started: Event): Promise<Event | undefined> {
  const timerId = String(started.data?.timer_id ?? "");
  const callId = String(started.data?.call_id ?? "");
  let found: Event | undefined;
  let pageToken = "";
  for (let page = 0; page < maxTimerPages; page++) {
    const read = await log.readLog({
      pageToken,
      pageSize: 1000,
      types: ["timer.scheduled", "timer.triggered", "timer.backfilled"],
      where: { timer_id: timerId },
    });
    for (const e of read.events) {
      if (e.seq >= started.seq) return found;
      const names =
        e.type === "timer.triggered"
          ? e.data?.occurrence_id === callId
          : e.type === "timer.backfilled"
            ? (e.data?.occurrence_ids as unknown[] | undefined)?.includes(callId)
            : false;
      if (names) return e;
      if (e.type === "timer.scheduled") found = e;
    }
    pageToken = read.nextPageToken;
    if (!pageToken) break;
  }
  return found;
}

/**
 * The top of `event`'s chain: up its causes (`causes`, read already), across calls of time. A
 * withheld cause (a type the token may not read) ends it below: the tree is walked through what
 * the reader may read only, so from above it the event would not be found.
 */
async function topOf(event: Event, causes: ChainLink[]): Promise<Event> {
  const withheldAt = causes.findIndex((c) => "withheld" in c);
  const readable = (withheldAt < 0 ? causes : causes.slice(0, withheldAt)) as Event[];
  let top = readable.at(-1) ?? event;
  if (withheldAt >= 0) return top;
  for (let steps = causes.length; steps < maxUp; steps++) {
    let up: Event | undefined;
    if (top.cause) up = (await log.getEvent({ id: top.cause }).catch(() => undefined))?.event;
    else if (top.type === "action.started" && top.data?.timer_id) up = await madeBy(top);
    if (!up) break;
    top = up;
  }
  return top;
}

async function readTree(event: Event, causes: ChainLink[], isAdmin: boolean) {
  const root = await topOf(event, causes);
  const under: Event[] = [];
  let pageToken = "";
  let cut = false;
  do {
    const page = await log.readLog({ cause: root.id, descendants: true, pageSize: 1000, pageToken });
    under.push(...page.events);
    cut ||= page.treeCut;
    pageToken = page.nextPageToken;
  } while (pageToken && under.length < maxShown);
  const processorsOn = new Map<string, string[]>();
  for (const p of (await plugins.listPlugins({})).plugins) {
    const m = p.manifest!;
    for (const [name, spec] of Object.entries(m.processors))
      for (const type of spec.on) processorsOn.set(type, [...(processorsOn.get(type) ?? []), `${m.name}.${name}`]);
  }
  const cursors = isAdmin ? new Map((await admin.listProcessors({})).processors.map((p) => [p.name, p.ackFloor])) : undefined;
  return { root, under, processorsOn, cursors, cut: cut || pageToken !== "" };
}

function Bar({ row, from, span }: { row: Row; from: number; span: number }) {
  const left = ((row.startMs - from) / span) * 100;
  const width = row.endMs === undefined ? 0 : ((row.endMs - row.startMs) / span) * 100;
  return (
    <div className="bar-track">
      <div
        className={`bar ${row.kind} ${row.endMs === undefined ? "point" : ""}`}
        style={{ left: `${Math.min(left, 99.5)}%`, width: `${Math.max(width, 0.5)}%` }}
      />
    </div>
  );
}

function Label({ row, traceUrl }: { row: Row; traceUrl: string }) {
  const trace = row.event ? traceIdOf(row.event) : "";
  const href = traceHref(traceUrl, trace);
  const target = row.event ? `/events/${encodeURIComponent(row.event.id)}` : row.href;
  return (
    <>
      <span className={`kind ${row.kind}`}>{row.kind}</span>{" "}
      {target ? (
        <Link href={target} className={row.event ? "event-link" : undefined} data-id={row.event?.id}>
          {row.label}
        </Link>
      ) : (
        row.label
      )}{" "}
      <span className="muted">{row.detail}</span>
      {href && (
        <>
          {" "}
          <a className="trace" href={href} target="_blank" rel="noreferrer">
            trace {trace.slice(0, 8)}…
          </a>
        </>
      )}
    </>
  );
}

/** The causal tree of `event` (its causes `causes` read already, nearest first) as a timeline. */
export function Timeline({ event, causes }: { event: Event; causes: ChainLink[] }) {
  const session = useSession();
  const q = useQuery({
    queryKey: ["timeline", event.id, session.admin],
    queryFn: () => readTree(event, causes, session.admin),
    refetchInterval: (query) => {
      const tree = query.state.data;
      return !tree || going(timelineRows({ ...tree, currentId: event.id, nowMs: Date.now() })) ? pollMs : settledPollMs;
    },
  });
  const settings = useQuery({ queryKey: ["settings"], queryFn: consoleSettings, staleTime: Number.POSITIVE_INFINITY });
  if (q.isPending) return <p className="note">reading the tree…</p>;
  if (q.isError) return <p className="error">{errorText(q.error)}</p>;
  const nowMs = Date.now();
  const rows = timelineRows({ ...q.data, currentId: event.id, nowMs });
  const from = ms(q.data.root.at);
  const to = Math.max(from + 1, ...rows.map((r) => r.endMs ?? r.startMs));
  const span = to - from;
  const traceUrl = settings.data?.trace_url ?? "";
  return (
    <>
      <p className="note" id="timeline-note">
        {q.data.under.length} {q.data.under.length === 1 ? "event" : "events"} under{" "}
        <Link href={`/events/${encodeURIComponent(q.data.root.id)}`}>{q.data.root.type}</Link>, over {duration(span)}
        {q.data.cut && ` (cut at ${q.data.under.length} events: the tree goes on below)`}.
      </p>
      <table id="timeline" className="timeline">
        <colgroup>
          <col className="what" />
          <col className="offset" />
          <col className="took" />
          <col className="outcome" />
          <col className="span" />
        </colgroup>
        <thead>
          <tr>
            <th>what</th>
            <th className="num">at</th>
            <th className="num">took</th>
            <th>outcome</th>
            <th>on the tree's {duration(span)}</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.key} data-kind={r.kind} data-id={r.event?.id ?? r.key} data-outcome={r.outcome} className={r.current ? "current" : undefined}>
              <td className={`what depth-${Math.min(r.depth, 12)}`}>
                <Label row={r} traceUrl={traceUrl} />
              </td>
              <td className="num">+{duration(r.startMs - from)}</td>
              <td className="num took">{r.endMs === undefined ? "" : duration(r.endMs - r.startMs)}</td>
              <td className="outcome">{r.outcome && <span className={`badge ${r.tone}`}>{r.outcome}</span>}</td>
              <td>
                <Bar row={r} from={from} span={span} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}
