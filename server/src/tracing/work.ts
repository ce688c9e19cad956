import { context, SpanKind, trace, type Span } from "@opentelemetry/api";
import { contextOfTrace, spanContextOfTrace } from "./trace-context.js";
import { ownerTracer } from "./tracer.js";

// The owner's spans of action calls and of time: a call's span from its start to its end, a span
// per attempt under it (sent to the executor with the invocation), and a timer's occurrence,
// linked to the span that set the timer. Callers test `tracing.on` first.

/** The span of a call of `action` (kind INTERNAL), under the stored trace of what made it. */
export function callSpan(action: string, callId: string, parentTrace: string | undefined): Span {
  return ownerTracer().startSpan(
    `call ${action}`,
    { kind: SpanKind.INTERNAL, attributes: { "chronolog.action": action, "chronolog.call_id": callId } },
    contextOfTrace(parentTrace),
  );
}

/** The span of attempt `attempt` of a call (kind CLIENT: it runs in an executor), under the call's span. */
export function attemptSpan(call: Span, action: string, callId: string, attempt: number): Span {
  return ownerTracer().startSpan(
    `attempt ${action}`,
    { kind: SpanKind.CLIENT, attributes: { "chronolog.action": action, "chronolog.call_id": callId, "chronolog.attempt": attempt } },
    trace.setSpan(context.active(), call),
  );
}

/**
 * The span of an occurrence of a timer, from its claim to the end of its call: linked to the span
 * that set the timer, and its child too when the timer fires once (a delay, an `at` timer), so a
 * delay's call continues the trace that set it; a recurring timer's occurrences each start a trace.
 */
export function occurrenceSpan(timer: { id: string; action: string; trace?: string; once: boolean }, occurrenceId: string, dueMs: number): Span {
  const setter = spanContextOfTrace(timer.trace);
  return ownerTracer().startSpan(
    `occurrence ${timer.action}`,
    {
      kind: SpanKind.INTERNAL,
      links: setter ? [{ context: setter }] : [],
      attributes: {
        "chronolog.timer_id": timer.id,
        "chronolog.occurrence_id": occurrenceId,
        "chronolog.action": timer.action,
        "chronolog.due": new Date(dueMs).toISOString(),
      },
    },
    contextOfTrace(timer.once ? timer.trace : undefined),
  );
}
