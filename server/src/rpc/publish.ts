import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { HandlerContext } from "@connectrpc/connect";
import type { PublishAckSchema, PublishRequest, PublishResponseSchema } from "@chronolog/sdk/gen/chronolog/v1/log_pb";
import { fail } from "../errors.js";
import type { Emitter } from "../log/emit.js";
import { PublishPipeline, type PublishOutcome } from "../log/publish.js";
import type { Logger } from "../logger.js";
import { principalOf } from "./context.js";
import { emitInput } from "./emit-input.js";
import { statusMessage, statusViolations } from "./interceptors.js";

type Response = MessageInitShape<typeof PublishResponseSchema>;

/**
 * LogService.Publish: a welcome granting `window`, then acks of the emits in request order (see
 * {@link PublishPipeline}). Each emit is checked and written as one Emit of one event (a message's
 * emits share one unit of the group commit, see Emitter.emitEach), so a refused one gets its own
 * error and the stream goes on. An error the owner did not mean
 * (INTERNAL) is logged and answered in the emit's ack like any other.
 */
export async function* publish(
  emitter: Emitter,
  window: number,
  logger: Logger | undefined,
  requests: AsyncIterable<PublishRequest>,
  ctx: HandlerContext,
): AsyncGenerator<Response> {
  const principal = principalOf(ctx);
  const pipeline = new PublishPipeline<bigint>(window);
  yield { message: { case: "welcome", value: { window } } };
  const read = async () => {
    for await (const request of requests) {
      if (request.emits.length > window)
        fail("too_large", `a Publish message holds at most the window's ${window} emits, got ${request.emits.length}`, [
          { field: "emits", description: `at most ${window}` },
        ]);
      const inputs = request.emits.map((emit) => {
        try {
          if (!emit.event) fail("bad_request", "event is required", [{ field: "event", description: "required" }]);
          return emitInput(emit.event);
        } catch (error) {
          return error as Error;
        }
      });
      // What each emit's data weighs: its JSON text as sent (the SDKs), or the Struct's as JSON.
      const bytes = request.emits.map((emit) => emit.event?.dataJson.byteLength || (emit.event?.data ? JSON.stringify(emit.event.data).length : 0));
      if (inputs.length > 0)
        pipeline.addAll(
          request.emits.map((emit) => emit.ref),
          emitter.emitEach(inputs, principal),
          bytes,
        );
      await pipeline.room();
    }
    pipeline.end();
  };
  read().catch((error) => pipeline.fail(error));
  try {
    for await (const outcomes of pipeline.acks(ctx.signal)) yield { message: { case: "acks", value: { acks: outcomes.map((o) => ackOf(o, logger)) } } };
    // Ended by the client going away or the deadline: say so (as Watch does) rather than end as OK.
    ctx.signal.throwIfAborted();
  } finally {
    pipeline.end();
  }
}

function ackOf(outcome: PublishOutcome<bigint>, logger: Logger | undefined): MessageInitShape<typeof PublishAckSchema> {
  if (outcome.result) {
    const { event, existing, streamPosition } = outcome.result;
    return {
      ref: outcome.ref,
      seq: BigInt(event.seq),
      id: event.id,
      existing,
      at: timestampFromMs(event.at),
      actor: event.actor ?? undefined,
      streamPosition: streamPosition === undefined ? undefined : BigInt(streamPosition),
    };
  }
  const error = outcome.error!;
  if (error.kind === "internal")
    logger?.error({ err: (error as { cause?: unknown }).cause ?? error, procedure: "chronolog.v1.LogService/Publish" }, "internal error");
  return {
    ref: outcome.ref,
    // Cut as a call's status is: an ack too large for the client to read would end its stream.
    error: {
      code: error.code,
      message: statusMessage(error.message),
      reason: error.kind.toUpperCase(),
      metadata: error.metadata,
      fieldViolations: statusViolations(error.violations),
    },
  };
}
