// One consumer process of a peer (the Chronolog side uses bench/deliver/executor.ts and
// bench/timers/executor.ts). It speaks their protocol on stdout: {"ready":true}, {"handled"}
// every 100 ms, and on SIGTERM {"handled","latencies","firstAt","lastAt"} (epoch ms).
// Usage: node --import tsx bench/compare/consumer.ts SYSTEM ADDRESS MODE
//   SYSTEM nats | redis | bullmq; MODE deliver | delays (bullmq only)
// deliver: every message's JSON is parsed and acknowledged (nats: a pull consumer of the durable
//   "workers", up to 512 messages pulled at once, each acked; redis: XREADGROUP COUNT 512 of group
//   "workers", then one XACK of the ids read; bullmq: a Worker with concurrency 256). The latency
//   of a message with data.sent is now − sent (those with data.warm left out).
// delays: a BullMQ Worker on the delays queue; lateness = now − data.due.
import { Worker } from "bullmq";
import { Redis } from "ioredis";
import { connect } from "nats";
import { names } from "./targets.js";

const [system, address, mode] = process.argv.slice(2);
const [host, port] = address.split(":");
const now = () => performance.timeOrigin + performance.now();
let handled = 0;
let firstAt = 0;
let lastAt = 0;
const latencies: number[] = [];
const stops: (() => Promise<unknown>)[] = [];

function handle(data: { sent?: number; due?: number; warm?: boolean }): void {
  const t = now();
  if (handled++ === 0) firstAt = t;
  lastAt = t;
  if (data.warm) return;
  if (mode === "delays") latencies.push(Date.now() - data.due!);
  else if (typeof data.sent === "number") latencies.push(t - data.sent);
}

async function nats(): Promise<void> {
  const nc = await connect({ servers: address });
  const consumer = await nc.jetstream().consumers.get(names.natsStream("deliver"), names.natsDurable);
  const messages = await consumer.consume({ max_messages: 512 });
  stops.push(() => nc.close());
  void (async () => {
    for await (const m of messages) {
      handle(m.json());
      m.ack();
    }
  })();
}

async function redis(): Promise<void> {
  const client = new Redis({ host, port: Number(port), maxRetriesPerRequest: null });
  const stream = names.redisStream("deliver");
  const me = `c${process.pid}`;
  let running = true;
  stops.push(async () => {
    running = false;
    client.disconnect();
  });
  void (async () => {
    while (running) {
      const answer = (await client.xreadgroup("GROUP", names.redisGroup, me, "COUNT", 512, "BLOCK", 1000, "STREAMS", stream, ">").catch(() => null)) as
        | [string, [string, string[]][]][]
        | null;
      if (!answer) continue;
      const entries = answer[0][1];
      for (const [, fields] of entries) handle(JSON.parse(fields[1]));
      if (entries.length > 0) await client.xack(stream, names.redisGroup, ...entries.map(([id]) => id)).catch(() => {});
    }
  })();
}

async function bullmq(): Promise<void> {
  const queue = mode === "delays" ? names.delayQueue : names.bullQueue("deliver");
  const worker = new Worker(queue, async (job) => handle(job.data), { connection: { host, port: Number(port), maxRetriesPerRequest: null }, concurrency: 256 });
  await worker.waitUntilReady();
  stops.push(() => worker.close(true));
}

await ({ nats, redis, bullmq } as Record<string, () => Promise<void>>)[system]();
process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
const timer = setInterval(() => process.stdout.write(`${JSON.stringify({ handled })}\n`), 100);
process.on("SIGTERM", () => {
  clearInterval(timer);
  process.stdout.write(`${JSON.stringify({ handled, latencies, firstAt, lastAt })}\n`, () => {
    void Promise.race([Promise.all(stops.map((s) => s())), new Promise((r) => setTimeout(r, 1000))]).then(() => process.exit(0));
  });
});
