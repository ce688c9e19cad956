import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import type { LogService, ReadStreamRequest, WatchResponseSchema } from "@chronolog/sdk/gen/chronolog/v1/log_pb";
import { fail } from "../errors.js";
import type { Emitter, EmitResult } from "../log/emit.js";
import { compileFilter } from "../log/filter.js";
import type { HeadSignal } from "../log/head.js";
import { pageByteBudget, pageToken, parsePageToken, readPage, readStart, type LogQuery, type LogStart } from "../log/read.js";
import { causeKeys, readTreePage, walkTree } from "../log/cause-tree.js";
import { parseStreamToken, readStream, type StreamQuery, type StreamReader } from "../log/stream-reads.js";
import { watchLog } from "../log/watch.js";
import type { CauseReads } from "../store/cause-reads.js";
import type { EventReads, EventRecord } from "../store/events.js";
import { canReach, canRead } from "../auth/principal.js";
import type { ReadAccess } from "../auth/read-access.js";
import { principalOf } from "./context.js";
import type { Logger } from "../logger.js";
import { eventToProto } from "../proto-values.js";
import { objectFromProto, pageSizeFromProto, seqFromProto } from "./convert.js";
import { emitInput } from "./emit-input.js";
import { publish } from "./publish.js";

/** What LogService's reads need: the log, its durable head, and the gauge of Watch streams. */
export interface LogReadDeps {
  /** The log's reads outside the committer (on PostgreSQL, none blocks the event loop). */
  events: EventReads;
  /** The log's reads by cause (the `cause` filter). */
  causes: CauseReads;
  /** The last durable seq: nothing past it is read. */
  head: HeadSignal;
  /** Who may read which event (every read below asks it). */
  access: ReadAccess;
  /** Open Watch streams (the `chronolog_watchers` gauge): +1 when a stream starts, -1 when it ends. */
  watchers?: { inc(): void; dec(): void };
  /** ReadStream's pages (store/streams.ts). */
  streams: StreamReader;
  /** Where the log starts (retention removes old events); absent: it never lost any. */
  logStart?: LogStart;
}

/** What the LogService handlers need. */
export interface LogServiceDeps extends LogReadDeps {
  emitter: Emitter;
  /** Emits a Publish stream may have unacknowledged (PublishWelcome.window). */
  publishWindow: number;
  /** Told of errors the owner did not mean (INTERNAL) in a Publish stream's acks. */
  logger?: Logger;
}

/**
 * LogService's reads (ReadLog, GetEvent, Watch) of what is durable up to `deps.head`: a leader's
 * head is its committer's, a standby's the one its leader's commits told it (both read the same way).
 */
export function logReads(deps: LogReadDeps): Pick<ServiceImpl<typeof LogService>, "readLog" | "getEvent" | "watch" | "readStream"> {
  return {
    async readStream(req, ctx) {
      const principal = principalOf(ctx);
      const query = streamQuery(req, principal.actor.in ?? "");
      if (!canReach(principal, query.space)) fail("permission_denied", `${principal.name} may not read the streams of space ${JSON.stringify(query.space)}`);
      const page = await readStream(deps.streams, query, deps.head.head, (e) => deps.access.mayRead(principal, e));
      return {
        events: page.entries.map((e) => ({ position: BigInt(e.position), event: eventToProto(e.event) })),
        nextPageToken: page.next,
        lastPosition: page.last === null ? undefined : BigInt(page.last),
      };
    },
    async readLog(req, ctx) {
      const where = compileFilter(objectFromProto(req.where), "where");
      const firstSeq = (await deps.logStart?.firstSeq()) ?? 0;
      const from = req.pageToken ? parsePageToken(req.pageToken) : seqFromProto(req.afterSeq, "after_seq");
      const afterSeq = readStart(from, firstSeq, req.fromFirstSeq, req.pageToken ? "page_token" : "after_seq");
      const principal = principalOf(ctx);
      // The tree goes through the events of the spaces the principal reaches (a withheld type's too, as
      // GetEvent names its cause); it returns those the principal may read.
      const through = (e: Pick<EventRecord, "actor">) => canRead(principal, e);
      const visible = (e: EventRecord) => deps.access.mayRead(principal, e);
      const pageSize = pageSizeFromProto(req.pageSize, 100, 1000);
      const headSeq = deps.head.head;
      checkQuery(req);
      if (req.descendants) {
        const query = { cause: req.cause, afterSeq, types: req.types, where, through, visible };
        const page = await readTreePage(deps.causes, query, pageSize, pageByteBudget, headSeq);
        return {
          events: page.events.map((e) => eventToProto(e)),
          nextPageToken: page.atHead ? "" : pageToken(page.scannedTo),
          headSeq: BigInt(headSeq),
          firstSeq: BigInt(firstSeq),
          treeCut: page.cut,
        };
      }
      const query = { afterSeq, types: req.types, where, visible };
      const page = await readPage(req.cause ? underCause(deps.causes, req.cause) : deps.events, query, pageSize, headSeq);
      return {
        events: page.events.map((e) => eventToProto(e)),
        nextPageToken: page.atHead ? "" : pageToken(page.scannedTo),
        headSeq: BigInt(headSeq),
        firstSeq: BigInt(firstSeq),
      };
    },
    async getEvent(req, ctx) {
      const found = await deps.events.findById(req.id);
      if (!found) {
        // Said only to a principal that reaches the event's space; others hear what they would of a kept one.
        const removed = await deps.logStart?.removed(req.id);
        if (removed !== undefined && canReach(principalOf(ctx), removed.space))
          fail("event_removed", `event ${JSON.stringify(req.id)} (seq ${removed.seq}) was removed from the log by retention`, [], {
            seq: String(removed.seq),
          });
      }
      const event = deps.access.readable(principalOf(ctx), found, req.id);
      return { event: eventToProto(event) };
    },
    async *watch(req, ctx): AsyncGenerator<MessageInitShape<typeof WatchResponseSchema>> {
      const where = compileFilter(objectFromProto(req.where), "where");
      const principal = principalOf(ctx);
      checkQuery(req);
      const afterSeq = readStart(seqFromProto(req.afterSeq, "after_seq"), (await deps.logStart?.firstSeq()) ?? 0, req.fromFirstSeq, "after_seq");
      const query: LogQuery = { afterSeq, types: req.types, where, visible: (e: EventRecord) => deps.access.mayRead(principal, e) };
      let reads: Pick<EventReads, "readWithin"> = req.cause ? underCause(deps.causes, req.cause) : deps.events;
      if (req.descendants) {
        // The tree as it stands at after_seq, then each event made under one of its members (in seq order, so parents come first),
        // through the spaces the principal reaches (withheld types too), giving what it may read.
        const { tree } = await walkTree(deps.causes, req.cause, afterSeq, (e) => canRead(principal, e));
        // Every type is read, so the tree takes in members of the types not asked for too.
        const wanted = req.types.length > 0 ? new Set(req.types) : undefined;
        query.types = [];
        query.visible = (e) => canRead(principal, e) && tree.admits(e) && deps.access.mayRead(principal, e) && (!wanted || wanted.has(e.type));
        reads = deps.events;
      }
      deps.watchers?.inc();
      try {
        const start = deps.logStart && { firstSeq: () => deps.logStart!.firstSeq(), fromFirstSeq: req.fromFirstSeq };
        for await (const item of watchLog(reads, deps.head, query, ctx.signal, start)) {
          yield "event" in item
            ? { message: { case: "event", value: eventToProto(item.event, req.dataJson) } }
            : { message: { case: "caughtUp", value: { headSeq: BigInt(item.caughtUp), firstSeq: BigInt((await deps.logStart?.firstSeq()) ?? 0) } } };
        }
        // The watch only ends when the call does: its deadline passed (DEADLINE_EXCEEDED, so a client can tell it from a normal end),
        // the owner is stopping (UNAVAILABLE, which clients retry) or the client went (see rpc/stream-release.ts).
        ctx.signal.throwIfAborted();
      } finally {
        deps.watchers?.dec();
      }
    },
  };
}

/** INVALID_ARGUMENT for `descendants` without a `cause`, and for a `types` entry that is empty or a pattern. */
function checkQuery(req: { cause: string; descendants: boolean; types: string[] }): void {
  if (req.descendants && req.cause === "")
    fail("bad_request", "descendants needs a cause: the event or call whose tree to read", [{ field: "descendants", description: "set without cause" }]);
  // A filter by types names each type: a pattern would match no event, silently.
  const i = req.types.findIndex((type) => type === "" || /[*?\s]/.test(type));
  if (i >= 0)
    fail("bad_request", `types[${i}] ${JSON.stringify(req.types[i])} is not an event type: name each type (patterns are not supported)`, [
      { field: `types[${i}]`, description: "not an event type" },
    ]);
}

/** The log's reads of the events made directly under `cause` (an event id or a call id), by the cause index. */
function underCause(causes: CauseReads, cause: string): Pick<EventReads, "readWithin"> {
  const keys = causeKeys(cause);
  return { readWithin: (afterSeq, limit, maxBytes, types) => causes.readUnder(keys, afterSeq, limit, maxBytes, types) };
}

/** LogService over the owner's log: translation only; the rules live in log/. */
export function logService(deps: LogServiceDeps): Partial<ServiceImpl<typeof LogService>> {
  return {
    ...logReads(deps),
    async emit(req, ctx) {
      const [result] = await deps.emitter.emit([emitInput(req)], principalOf(ctx));
      return emitResult(result);
    },
    async emitBatch(req, ctx) {
      const results = await deps.emitter.emit(
        req.events.map((e, i) => emitInput(e, req.events.length > 1 ? `events[${i}].` : "")),
        principalOf(ctx),
      );
      return { results: results.map(emitResult) };
    },
    publish(requests, ctx) {
      return publish(deps.emitter, deps.publishWindow, deps.logger, requests, ctx);
    },
  };
}

/** ReadStream's request as the stream reads take it. */
/** What a ReadStream asks for; the space is the request's, else `ownSpace` (the caller's: where its emits go). */
function streamQuery(req: ReadStreamRequest, ownSpace: string): StreamQuery {
  const pageSize = pageSizeFromProto(req.pageSize, 100, 1000);
  if (req.pageToken) {
    const query = parseStreamToken(req.pageToken, pageSize);
    if ((req.stream && req.stream !== query.stream) || (req.space && req.space !== query.space))
      fail("bad_request", "page_token continues another stream than the one named", [{ field: "page_token", description: "of another stream" }]);
    return query;
  }
  const from = req.fromPosition === undefined ? null : seqFromProto(req.fromPosition, "from_position");
  return { space: req.space || ownSpace, stream: req.stream, from, backwards: req.backwards, pageSize };
}

function emitResult(result: EmitResult) {
  return {
    event: eventToProto(result.event),
    existing: result.existing,
    streamPosition: result.streamPosition === undefined ? undefined : BigInt(result.streamPosition),
  };
}
