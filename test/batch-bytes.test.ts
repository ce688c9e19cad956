// Delivery and invocation batches are bounded by bytes as well as by count. An executor that
// says it understands DeliveryBatch and InvocationBatch, with 64 credits and the 4 MiB receive
// limit that gRPC clients have by default (grpc-go, grpc-js, grpcio; set here on a connect-node
// transport), gets 64 events of ~200 KiB and then 64 action calls with ~200 KiB inputs from an
// owner process: all of them, without one message over its limit. (A message over it breaks the
// stream with RESOURCE_EXHAUSTED, and again at every reconnect, since the same work is resent.)
//
// @module-tag serial
// @module-tag sqlite-only

import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient as createRpcClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "../sdk/ts/src/client.js";
import { ExecutorService, Outcome, SubscribeRequestSchema, type SubscribeRequest, type SubscribeResponse } from "@chronolog/sdk/gen/chronolog/v1/executor_pb";
import { definePlugin, manifestOf } from "../sdk/ts/src/plugin.js";
import { spawnOwner, tempDir, type OwnerProcess } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

const count = 64;
const receiveLimit = 4 * 1024 * 1024;
const blob = (i: number) => `${i}:`.padEnd(200 * 1024, "x");
// The manifest only: this test speaks the executor protocol itself.
const manifest = manifestOf(
  definePlugin({
    name: "bulk",
    events: { "blob.stored": { allow: ["*"] } },
    processors: { keep: { on: "blob.stored", key: "data.n", concurrency: count, start: "beginning", run: () => undefined } },
    actions: { echo: { allow: ["*"], run: () => ({}) } },
  }),
);

/** A queue of requests the stream reads as they are pushed. */
function requests() {
  const queued: SubscribeRequest[] = [];
  let wake: (() => void) | null = null;
  let ended = false;
  return {
    push(message: MessageInitShape<typeof SubscribeRequestSchema>["message"]) {
      queued.push(create(SubscribeRequestSchema, { message }));
      wake?.();
    },
    end() {
      ended = true;
      wake?.();
    },
    async *[Symbol.asyncIterator]() {
      for (;;) {
        while (queued.length > 0) yield queued.shift()!;
        if (ended) return;
        await new Promise<void>((resolve) => (wake = resolve));
        wake = null;
      }
    },
  };
}

describe("batches bounded by bytes", () => {
  let owner: OwnerProcess;
  beforeAll(async () => {
    owner = await spawnOwner(tempDir());
    const client = createClient({ url: owner.url });
    await client.registerPlugin(manifest);
    // In the log before the executor connects: its catch-up hands all 64 out at once.
    for (let i = 0; i < count; i++) await client.emit("blob.stored", { n: i, blob: blob(i) });
  }, 60_000);
  afterAll(() => {
    owner?.child.kill("SIGKILL");
  });

  it("64 deliveries of ~200 KiB events and 64 invocations with ~200 KiB inputs reach an executor with a 4 MiB receive limit", async () => {
    const transport = createGrpcTransport({ baseUrl: owner.url, readMaxBytes: receiveLimit });
    const out = requests();
    const deliveries = new Map<string, number>(); // delivery id → event's n
    const invocations: { id: string; n: number; size: number }[] = [];
    let messages = 0;
    let streamError: unknown;
    const handle = (m: SubscribeResponse["message"]) => {
      messages++;
      if (m.case === "delivery") deliveries.set(m.value.deliveryId, Number(m.value.event?.data?.n));
      else if (m.case === "deliveries") for (const d of m.value.deliveries) deliveries.set(d.deliveryId, Number(d.event?.data?.n));
      else if (m.case === "invocation" || m.case === "invocations") {
        for (const inv of m.case === "invocation" ? [m.value] : m.value.invocations) {
          invocations.push({ id: inv.invocationId, n: Number(inv.input?.n), size: String(inv.input?.blob).length });
          out.push({ case: "actionResult", value: { invocationId: inv.invocationId, outcome: Outcome.OK, output: { n: inv.input?.n ?? null } } });
        }
      } else if (m.case === "heartbeat") out.push({ case: "heartbeat", value: {} });
    };
    out.push({
      case: "hello",
      value: {
        executor: "bulk",
        instanceId: "bulk-1",
        plugins: [manifest],
        processors: ["bulk.keep"],
        actions: ["bulk.echo"],
        credits: count,
        batches: true,
        invocationBatches: true,
      },
    });
    const reading = (async () => {
      for await (const response of createRpcClient(ExecutorService, transport).subscribe(out)) handle(response.message);
    })().catch((e) => (streamError = e));
    try {
      // Every delivery holds a credit until acked: all 64 are out before any ack.
      await until(() => deliveries.size === count || streamError !== undefined, `${count} deliveries`, 30_000);
      expect(streamError && ConnectError.from(streamError).code).not.toBe(Code.ResourceExhausted);
      expect(streamError).toBeUndefined();
      expect([...deliveries.values()].sort((a, b) => a - b)).toEqual([...Array(count).keys()]);

      // Calls made while every credit is held wait for one; the ack batch frees all 64 at once.
      const client = createClient({ url: owner.url });
      const calls = Array.from({ length: count }, (_, i) => client.call("bulk.echo", { n: i, blob: blob(i) }, { timeoutMs: 60_000 }));
      await new Promise((r) => setTimeout(r, 1_500)); // the 64 requests (12.8 MiB) reach the owner and wait for credits
      out.push({ case: "acks", value: { acks: [...deliveries.keys()].map((deliveryId) => ({ deliveryId, outcome: Outcome.OK })) } });
      const answered = Promise.allSettled(calls);
      await until(() => invocations.length === count || streamError !== undefined, `${count} invocations`, 30_000);
      expect(streamError && ConnectError.from(streamError).code).not.toBe(Code.ResourceExhausted);
      expect(streamError).toBeUndefined();
      const outputs = await Promise.all(calls);
      await answered;
      expect(outputs.map((o) => o.output.n)).toEqual([...Array(count).keys()]);
      expect(invocations.map((i) => i.size)).toEqual(Array(count).fill(200 * 1024));
      expect(messages).toBeGreaterThan(2); // welcome, then the work in more than one message
    } finally {
      out.end();
      await reading;
    }
  }, 90_000);
});
