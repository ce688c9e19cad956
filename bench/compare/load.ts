// The load generator of bench/compare: a process of its own (forked by main.ts, so it never
// shares an event loop or a core's turn with a server), answering each IPC request with a result.
// Requests:
// - closed:  `callers` closed-loop callers, each sending one prepared call after another, for
//            warm-up + measured window; calls/s, events/s and call latency over the window.
// - produce: `count` events flat out, `callers` in flight, `perCall` events a call.
// - rate:    an open loop at `rate` events/s with data.sent (epoch ms, fractional) in every event
//            and data.warm in those of the warm-up, for the consumers' send-to-handler latency
//            (events: those sent after the warm-up; totalEvents: all).
// - delays:  set delays: Chronolog's DelayBatch (1,000 a call, as addBulk) or BullMQ delayed jobs
//            (addBulk of 1,000), each with data `due` (epoch ms) and optionally `warm`.
// - trivial: the closed loop against a trivial gRPC server (trivial-server.ts) with a grpc-js client.
import type { JsonObject } from "@bufbuild/protobuf";
import { create, toBinary } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import { Queue } from "bullmq";
import { GetEventRequestSchema } from "@chronolog/sdk/gen/chronolog/v1/log_pb";
import { eventData } from "../emit/load.js";
import { pct } from "../lib/proc.js";
import { setDelaysInBatches } from "../timers/set-delays.js";
import { GRPC_CONNECTIONS, names, openTarget, type Endpoint, type Target, type Topic } from "./targets.js";

export type LoadRequest =
  | { op: "closed"; endpoint: Endpoint; topic: Topic; callers: number; perCall: number; warmupMs: number; durationMs: number }
  | { op: "produce"; endpoint: Endpoint; topic: Topic; callers: number; perCall: number; count: number }
  | { op: "rate"; endpoint: Endpoint; topic: Topic; rate: number; warmupMs: number; durationMs: number }
  | { op: "delays"; endpoint: Endpoint; count: number; dueOf: DueSpec; warm?: boolean }
  | { op: "trivial"; address: string; callers: number; warmupMs: number; durationMs: number };

/** When delay i is due: base + spreadMs * ((i * 7919) % count) / count (spread evenly, set in shuffled order); base "now+N" is N ms after the setting starts. */
export interface DueSpec {
  base: number | `now+${number}`;
  spreadMs: number;
}

export interface LoadResult {
  /** Measured window (closed, trivial) or the whole run (produce, rate, delays), ms. Calls and events: those answered in it; latency: of the calls sent and answered in it. */
  ms: number;
  calls: number;
  events: number;
  /** Events over the whole run, warm-up included (closed, trivial): CPU per event divides by it. */
  totalEvents: number;
  p50: number;
  p99: number;
  /** The run's start, epoch ms. */
  startedAt: number;
  /** Open loop: the most calls waiting for their answer at once. */
  maxInFlight?: number;
  errors: number;
  firstError?: string;
  /** This process's CPU over the measured window, % of one core. */
  cpuPercent: number;
}

const now = () => performance.timeOrigin + performance.now();

/** Events of ~200 bytes; those of the deliver topic carry one of 1,000 keys. */
function events(topic: Topic, from: number, n: number): JsonObject[] {
  return Array.from({ length: n }, (_, j) => {
    const i = from + j;
    return topic === "deliver" ? { ...eventData(i), key: `k${i % 1000}` } : eventData(i);
  });
}

/** Payloads prepared once and cycled through: 1,000 calls' worth (so 1,000 keys), at most 16 batches. */
function pool(target: Target, topic: Topic, perCall: number): unknown[] {
  const size = perCall === 1 ? 1000 : Math.max(1, Math.min(16, Math.ceil(1000 / perCall)));
  return Array.from({ length: size }, (_, c) => target.prepare(events(topic, c * perCall, perCall)));
}

type Call = (i: number) => Promise<void>;

async function closedLoop(call: Call, callers: number, perCall: number, warmupMs: number, durationMs: number): Promise<LoadResult> {
  const start = performance.now();
  const measureFrom = start + warmupMs;
  const measureTo = measureFrom + durationMs;
  const latencies: number[] = [];
  let total = 0;
  let inWindow = 0;
  let errors = 0;
  let firstError: string | undefined;
  let cpuAtStart: NodeJS.CpuUsage | undefined;
  const cpuTimer = setTimeout(() => (cpuAtStart = process.cpuUsage()), warmupMs);
  let next = 0;
  const caller = async () => {
    while (performance.now() < measureTo) {
      const t0 = performance.now();
      try {
        await call(next++);
        const t1 = performance.now();
        total++;
        if (t1 >= measureFrom && t1 <= measureTo) inWindow++;
        if (t0 >= measureFrom && t1 <= measureTo) latencies.push(t1 - t0);
      } catch (e) {
        errors++;
        firstError ??= e instanceof Error ? e.message : String(e);
        if (errors > 1000) throw new Error(`too many errors, first: ${firstError}`);
      }
    }
  };
  await Promise.all(Array.from({ length: callers }, caller));
  clearTimeout(cpuTimer);
  const cpu = process.cpuUsage(cpuAtStart);
  latencies.sort((a, b) => a - b);
  return {
    ms: durationMs,
    calls: inWindow,
    events: inWindow * perCall,
    totalEvents: total * perCall,
    p50: pct(latencies, 50),
    p99: pct(latencies, 99),
    startedAt: performance.timeOrigin + start,
    errors,
    firstError,
    cpuPercent: ((cpu.user + cpu.system) / 1000 / durationMs) * 100,
  };
}

async function produce(target: Target, topic: Topic, callers: number, perCall: number, count: number): Promise<LoadResult> {
  const payloads = pool(target, topic, perCall);
  const startedAt = now();
  const cpu0 = process.cpuUsage();
  let next = 0;
  await Promise.all(
    Array.from({ length: callers }, async () => {
      while (next * perCall < count) await target.call(payloads[next++ % payloads.length]);
    }),
  );
  const ms = now() - startedAt;
  const cpu = process.cpuUsage(cpu0);
  return {
    ms,
    calls: next,
    events: next * perCall,
    totalEvents: next * perCall,
    p50: NaN,
    p99: NaN,
    startedAt,
    errors: 0,
    cpuPercent: ((cpu.user + cpu.system) / 1000 / ms) * 100,
  };
}

async function openLoop(target: Target, topic: Topic, rate: number, warmupMs: number, durationMs: number): Promise<LoadResult> {
  const startedAt = now();
  const cpu0 = process.cpuUsage();
  const end = startedAt + warmupMs + durationMs;
  let sent = 0;
  let warm = 0;
  let inFlight = 0;
  let maxInFlight = 0;
  let errors = 0;
  let firstError: string | undefined;
  const pending = new Set<Promise<void>>();
  while (now() < end) {
    const due = Math.floor(((now() - startedAt) / 1000) * rate);
    while (sent < due) {
      const [data] = events(topic, sent, 1);
      const t = now();
      data.sent = t;
      if (t < startedAt + warmupMs) (data.warm = true), warm++;
      sent++;
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      const p: Promise<void> = target.call(target.prepare([data])).then(
        () => void (inFlight--, pending.delete(p)),
        (e: unknown) => void (inFlight--, pending.delete(p), errors++, (firstError ??= String(e))),
      );
      pending.add(p);
    }
    await new Promise((r) => setTimeout(r, 1));
  }
  await Promise.all(pending);
  const ms = now() - startedAt;
  const cpu = process.cpuUsage(cpu0);
  return {
    ms,
    calls: sent,
    events: sent - warm,
    totalEvents: sent,
    p50: NaN,
    p99: NaN,
    startedAt,
    maxInFlight,
    errors,
    firstError,
    cpuPercent: ((cpu.user + cpu.system) / 1000 / ms) * 100,
  };
}

async function delays(endpoint: Endpoint, count: number, spec: DueSpec, warm: boolean): Promise<LoadResult> {
  const startedAt = now();
  const base = typeof spec.base === "number" ? spec.base : Math.round(startedAt + Number(spec.base.slice(4)));
  const dueOf = (i: number) => Math.round(base + (spec.spreadMs * ((i * 7919) % count)) / count);
  if (endpoint.system === "chronolog") {
    await setDelaysInBatches(endpoint.address, 0, count, dueOf); // DelayBatch of 1,000, 4 in flight: as addBulk below
  } else {
    const queue = new Queue(names.delayQueue, {
      connection: { host: endpoint.address.split(":")[0], port: Number(endpoint.address.split(":")[1]), maxRetriesPerRequest: null },
    });
    const batch = 1000;
    let next = 0;
    // 4 addBulk calls in flight.
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (next < count) {
          const from = next;
          next = Math.min(count, next + batch);
          const t = Date.now();
          await queue.addBulk(
            Array.from({ length: next - from }, (_, j) => {
              const due = dueOf(from + j);
              return { name: "fire", data: warm ? { due, warm } : { due }, opts: { delay: Math.max(0, due - t), removeOnComplete: true } };
            }),
          );
        }
      }),
    );
    await queue.close();
  }
  const ms = now() - startedAt;
  return { ms, calls: count, events: count, totalEvents: count, p50: NaN, p99: NaN, startedAt, errors: 0, cpuPercent: NaN };
}

function trivialCalls(address: string): { call: Call; close(): void } {
  const clients = Array.from(
    { length: GRPC_CONNECTIONS },
    () => new grpc.Client(address, grpc.credentials.createInsecure(), { "grpc.use_local_subchannel_pool": 1 }),
  );
  const identity = (b: Buffer) => b;
  const request = Buffer.from(toBinary(GetEventRequestSchema, create(GetEventRequestSchema, { id: "x".repeat(200) })));
  return {
    call: (i) =>
      new Promise((resolve, reject) =>
        clients[i % clients.length].makeUnaryRequest("/chronolog.v1.LogService/GetEvent", identity, identity, request, (err) =>
          err ? reject(err) : resolve(),
        ),
      ),
    close: () => clients.forEach((c) => c.close()),
  };
}

export async function runLoad(req: LoadRequest): Promise<LoadResult> {
  if (req.op === "trivial") {
    const { call, close } = trivialCalls(req.address);
    try {
      return await closedLoop(call, req.callers, 1, req.warmupMs, req.durationMs);
    } finally {
      close();
    }
  }
  if (req.op === "delays") return delays(req.endpoint, req.count, req.dueOf, req.warm ?? false);
  const target = await openTarget(req.endpoint, req.topic);
  try {
    if (req.op === "closed") {
      const payloads = pool(target, req.topic, req.perCall);
      return await closedLoop((i) => target.call(payloads[i % payloads.length]), req.callers, req.perCall, req.warmupMs, req.durationMs);
    }
    if (req.op === "produce") return await produce(target, req.topic, req.callers, req.perCall, req.count);
    return await openLoop(target, req.topic, req.rate, req.warmupMs, req.durationMs);
  } finally {
    await target.close();
  }
}

// As a forked child: serve requests from the parent over IPC, one at a time.
if (process.send && import.meta.url === `file://${process.argv[1]}`) {
  process.on("message", (req: LoadRequest) => {
    runLoad(req).then(
      (result) => process.send!({ ok: true, result }),
      (e: unknown) => process.send!({ ok: false, error: e instanceof Error ? (e.stack ?? e.message) : String(e) }),
    );
  });
  process.send({ ready: true });
}
