// The client: emit, call, read and watch the log, collection documents, timers and delays, over
// the owner's services (the raw generated clients are exposed too).

import { toJson, type JsonObject, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient as createRpcClient, type Client, type Transport } from "@connectrpc/connect";
import { ActionService } from "./gen/chronolog/v1/action_pb.js";
import { AdminService } from "./gen/chronolog/v1/admin_pb.js";
import { CollectionService, type Document } from "./gen/chronolog/v1/collection_pb.js";
import { EventSchema, type Actor, type Event } from "./gen/chronolog/v1/event_pb.js";
import { LogService, type EmitResponse } from "./gen/chronolog/v1/log_pb.js";
import { PluginService, type PluginManifestSchema, type RegisterPluginResponse } from "./gen/chronolog/v1/plugin_pb.js";
import { TimeService, TimerKind, type Timer } from "./gen/chronolog/v1/time_pb.js";
import { jsonCheckingTransport } from "./json-check.js";
import { Publisher, type PublisherOptions } from "./publisher.js";
import { withData } from "./event-data.js";
import { boolOf, causeOf, choiceOf, invalid, momentOf, seqOf, stringOf, timeoutOf, uint32Of } from "./options.js";
import { ownersOf, type Owners, Reopening } from "./owners.js";
import { readStreamPages, streamFieldsOf, type ExpectedVersion, type ReadStreamOptions, type StreamEntry } from "./streams.js";
import {
  cancelOnOf,
  dateOf,
  delayWhenOf,
  overdueOf,
  schedulePolicyOf,
  specOf,
  timerKinds,
  type BackfilledOccurrenceResult,
  type DelayOptions,
  type DelayResult,
  type DelaySpec,
  type DelayWhen,
  type OverdueBound,
  type PauseOptions,
  type ScheduleOptions,
  type TimerChangeOptions,
  type TimerKindName,
  type TimerWhen,
} from "./time-requests.js";
import { createTransport, type ClientOptions } from "./transport.js";

/** Options of an emit. */
export interface EmitOptions {
  /** Idempotency key: an id already in the log returns the stored event. */
  id?: string;
  /** Actor fields to assert (the principal must allow them). */
  actor?: Partial<Pick<Actor, "id" | "for" | "in" | "via">>;
  /** The stream the event is appended to (e.g. `order-o-1`); such an emit goes as a unary call. */
  stream?: string;
  /** With `stream`: the version the stream must be at (FAILED_PRECONDITION naming the actual one otherwise). */
  expectedVersion?: ExpectedVersion;
}

/** Options of an action call. */
export interface CallOptions {
  /** Idempotency key: a call id that already completed answers from the log without running. */
  callId?: string;
  /** Actor fields to assert (from outside; the principal must allow them). */
  actor?: Partial<Pick<Actor, "id" | "for" | "in" | "via">>;
  /** Cancels the call; the executor running it is told (its `ctx.signal` aborts). */
  signal?: AbortSignal;
  /**
   * The call's deadline in ms from now: bounds the wait for an executor
   * (UNAVAILABLE when none takes it in time) and the run (the executor is
   * told to cancel when it passes; the caller gets DEADLINE_EXCEEDED).
   */
  timeoutMs?: number;
  /** Work under a delivery or an action run: the call id and actor come from it; executors and admins only. */
  cause?: { eventId: string; position: number };
}

/** An action call's answer. */
export interface CallResult {
  /** The call id (given, generated or derived). */
  callId: string;
  /** The action's output. */
  output: JsonObject;
  /** True when answered from the log without running (a call id that already completed). */
  fromLog: boolean;
}

/** Options of a collection write. */
export interface DocumentWriteOptions {
  /** Actor fields to assert (from outside; the principal must allow them). */
  actor?: Partial<Pick<Actor, "id" | "for" | "in" | "via">>;
  /** Work under a delivery: the write's id and actor come from it; executors and admins only. */
  cause?: { eventId: string; position: number };
}

/** A document write's outcome: the document after it (absent after a delete) and its change event's seq (0 when none). */
export interface DocumentWriteResult {
  doc?: JsonObject;
  seq: bigint;
}

/** What to find in a collection. */
export interface FindOptions {
  /** A MongoDB filter; empty matches all. */
  filter?: JsonObject;
  /** Field path → 1 or -1, e.g. `{ created: -1 }`; default `_id` order. */
  sort?: JsonObject;
  /** At most this many (default 100, at most 1000). */
  limit?: number;
  /** Reading as work under a delivery or action: a cause whose actor has a space reads only that space's documents and those without one; executors and admins only. */
  cause?: { eventId: string; position: number };
}

/** What to read or watch. */
export interface LogQueryOptions {
  /** Start after this seq (default 0: from the start). */
  afterSeq?: bigint | number;
  /** Only these event types. */
  types?: string[];
  /** A MongoDB filter on the event's data. */
  where?: JsonObject;
  /** Only events made under this cause: an event id, or a call id (its `action.started`'s work included). */
  cause?: string;
  /** With `cause`: down the whole chain, not only directly under it (ReadLogRequest.descendants). */
  descendants?: boolean;
  /**
   * When retention removed the events after `afterSeq` (it is below the log's first seq), start at
   * the log's first kept seq instead of failing with OUT_OF_RANGE (`BEFORE_LOG_START`); a watch
   * that retention overtakes goes on from there too.
   */
  fromFirstSeq?: boolean;
}

/**
 * A small typed client for the owner (part): emit, read and watch
 * the log, register plugins, write and read collection documents. Errors are
 * ConnectErrors with the owner's gRPC code and message (e.g. INVALID_ARGUMENT
 * naming the schema path). The raw generated clients are exposed as `log`,
 * `plugins`, `collections` and `actions`.
 *
 * Nothing is sent that the owner would receive altered: a request (of these methods or of the
 * raw clients) whose google.protobuf.Struct fields (event data, action and timer inputs,
 * documents, patches, filters, manifest schemas) hold a value that is not plain JSON (a
 * BigInt, NaN or ±Infinity, undefined, a function, a symbol, a Date, Map, Set or other class
 * instance, a cycle) fails with a ConnectError INVALID_ARGUMENT naming its path, e.g.
 * `input.a: a BigInt is not JSON` (see `jsonProblem` in json-check.ts); so does a bad number,
 * moment or choice in options, naming the option (e.g. `intervalMs must be a non-negative
 * integer number of ms (got -1)`, `at must be a valid Date or ...`, `overdue must be
 * "unbounded", "onTimeOrNever" or { maxLatenessMs } (got "sometimes")`). Nothing is sent then.
 */
export class ChronologClient {
  readonly log: Client<typeof LogService>;
  readonly plugins: Client<typeof PluginService>;
  readonly collections: Client<typeof CollectionService>;
  readonly actions: Client<typeof ActionService>;
  readonly time: Client<typeof TimeService>;
  readonly admin: Client<typeof AdminService>;

  /** The Publish stream behind {@link emit} (undefined when emits go as unary calls). */
  readonly publisher: Publisher | undefined;
  /** The owners behind a transport of {@link createTransport} (a watch is opened again across them). */
  readonly #owners: Owners | undefined;

  /** `emitVia`: `stream` needs a transport that can run bidi streams (gRPC, or Connect over HTTP/2); default `unary`. */
  constructor(
    readonly transport: Transport,
    options: { emitVia?: "stream" | "unary"; publisher?: PublisherOptions } = {},
  ) {
    const checked = jsonCheckingTransport(transport);
    this.#owners = ownersOf(transport);
    this.time = createRpcClient(TimeService, checked);
    this.admin = createRpcClient(AdminService, checked);
    this.log = createRpcClient(LogService, checked);
    this.plugins = createRpcClient(PluginService, checked);
    this.collections = createRpcClient(CollectionService, checked);
    this.actions = createRpcClient(ActionService, checked);
    this.publisher = options.emitVia === "stream" ? new Publisher(createRpcClient(LogService, transport), this.log, options.publisher) : undefined;
  }

  /**
   * Calls an action `plugin.action` and waits for its output. Errors
   * (ConnectError codes): NOT_FOUND for an undeclared action, PERMISSION_DENIED
   * when its `allow` excludes the caller, INVALID_ARGUMENT (`input/...`) for
   * input that fails its schema, UNAVAILABLE when no executor hosting it takes
   * the call within the deadline, ABORTED with the action's error when its
   * run failed (calling again with the same `callId` runs it again),
   * ALREADY_EXISTS when `callId` was used for another action or input.
   */
  async call(action: string, input: JsonObject = {}, options: CallOptions = {}): Promise<CallResult> {
    const timeoutMs = options.timeoutMs === undefined ? undefined : timeoutOf(options.timeoutMs);
    const response = await this.actions.callAction(
      { action, input, callId: options.callId ?? "", actor: options.actor, cause: causeOf(options.cause) },
      { signal: options.signal, timeoutMs },
    );
    return { callId: response.callId, output: response.output ?? {}, fromLog: response.fromLog };
  }

  /**
   * Emits one event; resolves with the stored event once durable. By default (a client from
   * {@link createClient} over HTTP/2) on the client's Publish stream: many emits in flight share
   * the owner's commits; each gets an id here when `options.id` is absent, so one sent again
   * after a broken stream is written once. Errors as Emit's (ConnectErrors with the owner's code,
   * message and details).
   */
  async emit(type: string, data: JsonObject, options: EmitOptions = {}): Promise<EmitResponse> {
    const stream = streamFieldsOf(options.stream, options.expectedVersion);
    if (this.publisher && options.stream === undefined) return this.publisher.emit({ type, data, id: options.id, actor: options.actor });
    return this.log.emit({ type, data, id: options.id ?? "", actor: options.actor, ...stream });
  }

  /**
   * Emits several events in one commit (all or none); each may name a stream and the version
   * it expects, checked in order (a second event to one stream expects the version the first left).
   */
  async emitBatch(events: { type: string; data: JsonObject; id?: string; stream?: string; expectedVersion?: ExpectedVersion }[]): Promise<EmitResponse[]> {
    const response = await this.log.emitBatch({
      events: events.map((e) => ({ type: e.type, data: e.data, id: e.id ?? "", ...streamFieldsOf(e.stream, e.expectedVersion) })),
    });
    return response.results;
  }

  /** Reads one stream in position order (newest first with `backwards`), page by page. */
  readStream(stream: string, options: ReadStreamOptions = {}): AsyncGenerator<StreamEntry> {
    return readStreamPages(this.log, stream, options);
  }

  /** Reads every matching event after `afterSeq` up to the head, page by page. */
  async *read(query: LogQueryOptions = {}, pageSize = 500): AsyncGenerator<Event> {
    const afterSeq = seqOf(query.afterSeq ?? 0, "afterSeq");
    const fromFirstSeq = boolOf(query.fromFirstSeq ?? false, "fromFirstSeq");
    const size = uint32Of(pageSize, "pageSize");
    let pageToken = "";
    do {
      const page = await this.log.readLog({
        afterSeq,
        types: query.types,
        where: query.where,
        cause: query.cause,
        descendants: query.descendants,
        fromFirstSeq,
        pageSize: size,
        pageToken,
      });
      yield* page.events;
      pageToken = page.nextPageToken;
    } while (pageToken !== "");
  }

  /**
   * Follows the log: yields matching events after `afterSeq`, then live ones,
   * until `signal` aborts. `onCaughtUp` is told the head seq when the
   * catch-up ends. `dataJson` (default true): the data travels as JSON text, parsed into
   * `event.data` here; false asks for the Struct form. With several owners, a watch broken by an
   * owner lost or stopping is opened again at the leader, after the last event it gave (no event
   * twice; `onCaughtUp` is told again), for up to `failoverTimeoutMs`.
   */
  async *watch(
    query: LogQueryOptions = {},
    options: { signal?: AbortSignal; onCaughtUp?: (headSeq: bigint) => void; dataJson?: boolean } = {},
  ): AsyncGenerator<Event> {
    // The owner sends each event's data as its stored JSON text (no Struct to build or decode); `event.data` has it parsed.
    const dataJson = boolOf(options.dataJson ?? true, "dataJson");
    const fromFirstSeq = boolOf(query.fromFirstSeq ?? false, "fromFirstSeq");
    // The stream ends with the loop: a `break` (or a throw) in the caller's `for await` cancels it
    // on the owner, so nothing keeps the process alive or holds the owner's resources.
    const ended = new AbortController();
    const signal = options.signal ? AbortSignal.any([options.signal, ended.signal]) : ended.signal;
    let afterSeq = seqOf(query.afterSeq ?? 0, "afterSeq");
    const reopening = new Reopening(this.#owners);
    try {
      for (;;) {
        try {
          for await (const item of this.log.watch(
            { afterSeq, types: query.types, where: query.where, cause: query.cause, descendants: query.descendants, fromFirstSeq, dataJson },
            { signal },
          )) {
            reopening.progressed();
            if (item.message.case === "event") {
              afterSeq = item.message.value.seq;
              yield withData(item.message.value);
            } else if (item.message.case === "caughtUp") options.onCaughtUp?.(item.message.value.headSeq);
          }
          return;
        } catch (e) {
          if (signal.aborted || !(await reopening.again(e, signal))) throw e;
          // Aborted during the pause before opening again: ends as an abort does.
          if (signal.aborted) throw ConnectError.from(signal.reason, Code.Canceled);
        }
      }
    } finally {
      ended.abort();
    }
  }

  /** Creates a document; `_id` is generated when absent. ALREADY_EXISTS when taken. */
  async createDocument(collection: string, doc: JsonObject, options: DocumentWriteOptions = {}): Promise<DocumentWriteResult> {
    return writeResult(await this.collections.createDocument({ collection, doc, ...options, cause: causeOf(options.cause) }));
  }

  /** Replaces a document. NOT_FOUND when absent. */
  async replaceDocument(collection: string, id: string, doc: JsonObject, options: DocumentWriteOptions = {}): Promise<DocumentWriteResult> {
    return writeResult(await this.collections.replaceDocument({ collection, id, doc, ...options, cause: causeOf(options.cause) }));
  }

  /** Sets fields (by dotted path) and unsets paths of a document. NOT_FOUND when absent. */
  async patchDocument(
    collection: string,
    id: string,
    patch: { set?: JsonObject; unset?: string[] },
    options: DocumentWriteOptions = {},
  ): Promise<DocumentWriteResult> {
    return writeResult(await this.collections.patchDocument({ collection, id, set: patch.set, unset: patch.unset, ...options, cause: causeOf(options.cause) }));
  }

  /** Deletes a document; resolves with its `.deleted` event's seq (0 when none). NOT_FOUND when absent. */
  async deleteDocument(collection: string, id: string, options: DocumentWriteOptions = {}): Promise<DocumentWriteResult> {
    const response = await this.collections.deleteDocument({ collection, id, ...options, cause: causeOf(options.cause) });
    return { seq: response.seq };
  }

  /** A document by `_id`. NOT_FOUND when absent or in a space the caller (or `options.cause`) may not read. */
  async getDocument(collection: string, id: string, options: { cause?: { eventId: string; position: number } } = {}): Promise<JsonObject> {
    const response = await this.collections.getDocument({ collection, id, cause: causeOf(options.cause) });
    return response.document?.doc ?? {};
  }

  /** Documents matching a MongoDB filter, sorted, at most `limit`. */
  async findDocuments(collection: string, options: FindOptions = {}): Promise<JsonObject[]> {
    const response = await this.collections.findDocuments({
      collection,
      filter: options.filter,
      sort: options.sort,
      limit: uint32Of(options.limit ?? 0, "limit"),
      cause: causeOf(options.cause),
    });
    return response.documents.map((d) => d.doc ?? {});
  }

  /**
   * Sets a timer calling `action` with `input`: once, by cron in a zone, or every so
   * long. The same `timerId` replaces that timer. Resolves with the stored timer (its
   * `nextDue`). Errors: NOT_FOUND (undeclared action), PERMISSION_DENIED (its `allow`
   * excludes the caller), INVALID_ARGUMENT (input schema, a bad cron expression or zone,
   * `at` in the past, `everyMs` below 1,000), FAILED_PRECONDITION (the id is a delay's or a
   * declared schedule's).
   *
   * Failure semantics: the timer and its `timer.scheduled` event commit together; under a
   * cause a retried run setting the same timer changes nothing.
   */
  async schedule(action: string, input: JsonObject, when: TimerWhen, options: ScheduleOptions = {}): Promise<Timer> {
    const response = await this.time.schedule(
      {
        timerId: options.timerId ?? "",
        action,
        input,
        spec: specOf(when),
        overdue: overdueOf(options.overdue ?? "unbounded"),
        policy: options.policy && schedulePolicyOf(options.policy),
        cancelOn: cancelOnOf(options.cancelOn),
        actor: options.actor,
        cause: causeOf(options.cause),
      },
      { signal: options.signal },
    );
    return response.timer!;
  }

  /** Stops runtime timer `timerId`. NOT_FOUND when unknown; FAILED_PRECONDITION for a delay or a declared schedule. */
  async unschedule(timerId: string, options: TimerChangeOptions = {}): Promise<void> {
    await this.time.unschedule({ timerId, cause: causeOf(options.cause) }, { signal: options.signal });
  }

  /**
   * Arms one call of `action` later, `intervalMs` from now or `at` a moment; `overdue`
   * is required: how late the call may still be made. Resolves with the id that cancels it.
   * Errors as {@link schedule}; under a cause, FAILED_PRECONDITION when the chain it
   * continues is already at the owner's maximum depth (recorded as `timer.chain_exceeded`).
   *
   * Failure semantics: stored and durable once this resolves; survives owner restarts; made
   * once, within its bound or recorded as skipped. Under a cause the id is derived, so a
   * retried run arms it once; from outside, give `options.delayId` to retry safely (a
   * retry without it, after a lost answer, arms a second delay).
   */
  async delay(action: string, input: JsonObject, when: DelayWhen, overdue: OverdueBound, options: DelayOptions = {}): Promise<DelayResult> {
    const response = await this.time.delay(
      {
        action,
        input,
        when: delayWhenOf(when),
        overdue: overdueOf(overdue),
        actor: options.actor,
        cause: causeOf(options.cause),
        freshChain: boolOf(options.freshChain ?? false, "freshChain"),
        delayId: options.delayId ?? "",
        cancelOn: cancelOnOf(options.cancelOn),
      },
      { signal: options.signal },
    );
    return { delayId: response.delayId, due: dateOf(response.due) };
  }

  /**
   * Arms up to 10,000 delays in one call, each as {@link delay} would (options per delay, no
   * signal): all are checked, then all commit together or none do (an error names the delay, e.g.
   * `delays[3].delay_id`). Answers in order. Give each a `delayId` to make the batch safe to retry.
   */
  async delayBatch(delays: DelaySpec[], options: { signal?: AbortSignal } = {}): Promise<DelayResult[]> {
    const response = await this.time.delayBatch(
      {
        delays: delays.map((d, i) => {
          try {
            return {
              action: d.action,
              input: d.input ?? {},
              when: delayWhenOf(d.when),
              overdue: overdueOf(d.overdue),
              actor: d.actor,
              cause: causeOf(d.cause),
              freshChain: boolOf(d.freshChain ?? false, "freshChain"),
              delayId: d.delayId ?? "",
              cancelOn: cancelOnOf(d.cancelOn),
            };
          } catch (e) {
            throw e instanceof ConnectError ? invalid(`delays[${i}]: ${e.rawMessage}`) : e;
          }
        }),
      },
      { signal: options.signal },
    );
    return response.results.map((r) => ({ delayId: r.delayId, due: dateOf(r.due) }));
  }

  /** Cancels a pending delay. NOT_FOUND when unknown or already made. */
  async cancelDelay(delayId: string, options: TimerChangeOptions = {}): Promise<void> {
    await this.time.cancelDelay({ delayId, cause: causeOf(options.cause) }, { signal: options.signal });
  }

  /**
   * Every timer the caller may read, pending ones by next due moment first, page by page; `kind`
   * narrows to one kind. A timer's `input` is there only when the caller may read its action's
   * events (else `inputWithheld`, whoever set it).
   */
  async *listTimers(options: { kind?: TimerKindName; pageSize?: number } = {}): AsyncGenerator<Timer> {
    const kind = options.kind === undefined ? TimerKind.UNSPECIFIED : choiceOf(options.kind, "kind", timerKinds);
    const pageSize = uint32Of(options.pageSize ?? 0, "pageSize");
    let pageToken = "";
    do {
      const page = await this.time.listTimers({ kind, pageSize, pageToken });
      yield* page.timers;
      pageToken = page.nextPageToken;
    } while (pageToken !== "");
  }

  /** Timer `timerId` with its next `previewCount` fire times in `preview` (at most 100), its input as {@link listTimers} gives it. NOT_FOUND when unknown. */
  async getTimer(timerId: string, options: { previewCount?: number } = {}): Promise<Timer> {
    return (await this.time.getTimer({ timerId, previewCount: uint32Of(options.previewCount ?? 0, "previewCount") })).timer!;
  }

  /**
   * Pauses recurring timer `timerId`: it claims nothing until resumed; recorded as
   * `timer.paused` with the note. `unchanged` when it already was paused. Errors: NOT_FOUND,
   * PERMISSION_DENIED (declared schedules: admins; runtime timers: the action's allow),
   * FAILED_PRECONDITION (a delay or a one-shot).
   */
  async pauseTimer(timerId: string, options: PauseOptions = {}): Promise<{ timer: Timer; unchanged: boolean }> {
    const r = await this.time.pauseTimer({ timerId, note: stringOf(options.note ?? "", "note"), cause: causeOf(options.cause) }, { signal: options.signal });
    return { timer: r.timer!, unchanged: r.unchanged };
  }

  /**
   * Resumes paused timer `timerId`: at most one missed occurrence is owed, by its catch-up
   * policy (made at once), then its schedule goes on; recorded as `timer.resumed`. `unchanged`
   * when it was not paused. Errors as {@link pauseTimer}.
   */
  async resumeTimer(timerId: string, options: PauseOptions = {}): Promise<{ timer: Timer; unchanged: boolean }> {
    const r = await this.time.resumeTimer({ timerId, note: stringOf(options.note ?? "", "note"), cause: causeOf(options.cause) }, { signal: options.signal });
    return { timer: r.timer!, unchanged: r.unchanged };
  }

  /**
   * Makes one occurrence of timer `timerId` now, with its own occurrence id (derived under
   * a cause: a retried run triggers once), as the timer's actor; recorded as `timer.triggered`.
   * FAILED_PRECONDITION for a delay.
   */
  async triggerTimer(timerId: string, options: TimerChangeOptions = {}): Promise<{ occurrenceId: string; due: Date }> {
    const r = await this.time.triggerTimer({ timerId, cause: causeOf(options.cause) }, { signal: options.signal });
    return { occurrenceId: r.occurrenceId, due: dateOf(r.due) };
  }

  /**
   * Makes one occurrence of recurring timer `timerId` per fire time in [start, end), in due
   * order, each with its own due moment; moments already made are not made again (`existing`).
   * Recorded as `timer.backfilled`. INVALID_ARGUMENT for `end` not after `start`, in the future,
   * or a range of over 1,000 fire times; FAILED_PRECONDITION for a delay or a one-shot.
   */
  async backfillTimer(timerId: string, start: Date | number, end: Date | number, options: TimerChangeOptions = {}): Promise<BackfilledOccurrenceResult[]> {
    const r = await this.time.backfillTimer(
      { timerId, start: momentOf(start, "start"), end: momentOf(end, "end"), cause: causeOf(options.cause) },
      { signal: options.signal },
    );
    return r.occurrences.map((o) => ({ occurrenceId: o.occurrenceId, due: dateOf(o.due), existing: o.existing }));
  }

  /** Registers (or updates) a plugin manifest; needs the admin role. */
  async registerPlugin(manifest: MessageInitShape<typeof PluginManifestSchema>): Promise<RegisterPluginResponse> {
    return this.plugins.registerPlugin({ manifest });
  }
}

/** Connects a client to an owner. */
export function createClient(options: ClientOptions): ChronologClient {
  const http2 = (options.protocol ?? "grpc") === "grpc" || (options.protocol === "connect" && (options.httpVersion ?? "2") === "2");
  if (options.emitVia === "stream" && !http2) throw invalid("emitVia stream needs HTTP/2 (protocol grpc, or connect over HTTP/2)");
  return new ChronologClient(createTransport(options), { emitVia: options.emitVia ?? (http2 ? "stream" : "unary"), publisher: options.publisher });
}

function writeResult(response: { document?: Document; seq: bigint }): DocumentWriteResult {
  return { doc: response.document?.doc, seq: response.seq };
}

/** An event as plain JSON (proto3 JSON mapping), e.g. for printing. */
export function eventToJson(event: Event): JsonObject {
  return toJson(EventSchema, event) as JsonObject;
}
