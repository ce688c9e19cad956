// Real clients against an in-process owner:
// @grpc/grpc-js with a generic client, connect-node over Connect and gRPC-Web
// on HTTP/1.1, `buf curl` with reflection v1 and v1alpha, health, and the
// UNIMPLEMENTED answer of a method the owner does not serve.
//
// @module-tag sqlite-only

import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient as createRpcClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { createClient, type ChronologClient } from "../sdk/ts/src/client.js";
import {
  EmitRequestSchema,
  EmitResponseSchema,
  LogService,
  ReadLogRequestSchema,
  ReadLogResponseSchema,
  WatchRequestSchema,
  WatchResponseSchema,
  type EmitResponse,
  type ReadLogResponse,
  type WatchResponse,
} from "@chronolog/sdk/gen/chronolog/v1/log_pb";
import { TimeService } from "@chronolog/sdk/gen/chronolog/v1/time_pb";
import {
  Health,
  HealthCheckRequestSchema,
  HealthCheckResponseSchema,
  HealthCheckResponse_ServingStatus as ServingStatus,
  type HealthCheckResponse,
} from "@chronolog/sdk/gen/grpc/health/v1/health_pb";
import { expectConnectError, expectUnchanged, logSnapshot } from "./helpers/log-snapshot.js";
import { startTestOwner } from "./helpers/owner.js";

const run = promisify(execFile);
const BUF = new URL("../node_modules/.bin/buf", import.meta.url).pathname;

const manifest = {
  name: "clients",
  events: {
    "ping.sent": {
      schema: { type: "object", required: ["n"], properties: { n: { type: "integer" }, via: { type: "string" } } },
      allow: ["*"],
    },
  },
};

/** A grpc-js method definition from protobuf-es schemas. */
function method<I extends DescMessage, O extends DescMessage>(path: string, input: I, output: O, responseStream = false) {
  return {
    path,
    requestStream: false,
    responseStream,
    requestSerialize: (m: MessageShape<I>) => Buffer.from(toBinary(input, m)),
    requestDeserialize: (b: Buffer) => fromBinary(input, b),
    responseSerialize: (m: MessageShape<O>) => Buffer.from(toBinary(output, m)),
    responseDeserialize: (b: Buffer) => fromBinary(output, b),
  };
}

const LogClient = grpc.makeGenericClientConstructor(
  {
    Emit: method("/chronolog.v1.LogService/Emit", EmitRequestSchema, EmitResponseSchema),
    ReadLog: method("/chronolog.v1.LogService/ReadLog", ReadLogRequestSchema, ReadLogResponseSchema),
    Watch: method("/chronolog.v1.LogService/Watch", WatchRequestSchema, WatchResponseSchema, true),
  },
  "chronolog.v1.LogService",
);
const HealthClient = grpc.makeGenericClientConstructor(
  { Check: method("/grpc.health.v1.Health/Check", HealthCheckRequestSchema, HealthCheckResponseSchema) },
  "grpc.health.v1.Health",
);

/** The generic client's methods (makeGenericClientConstructor types them loosely). */
interface LogClientMethods {
  Emit(req: unknown, cb: (err: grpc.ServiceError | null, res?: EmitResponse) => void): void;
  ReadLog(req: unknown, cb: (err: grpc.ServiceError | null, res?: ReadLogResponse) => void): void;
  Watch(req: unknown): grpc.ClientReadableStream<WatchResponse>;
}

function unary<T>(call: (cb: (err: grpc.ServiceError | null, res?: T) => void) => void): Promise<T> {
  return new Promise((resolve, reject) => call((err, res) => (err ? reject(err) : resolve(res as T))));
}

async function buf(...args: string[]): Promise<string> {
  const { stdout } = await run(BUF, ["curl", ...args], { timeout: 15_000 });
  return stdout;
}

describe("real clients against the owner", () => {
  let owner: Awaited<ReturnType<typeof startTestOwner>>;
  let sdk: ChronologClient;
  let grpcLog: grpc.Client & LogClientMethods;

  beforeAll(async () => {
    owner = await startTestOwner();
    sdk = createClient({ url: owner.url });
    await sdk.registerPlugin(manifest);
    grpcLog = new LogClient(`127.0.0.1:${owner.port}`, grpc.credentials.createInsecure()) as unknown as grpc.Client & LogClientMethods;
  });
  afterAll(async () => {
    grpcLog?.close();
    await owner?.close();
  });

  it("grpc-js: Emit, ReadLog, and a Watch that receives an event emitted after it started", async () => {
    const emitted = await unary<EmitResponse>((cb) => grpcLog.Emit(create(EmitRequestSchema, { type: "ping.sent", data: { n: 1, via: "grpc-js" } }), cb));
    expect(emitted.existing).toBe(false);
    expect(emitted.event?.type).toBe("ping.sent");
    expect(emitted.event?.data).toEqual({ n: 1, via: "grpc-js" });
    const seq = emitted.event!.seq;

    const page = await unary<ReadLogResponse>((cb) => grpcLog.ReadLog(create(ReadLogRequestSchema, { afterSeq: seq - 1n }), cb));
    expect(page.events.map((e) => e.id)).toEqual([emitted.event!.id]);
    expect(page.headSeq).toBe(seq);

    const stream = grpcLog.Watch(create(WatchRequestSchema, { afterSeq: seq, types: ["ping.sent"] }));
    const items: WatchResponse[] = [];
    const ended = new Promise<grpc.StatusObject>((resolve) => stream.on("status", resolve));
    stream.on("error", () => {}); // the cancel below
    stream.on("data", (m: WatchResponse) => items.push(m));
    await expect.poll(() => items.map((m) => m.message.case), { timeout: 3000 }).toEqual(["caughtUp"]);
    const live = await sdk.emit("ping.sent", { n: 2, via: "live" });
    await expect.poll(() => items.length, { timeout: 3000 }).toBe(2);
    const m = items[1].message;
    expect(m.case).toBe("event");
    expect(m.case === "event" && m.value.id).toBe(live.event!.id);
    expect(m.case === "event" && m.value.data).toEqual({ n: 2, via: "live" });
    stream.cancel();
    expect((await ended).code).toBe(grpc.status.CANCELLED);
  });

  it("grpc-js: error codes and messages come through; nothing written", async () => {
    const before = await logSnapshot(sdk);
    const undeclared = await unary((cb) => grpcLog.Emit(create(EmitRequestSchema, { type: "nobody.declared", data: {} }), cb)).catch(
      (e: grpc.ServiceError) => e,
    );
    expect((undeclared as grpc.ServiceError).code).toBe(grpc.status.INVALID_ARGUMENT);
    expect((undeclared as grpc.ServiceError).code).toBe(3);
    expect((undeclared as grpc.ServiceError).details).toMatch(/nobody\.declared/);
    // grpc-message reads as sent: ':' '/' '#' plain, '%' and non-ASCII round-trip (grpc-js decodes with decodeURI).
    expect((undeclared as grpc.ServiceError).details).toBe('event type "nobody.declared" is not declared by any plugin');
    const odd = "ünï%2Fcode.x#1";
    const oddErr = (await unary((cb) => grpcLog.Emit(create(EmitRequestSchema, { type: odd, data: {} }), cb)).catch(
      (e: grpc.ServiceError) => e,
    )) as grpc.ServiceError;
    expect(oddErr.details).toBe(`event type ${JSON.stringify(odd)} is not declared by any plugin`);
    await expectConnectError(sdk.emit(odd, {}), Code.InvalidArgument, new RegExp(`^event type "${odd}" is not declared`));
    // Details travel in grpc-status-details-bin.
    expect((undeclared as grpc.ServiceError).metadata.get("grpc-status-details-bin")).toHaveLength(1);
    const schema = await unary((cb) => grpcLog.Emit(create(EmitRequestSchema, { type: "ping.sent", data: { n: "one" } }), cb)).catch(
      (e: grpc.ServiceError) => e,
    );
    expect((schema as grpc.ServiceError).code).toBe(grpc.status.INVALID_ARGUMENT);
    expect((schema as grpc.ServiceError).details).toMatch(/schema: data\/n: must be integer/);
    // A server-streaming error arrives as the stream's status.
    const bad = grpcLog.Watch(create(WatchRequestSchema, { where: { $foo: 1 } }));
    const status = await new Promise<grpc.StatusObject>((resolve) => {
      bad.on("error", () => {});
      bad.on("data", () => resolve({ code: grpc.status.OK, details: "got data before the error", metadata: new grpc.Metadata() }));
      bad.on("status", resolve);
    });
    expect(status.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(status.details).toMatch(/\$foo/);
    await expectUnchanged(sdk, before);
  });

  it("connect-node: Connect over HTTP/1.1 (Emit and a server-streaming Watch) and gRPC-Web over HTTP/1.1", async () => {
    const connect = createClient({ url: owner.url, protocol: "connect", httpVersion: "1.1" });
    const rawConnect = createRpcClient(LogService, createConnectTransport({ baseUrl: owner.url, httpVersion: "1.1" }));
    const a = await connect.emit("ping.sent", { n: 10, via: "connect" });
    expect(a.event?.data).toEqual({ n: 10, via: "connect" });

    const abort = new AbortController();
    const got: string[] = [];
    let caughtUp = 0n;
    const watching = (async () => {
      try {
        for await (const m of rawConnect.watch({ afterSeq: a.event!.seq - 1n, types: ["ping.sent"] }, { signal: abort.signal })) {
          if (m.message.case === "event") got.push(m.message.value.id);
          if (m.message.case === "caughtUp") caughtUp = m.message.value.headSeq;
        }
      } catch (e) {
        if (ConnectError.from(e).code !== Code.Canceled) throw e;
      }
    })();
    await expect.poll(() => caughtUp, { timeout: 3000 }).toBe(a.event!.seq);
    expect(got).toEqual([a.event!.id]);

    const web = createClient({ url: owner.url, protocol: "grpc-web", httpVersion: "1.1" });
    const b = await web.emit("ping.sent", { n: 11, via: "grpc-web" });
    expect(b.event?.seq).toBe(a.event!.seq + 1n);
    await expect.poll(() => got, { timeout: 3000 }).toEqual([a.event!.id, b.event!.id]);
    abort.abort();
    await watching;

    // Errors over HTTP/1.1 keep their codes.
    await expectConnectError(connect.emit("nobody.declared", {}), Code.InvalidArgument, /nobody\.declared/);
    await expectConnectError(web.emit("nobody.declared", {}), Code.InvalidArgument, /nobody\.declared/);
    // gRPC-Web watch too (server streaming works in browsers).
    const webRaw = createRpcClient(LogService, createGrpcWebTransport({ baseUrl: owner.url, httpVersion: "1.1" }));
    for await (const m of webRaw.watch({ afterSeq: b.event!.seq - 1n })) {
      expect(m.message.case).toBe("event");
      expect(m.message.case === "event" && m.message.value.id).toBe(b.event!.id);
      break;
    }
  });

  it.each(["grpc-v1", "grpc-v1alpha"])("buf curl --list-services with reflection %s lists every service", async (reflect) => {
    const out = await buf("--list-services", "--reflect-protocol", reflect, "--protocol", "grpc", "--http2-prior-knowledge", owner.url);
    const services = out.trim().split("\n").sort();
    for (const s of ["LogService", "ExecutorService", "ActionService", "CollectionService", "TimeService", "PluginService", "AdminService"]) {
      expect(services).toContain(`chronolog.v1.${s}`);
    }
    expect(services).toContain("grpc.health.v1.Health");
  });

  it("buf curl --list-methods, then Emit with -d JSON and ReadLog it back", { tags: ["serial"] }, async () => {
    const methods = (await buf("--list-methods", "--protocol", "grpc", "--http2-prior-knowledge", owner.url)).trim().split("\n");
    expect(methods).toEqual(expect.arrayContaining(["chronolog.v1.LogService/Emit", "chronolog.v1.LogService/Watch", "chronolog.v1.LogService/ReadLog"]));

    const emitOut = await buf(
      "--protocol",
      "grpc",
      "--http2-prior-knowledge",
      "-d",
      JSON.stringify({ type: "ping.sent", id: "from-buf-curl", data: { n: 42, via: "buf" } }),
      `${owner.url}/chronolog.v1.LogService/Emit`,
    );
    const emitted = JSON.parse(emitOut);
    expect(emitted.event).toMatchObject({ id: "from-buf-curl", type: "ping.sent", data: { n: 42, via: "buf" } });
    expect(Number(emitted.event.seq)).toBeGreaterThan(0);

    // Connect protocol over HTTP/1.1 this time (reflection switches to h2c by itself).
    const readOut = await buf(
      "--protocol",
      "connect",
      "-d",
      JSON.stringify({ afterSeq: String(Number(emitted.event.seq) - 1), types: ["ping.sent"] }),
      `${owner.url}/chronolog.v1.LogService/ReadLog`,
    );
    const page = JSON.parse(readOut);
    expect(page.events).toHaveLength(1);
    expect(page.events[0]).toMatchObject({ id: "from-buf-curl", seq: emitted.event.seq, data: { n: 42, via: "buf" } });
    expect((await sdk.log.getEvent({ id: "from-buf-curl" })).event?.data).toEqual({ n: 42, via: "buf" });

    // buf curl reports the owner's error code and message.
    const failed = await buf(
      "--protocol",
      "grpc",
      "--http2-prior-knowledge",
      "-d",
      JSON.stringify({ type: "nobody.declared", data: {} }),
      `${owner.url}/chronolog.v1.LogService/Emit`,
    ).catch((e: { stderr: string; code: number }) => e);
    expect(typeof failed).toBe("object");
    expect((failed as { stderr: string }).stderr).toMatch(/invalid_argument/);
    expect((failed as { stderr: string }).stderr).toMatch(/nobody\.declared/);
  });

  it("health Check says SERVING over grpc-js and connect", async () => {
    const health = new HealthClient(`127.0.0.1:${owner.port}`, grpc.credentials.createInsecure()) as unknown as grpc.Client & {
      Check(req: unknown, cb: (err: grpc.ServiceError | null, res?: HealthCheckResponse) => void): void;
    };
    try {
      const all = await unary<HealthCheckResponse>((cb) => health.Check(create(HealthCheckRequestSchema, {}), cb));
      expect(all.status).toBe(ServingStatus.SERVING);
      const log = await unary<HealthCheckResponse>((cb) => health.Check(create(HealthCheckRequestSchema, { service: "chronolog.v1.LogService" }), cb));
      expect(log.status).toBe(ServingStatus.SERVING);
      const unknown = await unary((cb) => health.Check(create(HealthCheckRequestSchema, { service: "no.Such" }), cb)).catch((e: grpc.ServiceError) => e);
      expect((unknown as grpc.ServiceError).code).toBe(grpc.status.NOT_FOUND);
    } finally {
      health.close();
    }
    const viaConnect = createRpcClient(Health, createConnectTransport({ baseUrl: owner.url, httpVersion: "1.1" }));
    expect((await viaConnect.check({})).status).toBe(ServingStatus.SERVING);
  });

  it("many sequential calls on one long-lived connection leak no listeners on the server session", async () => {
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on("warning", onWarning);
    // Its own connection (grpc-js otherwise shares one per target across clients).
    const c = new LogClient(`127.0.0.1:${owner.port}`, grpc.credentials.createInsecure(), { "grpc.use_local_subchannel_pool": 1 }) as unknown as grpc.Client &
      LogClientMethods;
    try {
      for (let i = 0; i < 40; i++) await unary<ReadLogResponse>((cb) => c.ReadLog(create(ReadLogRequestSchema, { pageSize: 1 }), cb));
      await new Promise((r) => setTimeout(r, 50)); // warnings are emitted on the next tick
      expect(warnings.filter((w) => w.name === "MaxListenersExceededWarning").map((w) => w.message)).toEqual([]);
    } finally {
      process.off("warning", onWarning);
      c.close();
    }
  });

  it("a method the owner does not serve answers UNIMPLEMENTED (every v1 RPC is served)", async () => {
    const time = createRpcClient(TimeService, createGrpcTransport({ baseUrl: owner.url }));
    await expectConnectError(time.schedule({ action: "x.y" }), Code.InvalidArgument, /spec is required/);
    const stub = grpc.makeGenericClientConstructor(
      { Nope: method("/chronolog.v1.TimeService/Nope", HealthCheckRequestSchema, HealthCheckResponseSchema) },
      "chronolog.v1.TimeService",
    );
    const c = new stub(`127.0.0.1:${owner.port}`, grpc.credentials.createInsecure()) as unknown as grpc.Client & {
      Nope(req: unknown, cb: (err: grpc.ServiceError | null) => void): void;
    };
    try {
      const err = await new Promise<grpc.ServiceError | null>((resolve) => c.Nope(create(HealthCheckRequestSchema, {}), (e) => resolve(e)));
      expect(err?.code).toBe(grpc.status.UNIMPLEMENTED);
    } finally {
      c.close();
    }
  });
});
