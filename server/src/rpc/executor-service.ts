import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { ExecutorService, type SubscribeRequest, type SubscribeResponseSchema } from "../../../sdk/ts/src/gen/chronolog/v1/executor_pb.js";
import { fail } from "../errors.js";
import type { ExecutorHub } from "../executors/hub.js";
import { written } from "../executors/session.js";
import type { Logger } from "../logger.js";
import { principalOf } from "./context.js";

/**
 * ExecutorService.Subscribe (X1): the first message must be a hello; the
 * owner answers welcome, then streams deliveries while a reader routes the
 * executor's acks, progress, credits and heartbeats to the hub. The session
 * ends when either side ends the stream.
 */
export function executorService(hub: ExecutorHub, logger: Logger): ServiceImpl<typeof ExecutorService> {
  return {
    async *subscribe(requests, ctx): AsyncGenerator<MessageInitShape<typeof SubscribeResponseSchema>> {
      const iterator = requests[Symbol.asyncIterator]();
      const first = await iterator.next();
      if (first.done || first.value.message.case !== "hello") fail("bad_request", "the first Subscribe message must be a hello", [{ field: "hello", description: "required first" }]);
      const session = await hub.open(first.value.message.value, principalOf(ctx));
      const reader = (async () => {
        try {
          for (let next = await iterator.next(); !next.done; next = await iterator.next()) hub.handle(session, next.value as SubscribeRequest);
          hub.close(session, "executor ended the stream");
        } catch (e) {
          logger.debug({ err: e, session: session.id }, "executor stream broke");
          hub.close(session, "stream broken");
        }
      })();
      try {
        yield* session.outbox.drain(ctx.signal, (queued) => written(queued, session.hosting.batches));
      } finally {
        hub.close(session, ctx.signal.aborted ? "stream cancelled" : "stream closed");
        void reader;
      }
    },
  };
}
