// A trivial unary gRPC handler on one of three Node servers, to measure what a call costs the
// transport before any application code: it decodes the request (GetEventRequest, a ~200-byte
// id) and answers an empty GetEventResponse.
//   connect: @connectrpc/connect-node's adapter on node:http2 (as the owner serves);
//   grpc-js: a @grpc/grpc-js Server;
//   http2:   bare node:http2 with gRPC's framing (5-byte message prefix, grpc-status trailer).
// Usage: node --import tsx bench/compare/trivial-server.ts KIND PORT; prints {"ready":true}.
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import * as http2 from "node:http2";
import { GetEventRequestSchema, GetEventResponseSchema, LogService } from "@chronolog/sdk/gen/chronolog/v1/log_pb";

const [kind, portArg] = process.argv.slice(2);
const port = Number(portArg);
const empty = Buffer.from(toBinary(GetEventResponseSchema, create(GetEventResponseSchema)));
const ready = () => process.stdout.write(`${JSON.stringify({ ready: true })}\n`);

if (kind === "connect") {
  const handler = connectNodeAdapter({
    routes: (router) =>
      router.service(LogService, {
        getEvent: (req) => {
          if (req.id.length === 0) throw new Error("empty id");
          return create(GetEventResponseSchema);
        },
      }),
  });
  http2.createServer({}, handler).listen(port, "127.0.0.1", ready);
} else if (kind === "grpc-js") {
  const server = new grpc.Server();
  const identity = (b: Buffer) => b;
  server.register(
    "/chronolog.v1.LogService/GetEvent",
    (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
      if (fromBinary(GetEventRequestSchema, call.request).id.length === 0) return callback({ code: grpc.status.INVALID_ARGUMENT });
      callback(null, empty);
    },
    identity,
    identity,
    "unary",
  );
  server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? (console.error(err), process.exit(1)) : ready()));
} else if (kind === "http2") {
  const framed = Buffer.alloc(5 + empty.length);
  framed.writeUInt32BE(empty.length, 1);
  empty.copy(framed, 5);
  const server = http2.createServer();
  server.on("stream", (stream, headers) => {
    if (headers[":path"] !== "/chronolog.v1.LogService/GetEvent") {
      stream.respond({ ":status": 200, "content-type": "application/grpc", "grpc-status": "12" }, { endStream: true });
      return;
    }
    const chunks: Buffer[] = [];
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.on("end", () => {
      const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
      const ok = body.length >= 5 && fromBinary(GetEventRequestSchema, body.subarray(5, 5 + body.readUInt32BE(1))).id.length > 0;
      stream.respond({ ":status": 200, "content-type": "application/grpc" }, { waitForTrailers: true });
      stream.once("wantTrailers", () => stream.sendTrailers({ "grpc-status": ok ? "0" : "3" }));
      stream.end(framed);
    });
  });
  server.listen(port, "127.0.0.1", ready);
} else {
  throw new Error(`unknown kind ${kind}: connect | grpc-js | http2`);
}
