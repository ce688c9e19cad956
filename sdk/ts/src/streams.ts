// Streams: an emit's stream and expected version, and ReadStream's pages as one sequence.

import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import type { Event } from "./gen/chronolog/v1/event_pb.js";
import type { ExpectedVersionSchema, LogService } from "./gen/chronolog/v1/log_pb.js";
import { withData } from "./event-data.js";
import { boolOf, invalid, seqOf, shown, stringOf, uint32Of } from "./options.js";

/**
 * The version a stream must be at for an append: `"noStream"` (no event yet), `"any"`, or the
 * position of its last event (from 0, a number or a bigint).
 */
export type ExpectedVersion = "noStream" | "any" | number | bigint;

/** Options of ReadStream. */
export interface ReadStreamOptions {
  /** Start here (inclusive). Default: the first position, or the last when `backwards`. */
  fromPosition?: number | bigint;
  /** Newest first. */
  backwards?: boolean;
  /** Events per page (default 100, at most 1,000). */
  pageSize?: number;
  signal?: AbortSignal;
}

/** One event of a stream at its position. */
export interface StreamEntry {
  position: bigint;
  event: Event;
}

/** An expected version in its API form: INVALID_ARGUMENT for anything else. */
export function expectedVersionOf(version: ExpectedVersion): MessageInitShape<typeof ExpectedVersionSchema> {
  if (version === "noStream") return { version: { case: "noStream", value: true } };
  if (version === "any") return { version: { case: "any", value: true } };
  if (typeof version === "number" || typeof version === "bigint") return { version: { case: "position", value: seqOf(version, "expectedVersion") } };
  throw invalid(`expectedVersion must be "noStream", "any" or a position (got ${shown(version)})`);
}

/** The stream fields of an Emit (none when `stream` is absent). */
export function streamFieldsOf(stream: string | undefined, expected: ExpectedVersion | undefined) {
  if (stream === undefined) {
    if (expected !== undefined) throw invalid("expectedVersion needs a stream");
    return {};
  }
  return { stream: stringOf(stream, "stream"), expectedVersion: expected === undefined ? undefined : expectedVersionOf(expected) };
}

/** Reads stream `stream` page by page: its events in position order (descending when `backwards`). */
export async function* readStreamPages(log: Client<typeof LogService>, stream: string, options: ReadStreamOptions = {}): AsyncGenerator<StreamEntry> {
  const request = {
    stream: stringOf(stream, "stream"),
    fromPosition: options.fromPosition === undefined ? undefined : seqOf(options.fromPosition, "fromPosition"),
    backwards: boolOf(options.backwards ?? false, "backwards"),
    pageSize: uint32Of(options.pageSize ?? 100, "pageSize"),
  };
  let pageToken = "";
  do {
    const page = await log.readStream({ ...request, pageToken }, { signal: options.signal });
    for (const e of page.events) yield { position: e.position, event: withData(e.event as Event) };
    pageToken = page.nextPageToken;
  } while (pageToken !== "");
}
