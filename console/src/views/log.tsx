// The log: a live tail (Watch, from a little before the head, then live) with type and `where`
// filters, and a search by event id.

import type { JsonObject } from "@bufbuild/protobuf";
import { useEffect, useState, type FormEvent } from "react";
import { Link, useLocation } from "wouter";
import type { Event } from "../../../sdk/ts/src/gen/chronolog/v1/event_pb.js";
import { errorText, log } from "../api.js";
import { actor, at, json } from "../format.js";

/** The tail keeps this many events (the oldest leave first). */
const keep = 200;
/** The tail starts this many events before the head (before filtering). */
const backlog = 100n;
/** Wait before watching again after the stream broke. */
const retryMs = 1000;

interface Filter {
  types: string[];
  where?: JsonObject;
}

type TailState = { state: "connecting" | "live" | "error"; text: string };

/** Follows the log with `filter`; newest first. */
function useTail(filter: Filter): { events: Event[]; status: TailState } {
  const [events, setEvents] = useState<Event[]>([]);
  const [status, setStatus] = useState<TailState>({ state: "connecting", text: "connecting" });
  useEffect(() => {
    const abort = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    let last = -1n;
    setEvents([]);
    const follow = async (): Promise<void> => {
      try {
        if (last < 0n) {
          const { headSeq } = await log.readLog({ pageSize: 1 }, { signal: abort.signal });
          last = headSeq > backlog ? headSeq - backlog : 0n;
        }
        setStatus({ state: "connecting", text: "catching up" });
        for await (const msg of log.watch({ afterSeq: last, types: filter.types, where: filter.where }, { signal: abort.signal })) {
          if (msg.message.case === "event") {
            const event = msg.message.value;
            last = event.seq;
            setEvents((list) => [event, ...list].slice(0, keep));
          } else if (msg.message.case === "caughtUp") {
            setStatus({ state: "live", text: `live (caught up at seq ${msg.message.value.headSeq})` });
          }
        }
      } catch (e) {
        if (abort.signal.aborted) return;
        setStatus({ state: "error", text: errorText(e) });
        timer = setTimeout(() => void follow(), retryMs);
      }
    };
    void follow();
    return () => {
      abort.abort();
      clearTimeout(timer);
    };
  }, [filter]);
  return { events, status };
}

export function LogView() {
  const [, navigate] = useLocation();
  const [filter, setFilter] = useState<Filter>({ types: [] });
  const [typesText, setTypesText] = useState("");
  const [whereText, setWhereText] = useState("");
  const [formError, setFormError] = useState("");
  const [searchId, setSearchId] = useState("");
  const { events, status } = useTail(filter);

  const apply = (e: FormEvent) => {
    e.preventDefault();
    let where: JsonObject | undefined;
    if (whereText.trim()) {
      try {
        const parsed: unknown = JSON.parse(whereText);
        if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) throw new Error("where must be a JSON object");
        where = parsed as JsonObject;
      } catch (err) {
        setFormError(`where: ${(err as Error).message}`);
        return;
      }
    }
    setFormError("");
    setFilter({ types: typesText.split(/[\s,]+/).filter(Boolean), where });
  };
  const search = (e: FormEvent) => {
    e.preventDefault();
    if (searchId.trim()) navigate(`/events/${encodeURIComponent(searchId.trim())}`);
  };

  return (
    <section>
      <div className="toolbar">
        <form onSubmit={apply} className="inline">
          <input id="filter-types" placeholder="types, e.g. order.placed action.started" value={typesText} onChange={(e) => setTypesText(e.target.value)} />
          <input id="filter-where" className="wide" placeholder='where, e.g. {"amount": {"$gt": 10}}' value={whereText} onChange={(e) => setWhereText(e.target.value)} />
          <button id="apply-filter" type="submit">
            Filter
          </button>
        </form>
        <form onSubmit={search} className="inline">
          <input id="search-id" placeholder="event id" value={searchId} onChange={(e) => setSearchId(e.target.value)} />
          <button id="search" type="submit">
            Open
          </button>
        </form>
      </div>
      {formError && <p className="error">{formError}</p>}
      <h2>
        Log <small id="tail-status" data-state={status.state}>{status.text}</small>
      </h2>
      <table id="tail" className="events">
        <colgroup>
          <col className="seq" />
          <col className="time" />
          <col className="type" />
          <col className="id" />
          <col className="actor" />
          <col />
        </colgroup>
        <thead>
          <tr>
            <th>seq</th>
            <th>committed (UTC)</th>
            <th>type</th>
            <th>id</th>
            <th>actor</th>
            <th>data</th>
          </tr>
        </thead>
        <tbody>
          {events.map((e) => (
            <tr key={String(e.seq)} data-id={e.id} data-seq={String(e.seq)} data-type={e.type}>
              <td>{String(e.seq)}</td>
              <td>{at(e.at)}</td>
              <td>{e.type}</td>
              <td>
                <Link href={`/events/${encodeURIComponent(e.id)}`}>{e.id}</Link>
              </td>
              <td>{actor(e.actor)}</td>
              <td className="data" title={json(e.data)}>
                {json(e.data)}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {events.length === 0 && <p className="note">No events match yet.</p>}
    </section>
  );
}
