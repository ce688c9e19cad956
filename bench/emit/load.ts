// Load generator of the emit benchmark. Runs in its own process (forked by
// bench/emit/main.ts, so it never shares an event loop with the owner) and
// answers each IPC request `LoadRequest` with a `LoadResult`.
//
// Two gRPC client stacks (both gRPC over HTTP/2 cleartext):
// - "grpc-js": @grpc/grpc-js with requests encoded once up front and raw
//   response bytes (a sample is decoded and checked), so the generator spends
//   as little CPU as possible per call;
// - "connect": the SDK's transport, @connectrpc/connect-node createGrpcTransport
//   (requests encoded and responses decoded per call).
// `connections` HTTP/2 connections are opened and callers are spread over them
// round-robin.

import { create, fromBinary, toBinary, type JsonObject } from "@bufbuild/protobuf";
import { createClient as createConnectClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import {
  EmitBatchRequestSchema,
  EmitBatchResponseSchema,
  EmitRequestSchema,
  EmitResponseSchema,
  LogService,
  type EmitBatchRequest,
  type EmitRequest,
} from "@chronolog/sdk/gen/chronolog/v1/log_pb";
import { ChronologClient } from "../../sdk/ts/src/client.js";
import { createTransport } from "../../sdk/ts/src/transport.js";

export type ClientKind = "grpc-js" | "connect";

/** One measured run. */
export interface LoadRequest {
  url: string;
  client: ClientKind;
  connections: number;
  callers: number;
  /** "unary": Emit with one event; "batch": EmitBatch with `batchSize` events; "publish": the SDK's emit (one Publish stream per connection, `callers` emits in flight). */
  mode: "unary" | "batch" | "publish";
  batchSize: number;
  eventType: string;
  warmupMs: number;
  durationMs: number;
}

/** What a run measured (only calls that ended inside the measured window count). */
export interface LoadResult {
  calls: number;
  events: number;
  errors: number;
  firstError?: string;
  elapsedMs: number;
  eventsPerSec: number;
  /** Call latency in ms. */
  p50: number;
  p99: number;
  max: number;
  /** CPU used by this generator process during the measured window, % of one core. */
  cpuPercent: number;
}

/** The event type the benchmarks emit, declared by {@link manifest}. */
export const EVENT_TYPE = "bench.order_placed";

/** The plugin manifest the benchmark owners load: one event type with a JSON schema. */
export const manifest = `
name: bench
version: "1"
events:
  ${EVENT_TYPE}:
    allow: ["*"]
    description: an order, about 200 bytes of JSON
    schema:
      type: object
      required: [order, customer, amount, currency, items, status]
      additionalProperties: false
      properties:
        order: { type: string, pattern: "^ord-[0-9]+$" }
        customer: { type: string, minLength: 1 }
        amount: { type: number, minimum: 0 }
        currency: { type: string, enum: [EUR, USD, GBP] }
        items: { type: integer, minimum: 1 }
        status: { type: string }
        channel: { type: string }
        note: { type: string, maxLength: 1000 }
`;

/** Event data of about 200 bytes of JSON, varied by `i`. */
export function eventData(i: number): JsonObject {
  const data: JsonObject = {
    order: `ord-${String(i).padStart(8, "0")}`,
    customer: `cust-${String(i % 9973).padStart(5, "0")}`,
    amount: Math.round((i % 100_000) * 1.37) / 100,
    currency: "EUR",
    items: (i % 7) + 1,
    status: "placed",
    channel: i % 2 ? "web" : "app",
    note: "",
  };
  const pad = 200 - JSON.stringify(data).length;
  data.note = "x".repeat(Math.max(0, pad));
  return data;
}

/** grpc-js client: decode and check one answer in this many (BENCH_CHECK_EVERY, 0: never). */
const checkEvery = Number(process.env.BENCH_CHECK_EVERY ?? 512);

/** Distinct requests prepared up front and cycled through (ids are left to the owner). */
const POOL = 256;

function unaryRequests(eventType: string): EmitRequest[] {
  return Array.from({ length: POOL }, (_, i) =>
    create(EmitRequestSchema, { type: eventType, data: eventData(i), actor: { id: `user:${i % 64}`, via: "bench" } }),
  );
}

function batchRequests(eventType: string, size: number): EmitBatchRequest[] {
  return Array.from({ length: 8 }, (_, b) =>
    create(EmitBatchRequestSchema, {
      events: Array.from({ length: size }, (_, i) => ({ type: eventType, data: eventData(b * size + i), actor: { id: `user:${i % 64}`, via: "bench" } })),
    }),
  );
}

/** A function that performs one call and resolves with the number of events it committed. */
type Call = (i: number) => Promise<number>;

function grpcJsCalls(req: LoadRequest): { calls: Call[]; close(): void } {
  const target = new URL(req.url).host;
  const clients = Array.from(
    { length: req.connections },
    // A local subchannel pool per client: each one gets its own TCP connection.
    () => new grpc.Client(target, grpc.credentials.createInsecure(), { "grpc.use_local_subchannel_pool": 1, "grpc.max_receive_message_length": 64 << 20 }),
  );
  const identity = (b: Buffer) => b;
  let checked = 0;
  const call = (client: grpc.Client, method: string, payloads: Buffer[], events: number, check: (b: Buffer) => void): Call => {
    return (i) =>
      new Promise((resolve, reject) => {
        client.makeUnaryRequest(method, identity, identity, payloads[i % payloads.length], (err, value) => {
          if (err) return reject(err);
          // Decode one answer in `checkEvery` to check the owner really committed.
          try {
            if (checkEvery > 0 && checked++ % checkEvery === 0) check(value!);
          } catch (e) {
            return reject(e);
          }
          resolve(events);
        });
      });
  };
  let calls: Call[];
  if (req.mode === "unary") {
    const payloads = unaryRequests(req.eventType).map((m) => Buffer.from(toBinary(EmitRequestSchema, m)));
    const check = (b: Buffer) => {
      const r = fromBinary(EmitResponseSchema, b);
      if (!r.event || r.event.seq <= 0n) throw new Error("Emit answered without a committed event");
    };
    calls = clients.map((c) => call(c, "/chronolog.v1.LogService/Emit", payloads, 1, check));
  } else {
    const payloads = batchRequests(req.eventType, req.batchSize).map((m) => Buffer.from(toBinary(EmitBatchRequestSchema, m)));
    const check = (b: Buffer) => {
      const r = fromBinary(EmitBatchResponseSchema, b);
      if (r.results.length !== req.batchSize || !r.results.every((x) => x.event && x.event.seq > 0n))
        throw new Error("EmitBatch answered without committed events");
    };
    calls = clients.map((c) => call(c, "/chronolog.v1.LogService/EmitBatch", payloads, req.batchSize, check));
  }
  return { calls, close: () => clients.forEach((c) => c.close()) };
}

/** The SDK's default emit: each connection's client pipelines its callers' emits on one Publish stream. */
function publishCalls(req: LoadRequest): { calls: Call[]; close(): void } {
  const clients = Array.from({ length: req.connections }, () => new ChronologClient(createTransport({ url: req.url }), { emitVia: "stream" }));
  const data = Array.from({ length: POOL }, (_, i) => eventData(i));
  return {
    calls: clients.map((c) => async (i: number) => {
      const r = await c.emit(req.eventType, data[i % POOL], { actor: { id: `user:${i % 64}`, via: "bench" } });
      if (!r.event || r.event.seq <= 0n) throw new Error("emit answered without a committed event");
      return 1;
    }),
    close: () => clients.forEach((c) => c.publisher?.close()),
  };
}

function connectCalls(req: LoadRequest): { calls: Call[]; close(): void } {
  if (req.mode === "publish") return publishCalls(req);
  const clients = Array.from({ length: req.connections }, () => createConnectClient(LogService, createGrpcTransport({ baseUrl: req.url })));
  if (req.mode === "unary") {
    const requests = unaryRequests(req.eventType);
    return {
      calls: clients.map((c) => async (i: number) => {
        const r = await c.emit(requests[i % requests.length]);
        if (!r.event || r.event.seq <= 0n) throw new Error("Emit answered without a committed event");
        return 1;
      }),
      close() {},
    };
  }
  const requests = batchRequests(req.eventType, req.batchSize);
  return {
    calls: clients.map((c) => async (i: number) => {
      const r = await c.emitBatch(requests[i % requests.length]);
      if (r.results.length !== req.batchSize) throw new Error("EmitBatch answered short");
      return req.batchSize;
    }),
    close() {},
  };
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** Runs one measured load: warm-up, then `durationMs` of calls by `callers` closed-loop callers. */
export async function runLoad(req: LoadRequest): Promise<LoadResult> {
  const { calls, close } = req.client === "grpc-js" && req.mode !== "publish" ? grpcJsCalls(req) : connectCalls(req);
  const start = performance.now();
  const measureFrom = start + req.warmupMs;
  const measureTo = measureFrom + req.durationMs;
  let latencies = new Float64Array(1 << 16);
  let count = 0;
  let events = 0;
  let errors = 0;
  let firstError: string | undefined;
  let cpuAtStart: NodeJS.CpuUsage | undefined;
  const cpuTimer = setTimeout(() => (cpuAtStart = process.cpuUsage()), req.warmupMs);

  const caller = async (index: number) => {
    const call = calls[index % calls.length];
    let i = index;
    while (performance.now() < measureTo) {
      const t0 = performance.now();
      try {
        const n = await call(i);
        const t1 = performance.now();
        if (t0 >= measureFrom && t1 <= measureTo) {
          if (count === latencies.length) {
            const bigger = new Float64Array(latencies.length * 2);
            bigger.set(latencies);
            latencies = bigger;
          }
          latencies[count++] = t1 - t0;
          events += n;
        }
      } catch (e) {
        errors++;
        firstError ??= e instanceof Error ? e.message : String(e);
        if (errors > 1000) throw new Error(`too many errors, first: ${firstError}`);
      }
      i += req.callers;
    }
  };
  await Promise.all(Array.from({ length: req.callers }, (_, i) => caller(i)));
  clearTimeout(cpuTimer);
  const cpu = process.cpuUsage(cpuAtStart);
  close();
  const sorted = latencies.subarray(0, count).sort();
  return {
    calls: count,
    events,
    errors,
    firstError,
    elapsedMs: req.durationMs,
    eventsPerSec: events / (req.durationMs / 1000),
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    max: count ? sorted[count - 1] : NaN,
    cpuPercent: ((cpu.user + cpu.system) / 1000 / req.durationMs) * 100,
  };
}

// As a forked child: serve requests from the parent over IPC, one at a time.
if (process.send && import.meta.url === `file://${process.argv[1]}`) {
  process.on("message", (req: LoadRequest) => {
    runLoad(req).then(
      (result) => process.send!({ ok: true, result }),
      (e: unknown) => process.send!({ ok: false, error: e instanceof Error ? e.message : String(e) }),
    );
  });
  process.send({ ready: true });
}
