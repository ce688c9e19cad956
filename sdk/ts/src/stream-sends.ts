import { create, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { ActionResultSchema, Outcome, type AckSchema, type SubscribeRequestSchema, type Welcome } from "./gen/chronolog/v1/executor_pb.js";
import { TurnBatch, type BatchLimits } from "./turn-batch.js";

type Request = MessageInitShape<typeof SubscribeRequestSchema>;
type AckInit = MessageInitShape<typeof AckSchema>;
type ActionResultInit = MessageInitShape<typeof ActionResultSchema>;

/** The owner's limit when its welcome does not say (older owners): 4 MiB. */
const defaultMaxMessageBytes = 4 * 1024 * 1024;
/** Most acks or results in one batch message. */
const maxBatchItems = 256;
/**
 * A batch's byte budget, as a fraction of the owner's limit: sizes are estimated from JSON, and a
 * Struct can take several times its JSON's bytes (a number is 9 bytes, its JSON 1).
 */
const batchShareOfLimit = 1 / 8;

/** What work on one stream sends: any request, and acks and action results, batched per event-loop turn (X2). */
export interface StreamSends {
  push: (r: Request) => void;
  ack(ack: AckInit): void;
  /** Queues an action's result; one too large for the owner to read is replaced by a terminal error saying so. */
  result(result: ActionResultInit): void;
  /** Takes the owner's welcome: whether it reads ActionResultBatch, and its largest message. */
  welcome(welcome: Welcome): void;
}

/**
 * The sends of a stream whose requests go to `push`: acks that end in one turn go out as one
 * AckBatch, results as one ActionResultBatch when the owner's welcome says it reads them (one
 * ActionResult each otherwise), every batch within a share of the owner's largest message.
 */
export function streamSends(push: (r: Request) => void): StreamSends {
  let resultBatches = false;
  let maxMessageBytes = defaultMaxMessageBytes;
  const limits = (batches: boolean): BatchLimits => ({ maxItems: batches ? maxBatchItems : 1, maxBytes: maxMessageBytes * batchShareOfLimit });
  const acks = new TurnBatch<AckInit>(
    (items) => push(items.length === 1 ? { message: { case: "ack", value: items[0] } } : { message: { case: "acks", value: { acks: items } } }),
    (a) => 16 + (a.deliveryId?.length ?? 0) + (a.error?.length ?? 0),
    () => limits(true),
  );
  const results = new TurnBatch<ActionResultInit>(
    (items) => push(items.length === 1 ? { message: { case: "actionResult", value: items[0] } } : { message: { case: "actionResults", value: { results: items } } }),
    estimatedSize,
    () => limits(resultBatches),
  );
  return {
    push,
    ack: (a) => acks.push(a),
    result: (r) => results.push(fitting(r, maxMessageBytes)),
    welcome(w) {
      resultBatches = w.actionResultBatches;
      maxMessageBytes = w.maxMessageBytes || defaultMaxMessageBytes;
    },
  };
}

/** About how many bytes a result takes on the wire: its output as JSON, its error and its id. */
function estimatedSize(r: ActionResultInit): number {
  return 32 + (r.invocationId?.length ?? 0) + (r.error?.length ?? 0) + (r.output ? JSON.stringify(r.output).length : 0);
}

/**
 * `r`, or, when it does not fit in one message of `maxBytes` (measured by encoding it when its
 * estimate comes near), a TERMINAL_ERROR result saying so: the owner would end the stream on it,
 * and the call would run again and again.
 */
function fitting(r: ActionResultInit, maxBytes: number): ActionResultInit {
  if (estimatedSize(r) <= maxBytes * batchShareOfLimit) return r;
  const bytes = toBinary(ActionResultSchema, create(ActionResultSchema, r)).length;
  if (bytes + 16 <= maxBytes) return r;
  const error = `the action's output is ${bytes} bytes encoded, more than the owner reads in one message (${maxBytes} bytes): not sent`;
  return { invocationId: r.invocationId, outcome: Outcome.TERMINAL_ERROR, error, startedLateMs: r.startedLateMs };
}
