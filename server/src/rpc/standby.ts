import type { DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter } from "@connectrpc/connect";
import { registerHealth, ServingStatus } from "./health.js";
import { registerReflection } from "./reflection.js";

/** The metadata key naming the leader's advertised URL, on a standby's refusals and on health answers. */
export const leaderHeader = "chronolog-leader";
/** The metadata key saying whether the owner that answered leads (`leader`) or waits (`standby`). */
export const roleHeader = "chronolog-role";

/** The refusal of a call made to a standby: UNAVAILABLE naming the leader, so clients go there. */
export function standbyRefusal(leaderUrl: string | undefined): ConnectError {
  const metadata = new Headers({ [roleHeader]: "standby" });
  if (leaderUrl) metadata.set(leaderHeader, leaderUrl);
  return new ConnectError(leaderUrl ? `this owner is a standby; the leader is at ${leaderUrl}` : "this owner is a standby; no leader is known yet", Code.Unavailable, metadata);
}

/**
 * The routes of a standby owner: every method of `services` refuses with {@link standbyRefusal}
 * (nothing of such a call is done), health answers NOT_SERVING with the role and the leader's URL
 * in its headers, and reflection lists the services as the leader does.
 */
export function standbyRoutes(services: DescService[], leaderUrl: () => string | undefined): (router: ConnectRouter) => void {
  return (router) => {
    for (const service of services) {
      const refuse = () => {
        throw standbyRefusal(leaderUrl());
      };
      const refuseStream = async function* (): AsyncGenerator<never> {
        refuse();
      };
      const impl = Object.fromEntries(service.methods.map((method) => [method.localName, method.methodKind === "unary" || method.methodKind === "client_streaming" ? refuse : refuseStream]));
      router.service(service, impl as unknown as Parameters<ConnectRouter["service"]>[1]);
    }
    registerReflection(router, services);
    const health = registerHealth(router, services.map((s) => s.typeName), () => roleHeaders("standby", leaderUrl()));
    health.setStatus("", ServingStatus.NOT_SERVING);
    for (const service of services) health.setStatus(service.typeName, ServingStatus.NOT_SERVING);
  };
}

/** The headers health answers carry: the owner's role, and the leader's URL when known. */
export function roleHeaders(role: "leader" | "standby", leaderUrl: string | undefined): Record<string, string> {
  return leaderUrl ? { [roleHeader]: role, [leaderHeader]: leaderUrl } : { [roleHeader]: role };
}
