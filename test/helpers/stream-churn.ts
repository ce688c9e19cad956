// A client process that opens server streams over raw HTTP/2 (gRPC framing) and
// abandons them at random moments, for the stream-release tests.
//
// Usage: node --import tsx test/helpers/stream-churn.ts URL MODE COUNT SEED HEAD
//   watch     COUNT Watch streams, at most 24 open at once over a few connections, each
//             cancelled (RST_STREAM CANCEL) or dropped with its whole connection at a random
//             phase: before the first event, mid catch-up (stalled: not reading), at
//             caught_up, live, or waiting on the head. Prints one JSON line of phase counts.
//   hold      COUNT Watch streams brought to random phases and left open; prints "holding"
//             and waits to be killed (kill -9: the owner loses them with the connection).
//   subscribe COUNT Subscribe streams cancelled before the hello, right after it (before
//             the welcome) or mid-delivery (deliveries unread, not acked).
// HEAD is the log's head seq when the run starts (for streams that start near or at it).

import * as http2 from "node:http2";
import { create, fromBinary, toBinary, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { SubscribeRequestSchema, SubscribeResponseSchema } from "@chronolog/sdk/gen/chronolog/v1/executor_pb";
import { WatchRequestSchema, WatchResponseSchema, type WatchResponse } from "@chronolog/sdk/gen/chronolog/v1/log_pb";
import { manifestOf } from "../../sdk/ts/src/plugin.js";
import { crashPlugin } from "./crash-plugin.js";

const [url, mode, countArg, seedArg, headArg] = process.argv.slice(2);
const count = Number(countArg);
const head = Number(headArg);
let seed = Number(seedArg) >>> 0 || 1;
/** Deterministic per seed (xorshift32), so a failing run can be repeated. */
function random(): number {
  seed ^= seed << 13;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  return (seed >>> 0) / 2 ** 32;
}
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function frame<D extends DescMessage>(schema: D, message: MessageShape<D>): Buffer {
  const body = toBinary(schema, message);
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(body.length, 1);
  return Buffer.concat([prefix, body]);
}

/** Calls `onMessage` for each gRPC message of `stream` (decoded with `schema`). */
function readMessages<D extends DescMessage>(stream: http2.ClientHttp2Stream, schema: D, onMessage: (m: MessageShape<D>) => void): void {
  let buf: Buffer = Buffer.alloc(0);
  stream.on("data", (chunk: Buffer) => {
    buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
    while (buf.length >= 5 && buf.length >= 5 + buf.readUInt32BE(1)) {
      const len = buf.readUInt32BE(1);
      const m = fromBinary(schema, buf.subarray(5, 5 + len));
      buf = buf.subarray(5 + len);
      onMessage(m);
    }
  });
}

/** A pool of HTTP/2 connections; a connection can be dropped whole. */
class Connections {
  private sessions: http2.ClientHttp2Session[] = [];
  get(): http2.ClientHttp2Session {
    if (this.sessions.length < 4 || random() < 0.02) {
      const session = http2.connect(url);
      session.on("error", () => {});
      // A stalled stream holds its unread bytes of the connection's window: a large one keeps the others flowing.
      session.once("connect", () => !session.destroyed && session.setLocalWindowSize(256 * 1024 * 1024));
      session.once("close", () => (this.sessions = this.sessions.filter((s) => s !== session)));
      this.sessions.push(session);
      return session;
    }
    return pick(this.sessions.filter((s) => !s.closed && !s.destroyed)) ?? this.get();
  }
  closeAll(): void {
    for (const s of this.sessions) s.destroy();
  }
}

const phases = ["before-first", "catch-up", "caught-up", "live", "head"] as const;
type Phase = (typeof phases)[number];

/** Opens one Watch; `reached` resolves once it reached `phase` (the stream is then stalled or idle, still open). */
function watchTo(session: http2.ClientHttp2Session, phase: Phase): { stream: http2.ClientHttp2Stream; reached: Promise<unknown> } {
  const afterSeq = phase === "catch-up" || phase === "before-first" ? 0 : phase === "head" ? head + 1_000_000 : Math.max(0, head - Math.floor(random() * 10));
  const stream = session.request({ ":method": "POST", ":path": "/chronolog.v1.LogService/Watch", "content-type": "application/grpc", te: "trailers" });
  stream.on("error", () => {});
  stream.end(frame(WatchRequestSchema, create(WatchRequestSchema, { afterSeq: BigInt(afterSeq) })));
  if (phase === "before-first") return { stream, reached: Promise.resolve() };
  const stopAfter = 1 + Math.floor(random() * 300);
  let events = 0;
  let caughtUp = false;
  const reached = new Promise((resolve) => {
    const done = () => {
      stream.pause(); // stop reading: the owner's writes stall on flow control
      resolve(stream);
    };
    stream.once("close", () => resolve(stream));
    readMessages(stream, WatchResponseSchema, (m: WatchResponse) => {
      if (m.message.case === "event") events++;
      if (m.message.case === "caughtUp") caughtUp = true;
      if (phase === "catch-up" && (events >= stopAfter || caughtUp)) done();
      else if ((phase === "caught-up" || phase === "head") && caughtUp) done();
      else if (phase === "live" && caughtUp && m.message.case === "event") done();
    });
  });
  return { stream, reached };
}

async function churnWatches(): Promise<void> {
  const connections = new Connections();
  const counts: Record<string, number> = {};
  let next = 0;
  const worker = async () => {
    while (next < count) {
      next++;
      const phase = pick(phases);
      const session = connections.get();
      const { stream, reached } = watchTo(session, phase);
      if ((await Promise.race([reached.then(() => true), sleep(3_000).then(() => false)])) === false) {
        counts[`timed-out-${phase}`] = (counts[`timed-out-${phase}`] ?? 0) + 1;
        stream.close(http2.constants.NGHTTP2_CANCEL);
        continue;
      }
      if (random() < 0.5) await sleep(random() * 30);
      if (random() < 0.05) {
        session.destroy(); // the whole connection goes, with whatever else it carried
        counts["connection-closed"] = (counts["connection-closed"] ?? 0) + 1;
      } else {
        stream.close(http2.constants.NGHTTP2_CANCEL);
      }
      counts[phase] = (counts[phase] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: 24 }, worker));
  connections.closeAll();
  process.stdout.write(`${JSON.stringify(counts)}\n`);
}

async function holdWatches(): Promise<void> {
  const connections = new Connections();
  const streams = await Promise.all(Array.from({ length: count }, () => watchTo(connections.get(), pick(phases.filter((p) => p !== "live"))).reached));
  process.stdout.write(`holding ${streams.length}\n`);
  await new Promise(() => {});
}

/** Opens a Subscribe hosting the crash plugin's processor; resolves at `phase` (still open). */
function subscribeTo(session: http2.ClientHttp2Session, phase: "before-hello" | "at-hello" | "mid-delivery"): Promise<http2.ClientHttp2Stream> {
  const stream = session.request({ ":method": "POST", ":path": "/chronolog.v1.ExecutorService/Subscribe", "content-type": "application/grpc", te: "trailers" });
  stream.on("error", () => {});
  if (phase === "before-hello") return Promise.resolve(stream);
  const plugin = crashPlugin();
  const hello = create(SubscribeRequestSchema, {
    message: {
      case: "hello",
      value: { executor: "churn", instanceId: `churn-${process.pid}`, plugins: [manifestOf(plugin)], processors: ["crash.track"], credits: 64, batches: true },
    },
  });
  stream.write(frame(SubscribeRequestSchema, hello));
  if (phase === "at-hello") return Promise.resolve(stream);
  return new Promise((resolve) => {
    stream.once("close", () => resolve(stream));
    readMessages(stream, SubscribeResponseSchema, (m) => {
      if (m.message.case === "deliveries" || m.message.case === "delivery") {
        stream.pause();
        resolve(stream);
      }
    });
  });
}

async function churnSubscribes(): Promise<void> {
  const connections = new Connections();
  const counts: Record<string, number> = {};
  for (let i = 0; i < count; i++) {
    const phase = pick(["before-hello", "at-hello", "mid-delivery"] as const);
    const session = connections.get();
    const stream = await Promise.race([subscribeTo(session, phase), sleep(5_000).then(() => undefined)]);
    if (stream === undefined) {
      counts["timed-out"] = (counts["timed-out"] ?? 0) + 1;
      continue;
    }
    if (random() < 0.2) session.destroy();
    else stream.close(http2.constants.NGHTTP2_CANCEL);
    counts[phase] = (counts[phase] ?? 0) + 1;
  }
  connections.closeAll();
  process.stdout.write(`${JSON.stringify(counts)}\n`);
}

if (mode === "watch") await churnWatches();
else if (mode === "hold") await holdWatches();
else if (mode === "subscribe") await churnSubscribes();
else throw new Error(`unknown mode ${mode}`);
