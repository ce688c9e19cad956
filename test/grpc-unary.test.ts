// Native gRPC unary calls (server/src/rpc/grpc-unary.ts) against a real owner process:
// results and errors as connect-node gives them over gRPC-Web (same code, message and
// details), auth with a config of tokens, limits, gzip requests, undecodable bytes,
// deadlines and cancellation reaching the handler, and response headers and trailers a
// handler sets. grpc-js and the SDK's gRPC transport take the native path; the SDK's
// gRPC-Web transport stays on connect-node.
//
// @module-tag serial
// @module-tag sqlite-only

import { writeFileSync } from "node:fs";
import * as http2 from "node:http2";
import { join } from "node:path";
import { create, fromBinary, toBinary, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter } from "@connectrpc/connect";
import { findTrailerError } from "@connectrpc/connect/protocol-grpc";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, type ChronologClient } from "../sdk/ts/src/client.js";
import { runExecutor, type Executor } from "../sdk/ts/src/executor.js";
import { CallActionRequestSchema } from "@chronolog/sdk/gen/chronolog/v1/action_pb";
import { EmitRequestSchema, EmitResponseSchema, GetEventRequestSchema, GetEventResponseSchema } from "@chronolog/sdk/gen/chronolog/v1/log_pb";
import { ListPluginsRequestSchema, ListPluginsResponseSchema } from "@chronolog/sdk/gen/chronolog/v1/plugin_pb";
import { Health, HealthCheckRequestSchema, HealthCheckResponseSchema, HealthCheckResponse_ServingStatus } from "@chronolog/sdk/gen/grpc/health/v1/health_pb";
import { definePlugin, manifestOf } from "../sdk/ts/src/plugin.js";
import { listen } from "../server/src/rpc/listen.js";
import { spawnOwner, tempDir, type OwnerProcess } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

const repo = new URL("../", import.meta.url).pathname;
const tokens = { admin: "native-admin-token-0123456789", client: "native-client-token-0123456789" };
const config = {
  principals: [
    { name: "ops", token: tokens.admin, role: "admin" },
    { name: "web", token: tokens.client, role: "client", actor: { via: "app:web" } },
  ],
  limits: { max_message_bytes: 4096 },
};

/** What a caller learns from a failed call: code, message and the details' types and bytes. */
function seen(e: unknown) {
  const error = ConnectError.from(e);
  return {
    code: Code[error.code],
    message: error.rawMessage,
    details: error.details.map((d) => ("desc" in d ? d : { type: d.type, value: Buffer.from(d.value).toString("base64") })),
  };
}

async function failure(p: Promise<unknown>) {
  try {
    await p;
  } catch (e) {
    return seen(e);
  }
  throw new Error("expected the call to fail");
}

/** A grpc-js unary call with raw request bytes; resolves with the answer's bytes or the error. */
function grpcJsCall(client: grpc.Client, path: string, request: Uint8Array, metadata = new grpc.Metadata(), options: grpc.CallOptions = {}) {
  const identity = (b: Buffer) => b;
  let call: grpc.ClientUnaryCall | undefined;
  const result = new Promise<Buffer>((resolve, reject) => {
    call = client.makeUnaryRequest(path, identity, identity, Buffer.from(request), metadata, options, (err, value) => (err ? reject(err) : resolve(value!)));
  });
  return { result, cancel: () => call!.cancel() };
}

function bearer(token: string): grpc.Metadata {
  const m = new grpc.Metadata();
  m.set("authorization", `Bearer ${token}`);
  return m;
}

function decode<T extends DescMessage>(schema: T, bytes: Buffer): MessageShape<T> {
  return fromBinary(schema, bytes);
}

describe("native gRPC unary calls on the owner's port", () => {
  let owner: OwnerProcess;
  let target: string;
  let grpcJs: grpc.Client;
  let grpcJsGzip: grpc.Client;
  let native: ChronologClient;
  let web: ChronologClient;
  let executor: Executor;
  const aborted: string[] = [];

  beforeAll(async () => {
    const dir = tempDir("chronolog-native-");
    writeFileSync(join(dir, "owner.json"), JSON.stringify(config));
    owner = await spawnOwner(join(dir, "data"), ["--config", join(dir, "owner.json"), "--plugins", join(repo, "examples/quickstart/plugins")]);
    target = `127.0.0.1:${owner.port}`;
    grpcJs = new grpc.Client(target, grpc.credentials.createInsecure());
    grpcJsGzip = new grpc.Client(target, grpc.credentials.createInsecure(), { "grpc.default_compression_algorithm": 2, "grpc.use_local_subchannel_pool": 1 });
    native = createClient({ url: owner.url, token: tokens.admin });
    web = createClient({ url: owner.url, token: tokens.admin, protocol: "grpc-web" });
    const slow = definePlugin({
      name: "slow",
      actions: {
        wait: {
          allow: ["*"],
          run: (ctx) =>
            new Promise((_resolve, reject) => {
              ctx.signal.addEventListener("abort", () => {
                aborted.push(String((ctx.signal.reason as Error).message));
                reject(new Error("gave up"));
              });
            }),
        },
      },
    });
    await native.registerPlugin(manifestOf(slow));
    executor = runExecutor({ url: owner.url, token: tokens.admin, plugins: [slow], onError: () => {} });
    await executor.ready;
  });
  afterAll(async () => {
    grpcJs?.close();
    grpcJsGzip?.close();
    await executor?.stop(100);
    if (owner) {
      owner.child.kill("SIGTERM");
      await owner.exited;
    }
  });

  it("answers grpc-js calls to several services as connect-node answers them over gRPC-Web", async () => {
    const health = decode(
      HealthCheckResponseSchema,
      await grpcJsCall(grpcJs, "/grpc.health.v1.Health/Check", toBinary(HealthCheckRequestSchema, create(HealthCheckRequestSchema))).result,
    );
    expect(health.status).toBe(HealthCheckResponse_ServingStatus.SERVING);

    const emitted = decode(
      EmitResponseSchema,
      await grpcJsCall(
        grpcJs,
        "/chronolog.v1.LogService/Emit",
        toBinary(EmitRequestSchema, create(EmitRequestSchema, { type: "order.placed", data: { order_id: "o-1", amount: 12.5, email: "a@example.com" } })),
        bearer(tokens.client),
      ).result,
    );
    expect(emitted.event?.seq).toBeGreaterThan(0n);
    expect(emitted.event?.actor?.via).toBe("app:web");

    const got = decode(
      GetEventResponseSchema,
      await grpcJsCall(
        grpcJs,
        "/chronolog.v1.LogService/GetEvent",
        toBinary(GetEventRequestSchema, create(GetEventRequestSchema, { id: emitted.event!.id })),
        bearer(tokens.admin),
      ).result,
    );
    expect(got.event).toEqual((await web.log.getEvent({ id: emitted.event!.id })).event);

    const plugins = decode(
      ListPluginsResponseSchema,
      await grpcJsCall(
        grpcJs,
        "/chronolog.v1.PluginService/ListPlugins",
        toBinary(ListPluginsRequestSchema, create(ListPluginsRequestSchema)),
        bearer(tokens.admin),
      ).result,
    );
    expect(plugins).toEqual(await web.plugins.listPlugins({}));
    expect(plugins.plugins.map((p) => p.manifest?.name).sort()).toEqual(["shop", "slow"]);

    expect(await native.log.readLog({ pageSize: 10 })).toEqual(await web.log.readLog({ pageSize: 10 }));
    expect(await native.admin.listProcessors({})).toEqual(await web.admin.listProcessors({}));
  });

  it("fails bad requests with the same code, message and details as connect-node", async () => {
    const client = (protocol: "grpc" | "grpc-web", token?: string) => createClient({ url: owner.url, token, protocol });
    const cases: [string, (c: ChronologClient) => Promise<unknown>, string | undefined, string][] = [
      ["no type", (c) => c.log.emit({ type: "" }), tokens.client, "InvalidArgument"],
      ["undeclared type", (c) => c.log.emit({ type: "no.such" }), tokens.client, "InvalidArgument"],
      ["data against the schema", (c) => c.log.emit({ type: "order.placed", data: { order_id: "", amount: -1 } }), tokens.client, "InvalidArgument"],
      ["no token", (c) => c.log.emit({ type: "order.placed" }), undefined, "Unauthenticated"],
      ["an unknown token", (c) => c.log.emit({ type: "order.placed" }), "not-a-token-0123456789", "Unauthenticated"],
      ["a client registering a plugin", (c) => c.plugins.registerPlugin({ manifest: { name: "x" } }), tokens.client, "PermissionDenied"],
      [
        "a message over the limit",
        (c) => c.log.emit({ type: "order.placed", data: { order_id: "x".repeat(5000), amount: 1, email: "a@example.com" } }),
        tokens.client,
        "ResourceExhausted",
      ],
      ["a missing event", (c) => c.log.getEvent({ id: "nope" }), tokens.admin, "NotFound"],
      [
        "an unknown health service",
        (c) => c.transport.unary(Health.method.check, undefined, undefined, undefined, { service: "nope" }, undefined),
        undefined,
        "NotFound",
      ],
    ];
    for (const [what, call, token, code] of cases) {
      const viaNative = await failure(call(client("grpc", token)));
      const viaWeb = await failure(call(client("grpc-web", token)));
      expect(viaNative, what).toEqual(viaWeb);
      expect(viaNative.code, what).toBe(code);
    }
    // Details (google.rpc.ErrorInfo, BadRequest) arrive the same way for grpc-js: grpc-status-details-bin.
    const bad = await grpcJsCall(
      grpcJs,
      "/chronolog.v1.LogService/Emit",
      toBinary(EmitRequestSchema, create(EmitRequestSchema, { type: "" })),
      bearer(tokens.client),
    ).result.catch((e: grpc.ServiceError) => e);
    const viaWeb = await failure(client("grpc-web", tokens.client).log.emit({ type: "" }));
    expect((bad as grpc.ServiceError).code).toBe(grpc.status.INVALID_ARGUMENT);
    expect((bad as grpc.ServiceError).details).toBe(viaWeb.message);
    const detailsBin = (bad as grpc.ServiceError).metadata.get("grpc-status-details-bin")[0] as Buffer;
    expect(seen(findTrailerError(new Headers({ "grpc-status-details-bin": detailsBin.toString("base64") })))).toEqual(viaWeb);
  });

  it("ends a call whose request never ends at its deadline, and a call whose deadline passed already, without running it", async () => {
    const session = http2.connect(owner.url);
    try {
      const call = (timeout: string, end: boolean) =>
        new Promise<{ status?: string; message?: string; ms: number }>((resolve) => {
          const started = Date.now();
          const stream = session.request({
            ":method": "POST",
            ":path": "/chronolog.v1.LogService/Emit",
            "content-type": "application/grpc",
            te: "trailers",
            "grpc-timeout": timeout,
            authorization: `Bearer ${tokens.admin}`,
          });
          const body = toBinary(
            EmitRequestSchema,
            create(EmitRequestSchema, { type: "order.placed", id: `never-${timeout}`, data: { order_id: "o-never", amount: 1, email: "n@example.com" } }),
          );
          const frame = Buffer.alloc(5 + body.length);
          frame.writeUInt32BE(body.length, 1);
          frame.set(body, 5);
          if (end) stream.end(frame);
          else stream.write(frame); // the message is whole, but the request never ends
          let trailers: http2.IncomingHttpHeaders = {};
          stream.on("trailers", (t) => (trailers = t));
          stream.on("response", (h) => (trailers = { ...h, ...trailers }));
          stream.on("data", () => {});
          stream.on("end", () => {
            resolve({
              status: trailers["grpc-status"] as string,
              message: decodeURIComponent(String(trailers["grpc-message"] ?? "")),
              ms: Date.now() - started,
            });
            stream.close();
          });
        });
      const never = await call("1S", false);
      expect([never.status, never.message]).toEqual(["4", "the operation timed out"]);
      expect(never.ms).toBeLessThan(5_000);
      const passed = await call("1n", true);
      expect([passed.status, passed.message]).toEqual(["4", "the operation timed out"]);
      for (const id of ["never-1S", "never-1n"]) await expect(native.log.getEvent({ id })).rejects.toMatchObject({ code: Code.NotFound });
    } finally {
      session.close();
    }
  });

  it("answers an unknown method UNIMPLEMENTED and undecodable request bytes INVALID_ARGUMENT", async () => {
    const unknown = await grpcJsCall(grpcJs, "/chronolog.v1.LogService/NoSuchMethod", new Uint8Array(), bearer(tokens.admin)).result.catch(
      (e: grpc.ServiceError) => e,
    );
    expect((unknown as grpc.ServiceError).code).toBe(grpc.status.UNIMPLEMENTED);
    expect((unknown as grpc.ServiceError).details).toBe("unknown method /chronolog.v1.LogService/NoSuchMethod"); // a grpc-status, not an HTTP 404
    const noService = await grpcJsCall(grpcJs, "/nope.v1.Nothing/Call", new Uint8Array(), bearer(tokens.admin)).result.catch((e: grpc.ServiceError) => e);
    expect([(noService as grpc.ServiceError).code, (noService as grpc.ServiceError).details]).toEqual([
      grpc.status.UNIMPLEMENTED,
      "unknown method /nope.v1.Nothing/Call",
    ]);
    const garbage = await grpcJsCall(grpcJs, "/chronolog.v1.LogService/Emit", new Uint8Array([0xff, 0xff, 0xff]), bearer(tokens.client)).result.catch(
      (e: grpc.ServiceError) => e,
    );
    expect((garbage as grpc.ServiceError).code).toBe(grpc.status.INVALID_ARGUMENT);
    expect((garbage as grpc.ServiceError).details).toMatch(/^the request is not a valid chronolog\.v1\.EmitRequest \(protobuf binary\): /);
  });

  it("takes gzip-compressed requests, and measures the limit after decompression", async () => {
    const request = create(EmitRequestSchema, { type: "order.placed", data: { order_id: "o-gzip", amount: 1, email: "a@example.com" } });
    const emitted = decode(
      EmitResponseSchema,
      await grpcJsCall(grpcJsGzip, "/chronolog.v1.LogService/Emit", toBinary(EmitRequestSchema, request), bearer(tokens.client)).result,
    );
    expect(emitted.event?.data).toEqual(request.data);
    // ~10 KB of one letter compresses far below the 4 KiB limit, and is over it once inflated.
    const big = create(EmitRequestSchema, { type: "order.placed", data: { order_id: "x".repeat(10_000), amount: 1, email: "a@example.com" } });
    const e = await grpcJsCall(grpcJsGzip, "/chronolog.v1.LogService/Emit", toBinary(EmitRequestSchema, big), bearer(tokens.client)).result.catch(
      (err: grpc.ServiceError) => err,
    );
    expect((e as grpc.ServiceError).code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect((e as grpc.ServiceError).details).toBe("message is larger than configured readMaxBytes 4096 after decompression");
  });

  it("aborts the handler's signal at the caller's deadline and when the caller cancels (RST_STREAM)", async () => {
    const request = (callId: string) => toBinary(CallActionRequestSchema, create(CallActionRequestSchema, { action: "slow.wait", callId }));
    const started = (n: number) => until(async () => (await countStarted()) === n, `${n} runs started`);
    const countStarted = async () => {
      let n = 0;
      for await (const _ of native.read({ types: ["action.started"] })) n++;
      return n;
    };

    const late = await grpcJsCall(grpcJs, "/chronolog.v1.ActionService/CallAction", request("deadline-1"), bearer(tokens.client), {
      deadline: Date.now() + 300,
    }).result.catch((e: grpc.ServiceError) => e);
    expect((late as grpc.ServiceError).code).toBe(grpc.status.DEADLINE_EXCEEDED);
    await until(() => aborted.length === 1, "the executor's signal aborted at the deadline");
    expect(aborted[0]).toContain("deadline exceeded");

    const pending = grpcJsCall(grpcJs, "/chronolog.v1.ActionService/CallAction", request("cancel-1"), bearer(tokens.client));
    const cancelled = pending.result.catch((e: grpc.ServiceError) => e);
    await started(2);
    pending.cancel();
    expect(((await cancelled) as grpc.ServiceError).code).toBe(grpc.status.CANCELLED);
    await until(() => aborted.length === 2, "the executor's signal aborted when the caller left");
    expect(aborted[1]).toContain("caller cancelled");

    // The SDK's gRPC transport (native path) and its gRPC-Web transport (connect-node) agree.
    const viaNative = await failure(native.call("slow.wait", {}, { callId: "deadline-2", timeoutMs: 300 }));
    const viaWeb = await failure(web.call("slow.wait", {}, { callId: "deadline-3", timeoutMs: 300 }));
    expect(viaNative.code).toBe("DeadlineExceeded");
    expect(viaWeb.code).toBe("DeadlineExceeded");
    await until(() => aborted.length === 4, "both executors' signals aborted");
  });
});

describe("a handler on the native path (in-process listener)", () => {
  it("sets response headers and trailers a grpc-js caller reads, and gets a request of many DATA frames whole", async () => {
    const services: string[] = [];
    const listener = await listen({
      host: "127.0.0.1",
      port: 0,
      routes(router: ConnectRouter) {
        router.service(Health, {
          check(req, ctx) {
            services.push(req.service);
            ctx.responseHeader.set("x-served-by", "native");
            ctx.responseTrailer.set("x-took", "1ms");
            return { status: HealthCheckResponse_ServingStatus.SERVING };
          },
        });
      },
    });
    const client = new grpc.Client(`127.0.0.1:${listener.port}`, grpc.credentials.createInsecure());
    try {
      const identity = (b: Buffer) => b;
      const headers: grpc.Metadata[] = [];
      const status = await new Promise<grpc.StatusObject>((resolve, reject) => {
        const call = client.makeUnaryRequest("/grpc.health.v1.Health/Check", identity, identity, Buffer.alloc(0), (err) => err && reject(err));
        call.on("metadata", (m) => headers.push(m));
        call.on("status", resolve);
      });
      expect(headers[0].get("x-served-by")).toEqual(["native"]);
      expect(status.code).toBe(grpc.status.OK);
      expect(status.metadata.get("x-took")).toEqual(["1ms"]);
      // A request of many HTTP/2 DATA frames is read whole.
      const long = "s".repeat(300_000);
      const echoed = await new Promise<Buffer>((resolve, reject) =>
        client.makeUnaryRequest(
          "/grpc.health.v1.Health/Check",
          identity,
          identity,
          Buffer.from(toBinary(HealthCheckRequestSchema, create(HealthCheckRequestSchema, { service: long }))),
          (err, value) => (err ? reject(err) : resolve(value!)),
        ),
      );
      expect(fromBinary(HealthCheckResponseSchema, echoed).status).toBe(HealthCheckResponse_ServingStatus.SERVING);
      expect(services).toEqual(["", long]);
    } finally {
      client.close();
      await listener.close();
    }
  });
});
