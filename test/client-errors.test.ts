// What a client sees for its own mistakes and for a clean stop: never INTERNAL,
// which is kept for the owner's bugs. The owner runs as a child process; clients send raw
// bytes over HTTP/2 with gRPC framing and over Connect on HTTP/1.1, and `chronolog tail`,
// grpcurl and raw streams watch while the owner is stopped with SIGTERM.
//
// @module-tag serial
// @module-tag sqlite-only

import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import * as http from "node:http";
import * as http2 from "node:http2";
import * as net from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create, toBinary, type DescService, type JsonObject } from "@bufbuild/protobuf";
import { StructSchema, ValueSchema } from "@bufbuild/protobuf/wkt";
import { createClient, type ChronologClient } from "../sdk/ts/src/client.js";
import { ActionService } from "@chronolog/sdk/gen/chronolog/v1/action_pb";
import { AdminService } from "@chronolog/sdk/gen/chronolog/v1/admin_pb";
import { CollectionService } from "@chronolog/sdk/gen/chronolog/v1/collection_pb";
import { ExecutorService, SubscribeRequestSchema } from "@chronolog/sdk/gen/chronolog/v1/executor_pb";
import { EmitRequestSchema, LogService, WatchRequestSchema } from "@chronolog/sdk/gen/chronolog/v1/log_pb";
import { PluginService } from "@chronolog/sdk/gen/chronolog/v1/plugin_pb";
import { TimeService } from "@chronolog/sdk/gen/chronolog/v1/time_pb";
import { chronologArgs } from "./helpers/chronolog.js";
import { spawnOwner, tempDir, type OwnerProcess } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

const repo = new URL("../", import.meta.url).pathname;
const GRPCURL = join(repo, ".tools/grpcurl");

/** gRPC framing: uncompressed flag, big-endian length, the bytes. */
function frame(bytes: Uint8Array): Buffer {
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(bytes.length, 1);
  return Buffer.concat([prefix, bytes]);
}

/** Bytes no message decodes: a tag of field number 0. */
const garbage = Uint8Array.from([0x00, 0x01, 0x02, 0x03]);

/** A Struct nested `depth` levels deep ({"a":{"a":...}}), past protobuf's decoding limit of 100. */
function deepStruct(depth: number): JsonObject {
  let struct = create(StructSchema);
  for (let i = 0; i < depth; i++) struct = create(StructSchema, { fields: { a: create(ValueSchema, { kind: { case: "structValue", value: struct } }) } });
  return struct as unknown as JsonObject; // a Struct message where the generated types say JsonObject: encoded as it is, unchecked
}

interface GrpcAnswer {
  status?: string;
  message?: string;
  /** The status of a stream that answered with messages first (trailers), or of a trailers-only answer. */
  headers: http2.IncomingHttpHeaders;
}

/** One gRPC call over raw HTTP/2 with `body` (already framed); resolves with its status once the stream ends. */
function grpcCall(
  url: string,
  path: string,
  body: Buffer,
  keepOpen = false,
): { answer: Promise<GrpcAnswer>; stream: http2.ClientHttp2Stream; session: http2.ClientHttp2Session } {
  const session = http2.connect(url);
  session.on("error", () => {});
  const stream = session.request({ ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers" });
  stream.on("error", () => {});
  if (keepOpen) stream.write(body);
  else stream.end(body);
  const answer = new Promise<GrpcAnswer>((resolve) => {
    let headers: http2.IncomingHttpHeaders = {};
    let trailers: http2.IncomingHttpHeaders = {};
    stream.on("response", (h) => (headers = h));
    stream.on("trailers", (t) => (trailers = t));
    stream.on("data", () => {});
    stream.on("close", () => {
      const status = (trailers["grpc-status"] ?? headers["grpc-status"]) as string | undefined;
      const message = (trailers["grpc-message"] ?? headers["grpc-message"]) as string | undefined;
      session.close();
      resolve({ status, message: message === undefined ? undefined : decodeURIComponent(message), headers });
    });
  });
  return { answer, stream, session };
}

/** One Connect unary call over HTTP/1.1 with a binary body. */
function connectCall(url: string, path: string, body: Uint8Array): Promise<{ status: number; json: { code?: string; message?: string } }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}${path}`, { method: "POST", headers: { "content-type": "application/proto", "connect-protocol-version": "1" } }, (res) => {
      let text = "";
      res.on("data", (c: Buffer) => (text += c.toString()));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, json: text ? JSON.parse(text) : {} }));
    });
    req.on("error", reject);
    req.end(Buffer.from(body));
  });
}

const services: DescService[] = [LogService, PluginService, ExecutorService, ActionService, CollectionService, TimeService, AdminService];

describe("a client's malformed request is INVALID_ARGUMENT, on every service", () => {
  let owner: OwnerProcess;

  beforeAll(async () => {
    owner = await spawnOwner(tempDir(), ["--synchronous", "NORMAL"]);
  });
  afterAll(async () => {
    if (owner && owner.child.exitCode === null) {
      owner.child.kill("SIGTERM");
      await owner.exited;
    }
  });

  it("bytes that are not protobuf, over gRPC (HTTP/2) to every method, and over Connect (HTTP/1.1) to every unary one", async () => {
    for (const service of services) {
      for (const method of service.methods) {
        const path = `/${service.typeName}/${method.name}`;
        const grpc = await grpcCall(owner.url, path, frame(garbage)).answer;
        expect({ path, status: grpc.status }).toEqual({ path, status: "3" });
        expect(grpc.message).toContain(`not a valid ${method.input.typeName}`);
        expect(grpc.message).toContain("illegal tag");
        if (method.methodKind !== "unary") continue;
        const connect = await connectCall(owner.url, path, garbage);
        expect({ path, status: connect.status, code: connect.json.code }).toEqual({ path, status: 400, code: "invalid_argument" });
        expect(connect.json.message).toContain(`not a valid ${method.input.typeName}`);
      }
    }
  });

  it("a request nested deeper than protobuf decodes (Emit, Watch, Subscribe)", async () => {
    const emit = toBinary(EmitRequestSchema, create(EmitRequestSchema, { type: "t", data: deepStruct(120) }));
    for (const [path, body] of [
      ["/chronolog.v1.LogService/Emit", emit],
      ["/chronolog.v1.LogService/Watch", toBinary(WatchRequestSchema, create(WatchRequestSchema, { where: deepStruct(120) }))],
    ] as const) {
      const grpc = await grpcCall(owner.url, path, frame(body)).answer;
      expect({ path, status: grpc.status }).toEqual({ path, status: "3" });
      expect(grpc.message).toContain("maximum recursion depth");
    }
    const connect = await connectCall(owner.url, "/chronolog.v1.LogService/Emit", emit);
    expect(connect.status).toBe(400);
    expect(connect.json.message).toContain("maximum recursion depth");
    const hello = toBinary(
      SubscribeRequestSchema,
      create(SubscribeRequestSchema, {
        message: { case: "hello", value: { executor: "deep", plugins: [{ name: "deep", events: { "deep.x": { schema: deepStruct(120) } } }] } },
      }),
    );
    const subscribe = await grpcCall(owner.url, "/chronolog.v1.ExecutorService/Subscribe", frame(hello)).answer;
    expect(subscribe.status).toBe("3");
    expect(subscribe.message).toContain("maximum recursion depth");
    // Still serving.
    const ok = await connectCall(owner.url, "/chronolog.v1.LogService/ReadLog", new Uint8Array());
    expect(ok.status).toBe(200);
  });

  it("a number JSON cannot hold (NaN, Infinity) in a Struct is INVALID_ARGUMENT naming its path; nothing is written", async () => {
    const client = createClient({ url: owner.url });
    await client.registerPlugin({ name: "nums", events: { "num.seen": { allow: ["*"], schema: { type: "object" } } } });
    const head = async () => {
      let last = 0n;
      for await (const e of client.read()) last = e.seq;
      return last;
    };
    const before = await head();
    for (const [value, shown] of [
      [NaN, "NaN"],
      [Infinity, "Infinity"],
      [-Infinity, "-Infinity"],
    ] as const) {
      // protobuf-es encodes a JSON number as a Value's double, NaN and infinities included (the SDK refuses them before this).
      const body = toBinary(EmitRequestSchema, create(EmitRequestSchema, { type: "num.seen", data: { n: [value] } as unknown as JsonObject }));
      const grpc = await grpcCall(owner.url, "/chronolog.v1.LogService/Emit", frame(body)).answer;
      expect([grpc.status, grpc.message]).toEqual(["3", `data/n/0 is ${shown}, not a JSON number`]);
    }
    expect(await head()).toBe(before);
  });

  it("an HTTP/1.0 request without Host is 400, not 500", async () => {
    const socket = net.connect(owner.port, "127.0.0.1");
    let answer = "";
    socket.on("data", (b: Buffer) => (answer += b.toString()));
    await new Promise((resolve) => socket.once("connect", resolve));
    socket.write("POST /chronolog.v1.LogService/ReadLog HTTP/1.0\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}");
    await new Promise((resolve) => socket.once("close", resolve));
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer).toContain("a Host header is required");
  });
});

describe("an owner stopped cleanly ends open streams with UNAVAILABLE", () => {
  let owner: OwnerProcess;
  let client: ChronologClient;

  beforeAll(async () => {
    owner = await spawnOwner(tempDir(), ["--synchronous", "NORMAL"]);
    client = createClient({ url: owner.url });
    await client.registerPlugin({ name: "shop", events: { "order.placed": { allow: ["*"] } } });
    for (let i = 0; i < 3; i++) await client.emit("order.placed", { i });
  });
  afterAll(async () => {
    if (owner && owner.child.exitCode === null) {
      owner.child.kill("SIGKILL");
      await owner.exited;
    }
  });

  it("chronolog tail says the owner is stopping and exits 75; grpcurl, a raw Watch and a Subscribe get UNAVAILABLE", async () => {
    const tail = spawn(process.execPath, [...chronologArgs, "tail", "--url", owner.url], { cwd: repo, stdio: ["ignore", "pipe", "pipe"] });
    const out = { stdout: "", stderr: "" };
    tail.stdout.on("data", (b: Buffer) => (out.stdout += b.toString()));
    tail.stderr.on("data", (b: Buffer) => (out.stderr += b.toString()));
    const tailExit = new Promise<number | null>((resolve) => tail.once("exit", (code) => resolve(code)));

    const grpcurl = existsSync(GRPCURL)
      ? spawn(GRPCURL, ["-plaintext", "-d", "{}", `127.0.0.1:${owner.port}`, "chronolog.v1.LogService/Watch"], { stdio: ["ignore", "pipe", "pipe"] })
      : undefined;
    const grpcurlOut = { stdout: "", stderr: "" };
    grpcurl?.stdout?.on("data", (b: Buffer) => (grpcurlOut.stdout += b.toString()));
    grpcurl?.stderr?.on("data", (b: Buffer) => (grpcurlOut.stderr += b.toString()));
    const grpcurlExit = grpcurl && new Promise<number | null>((resolve) => grpcurl.once("exit", (code) => resolve(code)));

    const watch = grpcCall(owner.url, "/chronolog.v1.LogService/Watch", frame(toBinary(WatchRequestSchema, create(WatchRequestSchema, {}))));
    const hello = create(SubscribeRequestSchema, { message: { case: "hello", value: { executor: "idle", credits: 1 } } });
    const subscribe = grpcCall(owner.url, "/chronolog.v1.ExecutorService/Subscribe", frame(toBinary(SubscribeRequestSchema, hello)), true);
    let welcomed = false;
    subscribe.stream.once("data", () => (welcomed = true));

    await until(() => out.stdout.split("\n").filter(Boolean).length === 3, "tail to print the 3 events", 20_000);
    if (grpcurl) await until(() => grpcurlOut.stdout.includes("caughtUp"), "grpcurl's Watch to catch up", 20_000);
    await until(() => welcomed, "the Subscribe's welcome");

    owner.child.kill("SIGTERM");
    expect(await owner.exited).toBe(0);

    expect(await tailExit).toBe(75);
    expect(out.stderr).toContain("the owner is stopping");
    expect(out.stderr).toContain("--from 4");
    expect(out.stderr).not.toMatch(/internal/i);
    const w = await watch.answer;
    expect(w.status).toBe("14");
    expect(w.message).toContain("the owner is stopping");
    const s = await subscribe.answer;
    expect(s.status).toBe("14");
    expect(s.message).toContain("the owner is stopping");
    if (grpcurl) {
      await grpcurlExit;
      expect(grpcurlOut.stderr).toContain("Code: Unavailable");
      expect(grpcurlOut.stderr).toContain("the owner is stopping");
    }
  });

  it("tail exits 75 too when the owner cannot be reached", async () => {
    const tail = spawn(process.execPath, [...chronologArgs, "tail", "--url", owner.url], { cwd: repo, stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    tail.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
    const code = await new Promise<number | null>((resolve) => tail.once("exit", (c) => resolve(c)));
    expect(code).toBe(75);
    expect(stderr).toContain("the owner is unavailable");
  });
});
