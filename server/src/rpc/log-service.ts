import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import type { LogService, WatchResponseSchema } from "@chronolog/sdk/gen/chronolog/v1/log_pb";
import { fail } from "../errors.js";
import type { Emitter, EmitResult } from "../log/emit.js";
import { compileFilter } from "../log/filter.js";
import type { HeadSignal } from "../log/head.js";
import { pageToken, parsePageToken, readPage, readStart, type LogStart } from "../log/read.js";
import { watchLog } from "../log/watch.js";
import type { EventReads, EventRecord } from "../store/events.js";
import { canRead } from "../auth/principal.js";
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
  /** The last durable seq: nothing past it is read. */
  head: HeadSignal;
  /** Open Watch streams (the `chronolog_watchers` gauge): +1 when a stream starts, -1 when it ends. */
  watchers?: { inc(): void; dec(): void };
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
export function logReads(deps: LogReadDeps): Pick<ServiceImpl<typeof LogService>, "readLog" | "getEvent" | "watch"> {
  return {
    async readLog(req, ctx) {
      const where = compileFilter(objectFromProto(req.where), "where");
      const firstSeq = (await deps.logStart?.firstSeq()) ?? 0;
      const from = req.pageToken ? parsePageToken(req.pageToken) : seqFromProto(req.afterSeq, "after_seq");
      const afterSeq = readStart(from, firstSeq, req.fromFirstSeq, req.pageToken ? "page_token" : "after_seq");
      const principal = principalOf(ctx);
      const query = { afterSeq, types: req.types, where, visible: (e: EventRecord) => canRead(principal, e) };
      const page = await readPage(deps.events, query, pageSizeFromProto(req.pageSize, 100, 1000), deps.head.head);
      return {
        events: page.events.map((e) => eventToProto(e)),
        nextPageToken: page.atHead ? "" : pageToken(page.scannedTo),
        headSeq: BigInt(deps.head.head),
        firstSeq: BigInt(firstSeq),
      };
    },
    async getEvent(req, ctx) {
      const event = await deps.events.findById(req.id);
      if (!event) {
        const removed = await deps.logStart?.removedSeq(req.id);
        if (removed !== undefined)
          fail("event_removed", `event ${JSON.stringify(req.id)} (seq ${removed}) was removed from the log by retention`, [], { seq: String(removed) });
      }
      if (!event || !canRead(principalOf(ctx), event)) fail("not_found", `no event with id ${JSON.stringify(req.id)}`);
      return { event: eventToProto(event) };
    },
    async *watch(req, ctx): AsyncGenerator<MessageInitShape<typeof WatchResponseSchema>> {
      const where = compileFilter(objectFromProto(req.where), "where");
      const principal = principalOf(ctx);
      const afterSeq = readStart(seqFromProto(req.afterSeq, "after_seq"), (await deps.logStart?.firstSeq()) ?? 0, req.fromFirstSeq, "after_seq");
      const query = { afterSeq, types: req.types, where, visible: (e: EventRecord) => canRead(principal, e) };
      deps.watchers?.inc();
      try {
        const start = deps.logStart && { firstSeq: () => deps.logStart!.firstSeq(), fromFirstSeq: req.fromFirstSeq };
        for await (const item of watchLog(deps.events, deps.head, query, ctx.signal, start)) {
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

function emitResult(result: EmitResult) {
  return { event: eventToProto(result.event), existing: result.existing };
}
