import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import type { ExecutorService, SubscribeRequest, SubscribeResponseSchema } from "@chronolog/sdk/gen/chronolog/v1/executor_pb";
import { fail } from "../errors.js";
import type { ExecutorHub } from "../executors/hub.js";
import { ownerMessages } from "../executors/session.js";
import type { Logger } from "../logger.js";
import { principalOf } from "./context.js";

/** What a stream open while the owner stops ends with. */
const ownerStopping = "the owner is stopping; call again when it is back";

/** `promise`, or the abort's reason once `signal` aborts first (a hello that never comes holds nothing). */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (e: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(e);
      },
    );
  });
}

/**
 * ExecutorService.Subscribe: the first message must be a hello; the
 * owner answers welcome, then streams deliveries while a reader routes the
 * executor's acks, progress, credits and heartbeats to the hub. The session
 * ends when either side ends the stream; a message the owner cannot read (over
 * `limits.max_message_bytes`: RESOURCE_EXHAUSTED) ends it with that error, the owner
 * stopping with UNAVAILABLE.
 */
export function executorService(hub: ExecutorHub, logger: Logger): ServiceImpl<typeof ExecutorService> {
  return {
    async *subscribe(requests, ctx): AsyncGenerator<MessageInitShape<typeof SubscribeResponseSchema>> {
      const iterator = requests[Symbol.asyncIterator]();
      const first = await untilAborted(iterator.next(), ctx.signal);
      if (first.done || first.value.message.case !== "hello")
        fail("bad_request", "the first Subscribe message must be a hello", [{ field: "hello", description: "required first" }]);
      const session = await hub.open(first.value.message.value, principalOf(ctx));
      let broken: unknown;
      const reader = (async () => {
        try {
          for (let next = await iterator.next(); !next.done; next = await iterator.next()) hub.handle(session, next.value as SubscribeRequest);
          hub.close(session, "executor ended the stream");
        } catch (e) {
          // A message over the owner's limit (RESOURCE_EXHAUSTED) or a malformed one: the work it answered runs again, so say why.
          if (!ctx.signal.aborted) {
            broken = e;
            logger.warn(
              { err: e, session: session.id, executor: session.hosting.executor },
              "executor stream broken by a message the owner could not read; its work in flight runs again",
            );
          }
          hub.close(session, "stream broken");
        }
      })();
      try {
        yield* session.outbox.drain(ctx.signal, (queued) => ownerMessages(queued, session.hosting), hub.trust);
      } finally {
        hub.close(session, ctx.signal.aborted ? "stream cancelled" : "stream closed");
        void reader;
      }
      if (broken) throw broken; // the executor hears the reason (e.g. RESOURCE_EXHAUSTED) instead of a clean end
      // Ended by the owner stopping: UNAVAILABLE, which executors retry (a clean end would read as the owner's choice).
      if (hub.stopping) fail("unavailable", ownerStopping);
    },
  };
}
