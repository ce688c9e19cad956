import { AsyncLocalStorage } from "node:async_hooks";
import type { Interceptor } from "@connectrpc/connect";
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Span, type TextMapGetter } from "@opentelemetry/api";
import { sdkVersion } from "./version.js";

// OpenTelemetry in the SDK, through @opentelemetry/api only: the application registers a tracer
// provider and a propagator (e.g. NodeTracerProvider's register()) or none, and then every span here
// is a no-op. The owner sends each delivery and invocation with the trace context of its try
// (Delivery/Invocation.traceparent); the SDK runs the handler in a span under it, current while it
// runs, so the application's own instrumented calls nest under it, and every call the client
// makes sends the current context as W3C `traceparent`/`tracestate` metadata. Work under a cause
// continues the owner's trace even where the application records nothing: the try's context is
// kept for the handler's duration and sent when no span of the application is current.

/** W3C headers of a trace context, as the owner sends them with a delivery or an invocation. */
interface TraceHeaders {
  traceparent: string;
  tracestate: string;
}

const getter: TextMapGetter<TraceHeaders> = {
  keys: () => ["traceparent", "tracestate"],
  get: (carrier, key) => (key === "traceparent" ? carrier.traceparent || undefined : key === "tracestate" ? carrier.tracestate || undefined : undefined),
};

/** The owner's trace context of the delivery or invocation whose handler is running (for calls made under it). */
const workTrace = new AsyncLocalStorage<TraceHeaders>();

/** The SDK's tracer (instrumentation scope `@chronolog/sdk`). */
function tracer() {
  return trace.getTracer("@chronolog/sdk", sdkVersion);
}

/** Attributes and name of a handler's span. */
export interface HandlerSpanInit {
  name: string;
  kind: SpanKind;
  attributes: Record<string, string | number>;
}

/**
 * Runs `run` in a span started under the trace context `headers` (the owner's try), current while
 * it runs; the span ends with the handler (its error, if it throws). A handler that returns no
 * promise is answered as it returned, with no promise made: its span ends at once, its value is
 * returned and its throw thrown; a promise's span ends when it settles (the promise returned).
 */
export function inHandlerSpan<T>(headers: TraceHeaders, init: HandlerSpanInit, run: (span: Span) => T | Promise<T>): T | Promise<T> {
  const parent = headers.traceparent ? propagation.extract(ROOT_CONTEXT, headers, getter) : ROOT_CONTEXT;
  const span = tracer().startSpan(init.name, { kind: init.kind, attributes: init.attributes }, parent);
  const current: Context = trace.setSpan(parent, span);
  const body = () => context.with(current, () => run(span));
  let result: T | Promise<T>;
  try {
    result = headers.traceparent ? workTrace.run(headers, body) : body();
  } catch (e) {
    failed(span, e);
    throw e;
  }
  if (!isPromise(result)) {
    span.end();
    return result;
  }
  return result.then(
    (value) => {
      span.end();
      return value;
    },
    (e: unknown) => {
      failed(span, e);
      throw e;
    },
  );
}

/** `value` is a promise (a thenable): the handler runs on past its return. */
export function isPromise<T>(value: T | Promise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | null | undefined)?.then === "function";
}

/** Ends `span` with the handler's error. */
function failed(span: Span, e: unknown): void {
  span.setStatus({ code: SpanStatusCode.ERROR, message: e instanceof Error ? e.message : String(e) });
  if (e instanceof Error) span.recordException(e);
  span.end();
}

/** Span attributes of a delivery, by the OpenTelemetry messaging conventions. */
export function deliveryAttributes(processor: string, eventId: string, eventType: string, attempt: number): Record<string, string | number> {
  return {
    "messaging.system": "chronolog",
    "messaging.operation.type": "process",
    "messaging.destination.name": processor,
    "messaging.consumer.group.name": processor,
    "messaging.message.id": eventId,
    "chronolog.event.type": eventType,
    "chronolog.delivery.attempt": attempt,
  };
}

export { SpanKind };

/**
 * The trace context current here: the application's span when one is current (through its
 * propagator), else the owner's context of the delivery or invocation being handled; undefined
 * when neither is.
 */
export function currentTraceHeaders(): TraceHeaders | undefined {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  if (carrier.traceparent) return { traceparent: carrier.traceparent, tracestate: carrier.tracestate ?? "" };
  return workTrace.getStore();
}

/** Runs `fn` outside any trace context (for a stream shared by the work of many traces: each of its messages says its own). */
export function outsideTraces<T>(fn: () => T): T {
  return context.with(ROOT_CONTEXT, () => workTrace.exit(fn));
}

/** Sends the current trace context ({@link currentTraceHeaders}) as W3C metadata with every call. */
export function traceInterceptor(): Interceptor {
  return (next) => (req) => {
    if (!req.header.has("traceparent")) {
      const headers = currentTraceHeaders();
      if (headers) {
        req.header.set("traceparent", headers.traceparent);
        if (headers.tracestate) req.header.set("tracestate", headers.tracestate);
      }
    }
    return next(req);
  };
}
