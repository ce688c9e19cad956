// How a client or an executor reaches its owners: the connection options, and a connect-node
// transport that sends each call to the leader among them with the bearer token attached.

import { traceInterceptor } from "./tracing.js";
import type { Interceptor, Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { choiceOf, countOf } from "./options.js";
import { defaultFailoverTimeoutMs, followingTransport, Owners, ownerUrlsOf, type ReadsFrom } from "./owners.js";
import type { PublisherOptions } from "./publisher.js";
import { OwnerSessions } from "./sessions.js";

export type { ReadsFrom } from "./owners.js";

/** How to reach an owner. */
export interface ClientOptions {
  /**
   * Base URL, e.g. `http://127.0.0.1:50051` or `https://owner.example:50051`; or several owners
   * (one leads, the others are standbys), as a comma-separated list or an array. Calls go to the
   * leader: a standby's refusal (UNAVAILABLE with `chronolog-leader: <url>`) is followed to the URL
   * it names, and an owner that cannot be reached to the next one (see {@link failoverTimeoutMs}).
   */
  url: string | string[];
  /**
   * How long (ms, default 15,000) a call that nothing was done of (a standby refused it, or no
   * owner could be reached) is made again at the leader or the next owner, with short pauses,
   * before its error is the caller's; a watch broken with several owners is opened again as long
   * (from after the last event it gave). A call the owner may have run when it was lost (the
   * connection dropped, the owner is stopping) is not made again: its error is the caller's, and
   * the next call goes to the next owner. 0: never again.
   */
  failoverTimeoutMs?: number | undefined;
  /**
   * Where reads go (ReadLog, GetEvent, Watch, GetDocument, FindDocuments, ListTimers, GetTimer,
   * ListProcessors, ListFailedDeliveries, ListPlugins, GetPlugin): `leader` (default) with every
   * other call; `any`: to the owners in the order of `url`, a standby included: the first that
   * answers, and the next when one cannot be reached (list the nearest first). A standby serves
   * what is committed, a moment behind the leader (a read just after a write may not see it yet);
   * a read it does not serve (ListExecutors, a collection kept in memory) goes to the leader.
   */
  reads?: ReadsFrom | undefined;
  /** Bearer token of a principal; omit for an owner without a config. */
  token?: string | undefined;
  /** Wire protocol (default `grpc`). `connect` and `grpc-web` also work over HTTP/1.1. */
  protocol?: "grpc" | "connect" | "grpc-web" | undefined;
  /** HTTP version (default `2`; `grpc` needs 2). */
  httpVersion?: "1.1" | "2" | undefined;
  /** Extra PEM CA for TLS owners with a private certificate (a string, or its bytes: e.g. a Buffer from readFileSync). */
  ca?: string | Uint8Array | undefined;
  /**
   * How {@link ChronologClient.emit} sends (default `stream` over HTTP/2, `unary` over HTTP/1.1 or
   * gRPC-Web): `stream` pipelines emits on one Publish stream (see {@link Publisher}); `unary`
   * sends one Emit call each.
   */
  emitVia?: "stream" | "unary" | undefined;
  /** How the Publish stream behind `emit` behaves (idle close, how long it is re-opened after a break). */
  publisher?: PublisherOptions | undefined;
}

/**
 * A connect-node transport for the owners of `options.url`, with the bearer token attached: each
 * call goes to the leader among them (see {@link ClientOptions.url} and `failoverTimeoutMs`).
 */
export function createTransport(options: ClientOptions): Transport {
  const urls = ownerUrlsOf(options?.url);
  const failoverTimeoutMs =
    options.failoverTimeoutMs === undefined ? defaultFailoverTimeoutMs : Number(countOf(options.failoverTimeoutMs, "failoverTimeoutMs", "ms"));
  const interceptors: Interceptor[] = [...(options.token ? [bearer(options.token)] : []), traceInterceptor()];
  // Node's default session memory (10 MB) makes a request over ~10 MB kill the whole HTTP/2
  // session (ENHANCE_YOUR_CALM) and every later call on it; with room, the owner answers
  // RESOURCE_EXHAUSTED and the connection lives on.
  const nodeOptions = { maxSessionMemory: 256, ...(options.ca ? { ca: typeof options.ca === "string" ? options.ca : Buffer.from(options.ca) } : {}) };
  // An HTTP/2 connection waiting on a call or stream pings the owner after 1.5 s without data and
  // is closed (UNAVAILABLE: the next owner is tried) when the ping is not answered within 1.5 s: an
  // owner that is frozen (paused, its machine hung, cut off) keeps its TCP connections open, and
  // without pings a call to it would wait forever while a standby has taken over. Three seconds of
  // silence is the default lease: the client leaves a frozen leader about when a standby takes over.
  const pings = { pingIntervalMs: 1_500, pingTimeoutMs: 1_500 };
  const common = { interceptors, nodeOptions, ...pings };
  const protocol = options.protocol ?? "grpc";
  const httpVersion = protocol === "grpc" ? "2" : (options.httpVersion ?? "2");
  const make = (baseUrl: string): Transport => {
    const sessions = httpVersion === "2" ? { sessionManager: new OwnerSessions(baseUrl, pings, nodeOptions) } : {};
    if (protocol === "grpc") return createGrpcTransport({ ...common, ...sessions, baseUrl });
    const over = { ...common, ...sessions, baseUrl, httpVersion };
    return protocol === "connect" ? createConnectTransport(over) : createGrpcWebTransport(over);
  };
  return followingTransport(
    new Owners(
      urls,
      make,
      failoverTimeoutMs,
      options.reads === undefined ? "leader" : choiceOf(options.reads, "reads", { leader: "leader", any: "any" } as const),
    ),
  );
}

function bearer(token: string): Interceptor {
  return (next) => (req) => {
    req.header.set("authorization", `Bearer ${token}`);
    return next(req);
  };
}
