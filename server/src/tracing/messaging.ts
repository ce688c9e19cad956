import { context, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Link, type Span } from "@opentelemetry/api";
import { contextOfTrace, spanContextOfTrace, traceText } from "./trace-context.js";
import { messagingSystem, ownerTracer } from "./tracer.js";

// The owner's spans of the log and of processors, named by the OpenTelemetry messaging
// conventions: an emit is a `publish` of its event (a batch: a `create` span per event and one
// `publish` span linking them), a delivery's try a `process` span of the processor (its parent
// and link the event's producer span), an ack its `settle`. Callers test `tracing.on` first.

/** An emit's spans: the stored trace of each event's producer span; `end` once the commit is durable or failed. */
export interface EmitSpans {
  traces: (string | undefined)[];
  end(error?: unknown): void;
}

/**
 * Producer spans of the events of one emit, each under its own `parent` when it has one (the
 * context it was emitted in, EmitRequest.traceparent), else under `parent` (the call's): one
 * `publish <type>` span for a single event; for several, a `create <type>` span each and a
 * `publish` span of the batch (under the call's context) that links them.
 */
export function emitSpans(events: { id: string; type: string; parent?: Context }[], parent: Context = context.active()): EmitSpans {
  const tracer = ownerTracer();
  const attrs = (e: { id: string; type: string }, operation: string) => ({
    "messaging.system": messagingSystem,
    "messaging.operation.type": operation,
    "messaging.operation.name": operation === "create" ? "create" : "publish",
    "messaging.destination.name": e.type,
    "messaging.message.id": e.id,
  });
  if (events.length === 1) {
    const own = events[0].parent ?? parent;
    const span = tracer.startSpan(`publish ${events[0].type}`, { kind: SpanKind.PRODUCER, attributes: attrs(events[0], "send") }, own);
    return { traces: [traceText(trace.setSpan(ROOT_CONTEXT, span))], end: (error) => endSpan(span, error) };
  }
  const creates = events.map((e) => tracer.startSpan(`create ${e.type}`, { kind: SpanKind.PRODUCER, attributes: attrs(e, "create") }, e.parent ?? parent));
  const links: Link[] = creates.map((s) => ({ context: s.spanContext() }));
  const batch = tracer.startSpan(
    "publish",
    {
      kind: SpanKind.CLIENT,
      links,
      attributes: { "messaging.system": messagingSystem, "messaging.operation.type": "send", "messaging.batch.message_count": events.length },
    },
    parent,
  );
  return {
    traces: creates.map((s) => traceText(trace.setSpan(ROOT_CONTEXT, s))),
    end(error) {
      for (const s of creates) endSpan(s, error);
      endSpan(batch, error);
    },
  };
}

/** Producer spans of emits made together but each on its own (a Publish stream's message): a `publish <type>` span each. */
export function emitEachSpans(events: { id: string; type: string; parent?: Context }[]): EmitSpans {
  const each = events.map((e) => emitSpans([e]));
  return {
    traces: each.map((s) => s.traces[0]),
    end(error) {
      for (const s of each) s.end(error);
    },
  };
}

/**
 * The `process <processor>` span of one try of an event (kind CONSUMER): child of the event's
 * producer span and linked to it, as the conventions advise for a consumer handling one message.
 */
export function deliverySpan(processor: string, event: { id: string; type: string; trace?: string }, attempt: number): Span {
  const producer = spanContextOfTrace(event.trace);
  return ownerTracer().startSpan(
    `process ${processor}`,
    {
      kind: SpanKind.CONSUMER,
      links: producer ? [{ context: producer }] : [],
      attributes: {
        "messaging.system": messagingSystem,
        "messaging.operation.type": "process",
        "messaging.operation.name": "deliver",
        "messaging.destination.name": processor,
        "messaging.consumer.group.name": processor,
        "messaging.message.id": event.id,
        "chronolog.event.type": event.type,
        "chronolog.delivery.attempt": attempt,
      },
    },
    contextOfTrace(event.trace),
  );
}

/** The stored trace text of `span` (sent with a delivery or an invocation). */
export function spanTrace(span: Span): string | undefined {
  return traceText(trace.setSpan(context.active(), span));
}

/** How a try ended, as the spans say it (`chronolog.outcome`). */
export type TryOutcome = "ok" | "error" | "terminal_error" | "timeout" | "lost";

/**
 * The executor's ack of a try: a `settle <processor>` span under its process span, and the
 * process span ended with the outcome.
 */
export function settleDelivery(span: Span, processor: string, outcome: TryOutcome, error: string): void {
  const settle = ownerTracer().startSpan(
    `settle ${processor}`,
    {
      kind: SpanKind.CONSUMER,
      attributes: {
        "messaging.system": messagingSystem,
        "messaging.operation.type": "settle",
        "messaging.operation.name": outcome === "ok" ? "ack" : "nack",
        "messaging.destination.name": processor,
      },
    },
    trace.setSpan(context.active(), span),
  );
  settle.end();
  endTry(span, outcome, error);
}

/** Ends a try's span (process or attempt) with its outcome; an error outcome sets the error status. */
export function endTry(span: Span, outcome: TryOutcome, error = ""): void {
  span.setAttribute("chronolog.outcome", outcome);
  if (outcome !== "ok") span.setStatus({ code: SpanStatusCode.ERROR, message: error || outcome });
  span.end();
}

/** Ends `span`, with the error status when `error` is given. */
export function endSpan(span: Span, error?: unknown): void {
  if (error !== undefined) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
    if (error instanceof Error) span.recordException(error);
  }
  span.end();
}
