import type { DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter, type Interceptor } from "@connectrpc/connect";
import { registerHealth, ServingStatus } from "./health.js";
import { registerReflection } from "./reflection.js";

/** The metadata key naming the leader's advertised URL, on a standby's refusals and answers, and on health answers. */
export const leaderHeader = "chronolog-leader";
/** The metadata key saying whether the owner that answered leads (`leader`) or waits (`standby`). */
export const roleHeader = "chronolog-role";

/** The refusal of a call made to a standby: UNAVAILABLE naming the leader, so clients go there. */
export function standbyRefusal(leaderUrl: string | undefined): ConnectError {
  const metadata = new Headers({ [roleHeader]: "standby" });
  if (leaderUrl) metadata.set(leaderHeader, leaderUrl);
  return new ConnectError(
    leaderUrl ? `this owner is a standby; the leader is at ${leaderUrl}` : "this owner is a standby; no leader is known yet",
    Code.Unavailable,
    metadata,
  );
}

/** A handler of a service implementation, called with its request and context. */
// biome-ignore lint/suspicious/noExplicitAny: any handler of any service
export type Handler = (...args: any[]) => any;

/** What a standby serves: the reads it answers itself, and whom it names for the rest. */
export interface StandbyServing {
  services: DescService[];
  /**
   * The read handlers to call now, by service type name and method (local name, e.g. `readLog`):
   * asked at every call, so the view behind them may change (a connection made again). The
   * methods of the first answer are the ones served; every other method is refused.
   */
  reads(): Record<string, Record<string, Handler>>;
  leaderUrl(): string | undefined;
  /**
   * Whether `error`, thrown by a read, means this standby cannot read now (its connection to
   * the database is gone): the call is then refused as any write is, and the client goes to the leader.
   */
  unreadable(error: unknown): boolean;
}

/**
 * The routes of a standby owner: the reads of `serving` are answered from its own view of the
 * store, every other method refuses with {@link standbyRefusal} (nothing of such a call is done),
 * health answers NOT_SERVING (it takes no writes) with the role and the leader's URL in its
 * headers, and reflection lists the services as the leader does.
 */
export function standbyRoutes(serving: StandbyServing): (router: ConnectRouter) => void {
  const served = servedMethods(serving);
  return (router) => {
    for (const service of serving.services) {
      const refuse = () => {
        throw standbyRefusal(serving.leaderUrl());
      };
      // biome-ignore lint/correctness/useYield: a refused stream ends before its first message
      const refuseStream = async function* (): AsyncGenerator<never> {
        refuse();
      };
      const impl: Record<string, Handler> = {};
      for (const method of service.methods) {
        const streams = method.methodKind === "server_streaming" || method.methodKind === "bidi_streaming";
        if (!served.has(`${service.typeName}/${method.localName}`)) impl[method.localName] = streams ? refuseStream : refuse;
        else impl[method.localName] = streams ? readStream(serving, service.typeName, method.localName) : read(serving, service.typeName, method.localName);
      }
      router.service(service, impl as unknown as Parameters<ConnectRouter["service"]>[1]);
    }
    registerReflection(router, serving.services);
    const health = registerHealth(
      router,
      serving.services.map((s) => s.typeName),
      () => roleHeaders("standby", serving.leaderUrl()),
    );
    health.setStatus("", ServingStatus.NOT_SERVING);
    for (const service of serving.services) health.setStatus(service.typeName, ServingStatus.NOT_SERVING);
  };
}

/**
 * A standby's interceptor, before the principal's check: a call it does not serve is refused at
 * once, whoever makes it (as a standby always did); the answers of those it serves carry its
 * role and the leader's URL.
 */
export function standbyInterceptor(serving: StandbyServing): Interceptor {
  const served = servedMethods(serving);
  return (next) => async (req) => {
    const ours = req.service.typeName.startsWith("chronolog.");
    if (ours && !served.has(`${req.service.typeName}/${req.method.localName}`)) throw standbyRefusal(serving.leaderUrl());
    const res = await next(req);
    if (ours) for (const [key, value] of Object.entries(roleHeaders("standby", serving.leaderUrl()))) res.header.set(key, value);
    return res;
  };
}

/** The headers health answers carry: the owner's role, and the leader's URL when known. */
export function roleHeaders(role: "leader" | "standby", leaderUrl: string | undefined): Record<string, string> {
  return leaderUrl ? { [roleHeader]: role, [leaderHeader]: leaderUrl } : { [roleHeader]: role };
}

/** `service/method` of every read `serving` answers. */
function servedMethods(serving: StandbyServing): Set<string> {
  return new Set(Object.entries(serving.reads()).flatMap(([service, handlers]) => Object.keys(handlers).map((method) => `${service}/${method}`)));
}

/** A unary read, answered by the handler `serving` names at the call. */
function read(serving: StandbyServing, service: string, method: string): Handler {
  return async (req: unknown, ctx: unknown) => {
    try {
      return await serving.reads()[service][method](req, ctx);
    } catch (e) {
      throw serving.unreadable(e) ? standbyRefusal(serving.leaderUrl()) : e;
    }
  };
}

/** A streaming read (Watch), likewise; it ends with the standby's refusal once its view cannot read. */
function readStream(serving: StandbyServing, service: string, method: string): Handler {
  return async function* (req: unknown, ctx: unknown) {
    try {
      yield* serving.reads()[service][method](req, ctx) as AsyncIterable<unknown>;
    } catch (e) {
      throw serving.unreadable(e) ? standbyRefusal(serving.leaderUrl()) : e;
    }
  };
}
