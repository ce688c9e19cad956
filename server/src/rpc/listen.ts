// One TCP port for gRPC (HTTP/2), gRPC-Web and Connect (HTTP/1.1 and HTTP/2).
//
// Plaintext: a net.Server peeks at the first bytes of each connection. The
// HTTP/2 client preface goes to an http2.Server (h2c), anything else to an
// http.Server. Node's `allowHTTP1` only works with TLS, hence the sniffing.
// TLS: http2.createSecureServer with ALPN h2 + http/1.1 and allowHTTP1.
// Both paths share one connectNodeAdapter handler, CORS and an optional
// extra HTTP handler (e.g. /metrics). Native gRPC unary calls (protobuf, a
// path naming a unary method) are taken per HTTP/2 stream by grpc-unary.ts,
// before Node builds its compatibility request and response for them.

import * as http from "node:http";
import * as http2 from "node:http2";
import { setMaxListeners } from "node:events";
import * as net from "node:net";
import { Code, ConnectError, cors, type ConnectRouter, type Interceptor } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { grpcUnary, UnaryRoutes, type GrpcUnary } from "./grpc-unary.js";
import type { HttpHandler, HttpRequest, HttpResponse } from "../http-handler.js";
import { encodeGrpcMessage } from "./grpc-status.js";

/** Options of {@link listen}. Durations are milliseconds, sizes bytes. */
export interface ListenOptions {
  /** Interface to bind, e.g. "127.0.0.1" or "::". */
  host: string;
  /** TCP port; 0 picks an ephemeral port (read it from `Listener.port`). */
  port: number;
  /** Registers the services on the router (called once). */
  routes: (router: ConnectRouter) => void;
  /** PEM certificate chain and private key; when set the port speaks TLS only (ALPN h2, http/1.1). */
  tls?: { cert: Buffer | string; key: Buffer | string };
  /** Browser origins allowed by CORS, e.g. ["https://app.example"]; ["*"] allows any. Default: none. */
  corsOrigins?: string[];
  /**
   * Answer only requests addressed to a loopback name (Host or :authority 127.0.0.1, localhost or
   * [::1]), others 421: an owner without principals, whose every caller is its admin, is then out
   * of reach of a web page that rebinds its own DNS name to 127.0.0.1.
   */
  loopbackHostsOnly?: boolean;
  /** Largest accepted request message; bigger ones fail with RESOURCE_EXHAUSTED. Default ~4 GiB. */
  readMaxBytes?: number;
  /** Interceptors applied to every RPC. */
  interceptors?: Interceptor[];
  /** Called first for every HTTP request; returns true when it handled (answered) it. */
  extraHttpHandler?: HttpHandler;
  /**
   * Time a new connection has to identify itself: send the first bytes (plaintext),
   * finish the TLS handshake, or send complete HTTP/1.1 request headers. Default 30 000.
   */
  handshakeTimeoutMs?: number;
  /** An HTTP/2 connection without any open stream for this long is closed (GOAWAY). Default 300 000. */
  idleTimeoutMs?: number;
  /** close() waits this long for streams to end after the shutdown signal, then destroys connections. Default 1 000. */
  shutdownGraceMs?: number;
}

/** A running server returned by {@link listen}. */
export interface Listener {
  /** The bound port (the real one when 0 was asked). */
  port: number;
  /** The host the server was bound to (as given). */
  host: string;
  /**
   * Stops accepting, aborts `shutdownSignal` (ending long streams), closes HTTP/2
   * sessions and HTTP/1.1 connections, and resolves when every connection is gone
   * (at most about `shutdownGraceMs` later). Idempotent; never rejects.
   */
  close(): Promise<void>;
  /** Aborted when close() starts, with an UNAVAILABLE ConnectError as its reason; handler contexts' signals follow it. */
  shutdownSignal: AbortSignal;
}

/** The HTTP/2 client connection preface (RFC 9113 §3.4). */
const H2_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");

const noop = (): void => {};

/**
 * Responses smaller than this are sent uncompressed even to a client that accepts gzip or br
 * (connect's default is 1 KiB). Executors ask for gzip by default (the TypeScript SDK's
 * transport), and their invocation batches are a few KiB to tens of KiB: compressing each one
 * (a zlib stream through the thread pool) cost the owner about 1-2% of its CPU per call of time in
 * bench/timers, and the executor as much again to inflate it, for a loopback or LAN link.
 */
const compressMinBytes = 64 * 1024;

/**
 * Starts serving gRPC, gRPC-Web and Connect on one port.
 * Resolves once the port is bound; rejects with an error naming the port when it is in use or not allowed.
 */
export async function listen(options: ListenOptions): Promise<Listener> {
  const handshakeTimeoutMs = options.handshakeTimeoutMs ?? 30_000;
  const idleTimeoutMs = options.idleTimeoutMs ?? 300_000;
  const shutdownGraceMs = options.shutdownGraceMs ?? 1_000;
  const shutdown = new AbortController();
  // connect-node links every request's signal to this one: many at once is normal, not a leak.
  setMaxListeners(0, shutdown.signal);
  let closing = false;

  const unaryRoutes = new UnaryRoutes();
  const adapter = connectNodeAdapter({
    routes: (router) => options.routes(unaryRoutes.record(router)),
    shutdownSignal: shutdown.signal,
    interceptors: options.interceptors,
    ...(options.readMaxBytes !== undefined ? { readMaxBytes: options.readMaxBytes } : {}),
    compressMinBytes,
  });
  const unary = grpcUnary({
    routes: unaryRoutes,
    interceptors: options.interceptors ?? [],
    readMaxBytes: options.readMaxBytes ?? 0xffffffff,
    shutdownSignal: shutdown.signal,
  });
  const applyCors = makeCors(options.corsOrigins ?? []);

  const handler = (req: HttpRequest, res: HttpResponse): void => {
    try {
      if (closing && req.httpVersionMajor === 1) {
        // Do not keep HTTP/1.1 connections alive while shutting down.
        res.setHeader("Connection", "close");
      }
      if (req.httpVersionMajor === 1 && req.headers.host === undefined) {
        // HTTP/1.0 may omit Host; connect-node would throw (a 500): the request is the client's mistake.
        res.statusCode = 400;
        res.end("a Host header is required");
        return;
      }
      if (options.loopbackHostsOnly && !loopbackHost(req)) {
        res.statusCode = 421;
        res.setHeader("content-type", "text/plain; charset=utf-8");
        res.end("this owner has no principals: it answers requests addressed to 127.0.0.1, localhost or [::1] only\n");
        return;
      }
      if (options.extraHttpHandler?.(req, res)) return;
      if (applyCors(req, res)) return;
      if (isGrpc(req) && req.httpVersionMajor === 2 && !unaryRoutes.knows(req.url ?? "")) {
        // gRPC answers an unknown method UNIMPLEMENTED in a trailers-only response (connect-node: a bare 404).
        const headers = {
          ":status": 200,
          "content-type": "application/grpc",
          "grpc-status": "12",
          "grpc-message": `unknown method ${req.url}`.replace(/[^\x20-\x24\x26-\x7e]/g, encodeURIComponent),
        }; // gRPC's percent-encoding
        (res as http2.Http2ServerResponse).stream.respond(headers, { endStream: true });
        return;
      }
      if (isGrpc(req)) respecGrpcMessage(res);
      adapter(req, res);
    } catch (err) {
      if (!res.headersSent) {
        res.statusCode = 500;
        res.end();
      } else {
        res.destroy(err instanceof Error ? err : undefined);
      }
    }
  };

  // All raw TCP sockets accepted, so close() can destroy stragglers.
  const sockets = new Set<net.Socket>();
  const sessions = new Set<http2.ServerHttp2Session>();
  const trackSocket = (socket: net.Socket): void => {
    socket.on("error", noop);
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  };
  const trackSession = (session: http2.ServerHttp2Session): void => {
    session.on("error", noop);
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
    let openStreams = 0;
    const onIdle = (): void => {
      if (openStreams === 0 && !session.closed && !session.destroyed) session.close();
    };
    // One listener for the session's life: setTimeout(ms, callback) would add
    // another 'timeout' listener each time it re-arms (one per finished call).
    session.on("timeout", onIdle);
    session.setTimeout(idleTimeoutMs);
    session.on("stream", (stream: http2.ServerHttp2Stream) => {
      stream.on("error", noop);
      openStreams++;
      stream.once("close", () => {
        openStreams--;
        if (openStreams === 0 && !session.destroyed) session.setTimeout(idleTimeoutMs);
      });
    });
    if (closing) session.close();
  };

  let outer: net.Server;
  const closeIdleHttp1: Array<() => void> = [];

  if (options.tls) {
    const secure = http2.createSecureServer(
      {
        cert: options.tls.cert,
        key: options.tls.key,
        allowHTTP1: true,
        ALPNProtocols: ["h2", "http/1.1"],
        handshakeTimeout: handshakeTimeoutMs,
      },
      handler,
    );
    // HTTP/1.1 fallback timeouts (only set up by Node when allowHTTP1 is true).
    // (@types/node lacks these members of Http2SecureServer.)
    const s = secure as unknown as {
      headersTimeout: number;
      connectionsCheckingInterval: number;
      closeIdleConnections(): void;
    };
    s.headersTimeout = Math.min(handshakeTimeoutMs, 60_000);
    s.connectionsCheckingInterval = checkInterval(handshakeTimeoutMs);
    secure.on("connection", trackSocket);
    secure.on("secureConnection", (tlsSocket) => tlsSocket.on("error", noop));
    // Failed handshakes (garbage, timeouts): drop quietly, without re-emitting the error.
    secure.on("tlsClientError", (_err, socket) => socket.destroy());
    secure.on("sessionError", noop);
    secure.on("session", trackSession);
    routeUnary(secure, unary);
    closeIdleHttp1.push(() => s.closeIdleConnections());
    outer = secure;
  } else {
    const h2 = http2.createServer({}, handler);
    h2.on("sessionError", noop);
    h2.on("session", trackSession);
    routeUnary(h2, unary);
    const h1 = http.createServer(
      {
        headersTimeout: handshakeTimeoutMs,
        requestTimeout: Math.max(300_000, handshakeTimeoutMs),
        connectionsCheckingInterval: checkInterval(handshakeTimeoutMs),
      },
      handler,
    );
    // http.Server only starts its connection tracking (headersTimeout, requestTimeout,
    // closeIdleConnections) on 'listening'; this one never listens itself.
    h1.emit("listening");
    closeIdleHttp1.push(() => h1.closeIdleConnections());
    outer = net.createServer((socket) => {
      trackSocket(socket);
      sniff(socket, h1, h2, handshakeTimeoutMs);
    });
    outer.once("close", () => {
      // Stops h1's connection-checking interval.
      h1.close(noop as () => void);
    });
  }

  outer.on("error", noop);
  await new Promise<void>((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void => reject(listenError(err, options.host, options.port));
    outer.once("error", onError);
    outer.listen(options.port, options.host, () => {
      outer.off("error", onError);
      resolve();
    });
  });
  const address = outer.address() as net.AddressInfo;

  let closed: Promise<void> | undefined;
  const close = (): Promise<void> => {
    if (closed) return closed;
    closing = true;
    closed = new Promise<void>((resolve) => {
      outer.close(() => resolve());
      // Streams still open end with this (clients retry UNAVAILABLE), not with an abort of no code.
      shutdown.abort(new ConnectError("the owner is stopping; call again when it is back", Code.Unavailable));
      for (const session of sessions) session.close();
      for (const closeIdle of closeIdleHttp1) closeIdle();
      // HTTP/1.1 responses still running end soon after the abort; close idle
      // keep-alive sockets again then, and destroy whatever is left after the grace.
      const again = setTimeout(() => closeIdleHttp1.forEach((f) => f()), Math.min(100, shutdownGraceMs));
      const kill = setTimeout(() => {
        for (const session of sessions) session.destroy();
        for (const socket of sockets) socket.destroy();
      }, shutdownGraceMs);
      again.unref();
      kill.unref();
      outer.once("close", () => {
        clearTimeout(again);
        clearTimeout(kill);
      });
    });
    return closed;
  };

  return { port: address.port, host: options.host, close, shutdownSignal: shutdown.signal };
}

/**
 * Sends native gRPC unary calls to `unary` and every other stream to Node's HTTP/2
 * compatibility layer (the `request` handler), which `server` already listens with.
 */
function routeUnary(server: http2.Http2Server | http2.Http2SecureServer, unary: GrpcUnary): void {
  const compat = server.listeners("stream");
  if (compat.length !== 1) throw new Error(`expected Node's one compatibility 'stream' listener, found ${compat.length}`);
  const toCompat = compat[0] as (...args: unknown[]) => void;
  server.removeListener("stream", toCompat);
  server.on("stream", (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, flags: number, rawHeaders: string[]) => {
    if (unary.takes(headers)) unary.serve(stream, headers);
    else toCompat(stream, headers, flags, rawHeaders);
  });
}

/** True for gRPC (not gRPC-Web) requests: `application/grpc`, `application/grpc+proto`, ... */
function isGrpc(req: HttpRequest): boolean {
  return /^application\/grpc(\+|;|$)/.test(req.headers["content-type"] ?? "");
}

/**
 * Re-encodes `grpc-message` the way the gRPC spec does (see encodeGrpcMessage) on
 * responses connect-node writes. Applies to headers (trailers-only) and trailers.
 */
function respecGrpcMessage(res: HttpResponse): void {
  const fix = (headers: unknown): void => {
    if (!headers || typeof headers !== "object") return;
    const h = headers as Record<string, unknown>;
    const value = h["grpc-message"];
    if (typeof value !== "string") return;
    let text: string;
    try {
      text = decodeURIComponent(value);
    } catch {
      return;
    }
    h["grpc-message"] = encodeGrpcMessage(text);
  };
  const r = res as unknown as { writeHead: (...args: unknown[]) => unknown; addTrailers: (headers: unknown) => void };
  const writeHead = r.writeHead.bind(res);
  const addTrailers = r.addTrailers.bind(res);
  r.writeHead = (...args: unknown[]) => {
    for (const arg of args) fix(arg);
    return writeHead(...args);
  };
  r.addTrailers = (headers: unknown) => {
    fix(headers);
    addTrailers(headers);
  };
}

/** Interval for Node's HTTP/1.1 connection checker: fine enough for short test timeouts. */
function checkInterval(handshakeTimeoutMs: number): number {
  return Math.max(50, Math.min(30_000, Math.floor(handshakeTimeoutMs / 2)));
}

/**
 * Reads the first bytes of a plaintext connection and hands the socket to the
 * HTTP/2 server (full preface seen) or the HTTP/1.1 server (anything else).
 * A connection that stays silent or sends only part of the preface is destroyed
 * after `timeoutMs`.
 */
function sniff(socket: net.Socket, h1: http.Server, h2: http2.Http2Server, timeoutMs: number): void {
  let seen: Buffer = Buffer.alloc(0);
  const timer = setTimeout(() => socket.destroy(), timeoutMs);
  timer.unref();
  const handOff = (server: net.Server): void => {
    clearTimeout(timer);
    socket.off("data", onData);
    socket.off("close", onClose);
    socket.pause();
    socket.unshift(seen);
    server.emit("connection", socket);
    // http.Server consumes the socket's native handle directly; the bytes
    // unshifted above only reach its parser through a 'data' event, so let the
    // stream flow once. (http2 reads socket.readableLength itself.)
    if (server === h1) socket.resume();
  };
  const onData = (chunk: Buffer): void => {
    seen = seen.length === 0 ? chunk : Buffer.concat([seen, chunk]);
    const n = Math.min(seen.length, H2_PREFACE.length);
    if (!seen.subarray(0, n).equals(H2_PREFACE.subarray(0, n))) {
      handOff(h1);
    } else if (seen.length >= H2_PREFACE.length) {
      handOff(h2);
    }
    // else: a prefix of the preface; wait for more bytes.
  };
  const onClose = (): void => clearTimeout(timer);
  socket.on("data", onData);
  socket.once("close", onClose);
}

/** Headers a browser may send: Connect's list plus Authorization. */
/** Names a request may be addressed to on an owner that answers loopback names only. */
const loopbackNames = new Set(["127.0.0.1", "localhost", "::1"]);

/** Whether the request's Host (HTTP/1.1) or :authority (HTTP/2) names a loopback address. */
function loopbackHost(req: HttpRequest): boolean {
  const authority = req.httpVersionMajor === 2 ? ((req.headers[":authority"] as string | undefined) ?? req.headers.host) : req.headers.host;
  if (authority === undefined) return false;
  const host = authority.startsWith("[") ? authority.slice(1, authority.indexOf("]")) : authority.split(":")[0];
  return loopbackNames.has(host.toLowerCase());
}

const CORS_ALLOWED_HEADERS = [...cors.allowedHeaders, "Authorization"].join(", ");
const CORS_ALLOWED_METHODS = cors.allowedMethods.join(", ");
const CORS_EXPOSED_HEADERS = cors.exposedHeaders.join(", ");

/**
 * Builds the CORS step. The returned function adds CORS headers to responses for
 * allowed origins and answers preflight requests (OPTIONS with
 * Access-Control-Request-Method) itself with 204, returning true then.
 * Disallowed origins get no CORS headers (the browser then blocks the call).
 */
function makeCors(origins: string[]): (req: HttpRequest, res: HttpResponse) => boolean {
  const any = origins.includes("*");
  const allowed = new Set(origins);
  return (req, res) => {
    const origin = req.headers.origin;
    const ok = typeof origin === "string" && (any || allowed.has(origin));
    if (ok) {
      res.setHeader("Access-Control-Allow-Origin", origin);
      res.setHeader("Vary", "Origin");
    }
    const preflight = req.method === "OPTIONS" && req.headers["access-control-request-method"] !== undefined;
    if (preflight) {
      if (ok) {
        res.setHeader("Access-Control-Allow-Methods", CORS_ALLOWED_METHODS);
        res.setHeader("Access-Control-Allow-Headers", CORS_ALLOWED_HEADERS);
        res.setHeader("Access-Control-Max-Age", "7200");
      }
      res.statusCode = 204;
      res.end();
      return true;
    }
    if (ok) res.setHeader("Access-Control-Expose-Headers", CORS_EXPOSED_HEADERS);
    return false;
  };
}

/** The bind's error in words a user acts on: a port in use or not allowed names it and the flag that changes it. */
function listenError(err: NodeJS.ErrnoException, host: string, port: number): Error {
  const named = (message: string) => Object.assign(new Error(message), { code: err.code }); // the code stays, for callers that test it
  if (err.code === "EADDRINUSE")
    return named(`port ${port} on ${host} is already in use (another owner or program listens there): stop it, or pass another --port`);
  if (err.code === "EACCES") return named(`not allowed to listen on port ${port} on ${host} (ports below 1024 need privileges): pass another --port`);
  if (err.code === "EADDRNOTAVAIL") return named(`cannot listen on ${host}: no interface of this machine has that address (--host)`);
  return err;
}
