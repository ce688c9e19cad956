// Native gRPC unary calls: one HTTP/2 stream in, one message and a status out, without
// connect-node's per-call machinery (async-iterable pipelines, Node's compatibility
// request and response, a Headers object per header set, linked AbortControllers per
// call, ...), which cost a trivial call about ten times what the transport does.
//
// The same service implementation objects and interceptors the connect router gets
// serve these calls: {@link UnaryRoutes.record} wraps the router handed to the routes
// function and keeps every unary method it registers, and each call runs through
// the interceptors (auth, error mapping) exactly as connect would run it. Errors go
// out as connect's gRPC handler writes them (grpc-status, grpc-message,
// grpc-status-details-bin). listen.ts decides which streams come here; gRPC-Web,
// Connect, JSON, streams and unknown paths stay on connect-node.

import http2, { type ServerHttp2Stream, type IncomingHttpHeaders, type OutgoingHttpHeaders } from "node:http2";
import { create, fromBinary, isMessage, toBinary, type DescMessage, type DescMethod, type DescMethodUnary, type DescService } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  createContextValues,
  type ConnectRouter,
  type HandlerContext,
  type Interceptor,
  type UnaryRequest,
  type UnaryResponse,
} from "@connectrpc/connect";
import { parseTimeout } from "@connectrpc/connect/protocol-grpc";
import { compressionBrotli, compressionGzip } from "@connectrpc/connect-node";
import { CallState, resetReason } from "./grpc-call.js";
import { EnvelopeReader } from "./grpc-envelope.js";
import { asConnectError, errorTrailers } from "./grpc-status.js";

/** A user-provided unary implementation, as connect's ServiceImpl methods are. */
type UnaryImpl = (request: unknown, context: HandlerContext) => unknown;

interface UnaryEntry {
  service: DescService;
  method: DescMethodUnary;
  impl: UnaryImpl;
}

/** The unary methods registered on a connect router, by request path (`/pkg.Service/Method`). */
export class UnaryRoutes {
  private readonly byPath = new Map<string, UnaryEntry>();
  private router: ConnectRouter | undefined;
  private paths: Set<string> | undefined;

  /** True when a method of any kind is registered at `path` (e.g. `/chronolog.v1.LogService/Emit`). */
  knows(path: string): boolean {
    this.paths ??= new Set(this.router?.handlers.map((h) => h.requestPath));
    return this.paths.has(path);
  }

  /**
   * A router that registers on `router` and also records every unary method here, with
   * the same implementation object (a method the implementation lacks answers
   * UNIMPLEMENTED, as connect's does).
   */
  record(router: ConnectRouter): ConnectRouter {
    this.router = router;
    const add = (method: DescMethod, impl: UnaryImpl | undefined): void => {
      if (method.methodKind !== "unary") return;
      const service = method.parent;
      const message = `${service.typeName}.${method.name} is not implemented`;
      this.byPath.set(`/${service.typeName}/${method.name}`, {
        service,
        method: method as DescMethodUnary,
        impl:
          impl ??
          (() => {
            throw new ConnectError(message, Code.Unimplemented);
          }),
      });
    };
    const recording: ConnectRouter = {
      handlers: router.handlers,
      service(service, implementation, options) {
        router.service(service, implementation, options);
        const impl = implementation as Record<string, unknown>;
        for (const method of service.methods) {
          const fn = impl[method.localName];
          add(method, typeof fn === "function" ? (fn.bind(impl) as UnaryImpl) : undefined);
        }
        return recording;
      },
      rpc(method, impl, options) {
        router.rpc(method, impl, options);
        add(method, impl as UnaryImpl);
        return recording;
      },
    };
    return recording;
  }

  get(path: string | undefined): UnaryEntry | undefined {
    return path === undefined ? undefined : this.byPath.get(path);
  }
}

/** How long a unary request's message may take to arrive whole, ms. */
const bodyTimeoutMs = 30_000;

/** Options of {@link grpcUnary}. */
export interface GrpcUnaryOptions {
  routes: UnaryRoutes;
  /** Applied to every call, in order, as connect applies them. */
  interceptors: Interceptor[];
  /** Largest accepted request message (compressed or not); bigger ones fail with RESOURCE_EXHAUSTED. */
  readMaxBytes: number;
  /** Aborts every call's signal when it aborts (server shutdown). */
  shutdownSignal: AbortSignal;
}

/** The native unary path: which streams it takes, and how it serves one. */
export interface GrpcUnary {
  /** True for a gRPC (protobuf) POST to a known unary method. */
  takes(headers: IncomingHttpHeaders): boolean;
  /** Serves the call on `stream` (headers already received). */
  serve(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): void;
}

const OK_TRAILERS: OutgoingHttpHeaders = { "grpc-status": "0" };
const compressions = [compressionGzip, compressionBrotli];
const supportedEncodings = compressions.map((c) => c.name).join(",");

/** Builds the native unary path over the recorded routes. */
export function grpcUnary(options: GrpcUnaryOptions): GrpcUnary {
  const { routes, interceptors, readMaxBytes, shutdownSignal } = options;
  const live = new Set<CallState>();
  shutdownSignal.addEventListener("abort", () => {
    for (const call of live) call.abort(shutdownSignal.reason);
  });

  const serve = (stream: ServerHttp2Stream, headers: IncomingHttpHeaders): void => {
    const entry = routes.get(headers[":path"])!;
    const state = new CallState();
    if (shutdownSignal.aborted) state.abort(shutdownSignal.reason);
    else live.add(state);
    const timeout = parseTimeout(one(headers["grpc-timeout"]), Number.MAX_SAFE_INTEGER);
    stream.on("close", () => {
      live.delete(state);
      state.onAbort = undefined; // nothing to answer on a closed stream
      state.end(resetReason(stream.rstCode));
    });
    let failed = false;
    const fail = (e: unknown): void => {
      if (failed) return;
      failed = true;
      respond(stream, state, undefined, errorTrailers(asConnectError(e), state.trailersObject()));
    };
    // connect reports a bad encoding before a bad timeout, both before reading the message.
    const encoding = one(headers["grpc-encoding"]);
    const compression = encoding === null || encoding === "identity" ? null : compressions.find((c) => c.name === encoding);
    if (compression === undefined) {
      stream.resume();
      return fail(
        new ConnectError(`unknown compression "${encoding}": supported encodings are ${supportedEncodings}`, Code.Unimplemented, {
          "grpc-accept-encoding": supportedEncodings,
        }),
      );
    }
    if (timeout.error) {
      stream.resume();
      return fail(timeout.error);
    }
    // While the message arrives, the call's deadline (one passed already included) and the owner
    // stopping end it at once, and it must arrive whole within bodyTimeoutMs whatever its
    // deadline: a client that never ends its request holds nothing for long.
    state.onAbort = (reason) => fail(reason);
    if (timeout.timeoutMs !== undefined) state.deadline(timeout.timeoutMs);
    if (shutdownSignal.aborted) fail(shutdownSignal.reason);
    if (failed) return void stream.resume();
    const bodyTimer = setTimeout(
      () => state.abort(new ConnectError(`the request did not arrive whole within ${bodyTimeoutMs / 1000} s`, Code.DeadlineExceeded)),
      bodyTimeoutMs,
    );
    stream.once("close", () => clearTimeout(bodyTimer));
    const body = new EnvelopeReader(readMaxBytes);
    stream.on("data", (chunk: Buffer) => {
      if (failed) return;
      try {
        body.push(chunk);
      } catch (e) {
        fail(e);
      }
    });
    stream.on("end", () => {
      clearTimeout(bodyTimer);
      state.onAbort = undefined;
      if (failed) return;
      let envelope: { flags: number; data: Uint8Array };
      try {
        envelope = body.single();
      } catch (e) {
        return fail(e);
      }
      invoke(entry, stream, headers, state, envelope, compression).then((frame) => respond(stream, state, frame, state.trailersObject(OK_TRAILERS)), fail);
    });
  };

  const invoke = async (
    entry: UnaryEntry,
    stream: ServerHttp2Stream,
    headers: IncomingHttpHeaders,
    state: CallState,
    envelope: { flags: number; data: Uint8Array },
    compression: typeof compressionGzip | null,
  ): Promise<Buffer> => {
    let data = envelope.data;
    if (envelope.flags & 1) {
      if (!compression) throw new ConnectError("received a compressed message without grpc-encoding", Code.InvalidArgument);
      data = await compression.decompress(data, readMaxBytes);
    }
    const { method, service, impl } = entry;
    let input;
    try {
      input = fromBinary(method.input, data);
    } catch (e) {
      // The same words as connect's path gives (patched: patches/@connectrpc+connect+2.1.2.patch).
      throw new ConnectError(
        `the request is not a valid ${method.input.typeName} (protobuf binary): ${e instanceof Error ? e.message : String(e)}`,
        Code.InvalidArgument,
      );
    }
    const request: UnaryRequest = {
      stream: false,
      message: input,
      method,
      service,
      requestMethod: "POST",
      get url() {
        return `${"encrypted" in stream.session!.socket ? "https" : "http"}://${headers[":authority"] ?? ""}${headers[":path"]}`;
      },
      contextValues: createContextValues(),
      get signal() {
        return state.signal();
      },
      get header() {
        return state.requestHeader(headers);
      },
    };
    const last = async (req: UnaryRequest): Promise<UnaryResponse> => {
      const context: HandlerContext = {
        method,
        service: req.service,
        requestMethod: req.requestMethod,
        protocolName: "grpc",
        get url() {
          return req.url;
        },
        values: req.contextValues,
        timeoutMs: () => state.timeoutMs(),
        get signal() {
          return req.signal;
        },
        get requestHeader() {
          return req.header;
        },
        get responseHeader() {
          return state.responseHeader();
        },
        get responseTrailer() {
          return state.responseTrailer();
        },
      };
      const output = await impl(req.message, context);
      return {
        stream: false,
        service,
        method,
        message: normalize(method.output, output),
        get header() {
          return state.responseHeader();
        },
        get trailer() {
          return state.responseTrailer();
        },
      };
    };
    let next = last;
    for (let i = interceptors.length - 1; i >= 0; i--) next = interceptors[i](next as never) as typeof last;
    const response = await next(request);
    state.adopt(response);
    let bytes: Uint8Array;
    try {
      bytes = toBinary(method.output, response.message);
    } catch (e) {
      throw new ConnectError(`serialize binary: ${e instanceof Error ? e.message : String(e)}`, Code.Internal);
    }
    const frame = Buffer.allocUnsafe(5 + bytes.length);
    frame[0] = 0;
    frame.writeUInt32BE(bytes.length, 1);
    frame.set(bytes, 5);
    return frame;
  };

  return {
    takes(headers) {
      if (headers[":method"] !== "POST" || routes.get(headers[":path"]) === undefined) return false;
      const type = headers["content-type"];
      return type === "application/grpc" || type === "application/grpc+proto" || (type !== undefined && /^application\/grpc(\+proto)?$/i.test(type));
    },
    serve,
  };
}

function normalize(desc: DescMessage, message: unknown) {
  return isMessage(message, desc) ? message : create(desc, message as never);
}

function one(value: string | string[] | undefined): string | null {
  return value === undefined ? null : Array.isArray(value) ? value.join(", ") : value;
}

/** Sends headers, the message frame (absent on error) and trailers, unless the stream is gone. */
function respond(stream: ServerHttp2Stream, state: CallState, frame: Buffer | undefined, trailers: OutgoingHttpHeaders): void {
  if (stream.destroyed || stream.closed || stream.headersSent) return;
  try {
    stream.respond(state.headersObject(), { waitForTrailers: true });
    stream.on("wantTrailers", () => {
      stream.sendTrailers(trailers);
      // Answered before the request arrived whole (refused while it was still coming): RST_STREAM
      // NO_ERROR tells the client to stop sending (RFC 9113 8.1), else its half of the stream
      // stays open and holds its process.
      if (!stream.readableEnded) setImmediate(() => stream.close(http2.constants.NGHTTP2_NO_ERROR));
    });
    stream.end(frame);
  } catch (e) {
    // Headers a handler set that HTTP/2 refuses (a connection-specific header, a bad value): reset
    // the stream (the caller sees INTERNAL) rather than throw out of an event handler.
    stream.destroy(e instanceof Error ? e : undefined);
  }
}
