// The log: a live tail (Watch, from a little before the head, then live) with type and `where`
// filters (the declared types offered), older events a page at a time, and a search by event id.

import type { JsonObject } from "@bufbuild/protobuf";
import { useQuery } from "@tanstack/react-query";
import { useEffect, useState, type FormEvent } from "react";
import { Link, useLocation } from "wouter";
import type { Event } from "@chronolog/sdk/gen/chronolog/v1/event_pb";
import { errorText, log, plugins } from "../api.js";
import { actor, at, json } from "../format.js";

/** The tail keeps this many events (the oldest leave first). */
const keep = 200;
/** The tail starts this many events before the head (before filtering). */
const backlog = 100n;
/** Seqs read per press of "Older". */
const olderStep = 500n;
/** Older events kept at most. */
const keepOlder = 2000;
/** Wait before watching again after the stream broke. */
const retryMs = 1000;

interface Filter {
  types: string[];
  where?: JsonObject;
}

type TailState = { state: "connecting" | "live" | "error"; text: string };

/** Follows the log with `filter`, newest first; `since` is the seq the tail started after. */
function useTail(filter: Filter): { events: Event[]; status: TailState; since: bigint | undefined } {
  const [events, setEvents] = useState<Event[]>([]);
  const [status, setStatus] = useState<TailState>({ state: "connecting", text: "connecting" });
  const [since, setSince] = useState<bigint | undefined>(undefined);
  useEffect(() => {
    const abort = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    let last = -1n;
    setEvents([]);
    setSince(undefined);
    const follow = async (): Promise<void> => {
      try {
        if (last < 0n) {
          const { headSeq } = await log.readLog({ pageSize: 1 }, { signal: abort.signal });
          last = headSeq > backlog ? headSeq - backlog : 0n;
          setSince(last);
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
  return { events, status, since };
}

/**
 * Events before the tail, a page at a time from the server: each press reads the `olderStep`
 * seqs below what is shown (ReadLog pages forward only, so it reads after `from - olderStep`).
 */
function useOlder(filter: Filter, since: bigint | undefined) {
  const [older, setOlder] = useState<Event[]>([]);
  const [from, setFrom] = useState<bigint | undefined>(undefined);
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  // biome-ignore lint/correctness/useExhaustiveDependencies: older pages start again when the filter or the start changes
  useEffect(() => {
    setOlder([]);
    setFrom(since);
    setError("");
  }, [filter, since]);
  const load = async (): Promise<void> => {
    if (from === undefined || from === 0n) return;
    setBusy(true);
    try {
      const start = from > olderStep ? from - olderStep : 0n;
      const found: Event[] = [];
      // A page scans up to 20,000 rows of the log, so the first one covers the window but for very
      // large events; a selective filter would otherwise page on to the head: three pages at most.
      let pageToken = "";
      let pages = 0;
      do {
        const page = await log.readLog({ afterSeq: start, pageToken, pageSize: 1000, types: filter.types, where: filter.where });
        found.push(...page.events.filter((e) => e.seq <= from));
        pageToken = page.events.some((e) => e.seq > from) ? "" : page.nextPageToken;
      } while (pageToken && ++pages < 3);
      setOlder((list) => [...list, ...found.reverse()].slice(0, keepOlder));
      setFrom(start);
      setError("");
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  return { older, from, load, error, busy };
}

export function LogView() {
  const [, navigate] = useLocation();
  const [filter, setFilter] = useState<Filter>({ types: [] });
  const [typesText, setTypesText] = useState("");
  const [whereText, setWhereText] = useState("");
  const [formError, setFormError] = useState("");
  const [searchId, setSearchId] = useState("");
  const { events, status, since } = useTail(filter);
  const older = useOlder(filter, since);
  const types = useQuery({ queryKey: ["plugins"], queryFn: () => plugins.listPlugins({}), staleTime: 60_000 });
  const declared = (types.data?.plugins ?? []).flatMap((p) => Object.keys(p.manifest?.events ?? {})).sort();

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
          <input
            id="filter-types"
            list="event-types"
            placeholder="types, e.g. order.placed action.started"
            value={typesText}
            onChange={(e) => setTypesText(e.target.value)}
          />
          <input
            id="filter-where"
            className="wide"
            placeholder='where, e.g. {"amount": {"$gt": 10}}'
            value={whereText}
            onChange={(e) => setWhereText(e.target.value)}
          />
          <datalist id="event-types">
            {declared.map((t) => (
              <option key={t} value={t} />
            ))}
          </datalist>
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
        Log{" "}
        <small id="tail-status" data-state={status.state}>
          {status.text}
        </small>
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
            <EventRow key={String(e.seq)} e={e} />
          ))}
          {older.older.map((e) => (
            <EventRow key={String(e.seq)} e={e} older />
          ))}
        </tbody>
      </table>
      {events.length === 0 && older.older.length === 0 && <p className="note">No events match yet.</p>}
      <div className="pager">
        <button id="older" type="button" disabled={older.busy || older.from === undefined || older.from === 0n} onClick={() => void older.load()}>
          Older events
        </button>
        <span className="muted" id="older-from">
          {older.from !== undefined && (older.from === 0n ? "from the start of the log" : `shown from seq ${String(older.from + 1n)}`)}
        </span>
        {older.error && <span className="error">{older.error}</span>}
      </div>
    </section>
  );
}

function EventRow({ e, older = false }: { e: Event; older?: boolean }) {
  return (
    <tr data-id={e.id} data-seq={String(e.seq)} data-type={e.type} className={older ? "older" : undefined}>
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
  );
}
