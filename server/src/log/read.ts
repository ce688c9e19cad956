import { fail } from "../errors.js";
import { storedBytes, type EventReads, type EventRecord } from "../store/events.js";
import { matchAll, type Filter } from "./filter.js";

/**
 * What to read: events after `afterSeq` of `types` (empty: all) whose data
 * matches `where` and that the reader may see (`visible`). An event
 * `where` cannot be applied to (e.g. `$divide` by its zero) does not match:
 * it never ends a read or a watch (see compileFilter).
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

/** Rows fetched from the store per step of a scan. */
const chunkSize = 512;
/** Rows one page may scan before returning (a selective `where` must not pin the owner). */
const scanBudget = 20_000;
/**
 * Bytes of events one page holds at most ({@link storedBytes}: data and actor as stored JSON,
 * plus id, type and cause), unless its one event is larger: a large event is still read, alone.
 * 1 MiB keeps a page's message under the 4 MiB receive limit of gRPC clients' defaults
 * (grpcurl, grpc-go, grpc-js), protobuf's Struct encoding included, for events smaller than it.
 * Also what one step of a scan fetches at most (plus one event), so a scan never holds more.
 */
export const pageByteBudget = 1024 * 1024;
/** Bytes of events one page may scan before returning, as `scanBudget` for rows (large events a `where` rejects). */
const scanByteBudget = 16 * pageByteBudget;

/**
 * Reads up to `pageSize` matching events after `query.afterSeq` and at or
 * below `headSeq` (the last durable seq: committed rows past it are not yet
 * acknowledged, so nobody reads them). Stops
 * early after scanning `scanBudget` rows or `scanByteBudget` bytes, so a page
 * may hold fewer events than asked while `atHead` is still false: continue
 * from `scannedTo`. Stops before a matching event that would take the page
 * past {@link pageByteBudget} (never before its first): `scannedTo` is then
 * the seq before it, so the next page starts with it.
 */
export async function readPage(events: Pick<EventReads, "readWithin">, query: LogQuery, pageSize: number, headSeq: number): Promise<LogPage> {
  const found: EventRecord[] = [];
  let scannedTo = query.afterSeq;
  let scanned = 0;
  let scannedBytes = 0;
  let foundBytes = 0;
  while (found.length < pageSize && scanned < scanBudget && scannedBytes < scanByteBudget) {
    const chunk = await events.readWithin(scannedTo, chunkSize, pageByteBudget, query.types);
    scannedBytes += chunk.bytes;
    for (const row of chunk.events) {
      if (row.seq > headSeq) return { events: found, scannedTo: Math.max(scannedTo, headSeq), atHead: true };
      if (query.visible(row) && (query.where === matchAll || query.where(row.data))) {
        const bytes = storedBytes(row);
        // Past the page's byte budget: this event comes first on the next page.
        if (found.length > 0 && foundBytes + bytes > pageByteBudget) return { events: found, scannedTo, atHead: false };
        found.push(row);
        foundBytes += bytes;
      }
      scannedTo = row.seq;
      scanned++;
      if (found.length === pageSize) return { events: found, scannedTo, atHead: false };
    }
    if (!chunk.cut) return { events: found, scannedTo: Math.max(scannedTo, headSeq), atHead: true };
  }
  return { events: found, scannedTo, atHead: false };
}

/** Where the log starts, as reads report it: its first seq, and the seqs of removed events (log/retention.ts). */
export interface LogStart {
  /** The lowest seq in the log (0: empty). */
  firstSeq(): Promise<number>;
  /** The seq and space (its actor's `in`) of an event retention removed, or undefined when no event with this id was removed (or its id was forgotten). */
  removed(id: string): Promise<{ seq: number; space: string } | undefined>;
}

/**
 * `read` (the log's first seq as the store says it) asked at most once every `ttlMs`, the
 * answers in between the last one's: a standby's watches ask at every page, and a start that
 * moved a moment ago only makes a read from before it fail a moment later. An empty log's 0 is
 * not kept (its first event would be reported late).
 */
export function firstSeqAtMostEvery(read: () => Promise<number>, ttlMs: number): () => Promise<number> {
  let last: { at: number; seq: number } | undefined;
  return async () => {
    const now = performance.now();
    if (last && now - last.at < ttlMs) return last.seq;
    const seq = await read();
    last = seq > 0 ? { at: now, seq } : undefined;
    return seq;
  };
}

/**
 * Where a read after `afterSeq` starts when the log starts at `firstSeq`: `afterSeq` itself when
 * nothing it would read was removed before the log's start (0 always reads from the start);
 * `firstSeq - 1` when `fromFirstSeq`; else OUT_OF_RANGE (`before_log_start`) naming the first seq.
 */
export function readStart(afterSeq: number, firstSeq: number, fromFirstSeq: boolean, field: string): number {
  if (afterSeq === 0 || afterSeq >= firstSeq - 1) return afterSeq;
  if (fromFirstSeq) return firstSeq - 1;
  fail(
    "before_log_start",
    `${field} ${afterSeq} is before the log's start: the log starts at seq ${firstSeq} (the events up to seq ${firstSeq - 1} were removed by retention, or left out of an import); read from 0 or from_first_seq to start there`,
    [{ field, description: `at least ${firstSeq - 1}, or 0` }],
    { first_seq: String(firstSeq) },
  );
}

/**
 * Checks a cursor's new ack floor (MoveCursor) against the log's start `firstSeq`: 0 (from the
 * start) or at least `firstSeq - 1`; else OUT_OF_RANGE (`before_log_start`) naming the first seq.
 */
export function checkCursorFloor(floor: number, firstSeq: number): void {
  if (floor === 0 || floor >= firstSeq - 1) return;
  fail(
    "before_log_start",
    `ack_floor ${floor} is before the log's start: the log starts at seq ${firstSeq} (the events up to seq ${firstSeq - 1} were removed by retention, or left out of an import); move the cursor to 0 to deliver the log from its start, or to ${firstSeq - 1} or later`,
    [{ field: "ack_floor", description: `at least ${firstSeq - 1}, or 0` }],
    { first_seq: String(firstSeq) },
  );
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
