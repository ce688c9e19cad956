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

/** What work on one stream sends: any request, and acks and action results, batched per event-loop turn. */
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
    (items) =>
      push(items.length === 1 ? { message: { case: "actionResult", value: items[0] } } : { message: { case: "actionResults", value: { results: items } } }),
    estimatedSize,
    () => limits(resultBatches),
  );
  return {
    push,
    ack: (a) => acks.push({ ...a, error: cutToFit(a.error ?? "", maxMessageBytes) }),
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
 * `error`, or its start when its UTF-8 could take more than a batch's share of the owner's
 * largest message (`maxBytes`), saying how long it was: a message the owner cannot read ends the
 * stream, and the error would be lost with it.
 */
export function cutToFit(error: string, maxBytes: number): string {
  const room = Math.floor((maxBytes * batchShareOfLimit) / 3); // UTF-16 units: at most 3 UTF-8 bytes each
  return error.length <= room ? error : `${error.slice(0, room)}… (cut from ${error.length} characters: the owner reads at most ${maxBytes} bytes a message)`;
}

/**
 * `r` with its error cut to fit ({@link cutToFit}), or, when its output does not fit in one
 * message of `maxBytes` (measured by encoding it when its estimate comes near), a TERMINAL_ERROR
 * result saying so: the owner would end the stream on it, and the call would run again and again.
 */
function fitting(r: ActionResultInit, maxBytes: number): ActionResultInit {
  const result = r.error ? { ...r, error: cutToFit(r.error, maxBytes) } : r;
  if (estimatedSize(result) <= maxBytes * batchShareOfLimit) return result;
  const bytes = toBinary(ActionResultSchema, create(ActionResultSchema, result)).length;
  if (bytes + 16 <= maxBytes) return result;
  const error = `the action's output is ${bytes} bytes encoded, more than the owner reads in one message (${maxBytes} bytes): not sent`;
  return { invocationId: r.invocationId, outcome: Outcome.TERMINAL_ERROR, error, startedLateMs: r.startedLateMs };
}
