import { createServer, type Http2Server, type ServerHttp2Session } from "node:http2";
import { createServer as createNetServer, type AddressInfo } from "node:net";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { ActionService } from "@chronolog/sdk/gen/chronolog/v1/action_pb";
import { AdminService } from "@chronolog/sdk/gen/chronolog/v1/admin_pb";
import { CollectionService } from "@chronolog/sdk/gen/chronolog/v1/collection_pb";
import { ExecutorService } from "@chronolog/sdk/gen/chronolog/v1/executor_pb";
import { LogService } from "@chronolog/sdk/gen/chronolog/v1/log_pb";
import { PluginService } from "@chronolog/sdk/gen/chronolog/v1/plugin_pb";
import { TimeService } from "@chronolog/sdk/gen/chronolog/v1/time_pb";
import { Health, HealthCheckResponseSchema, HealthCheckResponse_ServingStatus as ServingStatus } from "@chronolog/sdk/gen/grpc/health/v1/health_pb";

/** A standby owner as clients meet it (see {@link startStandby}). */
export interface Standby {
  url: string;
  /** The leader it names from now on (undefined: none known yet). */
  setLeader(url: string | undefined): void;
  /** Chronolog calls it refused so far. */
  refused(): number;
  close(): Promise<void>;
}

/**
 * An owner in standby, as far as clients can tell: every Chronolog RPC is refused with
 * UNAVAILABLE `this owner is a standby; the leader is at <url>` and metadata `chronolog-leader:
 * <url>` (or `... no leader is known yet`, without it), having done nothing; Health/Check answers
 * NOT_SERVING with `chronolog-role: standby` and `chronolog-leader`. A connect-node server over
 * HTTP/2 on a free port of 127.0.0.1.
 */
export async function startStandby(leader: string | undefined): Promise<Standby> {
  let leaderUrl = leader;
  let refusals = 0;
  const leaderHeaders = (): Record<string, string> => (leaderUrl ? { "chronolog-leader": leaderUrl } : {});
  const refuse: Interceptor = (next) => async (req) => {
    if (req.service.typeName === Health.typeName) return next(req);
    refusals++;
    const message = leaderUrl ? `this owner is a standby; the leader is at ${leaderUrl}` : "this owner is a standby; no leader is known yet";
    throw new ConnectError(message, Code.Unavailable, leaderHeaders());
  };
  const handler = connectNodeAdapter({
    interceptors: [refuse],
    routes(router) {
      for (const service of [LogService, ActionService, PluginService, CollectionService, TimeService, AdminService, ExecutorService])
        router.service(service, {});
      router.service(Health, {
        check(_req, context) {
          context.responseHeader.set("chronolog-role", "standby");
          for (const [key, value] of Object.entries(leaderHeaders())) context.responseHeader.set(key, value);
          return create(HealthCheckResponseSchema, { status: ServingStatus.NOT_SERVING });
        },
      });
    },
  });
  return { ...(await listenOnLoopback(createServer(handler))), setLeader: (url) => void (leaderUrl = url), refused: () => refusals };
}

/** Starts `server` on a free port of 127.0.0.1: its URL, and `close`, which ends its connections too. */
async function listenOnLoopback(server: Http2Server): Promise<{ url: string; close(): Promise<void> }> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const sessions = new Set<ServerHttp2Session>();
  server.on("session", (s) => {
    sessions.add(s);
    s.once("close", () => sessions.delete(s));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sessions) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A port where nothing listens (free a moment ago): connections to it are refused; or a process may listen on it ({@link freePort}). */
export function deadPort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createNetServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/** A port free a moment ago, for a process to listen on (what {@link deadPort} finds). */
export const freePort = deadPort;

/**
 * An owner that accepts every connection and stream and never answers (as one frozen while a
 * stream opened, whose connection still answers HTTP/2 pings): a connect-node-free HTTP/2 server on
 * a free port of 127.0.0.1. Its URL and `close`.
 */
export async function startSilentOwner(): Promise<{ url: string; streams(): number; close(): Promise<void> }> {
  const server: Http2Server = createServer();
  let streams = 0;
  server.on("stream", () => void streams++); // neither headers nor data, ever
  return { ...(await listenOnLoopback(server)), streams: () => streams };
}
