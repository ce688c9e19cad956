import type { DescService } from "@bufbuild/protobuf";
import type { ConnectRouter } from "@connectrpc/connect";
import { fail } from "../errors.js";

/**
 * Registers every method of `service` not in `impl` as UNIMPLEMENTED, with a
 * message that names the work still to come, so the whole v1 API is visible
 * (reflection lists it) before every part is built.
 */
export function registerWithPending(router: ConnectRouter, service: DescService, impl: Record<string, unknown>, pending: string): void {
  const full: Record<string, unknown> = { ...impl };
  for (const method of service.methods) {
    if (full[method.localName]) continue;
    const message = `${service.typeName}/${method.name} is not implemented yet (${pending})`;
    full[method.localName] =
      method.methodKind === "unary" || method.methodKind === "client_streaming"
        ? () => fail("unimplemented", message)
        : // eslint-disable-next-line require-yield
          async function* () {
            fail("unimplemented", message);
          };
  }
  router.service(service, full as never);
}
