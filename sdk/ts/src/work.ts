import type { JsonObject } from "@bufbuild/protobuf";
import type { CallResult, ChronologClient, DocumentWriteResult, FindOptions } from "./client.js";
import type { CancelOnOption, DelayResult, DelayWhen, OverdueBound, SchedulePolicyOptions, TimerWhen } from "./time-requests.js";
import type { Event } from "./gen/chronolog/v1/event_pb.js";
import type { Timer } from "./gen/chronolog/v1/time_pb.js";

/**
 * Collection operations done by code under a cause. Writes take the
 * next position under the cause: the owner derives the write's id (and a
 * created document's `_id` when none is given) from it, so a retried run
 * making the same writes in the same order applies them once. Reads take no
 * position.
 */
export interface CauseCollections {
  /** Creates a document. ALREADY_EXISTS when its `_id` is taken (by other work). */
  create(collection: string, doc: JsonObject): Promise<DocumentWriteResult>;
  /** Replaces a document. NOT_FOUND when absent. */
  replace(collection: string, id: string, doc: JsonObject): Promise<DocumentWriteResult>;
  /** Sets fields (dotted paths) and unsets paths. NOT_FOUND when absent. */
  patch(collection: string, id: string, patch: { set?: JsonObject; unset?: string[] }): Promise<DocumentWriteResult>;
  /** Deletes a document. NOT_FOUND when absent. */
  delete(collection: string, id: string): Promise<DocumentWriteResult>;
  /**
   * A document by `_id` (private fields included: code reads them). NOT_FOUND when absent.
   * Reads are under the cause too: when its actor has a space, only that space's documents and
   * those without one are found, so work for one space never reads another's.
   */
  get(collection: string, id: string): Promise<JsonObject>;
  /** Documents matching a MongoDB filter, sorted, at most `limit` (in the cause's space, as `get`). */
  find(collection: string, options?: FindOptions): Promise<JsonObject[]>;
}

/**
 * What code can do under a cause (a delivery's event or an action run):
 * every emit, call, collection write and timer change names the cause and its
 * position among the calls made under it, counted from 0 and shared by all of
 * them, so the owner derives the same ids and the cause's actor on a
 * retry.
 */
export interface WorkUnderCause {
  /**
   * Emits an event under the cause. Its id is derived by the owner from the
   * cause, the call's position and its input: a retried run making the
   * same calls finds the same events instead of writing twice.
   */
  emit(type: string, data: JsonObject): Promise<Event>;
  /**
   * Calls an action `plugin.action` under the cause: the call id is
   * derived, so a retried run gets the recorded output (`fromLog`) instead of
   * running the action again. Rejects like {@link ChronologClient.call}.
   */
  call(action: string, input?: JsonObject): Promise<CallResult>;
  /** Collection operations under the cause. */
  collections: CauseCollections;
  /**
   * Sets a timer calling `action` with `input`: `{ at }`, `{ cron, zone }` or
   * `{ everyMs }` (cron with an optional `dst` policy). Its id is derived from the
   * cause and position unless `options.timerId` is given (the same id replaces). It runs
   * as the cause's actor. `options.policy` sets jitter, bounds, a maximum count,
   * overlap and catch-up. A retried run making the same request at the same
   * position is answered from the log (the timer as it set it) and changes nothing,
   * whatever happened to the timer since. Rejects like {@link ChronologClient.schedule}.
   */
  schedule(
    action: string,
    input: JsonObject,
    when: TimerWhen,
    options?: { timerId?: string; overdue?: OverdueBound; policy?: SchedulePolicyOptions; cancelOn?: CancelOnOption[] },
  ): Promise<Timer>;
  /**
   * Stops a runtime timer. NOT_FOUND when unknown; a retried run making the same
   * request at the same position is answered from the log: it succeeds (the first run
   * removed the timer) and removes nothing.
   */
  unschedule(timerId: string): Promise<void>;
  /** Pauses a recurring timer, recorded with `note`; `unchanged` when already paused. Rejects like {@link ChronologClient.pauseTimer}. */
  pauseTimer(timerId: string, note?: string): Promise<{ timer: Timer; unchanged: boolean }>;
  /** Resumes a paused timer, recorded with `note`. Rejects like {@link ChronologClient.resumeTimer}. */
  resumeTimer(timerId: string, note?: string): Promise<{ timer: Timer; unchanged: boolean }>;
  /** Makes one occurrence of a timer now; its id is derived from the cause, so a retried run triggers once. */
  triggerTimer(timerId: string): Promise<{ occurrenceId: string; due: Date }>;
  /**
   * Arms one call of `action` later: `{ intervalMs }` from now or `{ at }` a
   * moment. `overdue` is required: `"unbounded"`, `{ maxLatenessMs }` or
   * `"onTimeOrNever"`. The delayed call continues this work's chain (depth + 1)
   * unless `freshChain`; past the owner's maximum depth it is refused
   * (FAILED_PRECONDITION, recorded as `timer.chain_exceeded`). The delay id is
   * derived from the cause and position: a retried run arms it once and gets
   * the first run's id and due moment, from the log. `cancelOn`: the events that cancel it.
   */
  delay(
    action: string,
    input: JsonObject,
    when: DelayWhen,
    overdue: OverdueBound,
    options?: { freshChain?: boolean; cancelOn?: CancelOnOption[] },
  ): Promise<DelayResult>;
  /**
   * Cancels a pending delay. NOT_FOUND when unknown or already made; a retried
   * run making the same request at the same position is answered from the log: it
   * succeeds (the first run cancelled it) and changes nothing.
   */
  cancelDelay(delayId: string): Promise<void>;
}

/** The reason a signal of work the owner cancelled (CancelInvocation, CancelDelivery) aborts with. */
export const cancelledBy = (reason: string): Error => new Error(`cancelled by the owner: ${reason}`);

/**
 * The work helpers under cause `eventId` (a delivery's event id, an invocation's
 * `cause_event_id`, or a `record: false` invocation's call id), the base of a run's and a
 * delivery's context. Its `signal` (read when a call is made) cancels calls in progress: it
 * aborts when the owner cancels the work ({@link CauseWork.cancel}) or its stream ends. Each
 * helper is made when it is read, bound to this object, so `const { emit } = ctx` works and a
 * run that calls nothing pays for nothing (an executor taking timer calls makes thousands of
 * contexts a second).
 */
export abstract class CauseWork implements WorkUnderCause {
  readonly #client: ChronologClient;
  readonly #eventId: string;
  #position = 0;
  readonly #streamSignal: AbortSignal;
  #cancel: AbortController | undefined;
  /** Why the work was cancelled before its signal was made (undefined: it was not). */
  #cancelledBy: Error | undefined;
  #onStreamEnd: (() => void) | undefined;
  /** The work ended: a signal first read after it listens to nothing (no listener left behind on the stream). */
  #ended = false;

  constructor(client: ChronologClient, eventId: string, streamSignal: AbortSignal) {
    this.#client = client;
    this.#eventId = eventId;
    this.#streamSignal = streamSignal;
  }

  /**
   * Made when first read (most work never reads it): then aborted at once if the work was
   * cancelled or its stream ended before, or later when either happens.
   */
  get signal(): AbortSignal {
    if (this.#cancel) return this.#cancel.signal;
    // One controller per run, aborted by the owner's cancel or the stream's end (a listener: AbortSignal.any costs a weak ref and GC work per run).
    const cancel = (this.#cancel = new AbortController());
    const stream = this.#streamSignal;
    if (this.#cancelledBy) cancel.abort(this.#cancelledBy);
    else if (stream.aborted) cancel.abort(stream.reason);
    else if (!this.#ended) stream.addEventListener("abort", (this.#onStreamEnd = () => cancel.abort(stream.reason)), { once: true });
    return cancel.signal;
  }

  /** Cancels `work` (the owner's CancelInvocation or CancelDelivery) with `reason`: aborts its signal, now or when it is made. */
  static cancel(work: CauseWork, reason: Error): void {
    if (work.#cancel) work.#cancel.abort(reason);
    else work.#cancelledBy ??= reason;
  }

  /** The work ended: stops listening for its stream's end. */
  static end(work: CauseWork): void {
    work.#ended = true;
    if (work.#onStreamEnd) work.#streamSignal.removeEventListener("abort", work.#onStreamEnd);
  }

  /** The next position under the cause. */
  #cause(): { eventId: string; position: number } {
    return { eventId: this.#eventId, position: this.#position++ };
  }

  get emit(): WorkUnderCause["emit"] {
    return async (type, data) => (await this.#client.log.emit({ type, data, cause: this.#cause() }, { signal: this.signal })).event!;
  }

  get call(): WorkUnderCause["call"] {
    return (action, input = {}) => this.#client.call(action, input, { cause: this.#cause(), signal: this.signal });
  }

  get schedule(): WorkUnderCause["schedule"] {
    return (action, input, when, options = {}) => this.#client.schedule(action, input, when, { ...options, cause: this.#cause(), signal: this.signal });
  }

  get unschedule(): WorkUnderCause["unschedule"] {
    return (timerId) => this.#client.unschedule(timerId, { cause: this.#cause(), signal: this.signal });
  }

  get pauseTimer(): WorkUnderCause["pauseTimer"] {
    return (timerId, note) => this.#client.pauseTimer(timerId, { note, cause: this.#cause(), signal: this.signal });
  }

  get resumeTimer(): WorkUnderCause["resumeTimer"] {
    return (timerId, note) => this.#client.resumeTimer(timerId, { note, cause: this.#cause(), signal: this.signal });
  }

  get triggerTimer(): WorkUnderCause["triggerTimer"] {
    return (timerId) => this.#client.triggerTimer(timerId, { cause: this.#cause(), signal: this.signal });
  }

  get delay(): WorkUnderCause["delay"] {
    return (action, input, when, overdue, options = {}) =>
      this.#client.delay(action, input, when, overdue, {
        freshChain: options.freshChain,
        cancelOn: options.cancelOn,
        cause: this.#cause(),
        signal: this.signal,
      });
  }

  get cancelDelay(): WorkUnderCause["cancelDelay"] {
    return (delayId) => this.#client.cancelDelay(delayId, { cause: this.#cause(), signal: this.signal });
  }

  get collections(): CauseCollections {
    const client = this.#client;
    return {
      create: (collection, doc) => client.createDocument(collection, doc, { cause: this.#cause() }),
      replace: (collection, id, doc) => client.replaceDocument(collection, id, doc, { cause: this.#cause() }),
      patch: (collection, id, patch) => client.patchDocument(collection, id, patch, { cause: this.#cause() }),
      delete: (collection, id) => client.deleteDocument(collection, id, { cause: this.#cause() }),
      // Reads name the cause (its actor's space bounds them) without taking a position: only writes derive ids from positions.
      get: (collection, id) => client.getDocument(collection, id, { cause: { eventId: this.#eventId, position: 0 } }),
      find: (collection, options) => client.findDocuments(collection, { ...options, cause: { eventId: this.#eventId, position: 0 } }),
    };
  }
}
