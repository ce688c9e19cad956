import { toJson, type JsonObject, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient as createRpcClient, type Client, type Interceptor, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { ActionService } from "./gen/chronolog/v1/action_pb.js";
import { AdminService } from "./gen/chronolog/v1/admin_pb.js";
import { CollectionService, type Document } from "./gen/chronolog/v1/collection_pb.js";
import { EventSchema, type Actor, type Event } from "./gen/chronolog/v1/event_pb.js";
import { LogService, type EmitResponse } from "./gen/chronolog/v1/log_pb.js";
import { PluginService, type PluginManifestSchema, type RegisterPluginResponse } from "./gen/chronolog/v1/plugin_pb.js";
import { CatchUpPolicy, DstGap, DstRepeated, OverlapPolicy, TimeService, TimerKind, type DstPolicySchema, type OverdueSchema, type SchedulePolicySchema, type Timer, type TimerSpecSchema } from "./gen/chronolog/v1/time_pb.js";
import { jsonCheckingTransport } from "./json-check.js";
import { Publisher, type PublisherOptions } from "./publisher.js";
import { withData } from "./event-data.js";
import { boolOf, causeOf, choiceOf, countOf, invalid, momentOf, msOf, seqOf, shown, stringOf, timeoutOf, uint32Of, whenKeyOf } from "./options.js";
import { defaultFailoverTimeoutMs, followingTransport, Owners, ownersOf, ownerUrlsOf, Reopening } from "./owners.js";

/** How to reach an owner. */
export interface ClientOptions {
  /**
   * Base URL, e.g. `http://127.0.0.1:50051` or `https://owner.example:50051`; or several owners
   * (one leads, the others are standbys), as a comma-separated list or an array. Calls go to the
   * leader: a standby's refusal (UNAVAILABLE with `chronolog-leader: <url>`) is followed to the URL
   * it names, and an owner that cannot be reached to the next one (see {@link failoverTimeoutMs}).
   */
  url: string | string[];
  /**
   * How long (ms, default 15,000) a call that nothing was done of (a standby refused it, or no
   * owner could be reached) is made again at the leader or the next owner, with short pauses,
   * before its error is the caller's; a watch broken with several owners is opened again as long
   * (from after the last event it gave). A call the owner may have run when it was lost (the
   * connection dropped, the owner is stopping) is not made again: its error is the caller's, and
   * the next call goes to the next owner. 0: never again.
   */
  failoverTimeoutMs?: number;
  /** Bearer token of a principal; omit for an owner without a config. */
  token?: string;
  /** Wire protocol (default `grpc`). `connect` and `grpc-web` also work over HTTP/1.1. */
  protocol?: "grpc" | "connect" | "grpc-web";
  /** HTTP version (default `2`; `grpc` needs 2). */
  httpVersion?: "1.1" | "2";
  /** Extra PEM CA for TLS owners with a private certificate. */
  ca?: string | Buffer;
  /**
   * How {@link ChronologClient.emit} sends (default `stream` over HTTP/2, `unary` over HTTP/1.1 or
   * gRPC-Web): `stream` pipelines emits on one Publish stream (see {@link Publisher}); `unary`
   * sends one Emit call each.
   */
  emitVia?: "stream" | "unary";
  /** How the Publish stream behind `emit` behaves (idle close, how long it is re-opened after a break). */
  publisher?: PublisherOptions;
}

/** Options of an emit. */
export interface EmitOptions {
  /** Idempotency key: an id already in the log returns the stored event. */
  id?: string;
  /** Actor fields to assert (the principal must allow them). */
  actor?: Partial<Pick<Actor, "id" | "for" | "in" | "via">>;
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
}

/**
 * When a timer fires: once `at` a moment, by a 5-field cron expression in an IANA zone
 * (default UTC) with an optional DST policy, or every `everyMs` ms (>= 1,000; the first one
 * interval from now).
 */
export type TimerWhen = { at: Date | number } | { cron: string; zone?: string; dst?: DstOptions } | { everyMs: number };

/**
 * What a cron schedule's fixed-hour wall times do across daylight-saving changes: `gap`
 * "shift" (default: once, moved forward by the gap, 02:30 → 03:30) or "skip" (not that day);
 * `repeated` "first" (default), "last" or "both" occurrences of a repeated wall time. Wildcard
 * or step hours (`*`, `*\/n`) always run at every real matching instant.
 */
export interface DstOptions {
  gap?: "shift" | "skip";
  repeated?: "first" | "last" | "both";
}

/**
 * How a recurring timer runs; every field optional (absent: the default). Times in ms.
 * - `jitterMs`: each occurrence is made up to this many ms after its moment (a deterministic
 *   offset per occurrence, always before the next moment; `scheduled.due` includes it);
 * - `start` / `end`: no moment before `start`, none at or after `end` (then it is spent);
 * - `maxCount`: spent once this many occurrences were made (triggered and backfilled ones not counted);
 * - `overlap`: "allow" (default: calls may overlap), "skip" (skipped while the previous one
 *   runs) or "bufferOne" (held until it ends, one at most);
 * - `catchUp`: after an outage, "latest" (default: the most recent missed occurrence),
 *   "allWithinWindow" (every missed one at most `catchUpWindowMs` old, at most 100) or "none".
 */
export interface SchedulePolicyOptions {
  jitterMs?: number;
  start?: Date | number;
  end?: Date | number;
  maxCount?: number;
  overlap?: "allow" | "skip" | "bufferOne";
  catchUp?: "latest" | "allWithinWindow" | "none";
  /** Required (>= 1,000) with `catchUp: "allWithinWindow"`. */
  catchUpWindowMs?: number;
}

/** When a delay is due: `intervalMs` ms from now, or `at` a moment (Date or ms since the epoch). */
export type DelayWhen = { intervalMs: number } | { at: Date | number };

/**
 * How late a timer's or delay's call may still be made: `"unbounded"` (whenever
 * possible), `{ maxLatenessMs }` (at most that many ms late, else recorded as skipped), or
 * `"onTimeOrNever"` (within the owner's tolerance of 1,000 ms).
 */
export type OverdueBound = "unbounded" | "onTimeOrNever" | { maxLatenessMs: number };

/** The kinds of timers. */
export type TimerKindName = "runtime" | "declared" | "delay";

/** Options of a Schedule. */
export interface ScheduleOptions {
  /** Timer id; the same id replaces that timer. Default: derived under a cause, else generated. */
  timerId?: string;
  /** Lateness bound of each occurrence (default unbounded). */
  overdue?: OverdueBound;
  /** Jitter, bounds, maximum count, overlap and catch-up (recurring timers only). */
  policy?: SchedulePolicyOptions;
  /** Actor fields to assert (from outside; the principal must allow them). */
  actor?: Partial<Pick<Actor, "id" | "for" | "in" | "via">>;
  /** Work under a delivery or an action run: the timer id and actor come from it; executors and admins only. */
  cause?: { eventId: string; position: number };
  signal?: AbortSignal;
}

/** Options of a Delay. */
export interface DelayOptions {
  /** Actor fields to assert (from outside; the principal must allow them). */
  actor?: Partial<Pick<Actor, "id" | "for" | "in" | "via">>;
  /** Work under a delivery or an action run: the delay id and actor come from it; executors and admins only. */
  cause?: { eventId: string; position: number };
  /** Start a new chain instead of continuing the cause's. */
  freshChain?: boolean;
  /**
   * The delay's id, chosen by the client (from outside only; not under a cause, where it is
   * derived). Makes the Delay safe to retry: the same request with the same id returns
   * that delay (same due moment) and arms nothing, even after it was made or cancelled; another
   * request with it is ALREADY_EXISTS; an id naming a schedule is FAILED_PRECONDITION. No "/".
   */
  delayId?: string;
  signal?: AbortSignal;
}

/** One delay of a {@link ChronologClient.delayBatch}: what {@link ChronologClient.delay} takes, as one object. */
export interface DelaySpec extends Omit<DelayOptions, "signal"> {
  action: string;
  input?: JsonObject;
  when: DelayWhen;
  overdue: OverdueBound;
}

/** Options of Unschedule and CancelDelay. */
export interface TimerChangeOptions {
  /** Work under a delivery or an action run; executors and admins only. */
  cause?: { eventId: string; position: number };
  signal?: AbortSignal;
}

/** Options of PauseTimer and ResumeTimer. */
export interface PauseOptions extends TimerChangeOptions {
  /** Why (at most 1,000 characters), recorded in `timer.paused` / `timer.resumed`. */
  note?: string;
}

/** One occurrence of a BackfillTimer. */
export interface BackfilledOccurrenceResult {
  /** Occurrence id, also the action call id. */
  occurrenceId: string;
  /** Its due moment (the action's `scheduled.due`). */
  due: Date;
  /** True when it had been made before (not made again). */
  existing: boolean;
}

/** An armed delay. */
export interface DelayResult {
  /** Cancels it (CancelDelay). */
  delayId: string;
  /** When it is due. */
  due: Date;
}

const timerKinds: Record<TimerKindName, TimerKind> = { runtime: TimerKind.RUNTIME, declared: TimerKind.DECLARED, delay: TimerKind.DELAY };

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
    if (this.publisher) return this.publisher.emit({ type, data, id: options.id, actor: options.actor });
    return this.log.emit({ type, data, id: options.id ?? "", actor: options.actor });
  }

  /** Emits several events in one commit (all or none). */
  async emitBatch(events: { type: string; data: JsonObject; id?: string }[]): Promise<EmitResponse[]> {
    const response = await this.log.emitBatch({ events: events.map((e) => ({ type: e.type, data: e.data, id: e.id ?? "" })) });
    return response.results;
  }

  /** Reads every matching event after `afterSeq` up to the head, page by page. */
  async *read(query: LogQueryOptions = {}, pageSize = 500): AsyncGenerator<Event> {
    const afterSeq = seqOf(query.afterSeq ?? 0, "afterSeq");
    const size = uint32Of(pageSize, "pageSize");
    let pageToken = "";
    do {
      const page = await this.log.readLog({ afterSeq, types: query.types, where: query.where, pageSize: size, pageToken });
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
  async *watch(query: LogQueryOptions = {}, options: { signal?: AbortSignal; onCaughtUp?: (headSeq: bigint) => void; dataJson?: boolean } = {}): AsyncGenerator<Event> {
    // The owner sends each event's data as its stored JSON text (no Struct to build or decode); `event.data` has it parsed.
    const dataJson = boolOf(options.dataJson ?? true, "dataJson");
    // The stream ends with the loop: a `break` (or a throw) in the caller's `for await` cancels it
    // on the owner, so nothing keeps the process alive or holds the owner's resources.
    const ended = new AbortController();
    const signal = options.signal ? AbortSignal.any([options.signal, ended.signal]) : ended.signal;
    let afterSeq = seqOf(query.afterSeq ?? 0, "afterSeq");
    const reopening = new Reopening(this.#owners);
    try {
      for (;;) {
        try {
          for await (const item of this.log.watch({ afterSeq, types: query.types, where: query.where, dataJson }, { signal })) {
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
  async patchDocument(collection: string, id: string, patch: { set?: JsonObject; unset?: string[] }, options: DocumentWriteOptions = {}): Promise<DocumentWriteResult> {
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
    const response = await this.collections.findDocuments({ collection, filter: options.filter, sort: options.sort, limit: uint32Of(options.limit ?? 0, "limit"), cause: causeOf(options.cause) });
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
      { timerId: options.timerId ?? "", action, input, spec: specOf(when), overdue: overdueOf(options.overdue ?? "unbounded"), policy: options.policy && schedulePolicyOf(options.policy), actor: options.actor, cause: causeOf(options.cause) },
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
            return { action: d.action, input: d.input ?? {}, when: delayWhenOf(d.when), overdue: overdueOf(d.overdue), actor: d.actor, cause: causeOf(d.cause), freshChain: boolOf(d.freshChain ?? false, "freshChain"), delayId: d.delayId ?? "" };
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

  /** Every timer the caller may read, pending ones by next due moment first, page by page; `kind` narrows to one kind. */
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

  /** Timer `timerId` with its next `previewCount` fire times in `preview` (at most 100). NOT_FOUND when unknown. */
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
    const r = await this.time.backfillTimer({ timerId, start: momentOf(start, "start"), end: momentOf(end, "end"), cause: causeOf(options.cause) }, { signal: options.signal });
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

/**
 * A connect-node transport for the owners of `options.url`, with the bearer token attached: each
 * call goes to the leader among them (see {@link ClientOptions.url} and `failoverTimeoutMs`).
 */
export function createTransport(options: ClientOptions): Transport {
  const urls = ownerUrlsOf(options?.url);
  const failoverTimeoutMs = options.failoverTimeoutMs === undefined ? defaultFailoverTimeoutMs : Number(countOf(options.failoverTimeoutMs, "failoverTimeoutMs", "ms"));
  const interceptors: Interceptor[] = options.token ? [bearer(options.token)] : [];
  // Node's default session memory (10 MB) makes a request over ~10 MB kill the whole HTTP/2
  // session (ENHANCE_YOUR_CALM) and every later call on it; with room, the owner answers
  // RESOURCE_EXHAUSTED and the connection lives on.
  const nodeOptions = { maxSessionMemory: 256, ...(options.ca ? { ca: options.ca } : {}) };
  // An HTTP/2 connection waiting on a call or stream pings the owner after 5 s without data and
  // is closed (UNAVAILABLE: the next owner is tried) when the ping is not answered within 5 s: an
  // owner that is frozen (paused, its machine hung, cut off) keeps its TCP connections open, and
  // without pings a call to it would wait forever while a standby has taken over.
  const common = { interceptors, nodeOptions, pingIntervalMs: 5_000, pingTimeoutMs: 5_000 };
  const protocol = options.protocol ?? "grpc";
  const httpVersion = options.httpVersion ?? "2";
  const make = (baseUrl: string): Transport => {
    if (protocol === "grpc") return createGrpcTransport({ ...common, baseUrl });
    return protocol === "connect" ? createConnectTransport({ ...common, baseUrl, httpVersion }) : createGrpcWebTransport({ ...common, baseUrl, httpVersion });
  };
  return followingTransport(new Owners(urls, make, failoverTimeoutMs));
}

function specOf(when: TimerWhen): MessageInitShape<typeof TimerSpecSchema> {
  switch (whenKeyOf(when, ["at", "cron", "everyMs"])) {
    case "at":
      return { when: { case: "at", value: momentOf((when as { at: unknown }).at, "at") } };
    case "cron": {
      const { cron, zone, dst } = when as { cron: unknown; zone?: unknown; dst?: DstOptions };
      if (typeof cron !== "string") throw invalid(`cron must be a string (got ${shown(cron)})`);
      if (zone !== undefined && typeof zone !== "string") throw invalid(`zone must be a string (got ${shown(zone)})`);
      return { when: { case: "cron", value: { expression: cron, zone: zone ?? "", dst: dst && dstOf(dst) } } };
    }
    default:
      return { when: { case: "everyMs", value: msOf((when as { everyMs: unknown }).everyMs, "everyMs") } };
  }
}

function delayWhenOf(when: DelayWhen): { case: "intervalMs"; value: bigint } | { case: "at"; value: Timestamp } {
  return whenKeyOf(when, ["intervalMs", "at"]) === "intervalMs"
    ? { case: "intervalMs", value: msOf((when as { intervalMs: unknown }).intervalMs, "intervalMs") }
    : { case: "at", value: momentOf((when as { at: unknown }).at, "at") };
}

/**
 * A DST policy in its API form (DstPolicy). Throws a ConnectError INVALID_ARGUMENT for a
 * `gap` other than "shift" or "skip" or a `repeated` other than "first", "last" or "both"
 * (absent ones are the owner's defaults).
 */
export function dstOf(dst: DstOptions): MessageInitShape<typeof DstPolicySchema> {
  if (dst === null || typeof dst !== "object") throw invalid(`dst must be an object (got ${shown(dst)})`);
  return {
    gap: dst.gap === undefined ? DstGap.UNSPECIFIED : choiceOf(dst.gap, "dst.gap", { shift: DstGap.SHIFT, skip: DstGap.SKIP }),
    repeated: dst.repeated === undefined ? DstRepeated.UNSPECIFIED : choiceOf(dst.repeated, "dst.repeated", { first: DstRepeated.FIRST, last: DstRepeated.LAST, both: DstRepeated.BOTH }),
  };
}

/**
 * A schedule policy in its API form (SchedulePolicy). Throws a ConnectError
 * INVALID_ARGUMENT naming the field (`policy.jitterMs`, `policy.start`, `policy.maxCount`,
 * `policy.overlap`, ...) for a number of ms or a count that is not a non-negative integer, a
 * moment that is not a valid Date or ms since the epoch, or an unknown overlap or catch-up name.
 */
export function schedulePolicyOf(policy: SchedulePolicyOptions): MessageInitShape<typeof SchedulePolicySchema> {
  if (policy === null || typeof policy !== "object") throw invalid(`policy must be an object (got ${shown(policy)})`);
  const overlaps = { allow: OverlapPolicy.ALLOW, skip: OverlapPolicy.SKIP, bufferOne: OverlapPolicy.BUFFER_ONE };
  const catchUps = { latest: CatchUpPolicy.LATEST, allWithinWindow: CatchUpPolicy.ALL_WITHIN_WINDOW, none: CatchUpPolicy.NONE };
  const unknown = Object.keys(policy).find((key) => !policyKeys.includes(key));
  if (unknown !== undefined) throw invalid(`policy.${unknown} is not a policy option (${policyKeys.join(", ")})`);
  return {
    jitterMs: msOf(policy.jitterMs ?? 0, "policy.jitterMs"),
    start: policy.start === undefined ? undefined : momentOf(policy.start, "policy.start"),
    end: policy.end === undefined ? undefined : momentOf(policy.end, "policy.end"),
    maxCount: countOf(policy.maxCount ?? 0, "policy.maxCount"),
    overlap: policy.overlap === undefined ? OverlapPolicy.UNSPECIFIED : choiceOf(policy.overlap, "policy.overlap", overlaps),
    catchUp: policy.catchUp === undefined ? CatchUpPolicy.UNSPECIFIED : choiceOf(policy.catchUp, "policy.catchUp", catchUps),
    catchUpWindowMs: msOf(policy.catchUpWindowMs ?? 0, "policy.catchUpWindowMs"),
  };
}

/** The keys a SchedulePolicyOptions may have (a misspelt one is refused, as JSON requests refuse it). */
const policyKeys = ["jitterMs", "start", "end", "maxCount", "overlap", "catchUp", "catchUpWindowMs"];

/** A lateness bound in its API form: INVALID_ARGUMENT for anything but "unbounded", "onTimeOrNever" or `{ maxLatenessMs }` with a non-negative integer. */
function overdueOf(overdue: OverdueBound): MessageInitShape<typeof OverdueSchema> {
  if (overdue === "unbounded") return { bound: { case: "unbounded", value: true } };
  if (overdue === "onTimeOrNever") return { bound: { case: "onTimeOrNever", value: true } };
  if (overdue === null || typeof overdue !== "object" || !("maxLatenessMs" in overdue)) throw invalid(`overdue must be "unbounded", "onTimeOrNever" or { maxLatenessMs } (got ${shown(overdue)})`);
  return { bound: { case: "maxLatenessMs", value: msOf(overdue.maxLatenessMs, "maxLatenessMs") } };
}

function writeResult(response: { document?: Document; seq: bigint }): DocumentWriteResult {
  return { doc: response.document?.doc, seq: response.seq };
}

function bearer(token: string): Interceptor {
  return (next) => (req) => {
    req.header.set("authorization", `Bearer ${token}`);
    return next(req);
  };
}

/** An event as plain JSON (proto3 JSON mapping), e.g. for printing. */
export function eventToJson(event: Event): JsonObject {
  return toJson(EventSchema, event) as JsonObject;
}

/** A timestamp the owner always sets, as a Date (an invalid Date if it ever were absent). */
function dateOf(t: Timestamp | undefined): Date {
  return t ? timestampDate(t) : new Date(NaN);
}
