import type { JsonObject } from "@bufbuild/protobuf";
import { INVALID_SPAN_CONTEXT, trace, type Span } from "@opentelemetry/api";
import type { ChronologClient } from "./client.js";
import { withData } from "./event-data.js";
import type { Actor, Event } from "./gen/chronolog/v1/event_pb.js";
import type { Delivery } from "./gen/chronolog/v1/executor_pb.js";
import { CauseWork, type WorkUnderCause } from "./work.js";

/**
 * What a processor's `run` gets for one delivery. `emit`, `call`
 * and `collections` work under the delivery's event, positions shared.
 */
export interface DeliveryContext extends WorkUnderCause {
  /** The event delivered. */
  event: Event;
  /** Its data. */
  data: JsonObject;
  /** `plugin.processor`. */
  processor: string;
  /** 1 for the first try. */
  attempt: number;
  /** True when this delivery ran before (attempt > 1). */
  retry: boolean;
  /** Who the work runs as: the event's actor (undefined: the system). */
  actor: Actor | undefined;
  /** Lane key, "" when the processor has none. */
  key: string;
  /** For a processor that debounces: the events of the key this delivery stands for (its event the last); 0 otherwise. */
  debounced: number;
  /**
   * Aborted when the owner cancels the try (its ack timeout passed: the reason says so; or
   * another try finished the event), the executor stops or the stream breaks. Pass it on to slow
   * work. An OK ack sent after a cancel still finishes the event if it comes within the
   * processor's `timeoutGraceMs`, or later as long as the event was not recorded failed.
   */
  signal: AbortSignal;
  /**
   * Emits an event under this delivery. Its id is derived by the owner from
   * the delivery's event, the call's position and its input: a retried
   * delivery making the same calls finds the same events instead of writing twice.
   */
  emit(type: string, data: JsonObject): Promise<Event>;
  /** Extends the ack deadline by `extendMs` (default: the processor's ack timeout). */
  progress(extendMs?: number): void;
  /**
   * The handler's OpenTelemetry span (`process <processor>`, under the owner's span of this try),
   * current while `run` runs: spans the application starts meanwhile nest under it. A no-op span
   * when the application registered no tracer provider.
   */
  span: Span;
}

/** What a processor's `run` gets for one delivery (see {@link DeliveryContext}). */
export class DeliveryRun extends CauseWork implements DeliveryContext {
  readonly event: Event;
  readonly data: JsonObject;
  readonly processor: string;
  readonly attempt: number;
  readonly retry: boolean;
  readonly actor: Actor | undefined;
  readonly key: string;
  readonly debounced: number;
  readonly #progress: (extendMs: number) => void;
  span: Span = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

  constructor(client: ChronologClient, delivery: Delivery, streamSignal: AbortSignal, progress: (extendMs: number) => void) {
    const event = withData(delivery.event!);
    super(client, event.id, streamSignal);
    this.event = event;
    this.data = (event.data ?? {}) as JsonObject;
    this.processor = delivery.processor;
    this.attempt = delivery.attempt;
    this.retry = delivery.attempt > 1;
    this.actor = event.actor;
    this.key = delivery.key;
    this.debounced = delivery.debounced;
    this.#progress = progress;
  }

  get progress(): DeliveryContext["progress"] {
    return (extendMs = 0) => this.#progress(extendMs);
  }
}
