import { fail } from "../errors.js";
import { storedBytes, type EventRecord } from "../store/events.js";
import type { StreamPage } from "../store/streams.js";
import { pageByteBudget } from "./read.js";
import { checkStreamName, streamKey } from "./streams.js";

// ReadStream: one stream's events in position order, forwards or backwards, in pages, on the
// (stream, position) index (store/streams.ts), of durable events only.

/** Reads up to `limit` entries of `stream` from `from` (inclusive) in the direction asked, of events up to seq `head`. */
export type StreamReader = (stream: string, from: number, backwards: boolean, limit: number, head: number) => Promise<StreamPage>;

/** What to read: a stream of a space from a position (null: its start, or its end backwards), at most `pageSize` events. */
export interface StreamQuery {
  space: string;
  stream: string;
  from: number | null;
  backwards: boolean;
  pageSize: number;
}

/** A page: the entries the reader may see, the token to continue ("" at the end) and the stream's last position. */
export interface StreamReadPage {
  entries: { position: number; event: EventRecord }[];
  next: string;
  last: number | null;
}

/** A continuation token: where the next page starts, and its direction. */
function streamToken(query: StreamQuery, from: number): string {
  return Buffer.from(JSON.stringify({ n: query.space, s: query.stream, p: from, b: query.backwards })).toString("base64url");
}

/** The query a page token continues; INVALID_ARGUMENT when it is not one of ours. */
export function parseStreamToken(token: string, pageSize: number): StreamQuery {
  try {
    const { n, s, p, b } = JSON.parse(Buffer.from(token, "base64url").toString()) as { n: unknown; s: unknown; p: unknown; b: unknown };
    if (typeof n === "string" && typeof s === "string" && Number.isSafeInteger(p) && (p as number) >= 0 && typeof b === "boolean")
      return { space: n, stream: s, from: p as number, backwards: b, pageSize };
  } catch {
    // not JSON: refused below
  }
  fail("bad_request", "page_token is not a token returned by ReadStream", [{ field: "page_token", description: "malformed" }]);
}

/**
 * Reads a page of `query.stream`. A page also stops once its events' stored bytes reach 1 MiB
 * (as ReadLog's); events not `visible` to the reader are left out (their positions skipped).
 */
export async function readStream(reader: StreamReader, query: StreamQuery, head: number, visible: (event: EventRecord) => boolean): Promise<StreamReadPage> {
  checkStreamName(query.stream, "stream");
  const from = query.from ?? (query.backwards ? Number.MAX_SAFE_INTEGER : 0);
  const page = await reader(streamKey(query.space, query.stream), from, query.backwards, query.pageSize, head);
  const entries: StreamReadPage["entries"] = [];
  let bytes = 0;
  let cut = page.entries.length === query.pageSize;
  let lastRead: number | undefined;
  for (const entry of page.entries) {
    lastRead = entry.position;
    if (visible(entry.event)) entries.push(entry);
    bytes += storedBytes(entry.event);
    if (bytes >= pageByteBudget) {
      cut = cut || entry !== page.entries[page.entries.length - 1];
      break;
    }
  }
  const nextFrom = lastRead === undefined ? undefined : query.backwards ? lastRead - 1 : lastRead + 1;
  const next = cut && nextFrom !== undefined && nextFrom >= 0 ? streamToken(query, nextFrom) : "";
  return { entries, next, last: page.last };
}
