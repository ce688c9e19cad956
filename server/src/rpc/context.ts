import { createContextKey, type HandlerContext } from "@connectrpc/connect";
import { localAdmin, type Principal } from "../auth/principal.js";

/** The caller's principal, set by the auth interceptor for every request. */
export const principalKey = createContextKey<Principal>(localAdmin, { description: "chronolog principal" });

/** The principal of the request being handled. */
export function principalOf(ctx: HandlerContext): Principal {
  return ctx.values.get(principalKey);
}
