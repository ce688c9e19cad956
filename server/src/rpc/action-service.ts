import type { JsonObject } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import type { ActionService } from "@chronolog/sdk/gen/chronolog/v1/action_pb";
import type { ActionCalls } from "../actions/index.js";
import { fail } from "../errors.js";
import { principalOf } from "./context.js";
import { actorFromProto, causeFromProto, dataFromProto } from "./convert.js";

/**
 * ActionService: translation only; the rules live in actions/. The
 * caller's deadline (`grpc-timeout` / `connect-timeout-ms`) and cancellation
 * are handed over as its context, so they bound the wait for an executor and
 * reach the executor as CancelInvocation.
 */
export function actionService(calls: ActionCalls): ServiceImpl<typeof ActionService> {
  return {
    async callAction(req, ctx) {
      if (req.action === "") fail("bad_request", "action is required", [{ field: "action", description: "required" }]);
      const result = await calls.call(
        {
          action: req.action,
          input: dataFromProto(req.input, "input"),
          callId: req.callId,
          cause: causeFromProto(req.cause),
          actor: actorFromProto(req.actor),
        },
        principalOf(ctx),
        {
          signal: ctx.signal,
          remainingMs: () => {
            const ms = ctx.timeoutMs(); // fractional for a grpc-timeout in µs or ns (grpcurl's -max-time, grpc-go)
            return ms === undefined ? undefined : Math.floor(ms);
          },
        },
      );
      return { callId: result.callId, output: result.output as JsonObject, fromLog: result.fromLog };
    },
  };
}
