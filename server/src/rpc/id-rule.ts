import { isMessage } from "@bufbuild/protobuf";
import type { Interceptor } from "@connectrpc/connect";
import { EmitBatchRequestSchema, EmitRequestSchema } from "../../../sdk/ts/src/gen/chronolog/v1/log_pb.js";
import { checkId } from "../log/ids.js";

/**
 * The id rule ({@link checkId}: at most 256 code points, no control characters, not only
 * whitespace) for the ids of Emit and EmitBatch requests, before their handler runs. An empty
 * id stays allowed (the owner makes or derives one). Runs inside the error interceptor, so a
 * bad id is INVALID_ARGUMENT naming `id` (`events[i].id` in a batch of several, as the Emitter names fields) with a BadRequest detail.
 *
 * The other ids meet the same rule where their requests are translated (call ids in
 * actions/calls.ts, timer ids in rpc/time-service.ts, document ids in collections/ops.ts);
 * this check belongs with them in the Emitter's own checks (log/emit.ts), and moves there
 * when that file is next changed.
 */
export function emitIdInterceptor(): Interceptor {
  return (next) => async (req) => {
    if (!req.stream) {
      const message = req.message;
      if (isMessage(message, EmitRequestSchema)) {
        if (message.id !== "") checkId(message.id, "id");
      } else if (isMessage(message, EmitBatchRequestSchema)) {
        message.events.forEach((e, i) => e.id !== "" && checkId(e.id, message.events.length > 1 ? `events[${i}].id` : "id"));
      }
    }
    return next(req);
  };
}
