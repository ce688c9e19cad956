import { trace } from "@opentelemetry/api";
import { pino, type DestinationStream, type Logger } from "pino";

/**
 * Structured JSON logs on stderr. `level`: trace, debug, info, warn, error, fatal or silent.
 * Written synchronously (pino's default for its own destination): a line logged just before
 * `process.exit` ("owner stopped", a fatal error) is never lost in a buffer. A line logged while a
 * span is current carries its ids (trace_id, span_id).
 */
export function createLogger(level: string, destination: DestinationStream = pino.destination({ dest: 2, sync: true })): Logger {
  return pino({ level, base: { service: "chronolog" }, mixin: traceFields }, destination);
}

/**
 * A line logged under a span carries its `trace_id` and `span_id`. While no traces are recorded
 * no context manager is registered and there is never an active span (a few calls per line).
 */
function traceFields(): object {
  const span = trace.getActiveSpan()?.spanContext();
  return span ? { trace_id: span.traceId, span_id: span.spanId } : {};
}

export type { Logger };
