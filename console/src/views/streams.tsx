// A stream (LogService.ReadStream): the events appended with its name (`EmitRequest.stream`), in
// order of position, forwards or newest first, 50 a page; its last position (the version an
// expected-version append names). The stream's name is in the address (`?stream=order-o-1`).

import { useQuery } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { Link, useLocation, useSearch } from "wouter";
import { errorText, log } from "../api.js";
import { at, json } from "../format.js";
import { Pager, usePageTokens } from "./pager.js";

const pageSize = 50;

export function StreamView() {
  const [, navigate] = useLocation();
  const stream = new URLSearchParams(useSearch()).get("stream") ?? "";
  const [name, setName] = useState(stream);
  const [backwards, setBackwards] = useState(false);
  const pages = usePageTokens();
  const { token } = pages;
  const q = useQuery({
    queryKey: ["stream", stream, backwards, token],
    queryFn: () => log.readStream({ stream, backwards, pageSize, pageToken: token }),
    enabled: stream !== "",
  });
  const open = (e: FormEvent) => {
    e.preventDefault();
    pages.reset();
    navigate(`/streams?stream=${encodeURIComponent(name.trim())}`);
  };
  return (
    <section>
      <h2>Streams</h2>
      <form className="toolbar" onSubmit={open}>
        <label htmlFor="stream-name">stream</label>
        <input id="stream-name" value={name} placeholder="order-o-1" onChange={(e) => setName(e.target.value)} />
        <label>
          <input
            type="checkbox"
            id="stream-backwards"
            checked={backwards}
            onChange={(e) => {
              setBackwards(e.target.checked);
              pages.reset();
            }}
          />{" "}
          newest first
        </label>
        <button type="submit">Read</button>
        {q.data && (
          <span className="muted" id="stream-version">
            {q.data.lastPosition === undefined ? "no event yet (version no_stream)" : `last position ${String(q.data.lastPosition)}`}
          </span>
        )}
      </form>
      {q.isError && <p className="error">{errorText(q.error)}</p>}
      {stream !== "" && (
        <table id="stream">
          <thead>
            <tr>
              <th className="num">position</th>
              <th className="num">seq</th>
              <th>type</th>
              <th>committed (UTC)</th>
              <th>data</th>
            </tr>
          </thead>
          <tbody>
            {q.data?.events.map(({ position, event }) => (
              <tr key={String(position)} data-position={String(position)}>
                <td className="num">{String(position)}</td>
                <td className="num">{event && <Link href={`/events/${encodeURIComponent(event.id)}`}>{String(event.seq)}</Link>}</td>
                <td>{event?.type}</td>
                <td>{at(event?.at)}</td>
                <td className="data">{json(event?.data)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {q.data && q.data.events.length === 0 && q.data.lastPosition !== undefined && !pages.back && (
        <p className="note" id="stream-removed">
          The stream's events are no longer in the log: log retention removed them (the stream's last position stays).
        </p>
      )}
      <Pager pages={pages} next={q.data?.nextPageToken} />
    </section>
  );
}
