// A TypeScript executor's synchronous handlers (they return no promise) against a fake owner over
// the real transport: each delivery of a DeliveryBatch runs in order, its ack (OK, error or
// terminal error from a throw) goes out with the others that ended in the same turn in one
// AckBatch, and a handler that returns a promise is answered when it settles, in a later message.
// Key order, retries, the poison-event and ack-timeout rules are the owner's: processors.test.ts,
// delivery-timeouts.test.ts.
//
// @module-tag serial

import { createServer } from "node:http2";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { afterEach, describe, expect, it } from "vitest";
import { ExecutorService, Outcome, type SubscribeResponse } from "@chronolog/sdk/gen/chronolog/v1/executor_pb";
import { runExecutor, TerminalError } from "../sdk/ts/src/executor.js";
import { definePlugin } from "../sdk/ts/src/plugin.js";
import { until } from "./helpers/until.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/** A fake owner that welcomes, then sends one DeliveryBatch of `deliveries` ([id, processor]); `messages` collects each ack message's ids and outcomes. */
async function fakeOwner(deliveries: [string, string][]) {
  const messages: { kind: string; acks: [string, Outcome, string][] }[] = [];
  const server = createServer(
    connectNodeAdapter({
      routes(router) {
        router.service(ExecutorService, {
          async *subscribe(requests) {
            yield { message: { case: "welcome", value: { sessionId: "s", heartbeatIntervalMs: 60_000 } } } as SubscribeResponse;
            const batch = deliveries.map(([id, processor]) => ({ deliveryId: id, processor, attempt: 1, event: { id, type: "fast.seen" } }));
            yield { message: { case: "deliveries", value: { deliveries: batch } } } as unknown as SubscribeResponse;
            for await (const request of requests) {
              const m = request.message;
              const acks = m.case === "ack" ? [m.value] : m.case === "acks" ? m.value.acks : [];
              if (acks.length > 0) messages.push({ kind: m.case!, acks: acks.map((a) => [a.deliveryId, a.outcome, a.error]) });
            }
          },
        });
      },
    }),
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(() => void server.close());
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, messages };
}

describe("the TypeScript SDK's synchronous handlers", () => {
  it("run a DeliveryBatch in order and answer it in one AckBatch, throws included; a promise's handler is answered when it settles", async () => {
    const ran: string[] = [];
    let release = () => {};
    const later = new Promise<void>((r) => (release = r));
    const plugin = definePlugin({
      name: "fast",
      events: { "fast.seen": {} },
      processors: {
        sync: {
          on: "fast.seen",
          run(ctx) {
            ran.push(ctx.event.id);
            if (ctx.event.id === "e3") throw new Error("e3 failed");
            if (ctx.event.id === "e4") throw new TerminalError("e4 is poison");
          },
        },
        slow: {
          on: "fast.seen",
          async run(ctx) {
            ran.push(ctx.event.id);
            await later;
          },
        },
      },
    });
    const ids = Array.from({ length: 200 }, (_, i) => `e${i + 1}`);
    const owner = await fakeOwner([...ids.map((id): [string, string] => [id, "fast.sync"]), ["s1", "fast.slow"]]);
    const executor = runExecutor({ url: owner.url, plugins: [plugin], onError: () => {}, onLog: () => {} });
    cleanups.push(() => executor.stop(0));

    await until(() => owner.messages.length === 1, "the synchronous handlers' acks");
    expect(ran).toEqual([...ids, "s1"]); // in the batch's order
    const [first] = owner.messages;
    expect(first.kind).toBe("acks");
    expect(first.acks.map(([id]) => id)).toEqual(ids);
    expect(first.acks.filter(([, outcome]) => outcome !== Outcome.OK)).toEqual([
      ["e3", Outcome.ERROR, "e3 failed"],
      ["e4", Outcome.TERMINAL_ERROR, "e4 is poison"],
    ]);
    await new Promise((r) => setTimeout(r, 100));
    expect(owner.messages).toHaveLength(1); // the promise's handler is still running
    release();
    await until(() => owner.messages.length === 2, "the promise's handler's ack");
    expect(owner.messages[1]).toEqual({ kind: "ack", acks: [["s1", Outcome.OK, ""]] });
  });
});
