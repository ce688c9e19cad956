// @module-tag postgres

import { Code, ConnectError, createClient as createRpcClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterEach, describe, expect, it } from "vitest";
import { createClient, type ChronologClient } from "../sdk/ts/src/client.js";
import { runExecutor, TerminalError, type DeliveryContext, type Executor } from "../sdk/ts/src/executor.js";
import { AdminService } from "@chronolog/sdk/gen/chronolog/v1/admin_pb";
import { ExecutorService } from "@chronolog/sdk/gen/chronolog/v1/executor_pb";
import { definePlugin, manifestOf, type PluginDefinition } from "../sdk/ts/src/plugin.js";
import { onPostgres, startTestOwner } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

type TestOwner = Awaited<ReturnType<typeof startTestOwner>>;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function owner(options: Parameters<typeof startTestOwner>[0] = {}): Promise<{ owner: TestOwner; client: ChronologClient }> {
  const o = await startTestOwner({ shutdownGraceMs: 200, ...options });
  cleanups.push(() => o.close());
  return { owner: o, client: createClient({ url: o.url }) };
}

async function executor(url: string, plugin: PluginDefinition, credits = 16): Promise<Executor> {
  const ex = runExecutor({ url, plugins: [plugin], credits, onError: () => {} });
  cleanups.push(() => ex.stop(100));
  await ex.ready;
  return ex;
}

async function countTypes(client: ChronologClient): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for await (const e of client.read()) counts[e.type] = (counts[e.type] ?? 0) + 1;
  return counts;
}

const events = { "order.placed": { allow: ["*"] }, "order.noted": {} };

describe("processors over the Subscribe stream", () => {
  it("keeps per-key order across 2 executors with concurrency and random failures", async () => {
    const { owner: o, client } = await owner();
    const handled = new Map<string, number[]>();
    let failures = 0;
    const run = async (ctx: DeliveryContext) => {
      await new Promise((r) => setTimeout(r, Math.random() * 3));
      if (Math.random() < 0.2 && ctx.attempt < 3) {
        failures++;
        throw new Error("random failure");
      }
      const key = String(ctx.data.key);
      handled.set(key, [...(handled.get(key) ?? []), Number(ctx.event.seq)]);
    };
    const plugin = definePlugin({
      name: "orders",
      events,
      processors: { track: { on: "order.placed", key: "data.key", concurrency: 8, start: "beginning", retryDelaysMs: [5, 10], run } },
    });
    await client.registerPlugin(manifestOf(plugin));
    await executor(o.url, plugin, 4);
    await executor(o.url, plugin, 4);
    // Emitted in waves while earlier ones run, so events queue behind busy lanes.
    const results = [];
    for (let wave = 0; wave < 10; wave++) {
      const batch = Array.from({ length: 30 }, (_, i) => ({ type: "order.placed", data: { key: `k${i % 10}`, i: wave * 30 + i } }));
      results.push(...(await client.emitBatch(batch)));
      await new Promise((r) => setTimeout(r, 5));
    }
    await until(() => [...handled.values()].reduce((n, seqs) => n + seqs.length, 0) >= 300, "300 handled");
    for (let k = 0; k < 10; k++) {
      const expected = results.filter((r) => r.event!.data!.key === `k${k}`).map((r) => Number(r.event!.seq));
      expect(handled.get(`k${k}`)).toEqual(expected);
    }
    expect(failures).toBeGreaterThan(0);
  });

  it("records processor.retried per retry and processor.failed at the end; another processor reacts to it", async () => {
    const { owner: o, client } = await owner();
    const attempts: number[] = [];
    const reactions: string[] = [];
    const plugin = definePlugin({
      name: "orders",
      events,
      processors: {
        fragile: {
          on: "order.placed",
          retryDelaysMs: [10, 30],
          run: (ctx) => {
            attempts.push(ctx.attempt);
            throw new Error(`nope ${ctx.attempt}`);
          },
        },
        medic: {
          on: "processor.failed",
          run: (ctx) => {
            reactions.push(String(ctx.data.error));
          },
        },
      },
    });
    await client.registerPlugin(manifestOf(plugin));
    await executor(o.url, plugin);
    const { event } = await client.emit("order.placed", { n: 1 });
    await until(() => reactions.length === 1, "medic reaction");
    expect(attempts).toEqual([1, 2, 3]);
    expect(reactions).toEqual(["nope 3"]);
    const trouble: { type: string; data: Record<string, unknown>; cause: string }[] = [];
    for await (const e of client.read({ types: ["processor.retried", "processor.failed"] }))
      trouble.push({ type: e.type, data: e.data as Record<string, unknown>, cause: e.cause });
    expect(trouble.map((t) => t.type)).toEqual(["processor.retried", "processor.retried", "processor.failed"]);
    expect(trouble.every((t) => t.cause === event!.id)).toBe(true);
    expect(trouble[2].data).toMatchObject({
      processor: "orders.fragile",
      error: "nope 3",
      attempts: 3,
      event: { id: event!.id, type: "order.placed", data: { n: 1 } },
    });
  });

  it("a TerminalError skips the remaining tries", async () => {
    const { owner: o, client } = await owner();
    const attempts: number[] = [];
    const plugin = definePlugin({
      name: "orders",
      events,
      processors: {
        strict: {
          on: "order.placed",
          retryDelaysMs: [10, 10],
          run: (ctx) => {
            attempts.push(ctx.attempt);
            throw new TerminalError("bad order");
          },
        },
      },
    });
    await client.registerPlugin(manifestOf(plugin));
    await executor(o.url, plugin);
    await client.emit("order.placed", {});
    await until(async () => ((await countTypes(client))["processor.failed"] ?? 0) === 1, "processor.failed");
    expect(attempts).toEqual([1]);
    expect((await countTypes(client))["processor.retried"]).toBeUndefined();
  });

  it("a retried delivery that emits again writes no duplicates", async () => {
    const { owner: o, client } = await owner();
    const plugin = definePlugin({
      name: "orders",
      events,
      processors: {
        noter: {
          on: "order.placed",
          retryDelaysMs: [10, 10],
          async run(ctx) {
            await ctx.emit("order.noted", { of: ctx.event.id, step: 1 });
            await ctx.emit("order.noted", { of: ctx.event.id, step: 2 });
            if (ctx.attempt < 3) throw new Error("fail after emitting");
          },
        },
      },
    });
    await client.registerPlugin(manifestOf(plugin));
    await executor(o.url, plugin);
    await client.emit("order.placed", {});
    await until(async () => ((await countTypes(client))["processor.retried"] ?? 0) === 2, "two retries");
    await new Promise((r) => setTimeout(r, 100));
    expect((await countTypes(client))["order.noted"]).toBe(2);
  });

  it.runIf(onPostgres)(
    "on PostgreSQL, work under a delivery waits for no round trip outside the commits: 50 handlers emitting, setting a delay and calling an action under their deliveries",
    async () => {
      const { owner: o, client } = await owner();
      const plugin = definePlugin({
        name: "orders",
        events,
        actions: { remind: { run: () => ({}) } },
        processors: {
          noter: {
            on: "order.placed",
            key: "data.n",
            concurrency: 64,
            async run(ctx) {
              await ctx.emit("order.noted", { of: ctx.event.id });
              await ctx.delay("orders.remind", { of: ctx.event.id }, { intervalMs: 3_600_000 }, "unbounded");
              await ctx.call("orders.remind", { of: ctx.event.id });
            },
          },
        },
      });
      /** The round trips the owner's thread waited for so far (chronolog_store_waits_total, both connections). */
      const waits = async () => {
        const text = await (await fetch(`${o.url}/metrics`)).text();
        return [...text.matchAll(/^chronolog_store_waits_total\{[^}]*\} (\d+)$/gm)].reduce((sum, [, n]) => sum + Number(n), 0);
      };
      const noted = async () => (await countTypes(client))["order.noted"] ?? 0;
      await client.registerPlugin(manifestOf(plugin));
      await executor(o.url, plugin, 64);
      await client.emit("order.placed", { n: -1 }, { actor: { id: "warm" } });
      await until(async () => (await noted()) === 1, "the first note (the statements prepared)");
      const before = await waits();
      await Promise.all(Array.from({ length: 50 }, (_, n) => client.emit("order.placed", { n }, { actor: { id: `customer-${n}` } })));
      await until(async () => (await noted()) === 51, "50 notes");
      const delays = async () => {
        let n = 0;
        for await (const _ of client.listTimers({ kind: "delay" })) n++;
        return n;
      };
      await until(async () => (await delays()) === 51, "51 delays");
      await until(async () => ((await countTypes(client))["action.completed"] ?? 0) === 51, "51 calls");
      expect(await waits(), "waits for 50 emits, delays and calls under deliveries").toBeLessThan(before + 10); // a few others may come meanwhile
      const notes = [];
      for await (const e of client.read({ types: ["order.noted"] })) notes.push(e);
      const placed = new Map<string, string>();
      for await (const e of client.read({ types: ["order.placed"] })) placed.set(e.id, e.actor?.id ?? "");
      for (const note of notes) expect(note.actor?.id, "a note's actor is its delivery's").toBe(placed.get(note.cause));
    },
  );

  it("skips events that fail `where` and starts a new processor at the end of the log by default", async () => {
    const { owner: o, client } = await owner();
    await client.registerPlugin({ name: "orders", events });
    await client.emit("order.placed", { big: true, before: true });
    const seen: unknown[] = [];
    const plugin = definePlugin({
      name: "orders",
      events,
      processors: { big: { on: "order.placed", where: { big: true }, run: (ctx) => void seen.push(ctx.data) } },
    });
    await client.registerPlugin(manifestOf(plugin));
    await executor(o.url, plugin);
    await client.emit("order.placed", { big: false });
    await client.emit("order.placed", { big: true });
    await until(() => seen.length === 1, "one matching delivery");
    await new Promise((r) => setTimeout(r, 100));
    expect(seen).toEqual([{ big: true }]);
  });

  it("moves the delivery of a vanished executor to another one as a retry", async () => {
    const { owner: o, client } = await owner();
    const byB: number[] = [];
    let blockA = true;
    const stuck = new Promise<void>(() => {});
    const slow = definePlugin({
      name: "orders",
      events,
      processors: {
        p: {
          on: "order.placed",
          retryDelaysMs: [10, 10],
          run: async () => {
            if (blockA) await stuck;
          },
        },
      },
    });
    const exA = runExecutor({ url: o.url, plugins: [slow], credits: 1, onError: () => {} });
    await exA.ready;
    await client.registerPlugin(manifestOf(slow));
    await client.emit("order.placed", { n: 1 });
    await new Promise((r) => setTimeout(r, 100));
    const fast = definePlugin({
      name: "orders",
      events,
      processors: { p: { on: "order.placed", retryDelaysMs: [10, 10], run: (ctx) => void byB.push(ctx.attempt) } },
    });
    await executor(o.url, fast);
    blockA = false;
    await exA.stop(0); // the stream ends with the delivery unanswered
    await until(() => byB.length === 1, "redelivery to B");
    expect(byB).toEqual([2]);
    // processor.retried is committed beside the retry's wait, not before the redelivery: it may land after it.
    await until(async () => (await countTypes(client))["processor.retried"] !== undefined, "processor.retried recorded");
    expect((await countTypes(client))["processor.retried"]).toBe(1);
  });
});

describe("Subscribe bad input", () => {
  it("refuses an unknown processor, a missing hello and a client principal; ignores unknown acks with a notice", async () => {
    const token = { exec: "executor-token-0123456789", client: "client-token-0123456789" };
    const { owner: o } = await owner({
      config: {
        principals: [
          { name: "ex", token: token.exec, role: "executor" },
          { name: "web", token: token.client, role: "client" },
        ],
      },
    });
    const subscribe = (t: string, requests: object[]) => {
      const rpc = createRpcClient(
        ExecutorService,
        createGrpcTransport({ baseUrl: o.url, interceptors: [(next) => (req) => (req.header.set("authorization", `Bearer ${t}`), next(req))] }),
      );
      async function* gen() {
        for (const r of requests) yield r;
        await new Promise((r) => setTimeout(r, 300));
      }
      return rpc.subscribe(gen() as never);
    };
    const firstError = async (stream: AsyncIterable<unknown>) => {
      try {
        for await (const _ of stream) {
          /* drain */
        }
      } catch (e) {
        return ConnectError.from(e);
      }
      return undefined;
    };
    const hello = (processors: string[]) => ({ message: { case: "hello", value: { executor: "x", processors, plugins: [{ name: "orders", events }] } } });
    const unknown = await firstError(subscribe(token.exec, [hello(["orders.nope"])]));
    expect(unknown?.code).toBe(Code.InvalidArgument);
    expect(unknown?.rawMessage).toContain("orders.nope");
    const noHello = await firstError(subscribe(token.exec, [{ message: { case: "heartbeat", value: {} } }]));
    expect(noHello?.code).toBe(Code.InvalidArgument);
    const asClient = await firstError(subscribe(token.client, [hello([])]));
    expect(asClient?.code).toBe(Code.PermissionDenied);
    const messages: string[] = [];
    for await (const m of subscribe(token.exec, [hello([]), { message: { case: "ack", value: { deliveryId: "orders.p/1/1" } } }]) as AsyncIterable<{
      message: { case: string; value: { reason?: string } };
    }>) {
      messages.push(m.message.case === "notice" ? `notice:${m.message.value.reason}` : m.message.case);
      if (messages.length === 2) break;
    }
    expect(messages).toEqual(["welcome", "notice:UNKNOWN_DELIVERY"]);
  });
});

describe("a try still running when its event is sent again (the cursor moved back)", () => {
  it("has a delivery id of its own: its ack is stale and does not finish the try sent after it", async () => {
    const o = await startTestOwner();
    cleanups.push(() => o.close());
    const transport = createGrpcTransport({ baseUrl: o.url });
    const admin = createRpcClient(AdminService, transport);
    const client = createClient({ url: o.url });
    const outgoing: unknown[] = [];
    let wake: (() => void) | undefined;
    const send = (message: unknown) => {
      outgoing.push(message);
      wake?.();
    };
    async function* requests() {
      for (;;) {
        while (outgoing.length > 0) yield outgoing.shift();
        await new Promise<void>((r) => (wake = r));
        wake = undefined;
      }
    }
    const abort = new AbortController();
    cleanups.push(async () => abort.abort());
    const responses = createRpcClient(ExecutorService, transport)
      .subscribe(requests() as never, { signal: abort.signal })
      [Symbol.asyncIterator]();
    const next = async () => (await responses.next()).value as { message: { case: string; value: { deliveryId?: string; reason?: string } } };
    send({
      message: {
        case: "hello",
        value: {
          executor: "shop",
          processors: ["shop.pricer"],
          credits: 4,
          plugins: [
            {
              name: "shop",
              events: { "order.placed": { allow: ["*"] } },
              processors: { pricer: { on: ["order.placed"], ackTimeoutMs: 30_000, start: { position: { case: "beginning", value: true } } } },
            },
          ],
        },
      },
    });
    expect((await next()).message.case).toBe("welcome");
    await client.emit("order.placed", { order_id: "o-1" });
    const first = await next();
    expect(first.message.case).toBe("delivery");
    await admin.moveCursor({ processor: "shop.pricer", to: { case: "ackFloor", value: 0n } }); // its try still runs
    const second = await next();
    expect(second.message.case).toBe("delivery");
    expect(second.message.value.deliveryId).not.toBe(first.message.value.deliveryId);
    send({ message: { case: "ack", value: { deliveryId: first.message.value.deliveryId, outcome: 1 } } }); // the first try's ack
    expect(await next()).toMatchObject({ message: { case: "notice", value: { reason: "STALE_ACK" } } });
    const [pricer] = (await admin.listProcessors({})).processors;
    expect([pricer.ackFloor, pricer.inFlight]).toEqual([0n, 1]); // the second try still runs
    send({ message: { case: "ack", value: { deliveryId: second.message.value.deliveryId, outcome: 1 } } });
    await until(async () => {
      const [p] = (await admin.listProcessors({})).processors;
      return p.ackFloor >= 1n && p.inFlight === 0;
    }, "the second try's ack finishing the event");
  });
});
