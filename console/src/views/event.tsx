// One event: its data, actor, commit time and trace (when it carries one), the chain of causes
// above it (each a GetEvent; a cause the token may not read shows as withheld, its id and type
// only), and its causal tree as a timeline (views/timeline.tsx): from the top of its chain down to
// everything made under it.

import { useQuery } from "@tanstack/react-query";
import { Link } from "wouter";
import type { Event } from "@chronolog/sdk/gen/chronolog/v1/event_pb";
import { consoleSettings, errorText, log } from "../api.js";
import { causeChain, type ChainLink } from "../cause-chain.js";
import { actor, at, json } from "../format.js";
import { traceHref, traceIdOf } from "../timeline.js";
import { Timeline } from "./timeline.js";

/** Causes followed upwards at most. */
const maxDepth = 20;

function EventLink({ event }: { event: ChainLink }) {
  if ("withheld" in event)
    return (
      <span className="event-link withheld" data-id={event.id}>
        {event.id} <span className="muted">{event.type} (withheld: this token may not read it)</span>
      </span>
    );
  return (
    <span className="event-link" data-id={event.id}>
      <Link href={`/events/${encodeURIComponent(event.id)}`}>{event.id}</Link>{" "}
      <span className="muted">
        #{String(event.seq)} {event.type}
      </span>
    </span>
  );
}

function Trace({ event }: { event: Event }) {
  const settings = useQuery({ queryKey: ["settings"], queryFn: consoleSettings, staleTime: Number.POSITIVE_INFINITY });
  const trace = traceIdOf(event);
  if (!trace) return null;
  const url = settings.data?.trace_url;
  return (
    <>
      <dt>trace</dt>
      <dd id="event-trace">
        {url ? (
          <a className="trace" href={traceHref(url, trace)} target="_blank" rel="noreferrer">
            {trace}
          </a>
        ) : (
          trace
        )}
      </dd>
    </>
  );
}

export function EventPage({ id }: { id: string }) {
  const q = useQuery({ queryKey: ["event", id], queryFn: () => causeChain(log, id, maxDepth) });
  if (q.isPending) return <p className="note">loading…</p>;
  if (q.isError)
    return (
      <p className="error" id="event-error">
        {errorText(q.error)}
      </p>
    );
  const [event, ...causes] = q.data;
  if (!event || "withheld" in event) return <p className="error">not found</p>;
  return (
    <section id="event" data-id={event.id} data-seq={String(event.seq)}>
      <h2>
        {event.type} <small>#{String(event.seq)}</small>
      </h2>
      <dl className="fields">
        <dt>id</dt>
        <dd>{event.id}</dd>
        <dt>committed</dt>
        <dd>{at(event.at)} UTC</dd>
        <dt>actor</dt>
        <dd id="event-actor">{actor(event.actor)}</dd>
        <dt>cause</dt>
        <dd id="event-cause">{causes[0] ? <EventLink event={causes[0]} /> : event.cause ? `${event.cause} (not in the log)` : "none"}</dd>
        <Trace event={event} />
      </dl>
      <h3>Data</h3>
      <pre id="event-data">{json(event.data, 2)}</pre>
      {causes.length > 1 && (
        <>
          <h3>Caused by (up the chain)</h3>
          <ol id="causes">
            {causes.map((c) => (
              <li key={c.id}>
                <EventLink event={c} />
              </li>
            ))}
          </ol>
        </>
      )}
      <h3>Timeline</h3>
      <Timeline event={event} causes={causes} />
    </section>
  );
}
