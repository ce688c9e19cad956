// @module-tag postgres

import { AdminService } from "@chronolog/sdk/gen/chronolog/v1/admin_pb";
import { Code, ConnectError, createClient as createRpcClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterEach, describe, expect, it } from "vitest";
import { createClient, type ChronologClient } from "../sdk/ts/src/client.js";
import { runExecutor, type DeliveryContext } from "../sdk/ts/src/executor.js";
import { definePlugin, manifestOf, type ConcurrencyOptions } from "../sdk/ts/src/plugin.js";
import { CallSlots } from "../server/src/actions/slots.js";
import { keyPath } from "../server/src/log/key-path.js";
import { onPostgres, startTestOwner } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function owner() {
  const o = await startTestOwner({ shutdownGraceMs: 200 });
  cleanups.push(() => o.close());
  const admin = createRpcClient(AdminService, createGrpcTransport({ baseUrl: o.url }));
  /** The processor fair.work's ack floor. */
  const floor = async () => (await admin.listProcessors({})).processors.find((p) => p.name === "fair.work")?.ackFloor;
  return { url: o.url, client: createClient({ url: o.url }) as ChronologClient, floor };
}

/** The plugin `fair`: processor `fair.work` on `job.queued` with `concurrency`, handled by `run`. */
function fairPlugin(concurrency: ConcurrencyOptions, run: (ctx: DeliveryContext) => Promise<void> | void, priority?: string) {
  return definePlugin({
    name: "fair",
    events: { "job.queued": { allow: ["*"] } },
    processors: { work: { on: "job.queued", concurrency, priority, start: "beginning", retryDelaysMs: [20], run } },
  });
}

/** The owner's chronolog_processor_passed_total of fair.work. */
async function passedMetric(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith('chronolog_processor_passed_total{processor="fair.work"} '));
  return Number(line?.split(" ")[1] ?? Number.NaN);
}

async function executor(url: string, plugin: ReturnType<typeof fairPlugin>, credits = 16): Promise<void> {
  const ex = runExecutor({ url, plugins: [plugin], credits, onError: () => {} });
  cleanups.push(() => ex.stop(100));
  await ex.ready;
}

describe("fair turns between keys", () => {
  it("a key's one event is delivered long before another key's backlog of 100,000 events has drained", { tags: ["serial"], timeout: 180_000 }, async () => {
    const { url, client } = await owner();
    let bigDone = 0;
    let bigDoneWhenSmall = -1;
    const plugin = fairPlugin({ limit: 2, key: "data.tenant", total: 4 }, (ctx) => {
      if (ctx.data.tenant === "small") bigDoneWhenSmall = bigDone;
      else bigDone++;
    });
    await client.registerPlugin(manifestOf(plugin));
    const backlog = 100_000;
    for (let i = 0; i < backlog; i += 10_000)
      await client.emitBatch(Array.from({ length: 10_000 }, (_, j) => ({ type: "job.queued", data: { tenant: "big", n: i + j } })));
    await client.emit("job.queued", { tenant: "small" });
    await executor(url, plugin);
    await until(() => bigDoneWhenSmall >= 0, "the small tenant's event", 120_000);
    // Without turns the small tenant waits for the whole backlog (it is read after it); with them, for a turn.
    expect(bigDoneWhenSmall).toBeLessThan(backlog / 2);
  });

  it("weighted turns: with a backlog of both keys, a key of weight 3 is served about 3 times as often as a key of weight 1", async () => {
    const { url, client } = await owner();
    const order: string[] = [];
    // Each key may fill every slot (limit = total = 4): only the turns decide who gets a free slot.
    const plugin = fairPlugin({ limit: 4, key: "data.tenant", total: 4, weights: { gold: 3 } }, async (ctx) => {
      order.push(String(ctx.data.tenant));
      await new Promise((r) => setTimeout(r, 2));
    });
    await client.registerPlugin(manifestOf(plugin));
    const each = 600;
    await client.emitBatch(
      Array.from({ length: 2 * each }, (_, i) => ({ type: "job.queued", data: { tenant: i < each ? "basic" : "gold", n: i } })), // basic first in the log
    );
    await executor(url, plugin);
    await until(() => order.length === 2 * each, "every event handled", 60_000);
    // While both keys have a backlog (gold's 600 last about 800 deliveries at 3:1): the first 600.
    const first = order.slice(0, 600);
    const gold = first.filter((t) => t === "gold").length;
    const ratio = gold / (first.length - gold);
    expect(ratio).toBeGreaterThan(2.4);
    expect(ratio).toBeLessThan(3.6);
  });

  it("skip: an event of a key with a delivery in flight is passed over; other keys and later events go on", async () => {
    const { url, client, floor } = await owner();
    const seen: string[] = [];
    let release: () => void = () => {};
    const held = new Promise<void>((r) => (release = r));
    const plugin = fairPlugin({ key: "data.tenant", ifActive: "skip", total: 4 }, async (ctx) => {
      seen.push(`${ctx.data.tenant}/${ctx.data.n}`);
      if (ctx.data.n === 1) await held;
    });
    await client.registerPlugin(manifestOf(plugin));
    await executor(url, plugin);
    await client.emit("job.queued", { tenant: "a", n: 1 });
    await until(() => seen.length === 1, "the first delivery");
    await client.emitBatch([2, 3].map((n) => ({ type: "job.queued", data: { tenant: "a", n } })));
    const last = await client.emit("job.queued", { tenant: "b", n: 4 });
    await until(() => seen.includes("b/4"), "the other key's event");
    release();
    await until(async () => (await floor()) === last.event?.seq, "the cursor past every event");
    await client.emit("job.queued", { tenant: "a", n: 5 });
    await until(() => seen.includes("a/5"), "a later event of the key, once it is idle");
    expect(seen).toEqual(["a/1", "b/4", "a/5"]);
    expect(await passedMetric(url)).toBe(2);
  });

  it("coalesce: while a key's delivery runs, its new events replace each other; the last one is delivered", async () => {
    const { url, client, floor } = await owner();
    const seen: number[] = [];
    let release: () => void = () => {};
    const held = new Promise<void>((r) => (release = r));
    const plugin = fairPlugin({ key: "data.tenant", ifActive: "coalesce" }, async (ctx) => {
      seen.push(Number(ctx.data.n));
      if (ctx.data.n === 1) await held;
    });
    await client.registerPlugin(manifestOf(plugin));
    await executor(url, plugin);
    await client.emit("job.queued", { tenant: "a", n: 1 });
    await until(() => seen.length === 1, "the first delivery");
    let last = 0n;
    for (const n of [2, 3, 4]) last = (await client.emit("job.queued", { tenant: "a", n })).event?.seq ?? 0n;
    release();
    await until(() => seen.length === 2, "the coalesced delivery");
    await until(async () => (await floor()) === last, "the cursor past every event");
    expect(seen).toEqual([1, 4]);
    expect(await passedMetric(url)).toBe(2);
  });

  it("refuses declarations whose limits do not check, naming the field", async () => {
    const { client } = await owner();
    const refused = async (processor: Record<string, unknown>, action?: Record<string, unknown>) => {
      const e = await client.registerPlugin({ name: "bad", processors: { p: { on: ["x.y"], ...processor } }, actions: action ? { a: action } : {} }).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(e).toBeInstanceOf(ConnectError);
      expect((e as ConnectError).code).toBe(Code.InvalidArgument);
      return (e as ConnectError).message;
    };
    expect(await refused({ key: "data.a", concurrencyLimit: { limit: 2, key: "data.b" } })).toContain("processors.p.concurrency.key");
    expect(await refused({ concurrencyLimit: { limit: 70_000 } })).toContain("processors.p.concurrency.limit");
    expect(await refused({ concurrencyLimit: { key: "data.a", ifActive: "drop" } })).toContain("if_active must be queue, skip or coalesce");
    expect(await refused({}, { concurrencyLimit: { key: "data.a" } })).toContain("actions.a.concurrency.key");
    expect(await refused({}, { concurrencyLimit: { ifActive: "skip" } })).toContain("if_active is for processors");
    expect(await refused({}, { concurrencyLimit: { key: "input.a", weights: { x: 2 } } })).toContain("weights are for processors");
    expect(await refused({ concurrencyLimit: { key: "data.a", weights: { x: 0 } } })).toContain("processors.p.concurrency.weights.x");
    expect(await refused({ concurrencyLimit: { key: "data.a", weights: { x: 5_000 } } })).toContain("a weight must be 1 to 1000");
    expect(await refused({ concurrencyLimit: { limit: 2, weights: { x: 2 } } })).toContain("give the limit a key");
    // A processor's paths into its events: one that can find nothing (no `data.`, a stray dot) is refused, not taken silently.
    expect(await refused({ concurrencyLimit: { limit: 2, key: "../../etc" } })).toContain("processors.p.concurrency.key");
    expect(await refused({ rate: { limit: 5, key: "tenant" } })).toContain("processors.p.rate.key");
    expect(await refused({ debounce: { key: "data..a", periodMs: 10 } })).toContain("processors.p.debounce.key");
    expect(await refused({ priority: "prio" })).toContain("processors.p.priority");
    expect(await refused({ key: "cart_id" })).toContain("processors.p.key");
  });

  it("priority: keys whose next event has a higher priority start first; within a key, order holds", async () => {
    const { url, client } = await owner();
    const seen: string[] = [];
    const plugin = fairPlugin({ key: "data.tenant", total: 1 }, (ctx) => void seen.push(`${ctx.data.tenant}${ctx.data.n}`), "data.p");
    await client.registerPlugin(manifestOf(plugin));
    const data: Record<string, string | number>[] = [
      { tenant: "a", n: 1, p: 1 },
      { tenant: "a", n: 2, p: 9 },
      { tenant: "b", n: 1, p: 5 },
      { tenant: "c", n: 1 },
      { tenant: "d", n: 1, p: 5 },
      { tenant: "e", n: 1, p: 7 },
    ];
    await client.emitBatch(data.map((d) => ({ type: "job.queued", data: d })));
    await executor(url, plugin);
    await until(() => seen.length === 6, "every event");
    // e (7), then b and d (5, in turn), then a1 (1) and behind it a2 (9: a key's order first), then c (0).
    expect(seen).toEqual(["e1", "b1", "d1", "a1", "a2", "c1"]);
  });

  it("priority of an action's calls: those waiting for a slot start highest first, in the order they came within one priority", async () => {
    const slots = new CallSlots();
    const limits = { limit: 1, keyOf: keyPath(""), total: 1 };
    const started: string[] = [];
    const call = async (name: string, priority: number) => {
      const release = await slots.acquire("p.a", limits, {}, priority, 10_000, undefined);
      started.push(name);
      setImmediate(release);
    };
    const first = await slots.acquire("p.a", limits, {}, 0, 0, undefined);
    const waiting = [call("low", 1), call("high", 9), call("mid", 5), call("high2", 9)];
    first();
    await Promise.all(waiting);
    expect(started).toEqual(["high", "high2", "mid", "low"]);
  });

  it("a limit without a key counts every delivery", async () => {
    const { url, client } = await owner();
    let running = 0;
    let peak = 0;
    let done = 0;
    const plugin = fairPlugin({ limit: 2 }, async () => {
      peak = Math.max(peak, ++running);
      await new Promise((r) => setTimeout(r, 50));
      running--;
      done++;
    });
    await client.registerPlugin(manifestOf(plugin));
    await client.emitBatch(Array.from({ length: 8 }, (_, n) => ({ type: "job.queued", data: { n } })));
    await executor(url, plugin);
    await until(() => done === 8, "every event");
    expect(peak).toBe(2);
  });

  it("a key's backlog past what is held in memory is read again from the log: every event once, in order per key, the cursor at the end", async () => {
    const { url, client, floor } = await owner();
    const seen = new Map<string, number[]>();
    const plugin = fairPlugin({ key: "data.tenant", total: 8 }, (ctx) => {
      const tenant = String(ctx.data.tenant);
      seen.set(tenant, [...(seen.get(tenant) ?? []), Number(ctx.data.n)]);
    });
    await client.registerPlugin(manifestOf(plugin));
    // 3,000 events of "big" (far past the 64 a key holds), with other tenants' events among them.
    const data = Array.from({ length: 3_600 }, (_, i) => (i % 6 === 5 ? { tenant: `t${i % 7}`, n: i } : { tenant: "big", n: i }));
    for (let i = 0; i < data.length; i += 1_200) await client.emitBatch(data.slice(i, i + 1_200).map((d) => ({ type: "job.queued", data: d })));
    const last = await client.emit("job.queued", { tenant: "late", n: data.length });
    await executor(url, plugin);
    await until(async () => (await floor()) === last.event?.seq, "the cursor at the end", 60_000);
    for (const [tenant, ns] of seen) {
      const expected = [...data, { tenant: "late", n: data.length }].filter((d) => d.tenant === tenant).map((d) => d.n);
      expect(ns, tenant).toEqual(expected); // each once, in order
    }
    expect(seen.get("big")).toHaveLength(3_000);
  });

  it.runIf(onPostgres)(
    "on PostgreSQL, a key's backlog older than the log's tail in memory is read again without a round trip the owner waits for: every event once, in order per key",
    { timeout: 120_000 },
    async () => {
      const { url, client, floor } = await owner();
      /** The round trips the owner's thread waited for so far (chronolog_store_waits_total, both connections). */
      const waits = async () => {
        const text = await (await fetch(`${url}/metrics`)).text();
        return [...text.matchAll(/^chronolog_store_waits_total\{[^}]*\} (\d+)$/gm)].reduce((sum, [, n]) => sum + Number(n), 0);
      };
      const seen = new Map<string, number[]>();
      const plugin = fairPlugin({ key: "data.tenant", total: 8 }, (ctx) => {
        const tenant = String(ctx.data.tenant);
        seen.set(tenant, [...(seen.get(tenant) ?? []), Number(ctx.data.n)]);
      });
      await client.registerPlugin(manifestOf(plugin));
      // 6,000 events of 2 KiB (12 MiB: past the 8 MiB the tail keeps), 5,000 of them of "hot", far past the 64 a key holds.
      const pad = "p".repeat(2_048);
      const data = Array.from({ length: 6_000 }, (_, i) => (i % 6 === 5 ? { tenant: `t${i % 7}`, n: i } : { tenant: "hot", n: i }));
      for (let i = 0; i < data.length; i += 500) await client.emitBatch(data.slice(i, i + 500).map((d) => ({ type: "job.queued", data: { ...d, pad } })));
      const last = await client.emit("job.queued", { tenant: "late", n: data.length });
      const before = await waits();
      await executor(url, plugin);
      const delivered = () => [...seen.values()].reduce((n, ns) => n + ns.length, 0);
      await until(() => delivered() >= data.length + 1, "every event delivered", 90_000);
      // Hundreds of reads again of the hot key, each a round trip waited for when read at once.
      expect((await waits()) - before, "round trips waited for while the backlog drained").toBeLessThan(20);
      await until(async () => (await floor()) === last.event?.seq, "the cursor at the end");
      for (const [tenant, ns] of seen) {
        const expected = [...data, { tenant: "late", n: data.length }].filter((d) => d.tenant === tenant).map((d) => d.n);
        expect(ns, tenant).toEqual(expected); // each once, in order
      }
      expect(seen.get("hot")).toHaveLength(5_000);
    },
  );
});
