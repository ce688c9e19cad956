// One-port transport: gRPC (grpc-js, h2c), Connect and gRPC-Web (HTTP/1.1), buf curl with
// reflection, health, robustness against bad clients, CORS, size limits, shutdown, TLS.

import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import * as http from "node:http";
import * as http2 from "node:http2";
import * as net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient, type ConnectRouter, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { EmitRequestSchema, EmitResponseSchema, LogService, WatchRequestSchema, WatchResponseSchema } from "@chronolog/sdk/gen/chronolog/v1/log_pb";
import {
  Health,
  HealthCheckRequestSchema,
  HealthCheckResponseSchema,
  HealthCheckResponse_ServingStatus as ServingStatus,
} from "@chronolog/sdk/gen/grpc/health/v1/health_pb";
import * as reflectionV1 from "@chronolog/sdk/gen/grpc/reflection/v1/reflection_pb";
import * as reflectionV1alpha from "@chronolog/sdk/gen/grpc/reflection/v1alpha/reflection_pb";
import { listen, type Listener, type ListenOptions } from "../server/src/rpc/listen.js";
import { registerHealth, type HealthStatus } from "../server/src/rpc/health.js";
import { registerReflection } from "../server/src/rpc/reflection.js";

const run = promisify(execFile);
const BUF = new URL("../node_modules/.bin/buf", import.meta.url).pathname;
const ORIGIN = "https://app.example";

/** Counters the stub LogService updates. */
const stats = { watchStarted: 0, watchAborted: 0 };

/** Routes: a stub LogService (Emit echoes the type; Watch sends 3 events then waits), health, reflection. */
function testRoutes(onHealth?: (h: HealthStatus) => void) {
  return (router: ConnectRouter) => {
    router.service(LogService, {
      emit(req) {
        return { event: { seq: 1n, id: "e1", type: req.type, data: req.data }, existing: false };
      },
      async *watch(_req, ctx) {
        stats.watchStarted++;
        for (let i = 1; i <= 3; i++) {
          yield { message: { case: "event", value: { seq: BigInt(i), id: `e${i}`, type: "t" } } };
        }
        await new Promise<void>((resolve) => {
          if (ctx.signal.aborted) resolve();
          ctx.signal.addEventListener("abort", () => resolve());
        });
        stats.watchAborted++;
      },
    });
    const health = registerHealth(router, [LogService.typeName]);
    onHealth?.(health);
    registerReflection(router, [LogService, Health]);
  };
}

async function start(extra: Partial<ListenOptions> = {}, onHealth?: (h: HealthStatus) => void): Promise<Listener> {
  return listen({ host: "127.0.0.1", port: 0, routes: testRoutes(onHealth), ...extra });
}

/** grpc-js serializers from protobuf-es schemas. */
function codec<I extends DescMessage, O extends DescMessage>(input: I, output: O) {
  return {
    serialize: (m: MessageShape<I>) => Buffer.from(toBinary(input, m)),
    deserialize: (b: Buffer) => fromBinary(output, b),
  };
}

function grpcUnary<I extends DescMessage, O extends DescMessage>(
  client: grpc.Client,
  path: string,
  input: I,
  output: O,
  req: MessageShape<I>,
): Promise<MessageShape<O>> {
  const c = codec(input, output);
  return new Promise((resolve, reject) => {
    client.makeUnaryRequest(path, c.serialize, c.deserialize, req, (err, res) => (err || !res ? reject(err) : resolve(res)));
  });
}

/** Resolves with the ms until the server closes `socket`; rejects after `limitMs`. */
function closedWithin(socket: net.Socket, limitMs: number): Promise<number> {
  const t0 = Date.now();
  socket.on("error", () => {});
  socket.resume(); // read and drop whatever the server answers
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`socket still open after ${limitMs} ms`)), limitMs);
    socket.once("close", () => {
      clearTimeout(timer);
      resolve(Date.now() - t0);
    });
  });
}

function connectRaw(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, "127.0.0.1", () => resolve(s));
    s.once("error", reject);
  });
}

function rawHttp(port: number, options: http.RequestOptions): Promise<{ status: number; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, agent: false, ...options }, (res) => {
      res.resume();
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
    });
    req.on("error", reject);
    req.end();
  });
}

async function buf(...args: string[]): Promise<string> {
  const { stdout } = await run(BUF, ["curl", ...args], { timeout: 10_000 });
  return stdout;
}

async function emitVia(transport: Transport, type: string) {
  const res = await createClient(LogService, transport).emit({ type, data: { a: 1 } });
  return res.event?.type;
}

describe("listen: one port for gRPC, gRPC-Web and Connect", () => {
  let srv: Listener;
  let health: HealthStatus;
  let base: string;
  let grpcClient: grpc.Client;

  beforeAll(async () => {
    srv = await start({ corsOrigins: [ORIGIN], readMaxBytes: 4096, handshakeTimeoutMs: 300 }, (h) => (health = h));
    base = `http://127.0.0.1:${srv.port}`;
    grpcClient = new grpc.Client(`127.0.0.1:${srv.port}`, grpc.credentials.createInsecure());
  });
  afterAll(async () => {
    grpcClient?.close();
    await srv?.close();
  });

  it("serves grpc-js over h2c: Emit and health Check", async () => {
    expect(srv.port).toBeGreaterThan(0);
    const res = await grpcUnary(
      grpcClient,
      "/chronolog.v1.LogService/Emit",
      EmitRequestSchema,
      EmitResponseSchema,
      create(EmitRequestSchema, { type: "order.placed", data: { n: 1 } }),
    );
    expect(res.event?.type).toBe("order.placed");
    expect(res.event?.data).toEqual({ n: 1 });
    const check = (service: string) =>
      grpcUnary(grpcClient, "/grpc.health.v1.Health/Check", HealthCheckRequestSchema, HealthCheckResponseSchema, create(HealthCheckRequestSchema, { service }));
    expect((await check("")).status).toBe(ServingStatus.SERVING);
    expect((await check("chronolog.v1.LogService")).status).toBe(ServingStatus.SERVING);
    await expect(check("nope.Service")).rejects.toMatchObject({ code: grpc.status.NOT_FOUND });
  });

  it("serves Connect and gRPC-Web over HTTP/1.1, and Connect over h2c", async () => {
    const connect1 = createConnectTransport({ baseUrl: base, httpVersion: "1.1" });
    expect(await emitVia(connect1, "via.connect")).toBe("via.connect");
    const types: string[] = [];
    for await (const m of createClient(LogService, connect1).watch({})) {
      if (m.message.case === "event") types.push(`${m.message.value.seq}`);
      if (types.length === 3) break; // the server would keep the stream open
    }
    expect(types).toEqual(["1", "2", "3"]);
    expect(await emitVia(createGrpcWebTransport({ baseUrl: base, httpVersion: "1.1" }), "via.web")).toBe("via.web");
    expect(await emitVia(createConnectTransport({ baseUrl: base, httpVersion: "2" }), "via.h2")).toBe("via.h2");
    expect(await emitVia(createGrpcWebTransport({ baseUrl: base, httpVersion: "2" }), "via.web2")).toBe("via.web2");
  });

  it("health Watch sends the status, then changes, and SERVICE_UNKNOWN for unknown services", async () => {
    const client = createClient(Health, createGrpcTransport({ baseUrl: base }));
    const abort = new AbortController();
    const seen: ServingStatus[] = [];
    const watching = (async () => {
      try {
        for await (const r of client.watch({ service: LogService.typeName }, { signal: abort.signal })) {
          seen.push(r.status);
          if (seen.length === 1) health.setStatus(LogService.typeName, ServingStatus.NOT_SERVING);
          if (seen.length === 2) abort.abort();
        }
      } catch (e) {
        if (ConnectError.from(e).code !== Code.Canceled) throw e;
      }
    })();
    await watching;
    expect(seen).toEqual([ServingStatus.SERVING, ServingStatus.NOT_SERVING]);
    expect((await client.check({ service: LogService.typeName })).status).toBe(ServingStatus.NOT_SERVING);
    health.setStatus(LogService.typeName, ServingStatus.SERVING);
    const unknown = client.watch({ service: "nope" });
    for await (const r of unknown) {
      expect(r.status).toBe(ServingStatus.SERVICE_UNKNOWN);
      break;
    }
    await expect(client.check({ service: "nope" })).rejects.toMatchObject({ code: Code.NotFound });
  });

  it("serves reflection v1 and v1alpha (files once per stream, symbols, errors)", async () => {
    const transport = createGrpcTransport({ baseUrl: base });
    for (const r of [reflectionV1, reflectionV1alpha] as const) {
      const client = createClient(r.ServerReflection as typeof reflectionV1.ServerReflection, transport);
      const requests: Array<reflectionV1.ServerReflectionRequest["messageRequest"]> = [
        { case: "listServices", value: "" },
        { case: "fileByFilename", value: "chronolog/v1/log.proto" },
        { case: "fileByFilename", value: "chronolog/v1/log.proto" },
        { case: "fileContainingSymbol", value: "chronolog.v1.Event" },
        { case: "fileContainingSymbol", value: "chronolog.v1.LogService.Emit" },
        { case: "fileContainingSymbol", value: "grpc.health.v1.HealthCheckResponse.ServingStatus" },
        { case: "fileContainingSymbol", value: "chronolog.v1.NoSuchThing" },
        { case: "fileContainingExtension", value: { containingType: "chronolog.v1.Event", extensionNumber: 100 } as never },
        { case: "allExtensionNumbersOfType", value: "chronolog.v1.Event" },
        { case: "fileByFilename", value: "no/such.proto" },
      ];
      async function* reqs() {
        for (const messageRequest of requests) yield { host: "h", messageRequest };
      }
      const out: reflectionV1.ServerReflectionResponse[] = [];
      for await (const res of client.serverReflectionInfo(reqs())) out.push(res);
      expect(out).toHaveLength(requests.length);
      const files = (i: number) => {
        const m = out[i].messageResponse;
        expect(m.case).toBe("fileDescriptorResponse");
        return m.case === "fileDescriptorResponse" ? m.value.fileDescriptorProto.map((b) => fromBinary(FileDescriptorProtoSchema, b).name) : [];
      };
      const err = (i: number) => {
        const m = out[i].messageResponse;
        expect(m.case).toBe("errorResponse");
        return m.case === "errorResponse" ? m.value.errorCode : -1;
      };
      const list = out[0].messageResponse;
      expect(list.case).toBe("listServicesResponse");
      const names = list.case === "listServicesResponse" ? list.value.service.map((s) => s.name) : [];
      expect(names).toEqual(
        expect.arrayContaining([
          "chronolog.v1.LogService",
          "grpc.health.v1.Health",
          "grpc.reflection.v1.ServerReflection",
          "grpc.reflection.v1alpha.ServerReflection",
        ]),
      );
      expect(out[0].validHost).toBe("h");
      expect(files(1)[0]).toBe("chronolog/v1/log.proto");
      expect(files(1)).toEqual(expect.arrayContaining(["chronolog/v1/event.proto", "google/protobuf/struct.proto", "google/protobuf/timestamp.proto"]));
      expect(files(2)).toEqual(["chronolog/v1/log.proto"]); // dependencies already sent
      expect(files(3)).toEqual(["chronolog/v1/event.proto"]);
      expect(files(4)).toEqual(["chronolog/v1/log.proto"]);
      expect(files(5)).toEqual(["grpc/health/v1/health.proto"]);
      expect(err(6)).toBe(Code.NotFound);
      expect(err(7)).toBe(Code.NotFound);
      const ext = out[8].messageResponse;
      expect(ext.case).toBe("allExtensionNumbersResponse");
      expect(ext.case === "allExtensionNumbersResponse" && ext.value.extensionNumber).toEqual([]);
      expect(err(9)).toBe(Code.NotFound);
    }
  });

  it("works with buf curl: reflection v1 and v1alpha, list-methods, a call", { tags: ["serial"] }, async () => {
    for (const proto of ["grpc-v1", "grpc-v1alpha"]) {
      const services = await buf("--list-services", "--reflect-protocol", proto, "--protocol", "grpc", "--http2-prior-knowledge", base);
      expect(services.split("\n")).toContain("chronolog.v1.LogService");
      expect(services.split("\n")).toContain("grpc.health.v1.Health");
    }
    const methods = await buf("--list-methods", "--protocol", "grpc", "--http2-prior-knowledge", base);
    expect(methods.split("\n")).toContain("chronolog.v1.LogService/Emit");
    const out = await buf("--protocol", "grpc", "--http2-prior-knowledge", "-d", '{"type":"x","data":{}}', `${base}/chronolog.v1.LogService/Emit`);
    expect(JSON.parse(out).event.type).toBe("x");
  });

  it("survives garbage bytes, silent and half-preface sockets, and closes them", async () => {
    const garbage = await connectRaw(srv.port);
    garbage.write(Buffer.from([0x16, 0x03, 0x01, 0xff, 0x00, 0x13, 0x37, 0x0d, 0x0a, 0x0d, 0x0a, 0x00]));
    const silent = await connectRaw(srv.port);
    const halfPreface = await connectRaw(srv.port);
    halfPreface.write("PRI * HTTP/2.0\r\n");
    const badFrames = await connectRaw(srv.port);
    badFrames.write(`PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n${"\xff".repeat(64)}`);
    const partialHeaders = await connectRaw(srv.port);
    partialHeaders.write("POST /chronolog.v1.LogService/Emit HTTP/1.1\r\nHost: x\r\n");
    const closes = await Promise.all([garbage, silent, halfPreface, badFrames, partialHeaders].map((s) => closedWithin(s, 3000)));
    expect(closes.every((ms) => ms < 3000)).toBe(true);
    // And the server still answers on both HTTP versions.
    expect(await emitVia(createConnectTransport({ baseUrl: base, httpVersion: "1.1" }), "still")).toBe("still");
    const res = await grpcUnary(grpcClient, "/chronolog.v1.LogService/Emit", EmitRequestSchema, EmitResponseSchema, create(EmitRequestSchema, { type: "up" }));
    expect(res.event?.type).toBe("up");
  });

  it("survives clients that leave mid-stream (HTTP/1.1 and HTTP/2)", async () => {
    const abortedBefore = stats.watchAborted;
    // Connect over HTTP/1.1: abort after the first event.
    const abort = new AbortController();
    await expect(
      (async () => {
        for await (const _ of createClient(LogService, createConnectTransport({ baseUrl: base, httpVersion: "1.1" })).watch({}, { signal: abort.signal })) {
          abort.abort();
        }
      })(),
    ).rejects.toMatchObject({ code: Code.Canceled });
    // grpc-js over h2c: cancel after the first event.
    const c = codec(WatchRequestSchema, WatchResponseSchema);
    const call = grpcClient.makeServerStreamRequest("/chronolog.v1.LogService/Watch", c.serialize, c.deserialize, create(WatchRequestSchema, {}));
    await new Promise<void>((resolve) => {
      call.on("error", () => resolve());
      call.once("data", () => call.cancel());
    });
    // A raw socket that sends a request and vanishes with a reset.
    const rude = await connectRaw(srv.port);
    rude.write(
      "POST /chronolog.v1.LogService/Watch HTTP/1.1\r\nHost: x\r\nContent-Type: application/connect+json\r\nContent-Length: 7\r\n\r\n\x00\x00\x00\x00\x02{}",
    );
    await new Promise((r) => rude.once("data", r));
    rude.resetAndDestroy();
    await expect.poll(() => stats.watchAborted - abortedBefore, { timeout: 2000 }).toBe(3);
    expect(await emitVia(createConnectTransport({ baseUrl: base, httpVersion: "1.1" }), "alive")).toBe("alive");
  });

  it("rejects oversized messages with RESOURCE_EXHAUSTED", async () => {
    const big = { type: "big", data: { blob: "x".repeat(10_000) } };
    await expect(createClient(LogService, createConnectTransport({ baseUrl: base, httpVersion: "1.1" })).emit(big)).rejects.toMatchObject({
      code: Code.ResourceExhausted,
    });
    await expect(
      grpcUnary(grpcClient, "/chronolog.v1.LogService/Emit", EmitRequestSchema, EmitResponseSchema, create(EmitRequestSchema, big)),
    ).rejects.toMatchObject({ code: grpc.status.RESOURCE_EXHAUSTED });
    expect(await emitVia(createConnectTransport({ baseUrl: base, httpVersion: "1.1" }), "small")).toBe("small");
  });

  it("answers CORS preflights for allowed origins only", async () => {
    const preflight = (origin: string) =>
      rawHttp(srv.port, {
        method: "OPTIONS",
        path: "/chronolog.v1.LogService/Emit",
        headers: {
          Origin: origin,
          "Access-Control-Request-Method": "POST",
          "Access-Control-Request-Headers": "content-type,connect-protocol-version,authorization",
        },
      });
    const ok = await preflight(ORIGIN);
    expect(ok.status).toBe(204);
    expect(ok.headers["access-control-allow-origin"]).toBe(ORIGIN);
    expect(ok.headers["access-control-allow-methods"]).toContain("POST");
    const allowed = String(ok.headers["access-control-allow-headers"]).toLowerCase();
    for (const h of ["content-type", "connect-protocol-version", "authorization", "x-grpc-web"]) expect(allowed).toContain(h);
    const bad = await preflight("https://evil.example");
    expect(bad.headers["access-control-allow-origin"]).toBeUndefined();
    expect(bad.headers["access-control-allow-methods"]).toBeUndefined();
    // Actual calls: allowed origin gets the exposed headers.
    const transport = createConnectTransport({ baseUrl: base, httpVersion: "1.1" });
    let seen: Headers | undefined;
    await createClient(LogService, transport).emit({ type: "cors" }, { headers: { Origin: ORIGIN }, onHeader: (h) => (seen = h) });
    expect(seen?.get("access-control-allow-origin")).toBe(ORIGIN);
    expect(seen?.get("access-control-expose-headers")?.toLowerCase()).toContain("grpc-status");
  });
});

describe("listen: extra HTTP handler, shutdown", () => {
  it("routes other paths to extraHttpHandler", async () => {
    const srv = await start({
      extraHttpHandler: (req, res) => {
        if (req.url !== "/metrics") return false;
        res.statusCode = 200;
        res.end("metric 1\n");
        return true;
      },
    });
    try {
      expect((await rawHttp(srv.port, { path: "/metrics" })).status).toBe(200);
      expect((await rawHttp(srv.port, { path: "/other" })).status).toBe(404);
    } finally {
      await srv.close();
    }
  });

  it("close() ends open Watch streams and resolves quickly", async () => {
    const srv = await start();
    const base = `http://127.0.0.1:${srv.port}`;
    const started = stats.watchStarted;
    const aborted = stats.watchAborted;
    // grpc-js (h2c), Connect (HTTP/1.1) and Connect (h2c) streams, plus a health Watch.
    const client = new grpc.Client(`127.0.0.1:${srv.port}`, grpc.credentials.createInsecure());
    const c = codec(WatchRequestSchema, WatchResponseSchema);
    const call = client.makeServerStreamRequest("/chronolog.v1.LogService/Watch", c.serialize, c.deserialize, create(WatchRequestSchema, {}));
    let grpcEvents = 0;
    call.on("data", () => grpcEvents++);
    const grpcDone = new Promise<void>((resolve) => {
      call.on("error", () => resolve());
      call.on("end", () => resolve());
    });
    const drain = async (transport: Transport) => {
      let n = 0;
      try {
        for await (const _ of createClient(LogService, transport).watch({})) n++;
      } catch {
        // ended by the server going away: fine
      }
      return n;
    };
    const h1 = drain(createConnectTransport({ baseUrl: base, httpVersion: "1.1" }));
    const h2 = drain(createConnectTransport({ baseUrl: base, httpVersion: "2" }));
    const healthWatch = (async () => {
      try {
        for await (const _ of createClient(Health, createGrpcTransport({ baseUrl: base })).watch({})) void _;
      } catch {
        // ok
      }
    })();
    await expect.poll(() => stats.watchStarted - started, { timeout: 2000 }).toBe(3);
    await expect.poll(() => grpcEvents, { timeout: 2000 }).toBe(3);
    const t0 = Date.now();
    await srv.close();
    const elapsed = Date.now() - t0;
    expect(elapsed).toBeLessThan(2000);
    expect(await h1).toBe(3);
    expect(await h2).toBe(3);
    await grpcDone;
    await healthWatch;
    expect(stats.watchAborted - aborted).toBe(3);
    expect(srv.shutdownSignal.aborted).toBe(true);
    await expect(connectRaw(srv.port)).rejects.toMatchObject({ code: "ECONNREFUSED" });
    await srv.close(); // idempotent
    client.close();
  });

  it("closes idle HTTP/2 connections, but not those with an open stream", async () => {
    const srv = await start({ idleTimeoutMs: 200 });
    try {
      const idle = http2.connect(`http://127.0.0.1:${srv.port}`);
      idle.on("error", () => {});
      const busy = http2.connect(`http://127.0.0.1:${srv.port}`);
      busy.on("error", () => {});
      const stream = busy.request({
        ":method": "POST",
        ":path": "/chronolog.v1.LogService/Watch",
        "content-type": "application/grpc",
        te: "trailers",
      });
      stream.on("error", () => {});
      stream.end(Buffer.alloc(5)); // one empty gRPC message
      let frames = 0;
      stream.on("data", () => frames++);
      const t0 = Date.now();
      await new Promise((resolve) => idle.once("close", resolve));
      expect(Date.now() - t0).toBeLessThan(1500);
      await new Promise((r) => setTimeout(r, 400));
      expect(busy.closed || busy.destroyed).toBe(false);
      expect(frames).toBeGreaterThan(0);
      stream.close(http2.constants.NGHTTP2_CANCEL);
      await new Promise((resolve) => busy.once("close", resolve));
    } finally {
      await srv.close();
    }
  });

  it("rejects when the port is taken, naming the port and --port", async () => {
    const srv = await start();
    try {
      await expect(start({ port: srv.port })).rejects.toMatchObject({
        code: "EADDRINUSE",
        message: expect.stringMatching(new RegExp(`port ${srv.port} on 127\\.0\\.0\\.1 is already in use .*--port`)),
      });
    } finally {
      await srv.close();
    }
  });
});

describe("listen: TLS", { tags: ["serial"] }, () => {
  let dir: string;
  let srv: Listener;
  let ca: Buffer;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "chronolog-tls-"));
    await run("openssl", [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-subj",
      "/CN=localhost",
      "-days",
      "1",
      "-addext",
      "subjectAltName=DNS:localhost,IP:127.0.0.1",
      "-keyout",
      join(dir, "key.pem"),
      "-out",
      join(dir, "cert.pem"),
    ]);
    ca = readFileSync(join(dir, "cert.pem"));
    srv = await start({ tls: { cert: ca, key: readFileSync(join(dir, "key.pem")) }, handshakeTimeoutMs: 300 });
  });
  afterAll(async () => {
    await srv?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("serves Connect over HTTP/1.1 and HTTP/2, and gRPC (grpc-js)", async () => {
    const baseUrl = `https://127.0.0.1:${srv.port}`;
    expect(await emitVia(createConnectTransport({ baseUrl, httpVersion: "1.1", nodeOptions: { ca } }), "tls1")).toBe("tls1");
    expect(await emitVia(createConnectTransport({ baseUrl, httpVersion: "2", nodeOptions: { ca } }), "tls2")).toBe("tls2");
    expect(await emitVia(createGrpcWebTransport({ baseUrl, httpVersion: "1.1", nodeOptions: { ca } }), "tlsweb")).toBe("tlsweb");
    const client = new grpc.Client(`localhost:${srv.port}`, grpc.credentials.createSsl(ca));
    try {
      const res = await grpcUnary(
        client,
        "/chronolog.v1.LogService/Emit",
        EmitRequestSchema,
        EmitResponseSchema,
        create(EmitRequestSchema, { type: "tlsgrpc" }),
      );
      expect(res.event?.type).toBe("tlsgrpc");
    } finally {
      client.close();
    }
  });

  it("drops plaintext garbage and silent sockets, and keeps serving", async () => {
    const garbage = await connectRaw(srv.port);
    garbage.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    const silent = await connectRaw(srv.port);
    const closes = await Promise.all([closedWithin(garbage, 3000), closedWithin(silent, 3000)]);
    expect(closes.every((ms) => ms < 3000)).toBe(true);
    const baseUrl = `https://127.0.0.1:${srv.port}`;
    expect(await emitVia(createConnectTransport({ baseUrl, httpVersion: "1.1", nodeOptions: { ca } }), "ok")).toBe("ok");
  });
});
