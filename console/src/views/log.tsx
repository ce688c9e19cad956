// The log: a live tail (Watch, from a little before the head, then live) with type and `where`
// filters (the declared types offered), older events a page at a time, and a search by event id.
// The filter lives in the address (`?type=a&type=b&where={...}`): a filtered view can be
// bookmarked and reloads as it was; applying one is a step of the browser's history.

import type { JsonObject } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { useQuery } from "@tanstack/react-query";
import { useEffect, useMemo, useState, type FormEvent } from "react";
import { Link, useLocation, useSearch } from "wouter";
import type { Event } from "@chronolog/sdk/gen/chronolog/v1/event_pb";
import { errorText, log, plugins } from "../api.js";
import { actor, at, json } from "../format.js";
import { useSession } from "../session.js";
import { RetentionHeld } from "./retention-held.js";

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

/** `where` as JSON text: the object, or an Error saying what is wrong. */
function parseWhere(text: string): JsonObject | undefined {
  if (!text.trim()) return undefined;
  const parsed: unknown = JSON.parse(text);
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) throw new Error("where must be a JSON object");
  return parsed as JsonObject;
}

/** The filter of the address's query (`type`, repeated; `where`, JSON), with its text for the form, or the error of a bad `where`. */
function filterOf(search: string): { filter: Filter; typesText: string; whereText: string; error: string } {
  const params = new URLSearchParams(search);
  const types = params
    .getAll("type")
    .flatMap((t) => t.split(/[\s,]+/))
    .filter(Boolean);
  const whereText = params.get("where") ?? "";
  try {
    return { filter: { types, where: parseWhere(whereText) }, typesText: types.join(" "), whereText, error: "" };
  } catch (err) {
    return { filter: { types }, typesText: types.join(" "), whereText, error: `where in the address: ${(err as Error).message}` };
  }
}

/** The address's query for a filter typed in the form ("" for none). */
function searchOf(types: string[], whereText: string): string {
  const params = new URLSearchParams();
  for (const t of types) params.append("type", t);
  if (whereText.trim()) params.set("where", whereText.trim());
  const query = params.toString();
  return query ? `?${query}` : "";
}

/** Whether the owner's log still holds `event` at its seq: false when the owner now runs on another log. */
async function stillInLog(event: Event, signal: AbortSignal): Promise<boolean> {
  try {
    return (await log.getEvent({ id: event.id }, { signal })).event?.seq === event.seq;
  } catch (e) {
    if (ConnectError.from(e).code === Code.NotFound) return false;
    throw e;
  }
}

/**
 * Follows the log with `filter`, newest first; `since` is the seq the tail started after. After a
 * break it watches again after the last event shown, once the owner is found to hold it still;
 * an owner at this address on another log (started again on a new store) is followed afresh.
 */
function useTail(filter: Filter, enabled: boolean): { events: Event[]; status: TailState; since: bigint | undefined; firstSeq: bigint } {
  const [events, setEvents] = useState<Event[]>([]);
  const [firstSeq, setFirstSeq] = useState(0n);
  const [status, setStatus] = useState<TailState>({ state: "connecting", text: "connecting" });
  const [since, setSince] = useState<bigint | undefined>(undefined);
  useEffect(() => {
    const abort = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    let last = -1n;
    let lastShown: Event | undefined;
    let broke = false;
    setEvents([]);
    setSince(undefined);
    if (!enabled) {
      setStatus({ state: "error", text: "not following: the filter in the address is not valid" });
      return;
    }
    const follow = async (): Promise<void> => {
      try {
        if (broke && (!lastShown || !(await stillInLog(lastShown, abort.signal)))) {
          // Nothing shown yet, or the log is another one: start again a little before its head.
          last = -1n;
          lastShown = undefined;
          setEvents([]);
        }
        if (last < 0n) {
          const { headSeq, firstSeq } = await log.readLog({ pageSize: 1 }, { signal: abort.signal });
          setFirstSeq(firstSeq);
          last = headSeq > backlog ? headSeq - backlog : 0n;
          setSince(last);
        }
        setStatus({ state: "connecting", text: "catching up" });
        // From the log's start when retention removed what `last` would read first.
        for await (const msg of log.watch({ afterSeq: last, types: filter.types, where: filter.where, fromFirstSeq: true }, { signal: abort.signal })) {
          if (msg.message.case === "event") {
            const event = msg.message.value;
            last = event.seq;
            lastShown = event;
            setEvents((list) => [event, ...list].slice(0, keep));
          } else if (msg.message.case === "caughtUp") {
            setStatus({ state: "live", text: `live (caught up at seq ${msg.message.value.headSeq})` });
            setFirstSeq(msg.message.value.firstSeq);
          }
        }
      } catch (e) {
        if (abort.signal.aborted) return;
        broke = true;
        setStatus({ state: "error", text: errorText(e) });
        timer = setTimeout(() => void follow(), retryMs);
      }
    };
    void follow();
    return () => {
      abort.abort();
      clearTimeout(timer);
    };
  }, [filter, enabled]);
  return { events, status, since, firstSeq };
}

/**
 * Events before the tail, a page at a time from the server: each press reads the `olderStep`
 * seqs below what is shown (ReadLog pages forward only, so it reads after `from - olderStep`).
 */
function useOlder(filter: Filter, since: bigint | undefined, firstSeq: bigint) {
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
        const page = await log.readLog({ afterSeq: start, pageToken, pageSize: 1000, types: filter.types, where: filter.where, fromFirstSeq: true });
        found.push(...page.events.filter((e) => e.seq <= from));
        pageToken = page.events.some((e) => e.seq > from) ? "" : page.nextPageToken;
      } while (pageToken && ++pages < 3);
      setOlder((list) => [...list, ...found.reverse()].slice(0, keepOlder));
      setFrom(start < firstSeq ? 0n : start); // nothing is older than the log's start
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
  // wouter's search is decoded once already (a `%25` in `where` would lose its meaning): the
  // address's own query is parsed, again whenever wouter sees it change.
  const query = useSearch();
  // biome-ignore lint/correctness/useExhaustiveDependencies: `query` says when location.search changed
  const shown = useMemo(() => filterOf(location.search), [query]);
  const filter = shown.filter;
  const [typesText, setTypesText] = useState(shown.typesText);
  const [whereText, setWhereText] = useState(shown.whereText);
  const [formError, setFormError] = useState("");
  const [searchId, setSearchId] = useState("");
  // The form shows the address's filter: after a reload, back or forward too.
  useEffect(() => {
    setTypesText(shown.typesText);
    setWhereText(shown.whereText);
    setFormError("");
  }, [shown]);
  const { events, status, since, firstSeq } = useTail(filter, shown.error === "");
  const { admin } = useSession();
  const older = useOlder(filter, since, firstSeq);
  const types = useQuery({ queryKey: ["plugins"], queryFn: () => plugins.listPlugins({}), staleTime: 60_000 });
  const declared = (types.data?.plugins ?? []).flatMap((p) => Object.keys(p.manifest?.events ?? {})).sort();

  const apply = (e: FormEvent) => {
    e.preventDefault();
    try {
      parseWhere(whereText);
    } catch (err) {
      setFormError(`where: ${(err as Error).message}`);
      return;
    }
    setFormError("");
    const next = searchOf(typesText.split(/[\s,]+/).filter(Boolean), whereText);
    if (next !== location.search) navigate(`/${next}`);
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
      {(formError || shown.error) && (
        <p className="error" id="filter-error">
          {formError || shown.error}
        </p>
      )}
      <h2>
        Log{" "}
        <small id="tail-status" data-state={status.state}>
          {status.text}
        </small>
      </h2>
      {admin && <RetentionHeld />}
      {firstSeq > 1n && (
        <p className="note" id="log-start">
          The log starts at seq {String(firstSeq)}: retention removed the events before it (and may have removed some after it, by type).
        </p>
      )}
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
      <td className="actor">{actor(e.actor)}</td>
      <td className="data" title={json(e.data)}>
        {json(e.data)}
      </td>
    </tr>
  );
}
