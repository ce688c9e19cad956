// Traces end to end: an owner, a TypeScript executor, a Python executor and a TypeScript client,
// each in a process of its own (the client in this one), export OpenTelemetry spans over OTLP/HTTP
// (JSON from JavaScript, protobuf from Python) to a receiver the test starts, and one trace follows
// the work: the client's emit → the processor's delivery in the TypeScript executor → the action
// it calls, in the Python executor → the delay that action sets → the delay's call, with the owner
// restarted while the delay waits (its trace context comes back from the database).
//
// @module-tag serial
// @module-tag postgres

import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { context, propagation, trace } from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { NodeTracerProvider, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-node";
import { afterEach, describe, expect, it } from "vitest";
import { createClient } from "../sdk/ts/src/client.js";
import { startOtlpReceiver, type ReceivedSpan } from "./helpers/otlp-receiver.js";
import { spawnOwner, tempDir } from "./helpers/owner.js";
import { freePort } from "./helpers/standby.js";
import { until } from "./helpers/until.js";

const repo = new URL("../", import.meta.url).pathname;
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

const python = join(repo, ".venv/bin/python");

/** Starts a traced executor process (`command` `args`); `ran` collects its runs (JSON lines on stdout). */
function spawnTracedExecutor(command: string, args: string[], env: Record<string, string>) {
  const child: ChildProcess = spawn(command, args, {
    cwd: repo,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, ...env, PYTHONPATH: join(repo, "sdk/python"), PYTHONUNBUFFERED: "1" },
  });
  cleanups.push(() => void child.kill("SIGKILL"));
  const ran: { ran: string; traceId: string }[] = [];
  createInterface({ input: child.stdout! }).on("line", (line) => ran.push(JSON.parse(line)));
  const ready = new Promise<void>((resolve) => createInterface({ input: child.stderr! }).on("line", (l) => l.includes("executor ready") && resolve()));
  return { child, ran, ready };
}

/** Registers a tracer provider in this process (the client's), exporting to `url`; unregistered after the test. */
function tracedClientProcess(url: string): NodeTracerProvider {
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ "service.name": "trips-client" }),
    spanProcessors: [new SimpleSpanProcessor(new OTLPTraceExporter({ url: `${url}/v1/traces` }))],
  });
  provider.register();
  cleanups.push(async () => {
    await provider.shutdown();
    trace.disable();
    context.disable();
    propagation.disable();
  });
  return provider;
}

describe("traces over OTLP", { tags: ["serial"] }, () => {
  it.skipIf(!existsSync(python))(
    "one trace follows a client's emit through a processor, an action, a delay set there and its call, across an owner restart",
    async () => {
      const receiver = await startOtlpReceiver();
      cleanups.push(() => receiver.close());
      const env = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: "100" };
      const dataDir = tempDir();
      const port = await freePort();
      let owner = await spawnOwner(dataDir, [], port, [], { ...env, OTEL_SERVICE_NAME: "trips-owner" });
      cleanups.push(() => void owner.child.kill("SIGKILL"));
      const trips = spawnTracedExecutor(
        process.execPath,
        ["--conditions=chronolog-source", "--import", "tsx", "test/helpers/traced-executor.ts", owner.url],
        env,
      );
      const rooms = spawnTracedExecutor(python, ["sdk/python/tests/traced_executor.py", "--url", owner.url, "--delay-ms", "3000"], env);
      await Promise.all([trips.ready, rooms.ready]);

      tracedClientProcess(receiver.url);
      const client = createClient({ url: owner.url });
      const { clientSpan, eventId, eventTrace } = await trace.getTracer("trips-test").startActiveSpan("book a trip", async (span) => {
        const { event } = await client.log.emit({ type: "trip.booked", data: { trip: "lisbon" } });
        span.end();
        return { clientSpan: span.spanContext(), eventId: event!.id, eventTrace: event!.traceparent };
      });
      const traceId = clientSpan.traceId;

      // The delay is armed (3 s) and the processor's delivery finished (its ack floor past the event: not delivered again after the
      // restart, as an unfinished one would be): restart the owner before the delay's moment.
      await until(() => rooms.ran.some((r) => r.ran === "reserve"), "the action ran and armed its delay");
      const { seq } = (await client.log.getEvent({ id: eventId })).event!;
      await until(
        async () => ((await client.admin.listProcessors({})).processors.find((p) => p.name === "trips.confirm")?.ackFloor ?? 0n) >= seq,
        "the delivery finished",
      );
      owner.child.kill("SIGTERM");
      await owner.exited;
      owner = await spawnOwner(dataDir, [], port, [], { ...env, OTEL_SERVICE_NAME: "trips-owner" });
      await until(() => rooms.ran.some((r) => r.ran === "remind"), "the delay's call ran after the restart", 20_000);
      // The spans current in the handlers: the processor's, the action's and the delayed call's.
      expect([...trips.ran, ...rooms.ran].map((r) => [r.ran, r.traceId])).toEqual([
        ["confirm", traceId],
        ["reserve", traceId],
        ["remind", traceId],
      ]);

      const wanted: [string, string][] = [
        ["trips-owner", "publish trip.booked"],
        ["trips-owner", "process trips.confirm"],
        ["trips-owner", "settle trips.confirm"],
        ["trips-executor", "process trips.confirm"],
        ["trips-owner", "chronolog.v1.ActionService/CallAction"],
        ["trips-owner", "call rooms.reserve"],
        ["trips-owner", "attempt rooms.reserve"],
        ["rooms-executor", "run rooms.reserve"],
        ["trips-owner", "chronolog.v1.TimeService/Delay"],
        ["trips-owner", "occurrence rooms.remind"],
        ["trips-owner", "call rooms.remind"],
        ["trips-owner", "attempt rooms.remind"],
        ["rooms-executor", "run rooms.remind"],
      ];
      const inTrace = () => receiver.spans.filter((s) => s.traceId === traceId);
      const found = (service: string, name: string) => inTrace().filter((s) => s.service === service && s.name === name);
      await until(() => wanted.every(([service, name]) => found(service, name).length > 0), "every span of the trace received", 20_000);
      const one = (service: string, name: string): ReceivedSpan => {
        const spans = found(service, name);
        expect(spans, `${service}: ${name}`).toHaveLength(1);
        return spans[0];
      };
      const childOf = (span: ReceivedSpan, parent: ReceivedSpan | string) =>
        expect(span.parentSpanId, `${span.name}'s parent`).toBe(typeof parent === "string" ? parent : parent.spanId);

      // The client's emit: the owner's RPC span continues the client's span, the publish span is under it.
      const emitRpc = one("trips-owner", "chronolog.v1.LogService/Emit");
      childOf(emitRpc, clientSpan.spanId);
      const publish = one("trips-owner", "publish trip.booked");
      childOf(publish, emitRpc);
      expect(publish.kind).toBe(4); // producer
      expect(publish.attributes).toMatchObject({
        "messaging.system": "chronolog",
        "messaging.destination.name": "trip.booked",
        "messaging.message.id": eventId,
      });
      expect(eventTrace).toBe(`00-${traceId}-${publish.spanId}-01`); // the event carries its producer span (Event.traceparent)

      // Its delivery: the owner's process span under the producer span (and linked to it), settled by the ack; the handler's span under it.
      const delivery = one("trips-owner", "process trips.confirm");
      childOf(delivery, publish);
      expect(delivery.kind).toBe(5); // consumer
      expect(delivery.links).toContainEqual({ traceId, spanId: publish.spanId });
      expect(delivery.attributes).toMatchObject({
        "messaging.system": "chronolog",
        "messaging.operation.type": "process",
        "messaging.destination.name": "trips.confirm",
        "messaging.message.id": eventId,
        "chronolog.delivery.attempt": 1,
        "chronolog.outcome": "ok",
      });
      childOf(one("trips-owner", "settle trips.confirm"), delivery);
      const handler = one("trips-executor", "process trips.confirm");
      childOf(handler, delivery);

      // The action called under the delivery: the call, its attempt, the run in the Python executor.
      const callRpc = one("trips-owner", "chronolog.v1.ActionService/CallAction");
      childOf(callRpc, handler);
      const reserve = one("trips-owner", "call rooms.reserve");
      childOf(reserve, callRpc);
      const reserveAttempt = one("trips-owner", "attempt rooms.reserve");
      childOf(reserveAttempt, reserve);
      expect(reserveAttempt.attributes).toMatchObject({ "chronolog.attempt": 1, "chronolog.outcome": "ok" });
      const reserveRun = one("rooms-executor", "run rooms.reserve");
      childOf(reserveRun, reserveAttempt);

      // The event the action emitted on the Python client's Publish stream: in the run's trace (the emit carried its context).
      childOf(one("trips-owner", "publish room.held"), reserveRun);
      expect(found("trips-owner", "chronolog.v1.LogService/Emit")).toHaveLength(1); // the client's: the action's emit went on the stream

      // The delay set by the action, made by the restarted owner: its occurrence continues (and links) the span that set it.
      const delayRpc = one("trips-owner", "chronolog.v1.TimeService/Delay");
      childOf(delayRpc, reserveRun);
      const occurrence = one("trips-owner", "occurrence rooms.remind");
      childOf(occurrence, delayRpc);
      expect(occurrence.links).toContainEqual({ traceId, spanId: delayRpc.spanId });
      const remind = one("trips-owner", "call rooms.remind");
      childOf(remind, occurrence);
      const remindAttempt = one("trips-owner", "attempt rooms.remind");
      childOf(remindAttempt, remind);
      childOf(one("rooms-executor", "run rooms.remind"), remindAttempt);
    },
  );

  it.skipIf(!existsSync(python))("an executor that records no spans still carries the owner's trace into the work it does under a delivery", async () => {
    const receiver = await startOtlpReceiver();
    cleanups.push(() => receiver.close());
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: "100" };
    const owner = await spawnOwner(tempDir(), [], 0, [], { ...env, OTEL_SERVICE_NAME: "trips-owner" });
    cleanups.push(() => void owner.child.kill("SIGKILL"));
    const trips = spawnTracedExecutor(process.execPath, ["--conditions=chronolog-source", "--import", "tsx", "test/helpers/traced-executor.ts", owner.url], {
      ...env,
      TRACES_UNRECORDED: "1",
    });
    const rooms = spawnTracedExecutor(python, ["sdk/python/tests/traced_executor.py", "--url", owner.url, "--delay-ms", "100"], env);
    await Promise.all([trips.ready, rooms.ready]);
    const { event } = await createClient({ url: owner.url }).log.emit({ type: "trip.booked", data: { trip: "porto" } });
    await until(() => rooms.ran.some((r) => r.ran === "remind"), "the delay's call ran");
    const spanOf = (name: string) => receiver.spans.find((s) => s.service === "trips-owner" && s.name === name);
    await until(() => spanOf("call rooms.remind") !== undefined && spanOf("process trips.confirm") !== undefined, "the owner's spans received", 20_000);
    const delivery = spanOf("process trips.confirm")!;
    expect(delivery.attributes["messaging.message.id"]).toBe(event!.id);
    expect(receiver.spans.filter((s) => s.service === "trips-executor")).toEqual([]); // it records nothing
    // Its call under the delivery continued the owner's span of the try, which the SDK sent as traceparent.
    const callRpc = spanOf("chronolog.v1.ActionService/CallAction")!;
    expect(callRpc.traceId).toBe(delivery.traceId);
    expect(callRpc.parentSpanId).toBe(delivery.spanId);
    expect(spanOf("call rooms.remind")!.traceId).toBe(delivery.traceId);
  });
});
