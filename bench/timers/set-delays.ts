// Sets delays of action `timers.fire` through unary Delay calls over gRPC (@grpc/grpc-js), shared
// by bench/timers and bench/compare.
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import * as grpc from "@grpc/grpc-js";
import { DelayRequestSchema, DelayResponseSchema } from "../../sdk/ts/src/gen/chronolog/v1/time_pb.js";

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
      // A moment less than 1 s ahead (or past: a slow setting) goes as an interval, as the owner refuses an `at` in the past.
      const ahead = due - Date.now();
      const when = ahead >= 1_000 ? { case: "at" as const, value: timestampFromMs(due) } : { case: "intervalMs" as const, value: BigInt(Math.max(0, Math.round(ahead))) };
      const request = create(DelayRequestSchema, { action: "timers.fire", input: { i, due }, when, overdue: { bound: { case: "unbounded", value: true } } });
      client.makeUnaryRequest("/chronolog.v1.TimeService/Delay", identity, identity, Buffer.from(toBinary(DelayRequestSchema, request)), (err, value) => (err ? reject(err) : resolve(fromBinary(DelayResponseSchema, value!).delayId)));
    });
  let next = from;
  try {
    await Promise.all(Array.from({ length: inFlight }, async () => {
      while (next < to) {
        const i = next++;
        const due = dueOf(i);
        const delayId = await delay(i, due);
        ids?.set(delayId, due);
      }
    }));
  } finally {
    client.close();
  }
}

