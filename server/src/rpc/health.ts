// gRPC health checking (grpc.health.v1.Health): Check and Watch.

import { Code, ConnectError, type ConnectRouter } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import {
  Health,
  HealthCheckResponseSchema,
  HealthCheckResponse_ServingStatus as ServingStatus,
  type HealthCheckResponse,
} from "@chronolog/sdk/gen/grpc/health/v1/health_pb";

export { HealthCheckResponse_ServingStatus as ServingStatus } from "@chronolog/sdk/gen/grpc/health/v1/health_pb";

/** Handle returned by {@link registerHealth} to change serving statuses. */
export interface HealthStatus {
  /**
   * Sets the status of `service` ("" is the whole server) and notifies its
   * watchers when it changed. An unknown service name becomes known.
   */
  setStatus(service: string, status: ServingStatus): void;
}

/**
 * Registers grpc.health.v1.Health on the router.
 * Known services are "" (the server) and `serviceNames` (fully-qualified, e.g.
 * "chronolog.v1.LogService"), all SERVING initially.
 * Check: unknown service → ConnectError NOT_FOUND.
 * Watch: sends the current status (SERVICE_UNKNOWN for an unknown service, as the
 * protocol asks), then every change, until the client leaves or the server shuts down
 * (the handler signal follows the listener's shutdownSignal); then the stream ends OK, or,
 * in the owner, with the shutdown's UNAVAILABLE (rpc/stream-release.ts). `headers`: response
 * headers every answer carries (an owner's role, rpc/standby.ts).
 */
export function registerHealth(router: ConnectRouter, serviceNames: string[], headers?: () => Record<string, string>): HealthStatus {
  const statuses = new Map<string, ServingStatus>();
  statuses.set("", ServingStatus.SERVING);
  for (const name of serviceNames) statuses.set(name, ServingStatus.SERVING);
  const watchers = new Map<string, Set<() => void>>();

  router.service(Health, {
    check(req, context) {
      for (const [key, value] of Object.entries(headers?.() ?? {})) context.responseHeader.set(key, value);
      const status = statuses.get(req.service);
      if (status === undefined) {
        throw new ConnectError(`unknown service ${JSON.stringify(req.service)}`, Code.NotFound);
      }
      return create(HealthCheckResponseSchema, { status });
    },
    async *watch(req, context): AsyncGenerator<HealthCheckResponse> {
      const { signal } = context;
      for (const [key, value] of Object.entries(headers?.() ?? {})) context.responseHeader.set(key, value);
      let wake: (() => void) | undefined;
      const notify = (): void => wake?.();
      let set = watchers.get(req.service);
      if (!set) watchers.set(req.service, (set = new Set()));
      set.add(notify);
      const onAbort = (): void => wake?.();
      signal.addEventListener("abort", onAbort);
      try {
        let last: ServingStatus | undefined;
        while (!signal.aborted) {
          const status = statuses.get(req.service) ?? ServingStatus.SERVICE_UNKNOWN;
          if (status !== last) {
            last = status;
            yield create(HealthCheckResponseSchema, { status });
            continue;
          }
          await new Promise<void>((resolve) => (wake = resolve));
          wake = undefined;
        }
      } finally {
        signal.removeEventListener("abort", onAbort);
        set.delete(notify);
        if (set.size === 0 && watchers.get(req.service) === set) watchers.delete(req.service);
      }
    },
  });

  return {
    setStatus(service, status) {
      if (statuses.get(service) === status) return;
      statuses.set(service, status);
      for (const notify of watchers.get(service) ?? []) notify();
    },
  };
}
