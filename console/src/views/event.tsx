// One event: its data, actor and commit time, the chain of causes above it (each a GetEvent; a
// cause the token may not read shows as withheld, its id and type only),
// and what was made under it. The log API has no filter on `cause`, so "made under it" is found
// by reading the log after the event one page at a time and keeping the events whose cause is
// this one; for an `action.started` the call's own events are read with a `where` on `call_id`.

import { useInfiniteQuery, useQuery } from "@tanstack/react-query";
import { Link } from "wouter";
import type { Event } from "@chronolog/sdk/gen/chronolog/v1/event_pb";
import { errorText, log } from "../api.js";
import { causeChain, type ChainLink } from "../cause-chain.js";
import { actor, at, json } from "../format.js";

/** Causes followed upwards at most. */
const maxDepth = 20;
/** Events read per page when looking for events made under this one. */
const scanPage = 1000;

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

function MadeUnder({ event }: { event: Event }) {
  const scan = useInfiniteQuery({
    queryKey: ["under", event.id],
    initialPageParam: "",
    queryFn: async ({ pageParam }) => {
      const page = await log.readLog({ afterSeq: event.seq, pageSize: scanPage, pageToken: pageParam });
      const last = page.events.at(-1)?.seq ?? event.seq;
      return { under: page.events.filter((e) => e.cause === event.id), next: page.nextPageToken, last };
    },
    getNextPageParam: (page) => page.next || undefined,
  });
  const callId = event.type === "action.started" && typeof event.data?.call_id === "string" ? event.data.call_id : "";
  const call = useQuery({
    queryKey: ["call", callId],
    enabled: callId !== "",
    queryFn: () =>
      log.readLog({ afterSeq: event.seq, pageSize: 100, types: ["action.retried", "action.completed", "action.failed"], where: { call_id: callId } }),
  });
  if (scan.isError) return <p className="error">{errorText(scan.error)}</p>;
  const found = scan.data?.pages.flatMap((p) => p.under) ?? [];
  const scannedTo = scan.data?.pages.at(-1)?.last;
  return (
    <>
      {callId && (
        <>
          <h3>The call's attempts</h3>
          <ul id="call-events">
            {call.data?.events.map((e) => (
              <li key={e.id}>
                <EventLink event={e} /> <span className="muted">{at(e.at)}</span>
              </li>
            ))}
            {call.data && call.data.events.length === 0 && <li className="muted">no outcome yet</li>}
          </ul>
        </>
      )}
      <h3>Made under it</h3>
      <ul id="under">
        {found.map((e) => (
          <li key={e.id}>
            <EventLink event={e} /> <span className="muted">{at(e.at)}</span>
          </li>
        ))}
      </ul>
      <p className="note">
        {scan.isPending
          ? "reading the log after it…"
          : `${found.length} found in the log up to seq ${String(scannedTo)} (the log API has no cause filter: read page by page).`}{" "}
        {scan.hasNextPage && (
          <button type="button" onClick={() => void scan.fetchNextPage()} disabled={scan.isFetchingNextPage}>
            Read further
          </button>
        )}
      </p>
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
      <MadeUnder event={event} />
    </section>
  );
}
