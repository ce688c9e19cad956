// Trivial gRPC servers for bench/unary (not a test): each answers
// /grpc.health.v1.Health/Check with SERVING and nothing else, so a call costs
// only what its server stack costs. Run as a child process:
//
//   node --import tsx bench/unary/servers.ts <grpc-js | http2 | connect-node> <port>
//
// It prints "ready" on stdout once the port is bound.

import * as http2 from "node:http2";
import { create } from "@bufbuild/protobuf";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { Health, HealthCheckResponseSchema, HealthCheckResponse_ServingStatus } from "@chronolog/sdk/gen/grpc/health/v1/health_pb";

export type TrivialKind = "grpc-js" | "http2" | "connect-node";

/** HealthCheckResponse{status: SERVING} in protobuf binary (field 1, varint 1). */
const SERVING = Buffer.from([0x08, 0x01]);

function grpcJs(port: number): Promise<void> {
  const server = new grpc.Server();
  const identity = (b: Buffer) => b;
  server.addService(
    {
      check: {
        path: "/grpc.health.v1.Health/Check",
        requestStream: false,
        responseStream: false,
        requestSerialize: identity,
        requestDeserialize: identity,
        responseSerialize: identity,
        responseDeserialize: identity,
      },
    },
    { check: (_call: unknown, callback: grpc.sendUnaryData<Buffer>) => callback(null, SERVING) },
  );
  return new Promise((resolve, reject) => server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (e) => (e ? reject(e) : resolve())));
}

/** node:http2 with gRPC framing by hand: read the request, answer one message and grpc-status 0. */
function bareHttp2(port: number): Promise<void> {
  const frame = Buffer.concat([Buffer.from([0, 0, 0, 0, SERVING.length]), SERVING]);
  const server = http2.createServer();
  server.on("stream", (stream) => {
    stream.on("data", () => {});
    stream.on("end", () => {
      stream.respond({ ":status": 200, "content-type": "application/grpc" }, { waitForTrailers: true });
      stream.once("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
      stream.end(frame);
    });
  });
  return new Promise((resolve) => server.listen(port, "127.0.0.1", resolve));
}

function connectNode(port: number): Promise<void> {
  const handler = connectNodeAdapter({
    routes(router) {
      router.rpc(Health.method.check, () => create(HealthCheckResponseSchema, { status: HealthCheckResponse_ServingStatus.SERVING }));
    },
  });
  const server = http2.createServer(handler);
  return new Promise((resolve) => server.listen(port, "127.0.0.1", resolve));
}

const [kind, port] = process.argv.slice(2) as [TrivialKind, string];
const start = { "grpc-js": grpcJs, http2: bareHttp2, "connect-node": connectNode }[kind];
if (!start) throw new Error(`unknown trivial server ${kind}`);
await start(Number(port));
console.log("ready");
