// The owner's traces, in this process: off (the default) it keeps and sends no trace context,
// whatever callers send; on (a tracer provider with an in-memory exporter, as tracing/setup.ts
// registers one for OTLP) an EmitBatch is a publish span linking a create span per event, each
// event keeps its create span's context, each emit on a Publish stream continues its own trace,
// and log lines written under a span carry its ids.
//
// @module-tag postgres

import { Writable } from "node:stream";
import { context, propagation, trace } from "@opentelemetry/api";
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-node";
import { afterEach, describe, expect, it } from "vitest";
import { createClient } from "../sdk/ts/src/client.js";
import { runExecutor } from "../sdk/ts/src/executor.js";
import { definePlugin, manifestOf } from "../sdk/ts/src/plugin.js";
import { createLogger } from "../server/src/logger.js";
import { tracing } from "../server/src/tracing/tracer.js";
import { queryStore, startTestOwner } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

const plugin = definePlugin({
  name: "shop",
  events: { "order.placed": { allow: ["*"] }, "order.paid": { allow: ["*"] } },
  actions: {
    tick: {
      allow: ["*"],
      run: () => ({}),
    },
  },
});
/** A caller's span context as a client's OpenTelemetry would send it. */
const callerTrace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
const callerTraceId = "0af7651916cd43dd8448eb211c80319c";

async function ownerAndClient() {
  const owner = await startTestOwner();
  cleanups.push(() => owner.close());
  const client = createClient({ url: owner.url });
  await client.registerPlugin(manifestOf(plugin));
  return { owner, client };
}

/** Records this process's spans in memory and turns the owner's tracing on, as setup.ts would for OTLP; undone after the test. */
function recordSpans(): InMemorySpanExporter {
  const exporter = new InMemorySpanExporter();
  const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  provider.register();
  tracing.on = true;
  cleanups.push(async () => {
    tracing.on = false;
    await provider.shutdown();
    trace.disable();
    context.disable();
    propagation.disable();
  });
  return exporter;
}

describe("the owner's traces", () => {
  it("off by default: a caller's traceparent is not stored with the events it emits", async () => {
    const { owner, client } = await ownerAndClient();
    await client.log.emit({ type: "order.placed", data: { order: 1 } }, { headers: { traceparent: callerTrace } });
    await client.log.emitBatch({ events: [{ type: "order.paid", data: { order: 1 } }] }, { headers: { traceparent: callerTrace } });
    const traced = queryStore(owner.dataDir, "SELECT count(*) AS n FROM events WHERE trace IS NOT NULL");
    expect(Number(traced[0].n)).toBe(0);
    expect(Number(queryStore(owner.dataDir, "SELECT count(*) AS n FROM events WHERE type LIKE 'order.%'")[0].n)).toBe(2);
  });

  it("on: an EmitBatch continues the caller's trace, a create span per event linked from the batch's publish span, each event keeping its create span", async () => {
    const spans = recordSpans();
    const { owner, client } = await ownerAndClient();
    const batch = await client.log.emitBatch(
      {
        events: [
          { type: "order.placed", data: { order: 2 } },
          { type: "order.paid", data: { order: 2 } },
        ],
      },
      { headers: { traceparent: callerTrace } },
    );
    const ids = batch.results.map((r) => r.event!.id);
    await until(() => spans.getFinishedSpans().some((s) => s.name === "chronolog.v1.LogService/EmitBatch"), "the call's span ended");
    const finished = spans.getFinishedSpans();
    const rpc = finished.find((s) => s.name === "chronolog.v1.LogService/EmitBatch")!;
    expect(rpc.spanContext().traceId).toBe(callerTraceId);
    expect(rpc.parentSpanContext?.spanId).toBe("b7ad6b7169203331");
    const creates = ["order.placed", "order.paid"].map((type) => finished.find((s) => s.name === `create ${type}`)!);
    const publish = finished.find((s) => s.name === "publish")!;
    for (const [i, create] of creates.entries()) {
      expect(create.parentSpanContext?.spanId).toBe(rpc.spanContext().spanId);
      expect(create.attributes).toMatchObject({ "messaging.system": "chronolog", "messaging.operation.type": "create", "messaging.message.id": ids[i] });
      const stored = queryStore(owner.dataDir, "SELECT trace FROM events WHERE id = ?", [ids[i]]);
      expect(stored[0].trace).toBe(`00-${callerTraceId}-${create.spanContext().spanId}-01`);
    }
    expect(publish.links.map((l) => l.context.spanId)).toEqual(creates.map((c) => c.spanContext().spanId));
    expect(publish.attributes["messaging.batch.message_count"]).toBe(2);
  });

  it("on: each emit on a Publish stream continues the trace it was emitted in, though they share one stream", async () => {
    const spans = recordSpans();
    const { owner } = await ownerAndClient();
    const publisher = createClient({ url: owner.url, emitVia: "stream" });
    const other = "00-11111111111111111111111111111111-2222222222222222-01";
    const inTrace = (traceparent: string) => propagation.extract(context.active(), { traceparent });
    await context.with(inTrace(callerTrace), () => publisher.emit("order.placed", { order: 3 }));
    await context.with(inTrace(other), () => publisher.emit("order.paid", { order: 3 }));
    const published = (type: string) => spans.getFinishedSpans().find((s) => s.name === `publish ${type}`);
    await until(() => published("order.placed") !== undefined && published("order.paid") !== undefined, "both emits' spans ended");
    expect(published("order.placed")!.spanContext().traceId).toBe(callerTraceId);
    expect(published("order.placed")!.parentSpanContext?.spanId).toBe("b7ad6b7169203331");
    expect(published("order.paid")!.spanContext().traceId).toBe("11111111111111111111111111111111");
    expect(published("order.paid")!.parentSpanContext?.spanId).toBe("2222222222222222");
    expect(spans.getFinishedSpans().filter((s) => s.name.startsWith("chronolog.v1.LogService/"))).toEqual([]); // the stream itself has no span
    publisher.publisher?.close();
  });

  it("on: each occurrence of a recurring timer starts a trace of its own, linked to the span that set the timer; its call and the run in the executor are in it", async () => {
    const spans = recordSpans();
    const { owner, client } = await ownerAndClient();
    const executor = runExecutor({ url: owner.url, plugins: [plugin], onError: () => {} });
    cleanups.push(() => executor.stop());
    await executor.ready;
    const timer = await context.with(propagation.extract(context.active(), { traceparent: callerTrace }), () =>
      client.schedule("shop.tick", {}, { everyMs: 1_000 }),
    );
    cleanups.push(() => client.unschedule(timer.id));
    const occurrences = () => spans.getFinishedSpans().filter((s) => s.name === "occurrence shop.tick" && s.attributes["chronolog.timer_id"] === timer.id);
    await until(() => occurrences().length >= 2, "two occurrences ended", 15_000);
    const schedule = spans.getFinishedSpans().find((s) => s.name === "chronolog.v1.TimeService/Schedule" && s.spanContext().traceId === callerTraceId)!;
    const [first, second] = occurrences();
    for (const occurrence of [first, second]) {
      expect(occurrence.parentSpanContext).toBeUndefined(); // a root: a trace of its own
      expect(occurrence.spanContext().traceId).not.toBe(callerTraceId);
      expect(occurrence.links.map((l) => l.context.spanId)).toEqual([schedule.spanContext().spanId]);
      const call = spans.getFinishedSpans().find((s) => s.name === "call shop.tick" && s.parentSpanContext?.spanId === occurrence.spanContext().spanId);
      expect(call, "the occurrence's call").toBeDefined();
    }
    expect(first.spanContext().traceId).not.toBe(second.spanContext().traceId);
    const run = spans.getFinishedSpans().find((s) => s.name === "run shop.tick" && s.spanContext().traceId === first.spanContext().traceId);
    expect(run?.attributes["chronolog.action"]).toBe("shop.tick");
  });

  it("log lines written under a span carry its trace_id and span_id while traces are recorded", async () => {
    recordSpans();
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString().split("\n")) if (line.trim() !== "") lines.push(JSON.parse(line));
        done();
      },
    });
    const logger = createLogger("info", sink);
    const span = trace.getTracer("test").startSpan("work");
    context.with(trace.setSpan(context.active(), span), () => logger.info("under a span"));
    span.end();
    logger.info("outside");
    expect(lines[0]).toMatchObject({ msg: "under a span", trace_id: span.spanContext().traceId, span_id: span.spanContext().spanId });
    expect(lines[1].trace_id).toBeUndefined();
  });
});
