import { timestampMs } from "@bufbuild/protobuf/wkt";
import type { Event } from "@chronolog/sdk/gen/chronolog/v1/event_pb";
import type { ImportedEvent } from "../store/log-import.js";

/**
 * One event of an archive file: a line of JSON with every field of the API's Event, always all
 * of them, in this order:
 * `{"seq":1,"id":"…","type":"…","data":{…},"cause":"","actor":null,"at":"2026-03-01T09:00:00.000Z"}`,
 * then `traceparent` (and `tracestate`) when the event carries a trace context.
 * `actor` is null (the system) or `{"id","for","in","via"}` (its `in` is the event's space);
 * `at` is the commit time, UTC, to the millisecond. The owner stores data and actor as the
 * JSON.stringify of their parsed objects, so a line parsed and stringified again gives back the
 * stored text byte for byte.
 */
export function archivedLine(event: Event): string {
  if (!event.at) throw new Error(`event ${event.seq} came without its commit time`);
  const a = event.actor;
  const line = {
    seq: Number(event.seq),
    id: event.id,
    type: event.type,
    data: event.data ?? {},
    cause: event.cause,
    actor: a ? { id: a.id, for: a.for, in: a.in, via: a.via } : null,
    at: new Date(timestampMs(event.at)).toISOString(),
    ...(event.traceparent && { traceparent: event.traceparent }),
    ...(event.tracestate && { tracestate: event.tracestate }),
  };
  return `${JSON.stringify(line)}\n`;
}

const fields = ["seq", "id", "type", "data", "cause", "actor", "at"];
const traceFields = ["traceparent", "tracestate"];
const actorFields = ["id", "for", "in", "via"];
const isoMs = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** The event of one line ({@link archivedLine}) as it is stored; an Error saying what is wrong, prefixed by `where` (file and line). */
export function parseArchivedLine(text: string, where: string): ImportedEvent {
  const bad = (what: string): never => {
    throw new Error(`${where}: ${what}`);
  };
  let line: Record<string, unknown>;
  try {
    line = JSON.parse(text);
  } catch (e) {
    return bad(`not JSON: ${(e as Error).message}`);
  }
  if (typeof line !== "object" || line === null || Array.isArray(line)) bad("not a JSON object");
  const keys = Object.keys(line);
  if (!fields.every((f) => keys.includes(f)) || keys.some((k) => !fields.includes(k) && !traceFields.includes(k)))
    bad(`its fields are ${keys.join(", ")}, expected ${fields.join(", ")} (and ${traceFields.join(", ")} when it has a trace)`);
  const { seq, id, type, data, cause, actor, at, traceparent, tracestate } = line;
  if (typeof seq !== "number" || !Number.isSafeInteger(seq) || seq < 1) bad("seq is not a whole number from 1");
  if (typeof id !== "string" || id === "") bad("id is not a non-empty string");
  if (typeof type !== "string" || type === "") bad("type is not a non-empty string");
  if (typeof data !== "object" || data === null || Array.isArray(data)) bad("data is not a JSON object");
  if (typeof cause !== "string") bad("cause is not a string");
  if (actor !== null) {
    const a = actor as Record<string, unknown>;
    if (typeof a !== "object" || Array.isArray(a) || Object.keys(a).join() !== actorFields.join() || actorFields.some((f) => typeof a[f] !== "string"))
      bad(`actor is neither null nor {${actorFields.join(", ")}} of strings`);
  }
  if (typeof at !== "string" || !isoMs.test(at) || Number.isNaN(Date.parse(at))) bad("at is not a UTC time to the millisecond (2026-03-01T09:00:00.000Z)");
  if (traceparent !== undefined && (typeof traceparent !== "string" || !/^[\x21-\x7e]{1,256}$/.test(traceparent)))
    bad("traceparent is not a trace context header value");
  if (tracestate !== undefined && (traceparent === undefined || typeof tracestate !== "string" || !/^[\x20-\x7e]{1,1024}$/.test(tracestate)))
    bad("tracestate is not a header value that goes with a traceparent");
  return {
    seq: seq as number,
    id: id as string,
    type: type as string,
    data: JSON.stringify(data),
    cause: cause as string,
    actor: actor === null ? null : JSON.stringify(actor),
    at: Date.parse(at as string),
    trace: traceparent === undefined ? null : tracestate === undefined ? (traceparent as string) : `${traceparent} ${tracestate}`, // as the owner stores it
  };
}
