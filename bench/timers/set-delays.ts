// Sets delays of action `timers.fire` over gRPC (@grpc/grpc-js): one unary Delay call each, or
// DelayBatch calls of many; shared by bench/timers and bench/compare.
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import * as grpc from "@grpc/grpc-js";
import { DelayBatchRequestSchema, DelayBatchResponseSchema, DelayRequestSchema, DelayResponseSchema } from "@chronolog/sdk/gen/chronolog/v1/time_pb";

/**
 * Sets delays [from, to) with `inFlight` (default 256) concurrent unary Delay calls over gRPC; dueOf(i) in ms since
 * the epoch, also given as the call's input `due` (with `i`). The client is @grpc/grpc-js with hand-encoded requests and decoded answers (as bench/emit's
 * generator): the SDK's connect-node client costs ~1 ms of CPU per call, which on 2 cores would
 * measure the client, not the owner.
 */
export async function setDelays(url: string, from: number, to: number, dueOf: (i: number) => number, ids?: Map<string, number>, inFlight = 256): Promise<void> {
  const client = new grpc.Client(new URL(url).host, grpc.credentials.createInsecure());
  const identity = (b: Buffer) => b;
  const delay = (i: number, due: number) =>
    new Promise<string>((resolve, reject) => {
      const request = delayRequest(i, due);
      client.makeUnaryRequest("/chronolog.v1.TimeService/Delay", identity, identity, Buffer.from(toBinary(DelayRequestSchema, request)), (err, value) =>
        err ? reject(err) : resolve(fromBinary(DelayResponseSchema, value!).delayId),
      );
    });
  let next = from;
  try {
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        while (next < to) {
          const i = next++;
          const due = dueOf(i);
          const delayId = await delay(i, due);
          ids?.set(delayId, due);
        }
      }),
    );
  } finally {
    client.close();
  }
}

/**
 * Sets delays [from, to) as {@link setDelays} does, in DelayBatch calls of `perCall` delays
 * (default 1,000) with `inFlight` (default 4) calls at once: what BullMQ's addBulk does for its
 * delayed jobs. A batch's `at` moments are taken when it is built.
 */
export async function setDelaysInBatches(url: string, from: number, to: number, dueOf: (i: number) => number, perCall = 1_000, inFlight = 4): Promise<void> {
  const client = new grpc.Client(new URL(url).host, grpc.credentials.createInsecure(), { "grpc.max_send_message_length": 64 * 1024 * 1024 });
  const identity = (b: Buffer) => b;
  const batch = (first: number, end: number) =>
    new Promise<void>((resolve, reject) => {
      const delays = Array.from({ length: end - first }, (_, j) => delayRequest(first + j, dueOf(first + j)));
      const request = create(DelayBatchRequestSchema, { delays });
      client.makeUnaryRequest(
        "/chronolog.v1.TimeService/DelayBatch",
        identity,
        identity,
        Buffer.from(toBinary(DelayBatchRequestSchema, request)),
        (err, value) => {
          if (err) return reject(err);
          if (fromBinary(DelayBatchResponseSchema, value!).results.length !== end - first) return reject(new Error("DelayBatch answered another count"));
          resolve();
        },
      );
    });
  let next = from;
  try {
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        while (next < to) {
          const first = next;
          next = Math.min(to, next + perCall);
          await batch(first, next);
        }
      }),
    );
  } finally {
    client.close();
  }
}

/** Delay i due at `due` (ms since the epoch): a moment less than 1 s ahead (or past: a slow setting) goes as an interval, as the owner refuses an `at` in the past. */
function delayRequest(i: number, due: number) {
  const ahead = due - Date.now();
  const when =
    ahead >= 1_000 ? { case: "at" as const, value: timestampFromMs(due) } : { case: "intervalMs" as const, value: BigInt(Math.max(0, Math.round(ahead))) };
  return create(DelayRequestSchema, { action: "timers.fire", input: { i, due }, when, overdue: { bound: { case: "unbounded", value: true } } });
}
