import { fail } from "../errors.js";
import type { EventRecord, EventStatements } from "../store/events.js";
import { matchAll, type Filter } from "./filter.js";

/**
 * What to read: events after `afterSeq` of `types` (empty: all) whose data
 * matches `where` and that the reader may see (`visible`, R5).
 */
export interface LogQuery {
  afterSeq: number;
  types: string[];
  where: Filter;
  visible: (event: EventRecord) => boolean;
}

/** One page: matching events, and the last seq scanned (pass it back to continue). */
export interface LogPage {
  events: EventRecord[];
  scannedTo: number;
  /** True when the scan reached the log's head. */
  atHead: boolean;
}

/** Rows fetched from SQLite per step of a scan. */
const chunkSize = 512;
/** Rows one page may scan before returning (a selective `where` must not pin the owner). */
const scanBudget = 20_000;

/**
 * Reads up to `pageSize` matching events after `query.afterSeq` and at or
 * below `headSeq` (the last durable seq: committed rows past it are not yet
 * acknowledged, so nobody reads them, E8) (E9). Stops
 * early after scanning `scanBudget` rows, so a page may hold fewer events
 * than asked while `atHead` is still false: continue from `scannedTo`.
 */
export function readPage(events: EventStatements, query: LogQuery, pageSize: number, headSeq: number): LogPage {
  const found: EventRecord[] = [];
  let scannedTo = query.afterSeq;
  let scanned = 0;
  while (found.length < pageSize && scanned < scanBudget) {
    const rows = query.types.length > 0 ? events.readAfterOfTypes(scannedTo, chunkSize, query.types) : events.readAfter(scannedTo, chunkSize);
    for (const row of rows) {
      if (row.seq > headSeq) return { events: found, scannedTo: Math.max(scannedTo, headSeq), atHead: true };
      scannedTo = row.seq;
      scanned++;
      if (query.visible(row) && (query.where === matchAll || query.where(row.data))) found.push(row);
      if (found.length === pageSize) return { events: found, scannedTo, atHead: false };
    }
    if (rows.length < chunkSize) return { events: found, scannedTo: Math.max(scannedTo, headSeq), atHead: true };
  }
  return { events: found, scannedTo, atHead: false };
}

/** Encodes a scan position as a page token. */
export function pageToken(scannedTo: number): string {
  return Buffer.from(`seq:${scannedTo}`).toString("base64url");
}

/** Decodes a page token; INVALID_ARGUMENT when it is not one of ours. */
export function parsePageToken(token: string): number {
  const match = /^seq:(\d+)$/.exec(Buffer.from(token, "base64url").toString());
  const seq = match ? Number(match[1]) : NaN;
  if (!Number.isSafeInteger(seq)) fail("bad_request", "page_token is not a token returned by ReadLog", [{ field: "page_token", description: "malformed" }]);
  return seq;
}
