// @module-tag serial

import { createServer } from "node:http2";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { afterEach, describe, expect, it } from "vitest";
import { runExecutor, TerminalError } from "../sdk/ts/src/executor.js";
import { ExecutorService, Outcome, type ActionResult, type SubscribeResponse } from "@chronolog/sdk/gen/chronolog/v1/executor_pb";
import { HoldQueue } from "../sdk/ts/src/hold-queue.js";
import { definePlugin } from "../sdk/ts/src/plugin.js";
import { StreamClock } from "../sdk/ts/src/stream-clock.js";
import { until } from "./helpers/until.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

describe("StreamClock: the owner's stream clock on the executor's", () => {
  it("maps written_at_ms with the least offset seen: a message that queued on its way counts from its writing", () => {
    const clock = new StreamClock();
    expect(clock.writtenAt(0, 500)).toBe(500); // not set (an older owner): the receipt
    expect(clock.writtenAt(10, 1_015)).toBe(1_015); // offset 1,005: the only one seen
    expect(clock.writtenAt(20, 1_022)).toBe(1_022); // offset 1,002: the fastest so far
    expect(clock.writtenAt(30, 1_062)).toBe(1_032); // queued 30 ms more on its way: counted from 30 + 1,002
  });

  it("follows a slower path within two windows (5 s each): an old fast transit does not make later holds end early for ever", () => {
    const clock = new StreamClock();
    clock.writtenAt(0.5, 1); // offset 0.5
    expect(clock.writtenAt(4_000, 4_010)).toBe(4_000.5); // same window
    expect(clock.writtenAt(6_000, 6_010)).toBe(6_000.5); // next window: the previous one's minimum still counts
    expect(clock.writtenAt(12_000, 12_010)).toBe(12_010); // two windows later: only offsets of 10 seen since
    expect(clock.writtenAt(612_000, 612_060)).toBe(612_060); // after ten quiet minutes: nothing older counts
  });
});

describe("HoldQueue: held items start at their time, never before", () => {
  it("starts each item at or after its time, in time order, with how late it was", async () => {
    const started: { item: string; at: number; lateMs: number }[] = [];
    const queue = new HoldQueue<string>((item, lateMs) => started.push({ item, at: performance.now(), lateMs }));
    const t0 = performance.now();
    const times = { c: t0 + 45, a: t0 + 15, b: t0 + 30, a2: t0 + 15 };
    for (const [item, at] of Object.entries(times)) queue.add(item, at);
    expect(queue.size).toBe(4);
    await queue.drained();
    expect(started.map((s) => s.item)).toEqual(["a", "a2", "b", "c"]); // equal times keep their arrival order
    for (const s of started) {
      expect(s.at).toBeGreaterThanOrEqual(times[s.item as keyof typeof times]);
      expect(s.lateMs).toBeGreaterThanOrEqual(0);
      expect(s.lateMs).toBeLessThanOrEqual(Math.floor(s.at - times[s.item as keyof typeof times])); // counted when the timer rang
    }
  });

  it("starts an item whose time has passed at once; a removed one never starts; clear drops the rest and wakes drained()", async () => {
    const started: string[] = [];
    const queue = new HoldQueue<string>((item) => started.push(item));
    queue.add("past", performance.now() - 1);
    expect(started).toEqual(["past"]);
    queue.add("kept", performance.now() + 20);
    queue.add("cancelled", performance.now() + 10);
    expect(queue.remove((i) => i === "cancelled")).toBe("cancelled");
    expect(queue.remove((i) => i === "unknown")).toBeUndefined();
    await queue.drained();
    expect(started).toEqual(["past", "kept"]);
    queue.add("dropped", performance.now() + 10_000);
    const drained = queue.drained();
    queue.clear();
    await drained;
    await sleep(30);
    expect(started).toEqual(["past", "kept"]);
    expect(queue.size).toBe(0);
  });
});

describe("the TypeScript SDK holds a call from when the owner wrote it (Invocation.written_at_ms)", () => {
  it("a held Invocation that spent 300 ms on its way starts 300 ms sooner after its receipt than its hold_ms, and not before its moment", async () => {
    const results: ActionResult[] = [];
    let sentAt = 0;
    const startedAt: Record<string, number> = {};
    // A fake owner: after the welcome, a held Invocation written now (the stream's fastest transit), then one
    // whose written_at_ms says it was written 300 ms before it was sent (as if it had queued on its way).
    const server = createServer(
      connectNodeAdapter({
        routes(router) {
          router.service(ExecutorService, {
            async *subscribe(requests) {
              const origin = performance.now();
              const invocation = (id: string, holdMs: number, queuedMs: number): SubscribeResponse["message"] => ({
                case: "invocation",
                value: { invocationId: id, action: "held.run", callId: id, attempt: 1, holdMs, writtenAtMs: performance.now() - origin - queuedMs } as never,
              });
              yield { message: { case: "welcome", value: { sessionId: "s", heartbeatIntervalMs: 60_000 } } } as SubscribeResponse;
              yield { message: invocation("first", 1, 0) } as SubscribeResponse;
              await sleep(400); // written_at_ms stays above 0 (0: not set)
              sentAt = performance.now();
              yield { message: invocation("queued", 600, 300) } as SubscribeResponse;
              for await (const request of requests) if (request.message.case === "actionResult") results.push(request.message.value);
            },
          });
        },
      }),
    );
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    const plugin = definePlugin({ name: "held", actions: { run: { run: (ctx) => void (startedAt[ctx.callId] = performance.now()) } } });
    const executor = runExecutor({ url, plugins: [plugin], onError: () => {} });
    try {
      await until(() => results.length === 2, "both results");
      const afterSend = startedAt.queued - sentAt;
      expect(afterSend).toBeGreaterThanOrEqual(300 - 1); // its moment: written 300 ms before the send, + 600 (the fastest transit is ≥ 0; ms rounding)
      expect(afterSend).toBeLessThan(550); // counted from receipt it would be ≥ 600
      expect(results.map((r) => [r.invocationId, r.outcome])).toEqual([
        ["first", Outcome.OK],
        ["queued", Outcome.OK],
      ]);
    } finally {
      await executor.stop(0);
      server.close();
    }
  });
});

describe("the TypeScript SDK batches on its stream", () => {
  /**
   * A fake owner whose welcome says `welcome` and which, after it, sends one InvocationBatch of calls `ids` of
   * action `quick.run` (hold_ms 0); `received` collects the result messages: their kind, and per result its id,
   * outcome and error.
   */
  async function fakeOwner(welcome: { actionResultBatches?: boolean; maxMessageBytes?: number }, ids: string[], deliveries: string[] = []) {
    const received: { kind: string; results: { id: string; outcome: Outcome; error: string }[] }[] = [];
    const acks: { id: string; outcome: Outcome; error: string }[] = [];
    const server = createServer(
      connectNodeAdapter({
        routes(router) {
          router.service(ExecutorService, {
            async *subscribe(requests) {
              const invocation = (id: string) => ({ invocationId: id, action: "quick.run", callId: id, attempt: 1, input: { id } }) as never;
              yield { message: { case: "welcome", value: { sessionId: "s", heartbeatIntervalMs: 60_000, ...welcome } } } as SubscribeResponse;
              yield { message: { case: "invocations", value: { invocations: ids.map(invocation) } } } as unknown as SubscribeResponse;
              for (const id of deliveries)
                yield {
                  message: { case: "delivery", value: { deliveryId: id, processor: "quick.watch", attempt: 1, event: { id, type: "quick.seen" } } },
                } as unknown as SubscribeResponse;
              for await (const request of requests) {
                const m = request.message;
                const results = m.case === "actionResult" ? [m.value] : m.case === "actionResults" ? m.value.results : [];
                if (m.case === "ack") acks.push({ id: m.value.deliveryId, outcome: m.value.outcome, error: m.value.error });
                if (results.length > 0)
                  received.push({ kind: m.case!, results: results.map((r) => ({ id: r.invocationId, outcome: r.outcome, error: r.error })) });
              }
            },
          });
        },
      }),
    );
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => void server.close());
    return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, received, acks };
  }

  /**
   * Runs an executor whose `quick.run` returns `{ pad }` with `padOf(id)` characters (a negative
   * count: throws an error that long; "bigint": returns a BigInt), and whose processor `quick.watch`
   * throws a terminal error of 9,000 characters; stopped after the test.
   */
  function quickExecutor(url: string, padOf: (id: string) => number | "bigint" = () => 0) {
    const run = (id: string) => {
      const pad = padOf(id);
      if (pad === "bigint") return { n: 1n } as never;
      if (pad < 0) throw new Error("e".repeat(-pad));
      return { pad: "x".repeat(pad) };
    };
    const watch = () => {
      throw new TerminalError("t".repeat(9_000));
    };
    const plugin = definePlugin({
      name: "quick",
      events: { "quick.seen": {} },
      processors: { watch: { on: "quick.seen", run: watch } },
      actions: { run: { run: (ctx) => run(String(ctx.input.id)) } },
    });
    const executor = runExecutor({ url, plugins: [plugin], onError: () => {} });
    cleanups.push(() => executor.stop(0));
  }

  const ids = (received: { results: { id: string }[] }[]) => received.flatMap((r) => r.results.map((x) => x.id));

  it("runs every Invocation of an InvocationBatch, and answers the calls that end in one turn with one ActionResultBatch", async () => {
    const owner = await fakeOwner({ actionResultBatches: true }, ["a", "b", "c"]);
    quickExecutor(owner.url);
    await until(() => ids(owner.received).length === 3, "the three results");
    expect(owner.received.map((r) => [r.kind, r.results.map((x) => x.id)])).toEqual([["actionResults", ["a", "b", "c"]]]);
  });

  it("sends one ActionResult per message to an owner whose welcome does not say it reads ActionResultBatch (an older owner)", async () => {
    const owner = await fakeOwner({}, ["a", "b", "c"]);
    quickExecutor(owner.url);
    await until(() => ids(owner.received).length === 3, "the three results");
    expect(owner.received.map((r) => r.kind)).toEqual(["actionResult", "actionResult", "actionResult"]);
  });

  it("keeps a batch within an eighth of the owner's largest message, and answers an output too large for it with a terminal error", async () => {
    const owner = await fakeOwner({ actionResultBatches: true, maxMessageBytes: 8_000 }, ["a", "b", "c", "big"]);
    quickExecutor(owner.url, (id) => (id === "big" ? 9_000 : 400)); // an eighth of 8,000 holds two of the 400-character outputs
    await until(() => ids(owner.received).length === 4, "the four results");
    expect(owner.received.map((r) => r.results.length)).toEqual([2, 2]);
    const big = owner.received.flatMap((r) => r.results).find((r) => r.id === "big")!;
    expect(big.outcome).toBe(Outcome.TERMINAL_ERROR);
    expect(big.error).toMatch(/^the action's output is 90\d\d bytes encoded, more than the owner reads in one message \(8000 bytes\): not sent$/);
    expect(
      owner.received
        .flatMap((r) => r.results)
        .filter((r) => r.id !== "big")
        .every((r) => r.outcome === Outcome.OK),
    ).toBe(true);
  });

  it("cuts an error too long for the owner (a result's, still retryable, and an ack's), and answers an output that is not JSON with a terminal error", async () => {
    const owner = await fakeOwner({ actionResultBatches: true, maxMessageBytes: 8_000 }, ["long", "bigint"], ["d1"]);
    quickExecutor(owner.url, (id) => (id === "long" ? -9_000 : "bigint"));
    await until(() => ids(owner.received).length === 2 && owner.acks.length === 1, "the two results and the ack");
    const results = new Map(owner.received.flatMap((r) => r.results).map((r) => [r.id, r]));
    const cut = /^(.)\1{332}… \(cut from 9000 characters: the owner reads at most 8000 bytes a message\)$/; // 8,000 / 8 / 3 characters kept
    expect(results.get("long")).toMatchObject({ outcome: Outcome.ERROR, error: expect.stringMatching(cut) });
    expect(owner.acks).toEqual([{ id: "d1", outcome: Outcome.TERMINAL_ERROR, error: expect.stringMatching(cut) }]);
    expect(results.get("bigint")).toMatchObject({
      outcome: Outcome.TERMINAL_ERROR,
      error: expect.stringMatching(/^quick\.run returned an output that is not JSON: .*BigInt/),
    });
  });
});
