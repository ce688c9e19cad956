import { ConnectError, type Interceptor } from "@connectrpc/connect";
import { context, SpanKind, SpanStatusCode, trace, type Context } from "@opentelemetry/api";
import { contextOfHeaders } from "../tracing/trace-context.js";
import { ownerTracer } from "../tracing/tracer.js";

/**
 * Continues the caller's trace (W3C `traceparent`/`tracestate` in the request's metadata, as
 * every OpenTelemetry gRPC instrumentation sends them) for the whole call: a unary call runs in a
 * `rpc.server` span of its method under that context, and what the owner does for it (an emit's
 * publish span, an action call's span, a delay's) nests under it. A streaming call (Publish,
 * Subscribe, Watch) runs in the caller's context without a span of its own: it may last for
 * hours. Installed only while traces are recorded (it reads headers on every call). Serves the
 * connect router and the native gRPC path alike (both run the interceptors).
 */
export function traceInterceptor(): Interceptor {
  return (next) => async (req) => {
    const parent = contextOfHeaders({ traceparent: req.header.get("traceparent") ?? undefined, tracestate: req.header.get("tracestate") ?? undefined });
    if (req.stream) {
      const res = await context.with(parent, () => next(req));
      return res.stream ? { ...res, message: inContext(parent, res.message) } : res;
    }
    const span = ownerTracer().startSpan(
      `${req.service.typeName}/${req.method.name}`,
      {
        kind: SpanKind.SERVER,
        attributes: { "rpc.system": "grpc", "rpc.service": req.service.typeName, "rpc.method": req.method.name },
      },
      parent,
    );
    try {
      const res = await context.with(trace.setSpan(parent, span), () => next(req));
      span.setAttribute("rpc.grpc.status_code", 0);
      return res;
    } catch (e) {
      const code = e instanceof ConnectError ? e.code : 2;
      span.setAttribute("rpc.grpc.status_code", code);
      span.setStatus({ code: SpanStatusCode.ERROR, message: e instanceof Error ? e.message : String(e) });
      throw e;
    } finally {
      span.end();
    }
  };
}

/** `messages`, each step run in `ctx`: a streaming handler (an async generator) runs its body in the caller's context. */
function inContext<T>(ctx: Context, messages: AsyncIterable<T>): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator]() {
      const it = context.with(ctx, () => messages[Symbol.asyncIterator]());
      return {
        next: (value?: unknown) => context.with(ctx, () => it.next(value as never)),
        return: (value?: unknown) =>
          context.with(ctx, () => it.return?.(value as never) ?? Promise.resolve({ done: true as const, value: undefined as never })),
        throw: (e?: unknown) => context.with(ctx, () => it.throw?.(e) ?? Promise.reject(e)),
      };
    },
  };
}
