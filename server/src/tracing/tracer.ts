import { trace, type Tracer } from "@opentelemetry/api";
import { ownerVersion } from "../version.js";

// Whether this process records traces, and the tracer it records them with. Off by default:
// setup.ts turns it on at start when an OTLP endpoint is configured. Code on a hot path tests
// `tracing.on` once and does nothing more when it is false: no span, no context, no lookup.

/** Whether traces are recorded (set once at start). */
export const tracing = { on: false };

/** The owner's tracer (instrumentation scope `chronolog`, the owner's version), from the provider registered now (the SDK keeps one per scope). */
export function ownerTracer(): Tracer {
  return trace.getTracer("chronolog", ownerVersion);
}

/** The `messaging.system` of the owner's messaging spans. */
export const messagingSystem = "chronolog";
