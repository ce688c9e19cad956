import { context, propagation, ROOT_CONTEXT, trace, type Context, type Span } from "@opentelemetry/api";

// Trace context as the owner stores it with an event, a call and a timer (the `trace` columns)
// and sends it to executors (Delivery/Invocation.traceparent and .tracestate): the W3C
// `traceparent` header value, then a space and the `tracestate` value when there is one
// (a traceparent never holds a space). Reading and writing it goes through the propagator the
// tracer provider registered (W3C trace context): nothing here parses headers by hand.

/** `traceparent` and, when set, `tracestate`, as the W3C headers carry them. */
export interface TraceCarrier {
  traceparent?: string;
  tracestate?: string;
}

const carrierGetter = {
  keys: (carrier: TraceCarrier) => Object.keys(carrier),
  get: (carrier: TraceCarrier, key: string) => (key === "traceparent" ? carrier.traceparent : key === "tracestate" ? carrier.tracestate : undefined),
};

/** The stored text of the span current in `ctx` (default: the active context); undefined when none is. */
export function traceText(ctx: Context = context.active()): string | undefined {
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  const { traceparent, tracestate } = carrier;
  if (!traceparent) return undefined;
  return tracestate ? `${traceparent} ${tracestate}` : traceparent;
}

/** The headers of a stored trace text (empty strings when there is none). */
export function traceCarrier(text: string | undefined): { traceparent: string; tracestate: string } {
  if (!text) return { traceparent: "", tracestate: "" };
  const space = text.indexOf(" ");
  return space < 0 ? { traceparent: text, tracestate: "" } : { traceparent: text.slice(0, space), tracestate: text.slice(space + 1) };
}

/** A context whose (remote) parent is the stored trace `text`; the root context when there is none. */
export function contextOfTrace(text: string | undefined): Context {
  if (!text) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, traceCarrier(text), carrierGetter);
}

/** A context whose (remote) parent came in W3C headers; the root context when they hold none. */
export function contextOfHeaders(carrier: TraceCarrier): Context {
  if (!carrier.traceparent) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, carrier, carrierGetter);
}

/** The span context stored as `text`, for a link; undefined when there is none or it is not valid. */
export function spanContextOfTrace(text: string | undefined) {
  const span = trace.getSpan(contextOfTrace(text));
  return span?.spanContext();
}

/** Runs `fn` with `span` current (as the parent of what it starts); at once when there is no span. */
export function inSpan<T>(span: Span | undefined, fn: () => T): T {
  return span ? context.with(trace.setSpan(context.active(), span), fn) : fn();
}
