// The publishing side of each system, as the load generator uses it. A target prepares one
// call's payload from events (JSON objects) once, then sends it as often as asked; a call
// resolves when the system acknowledged its events as stored:
// - nats: JetStream publish, resolved by the stream's PubAck (one subject per key);
// - redis: XADD to one stream (appendfsync always: the reply follows the AOF's fsync);
// - bullmq: Queue.add / addBulk;
// - chronolog, by client path: "unary" Emit over @grpc/grpc-js (requests encoded once, one
//   answer in 512 decoded and checked), "batch" EmitBatch the same way, "sdk" the TypeScript
//   SDK's default `emit` (sdk/ts/src/client.ts).
import { create, fromBinary, toBinary, type JsonObject } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { connect, type JetStreamClient, type NatsConnection } from "nats";
import { createClient } from "../../sdk/ts/src/client.js";
import { EmitBatchRequestSchema, EmitBatchResponseSchema, EmitRequestSchema, EmitResponseSchema } from "@chronolog/sdk/gen/chronolog/v1/log_pb";
import { DELIVER_TYPE, INGEST_TYPE } from "./plugin.js";

export type System = "nats" | "redis" | "bullmq" | "chronolog";
/** How a Chronolog client sends events: add a path here to measure it. */
export type ChronologPath = "unary" | "batch" | "sdk";
export const chronologPaths: ChronologPath[] = ["unary", "batch", "sdk"];
/** ingest: events nobody consumes; deliver: events consumed by the delivery workloads (data.key). */
export type Topic = "ingest" | "deliver";

export interface Endpoint {
  system: System;
  /** nats: host:port; redis and bullmq: host:port; chronolog: http://host:port. */
  address: string;
  path?: ChronologPath;
}

export interface Target {
  /** One call's payload carrying `events` (for unary paths, exactly one). */
  prepare(events: JsonObject[]): unknown;
  /** Sends a prepared payload; resolves once acknowledged. */
  call(payload: unknown): Promise<void>;
  close(): Promise<void>;
}

/** Names of the peers' streams, queues and consumer groups. */
export const names = {
  natsStream: (topic: Topic) => topic.toUpperCase(),
  natsSubject: (topic: Topic, key: string) => `${topic}.${key}`,
  natsDurable: "workers",
  redisStream: (topic: Topic) => `stream:${topic}`,
  redisGroup: "workers",
  bullQueue: (topic: Topic) => topic,
  delayQueue: "delays",
};

const hostPort = (address: string) => {
  const [host, port] = address.split(":");
  return { host, port: Number(port) };
};

/** grpc-js connections (HTTP/2) a Chronolog unary or batch target spreads calls over. */
export const GRPC_CONNECTIONS = 4;

export async function openTarget(endpoint: Endpoint, topic: Topic): Promise<Target> {
  switch (endpoint.system) {
    case "nats":
      return natsTarget(await connect({ servers: endpoint.address }), topic);
    case "redis":
      return redisTarget(new Redis({ ...hostPort(endpoint.address), maxRetriesPerRequest: null }), topic);
    case "bullmq":
      return bullTarget(new Queue(names.bullQueue(topic), { connection: { ...hostPort(endpoint.address), maxRetriesPerRequest: null } }));
    case "chronolog":
      return endpoint.path === "sdk" ? sdkTarget(endpoint.address, topic) : grpcTarget(endpoint.address, topic, endpoint.path ?? "unary");
  }
}

function natsTarget(nc: NatsConnection, topic: Topic): Target {
  const js: JetStreamClient = nc.jetstream();
  const encoder = new TextEncoder();
  type Msg = { subject: string; bytes: Uint8Array };
  return {
    prepare: (events) => events.map((e): Msg => ({ subject: names.natsSubject(topic, String(e.key ?? "e")), bytes: encoder.encode(JSON.stringify(e)) })),
    async call(payload) {
      const msgs = payload as Msg[];
      if (msgs.length === 1) await js.publish(msgs[0].subject, msgs[0].bytes);
      else await Promise.all(msgs.map((m) => js.publish(m.subject, m.bytes)));
    },
    close: () => nc.drain(),
  };
}

function redisTarget(redis: Redis, topic: Topic): Target {
  const stream = names.redisStream(topic);
  return {
    prepare: (events) => events.map((e) => JSON.stringify(e)),
    async call(payload) {
      const items = payload as string[];
      if (items.length === 1) await redis.xadd(stream, "*", "d", items[0]);
      else {
        const pipeline = redis.pipeline();
        for (const item of items) pipeline.xadd(stream, "*", "d", item);
        await pipeline.exec();
      }
    },
    close: async () => void redis.disconnect(),
  };
}

function bullTarget(queue: Queue): Target {
  const opts = { removeOnComplete: true };
  return {
    prepare: (events) => events,
    async call(payload) {
      const events = payload as JsonObject[];
      if (events.length === 1) await queue.add("e", events[0], opts);
      else await queue.addBulk(events.map((data) => ({ name: "e", data, opts })));
    },
    close: () => queue.close(),
  };
}

const eventType = (topic: Topic) => (topic === "ingest" ? INGEST_TYPE : DELIVER_TYPE);

function grpcTarget(url: string, topic: Topic, path: "unary" | "batch"): Target {
  const target = new URL(url).host;
  // A local subchannel pool per client: each one gets its own TCP connection.
  const clients = Array.from(
    { length: GRPC_CONNECTIONS },
    () => new grpc.Client(target, grpc.credentials.createInsecure(), { "grpc.use_local_subchannel_pool": 1, "grpc.max_receive_message_length": 64 << 20 }),
  );
  const identity = (b: Buffer) => b;
  const type = eventType(topic);
  let n = 0;
  const unary = path === "unary";
  const method = unary ? "/chronolog.v1.LogService/Emit" : "/chronolog.v1.LogService/EmitBatch";
  const check = (b: Buffer, size: number) => {
    const ok = unary
      ? (fromBinary(EmitResponseSchema, b).event?.seq ?? 0n) > 0n
      : fromBinary(EmitBatchResponseSchema, b).results.filter((r) => (r.event?.seq ?? 0n) > 0n).length === size;
    if (!ok) throw new Error(`${unary ? "Emit" : "EmitBatch"} answered without committed events`);
  };
  return {
    prepare(events) {
      const payload = unary
        ? toBinary(EmitRequestSchema, create(EmitRequestSchema, { type, data: events[0] }))
        : toBinary(EmitBatchRequestSchema, create(EmitBatchRequestSchema, { events: events.map((data) => ({ type, data })) }));
      return { bytes: Buffer.from(payload), size: events.length };
    },
    call(payload) {
      const { bytes, size } = payload as { bytes: Buffer; size: number };
      const i = n++;
      return new Promise((resolve, reject) =>
        clients[i % clients.length].makeUnaryRequest(method, identity, identity, bytes, (err, value) => {
          if (err) return reject(err);
          try {
            if (i % 512 === 0) check(value!, size);
          } catch (e) {
            return reject(e);
          }
          resolve();
        }),
      );
    },
    close: async () => clients.forEach((c) => c.close()),
  };
}

function sdkTarget(url: string, topic: Topic): Target {
  const client = createClient({ url });
  const type = eventType(topic);
  return {
    prepare: (events) => events,
    async call(payload) {
      const events = payload as JsonObject[];
      if (events.length === 1) await client.emit(type, events[0]);
      else await client.emitBatch(events.map((data) => ({ type, data })));
    },
    close: async () => {},
  };
}
