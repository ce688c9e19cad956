// Cancel on an event, through the real transport and a real executor: a delay or timer names the
// events that cancel it; a matching event removes it in the commit that records the event
// (`timer.unscheduled` caused by it), other events leave it; a declared schedule is paused; the
// index survives a restart; and the race of many delays due at the instant their cancelling
// events are emitted ends, for each delay, in its call or in its cancel, never both.
//
// @module-tag postgres

import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, type ChronologClient } from "../sdk/ts/src/client.js";
import type { Event } from "@chronolog/sdk/gen/chronolog/v1/event_pb";
import { runExecutor, type ActionContext, type Executor } from "../sdk/ts/src/executor.js";
import { definePlugin } from "../sdk/ts/src/plugin.js";
import { cli } from "./helpers/cli.js";
import { onPostgres, startTestOwner } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

const plugin = definePlugin({
  name: "shop",
  events: {
    "order.paid": { allow: ["*"], schema: { type: "object", properties: { order_id: { type: "string" }, region: { type: "string" } } } },
    "order.noted": { allow: ["*"] },
  },
  actions: {
    remind: {
      allow: ["*"],
      inputSchema: { type: "object", required: ["order_id"], properties: { order_id: { type: "string" }, region: { type: "string" } } },
      run: () => {},
    },
  },
  schedules: {
    dunning: {
      action: "remind",
      input: { order_id: "declared-1" },
      everyMs: 3_600_000,
      cancelOn: [{ type: "order.paid", match: { "data.order_id": "input.order_id" } }],
    },
  },
});

const repo = new URL("../", import.meta.url).pathname;
const python = join(repo, ".venv/bin/python");

describe("cancel on an event", () => {
  let owner: Awaited<ReturnType<typeof startTestOwner>>;
  let client: ChronologClient;
  let executor: Executor;
  const calls: ActionContext[] = [];

  const start = async (dataDir?: string) => {
    owner = await startTestOwner({ shutdownGraceMs: 100, ...(dataDir ? { dataDir } : {}) });
    client = createClient({ url: owner.url });
    executor = runExecutor({
      url: owner.url,
      plugins: [{ ...plugin, actions: { remind: { ...plugin.actions!.remind, run: (ctx) => void calls.push(ctx) } } }],
      onError: () => {},
    });
    await executor.ready;
  };
  beforeAll(() => start());
  afterAll(async () => {
    await executor?.stop(50);
    await owner?.close();
  });

  const events = async (type: string): Promise<Event[]> => {
    const out: Event[] = [];
    for await (const e of client.read({ types: [type] })) out.push(e);
    return out;
  };
  const paid = { type: "order.paid", match: { "data.order_id": "input.order_id" } };

  it("removes a delay when a matching event is emitted, in that event's commit, and leaves it for others", async () => {
    const { delayId } = await client.delay("shop.remind", { order_id: "o-1" }, { intervalMs: 3_600_000 }, "unbounded", { cancelOn: [paid] });
    const other = await client.delay("shop.remind", { order_id: "o-2" }, { intervalMs: 3_600_000 }, "unbounded", { cancelOn: [paid] });
    expect((await client.getTimer(delayId)).cancelOn.map((c) => [c.type, c.match])).toEqual([["order.paid", { "data.order_id": "input.order_id" }]]);

    await client.emit("order.noted", { order_id: "o-1" }); // another type
    await client.emit("order.paid", { order_id: "o-3" }); // another order
    await client.emit("order.paid", { region: "eu" }); // no order id
    expect((await client.getTimer(delayId)).nextDue).toBeDefined();

    const event = await client.emit("order.paid", { order_id: "o-1" });
    // Acknowledged: the delay is gone already (same commit), with the event as the cause of its removal.
    await expect(client.getTimer(delayId)).rejects.toMatchObject({ code: Code.NotFound });
    const removed = (await events("timer.unscheduled")).filter((e) => e.data?.timer_id === delayId);
    expect(removed).toHaveLength(1);
    expect(removed[0].cause).toBe(event.event!.id);
    expect(removed[0].seq).toBe(event.event!.seq + 1n);
    expect(removed[0].data?.cancelled_by).toEqual({ event_id: event.event!.id, type: "order.paid" });
    expect((await client.getTimer(other.delayId)).nextDue).toBeDefined();

    // Emitting it again cancels nothing more.
    await client.emit("order.paid", { order_id: "o-1" });
    expect((await events("timer.unscheduled")).filter((e) => e.data?.timer_id === delayId)).toHaveLength(1);
    await client.cancelDelay(other.delayId);
  });

  it("cancels a timer only by an event of its own space (a timer of no space only by events of none)", async () => {
    const { delayId } = await client.delay("shop.remind", { order_id: "o-s" }, { intervalMs: 3_600_000 }, "unbounded", {
      cancelOn: [paid],
      actor: { in: "space:acme" },
    });
    await client.emit("order.paid", { order_id: "o-s" }, { actor: { in: "space:other" } });
    await client.emit("order.paid", { order_id: "o-s" });
    expect((await client.getTimer(delayId)).nextDue).toBeDefined();
    await client.emit("order.paid", { order_id: "o-s" }, { actor: { in: "space:acme" } });
    await expect(client.getTimer(delayId)).rejects.toMatchObject({ code: Code.NotFound });

    // A timer of no space is not cancelled by a space's event: a tenant cannot cancel what it could not by asking.
    const none = await client.delay("shop.remind", { order_id: "o-n" }, { intervalMs: 3_600_000 }, "unbounded", { cancelOn: [paid] });
    await client.emit("order.paid", { order_id: "o-n" }, { actor: { in: "space:acme" } });
    expect((await client.getTimer(none.delayId)).nextDue).toBeDefined();
    await client.emit("order.paid", { order_id: "o-n" });
    await expect(client.getTimer(none.delayId)).rejects.toMatchObject({ code: Code.NotFound });
  });

  it("matches on several paths and cancels recurring timers too; an entry without match takes any event of the type", async () => {
    const both = { type: "order.paid", match: { "data.order_id": "input.order_id", "data.region": "input.region" } };
    const timer = await client.schedule("shop.remind", { order_id: "o-5", region: "eu" }, { everyMs: 60_000 }, { cancelOn: [both] });
    const any = await client.delay("shop.remind", { order_id: "o-6" }, { intervalMs: 3_600_000 }, "unbounded", { cancelOn: [{ type: "order.noted" }] });
    await client.emit("order.paid", { order_id: "o-5", region: "us" });
    expect((await client.getTimer(timer.id)).nextDue).toBeDefined();
    await client.emit("order.paid", { order_id: "o-5", region: "eu" });
    await expect(client.getTimer(timer.id)).rejects.toMatchObject({ code: Code.NotFound });
    await client.emit("order.noted", { anything: 1 });
    await expect(client.getTimer(any.delayId)).rejects.toMatchObject({ code: Code.NotFound });
  });

  it.skipIf(!existsSync(python) && !process.env.CI)("from the Python client", { tags: ["serial"] }, async () => {
    const script = [
      "import sys",
      "from chronolog import Client",
      "client = Client(sys.argv[1])",
      "paid = [{'type': 'order.paid', 'match': {'data.order_id': 'input.order_id'}}]",
      "d = client.delay('shop.remind', {'order_id': 'py-1'}, {'interval_ms': 3600000}, 'unbounded', cancel_on=paid)",
      "t = client.schedule('shop.remind', {'order_id': 'py-2'}, {'every_ms': 60000}, cancel_on=paid)",
      "b = client.delay_batch([{'action': 'shop.remind', 'input': {'order_id': 'py-3'}, 'when': {'interval_ms': 3600000}, 'overdue': 'unbounded', 'cancel_on': paid}])",
      "print(d.delay_id, t.id, b[0].delay_id, [c.type for c in client.get_timer(d.delay_id).cancel_on])",
    ].join("\n");
    const { stdout } = await promisify(execFile)(python, ["-c", script, owner.url], {
      env: { ...process.env, PYTHONPATH: join(repo, "sdk/python") },
      timeout: 30_000,
    });
    const [delayId, timerId, batchId, types] = stdout.trim().split(" ");
    expect(types).toBe("['order.paid']");
    for (const order of ["py-1", "py-2", "py-3"]) await client.emit("order.paid", { order_id: order });
    for (const id of [delayId, timerId, batchId]) await expect(client.getTimer(id)).rejects.toMatchObject({ code: Code.NotFound });
  });

  it("from the CLI: delay --cancel-on", { tags: ["serial"] }, async () => {
    const run = (args: string[]) => cli(["--url", owner.url, ...args]);
    const armed = await run([
      "delay",
      "shop.remind",
      '{"order_id":"cli-1"}',
      "--in-ms",
      "3600000",
      "--overdue",
      "unbounded",
      "--id",
      "cli-1",
      "--cancel-on",
      "order.paid:data.order_id=input.order_id",
    ]);
    expect(armed.code).toBe(0);
    expect((await client.getTimer("cli-1")).cancelOn.map((c) => c.match)).toEqual([{ "data.order_id": "input.order_id" }]);
    await client.emit("order.paid", { order_id: "cli-1" });
    await expect(client.getTimer("cli-1")).rejects.toMatchObject({ code: Code.NotFound });
  });

  it("refuses an undeclared event type, a bad path and an input path that is absent", async () => {
    const refused = async (cancelOn: { type: string; match?: Record<string, string> }[]) => {
      const error = await client.delay("shop.remind", { order_id: "o-7" }, { intervalMs: 60_000 }, "unbounded", { cancelOn }).then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
      expect(error?.code).toBe(Code.InvalidArgument);
      return error?.rawMessage;
    };
    expect(await refused([{ type: "order.refunded" }])).toMatch(/cancel_on\[0\]\.type.*not declared/);
    expect(await refused([{ type: "order.paid", match: { order_id: "input.order_id" } }])).toMatch(/not a path in the event's data/);
    expect(await refused([{ type: "order.paid", match: { "data.order_id": "order_id" } }])).toMatch(/not a path in the input/);
    expect(await refused([{ type: "order.paid", match: { "data.order_id": "input.customer" } }])).toMatch(/input\.customer is absent/);
  });

  it.runIf(onPostgres)(
    "on PostgreSQL, emits of a type timers cancel on wait for no round trip, whether a timer waits on their key (it is cancelled) or none does",
    async () => {
      /** The round trips the owner's thread waited for so far (chronolog_store_waits_total, both connections). */
      const waits = async () => {
        const text = await (await fetch(`${owner.url}/metrics`)).text();
        return [...text.matchAll(/^chronolog_store_waits_total\{[^}]*\} (\d+)$/gm)].reduce((sum, [, n]) => sum + Number(n), 0);
      };
      const { delayId } = await client.delay("shop.remind", { order_id: "w-1" }, { intervalMs: 3_600_000 }, "unbounded", { cancelOn: [paid] });
      const ids = await Promise.all(
        Array.from(
          { length: 21 },
          async (_, i) => (await client.delay("shop.remind", { order_id: `w-m-${i}` }, { intervalMs: 3_600_000 }, "unbounded", { cancelOn: [paid] })).delayId,
        ),
      );
      await client.emit("order.paid", { order_id: "w-m-20" }); // the statements prepared on the writer
      const before = await waits();
      await Promise.all(Array.from({ length: 100 }, (_, i) => client.emit("order.paid", { order_id: `w-other-${i}` })));
      expect(await waits(), "waits for 100 emits no timer waits on").toBeLessThan(before + 10); // a few others may come meanwhile
      await Promise.all(Array.from({ length: 20 }, (_, i) => client.emit("order.paid", { order_id: `w-m-${i}` })));
      expect(await waits(), "waits for 20 emits that each cancel a delay").toBeLessThan(before + 10);
      for (const id of ids) await expect(client.getTimer(id)).rejects.toMatchObject({ code: Code.NotFound });
      await client.emit("order.paid", { order_id: "w-1" });
      await expect(client.getTimer(delayId)).rejects.toMatchObject({ code: Code.NotFound });
    },
  );

  it("pauses a declared schedule, caused by the event", async () => {
    const id = "shop/dunning";
    expect((await client.getTimer(id)).nextDue).toBeDefined();
    const event = await client.emit("order.paid", { order_id: "declared-1" });
    const timer = await client.getTimer(id);
    expect(timer.paused).toBe(true);
    const paused = (await events("timer.paused")).filter((e) => e.data?.timer_id === id);
    expect(paused.map((e) => e.cause)).toEqual([event.event!.id]);
    await client.resumeTimer(id);
  });

  it("keeps the index across a restart", async () => {
    const { delayId } = await client.delay("shop.remind", { order_id: "o-9" }, { intervalMs: 3_600_000 }, "unbounded", { cancelOn: [paid] });
    const dataDir = owner.dataDir;
    await executor.stop(50);
    await owner.close();
    await start(dataDir);
    await client.emit("order.paid", { order_id: "o-9" });
    await expect(client.getTimer(delayId)).rejects.toMatchObject({ code: Code.NotFound });
  });

  it("races delays due at one instant with their cancelling events: each ends in its call or its cancel, never both", async () => {
    const n = 240;
    const dueAt = Date.now() + 1_500;
    const ids = Array.from({ length: n }, (_, i) => `race-${i}`);
    await client.delayBatch(
      ids.map((id) => ({ action: "shop.remind", input: { order_id: id }, when: { at: dueAt }, overdue: "unbounded", delayId: id, cancelOn: [paid] })),
    );
    // Every cancelling event is its own Emit, from 16 clients at once, sent at its own instant spread evenly over 300 ms around
    // the delays' one moment: their commits land before, among and after the claims.
    const clients = Array.from({ length: 16 }, () => createClient({ url: owner.url }));
    await Promise.all(clients.map((c) => c.emit("order.noted", {}))); // connected before the moment
    const order = ids.map((id) => ({ id, r: Math.random() })).sort((a, b) => a.r - b.r);
    await Promise.all(
      order.map(async ({ id }, i) => {
        await new Promise((r) => setTimeout(r, dueAt - 150 + (300 * i) / n - Date.now()));
        await clients[i % clients.length].emit("order.paid", { order_id: id });
      }),
    );
    const cancelled = new Set(
      (await events("timer.unscheduled")).filter((e) => String(e.data?.timer_id).startsWith("race-")).map((e) => String(e.data?.timer_id)),
    );
    await until(
      () => calls.filter((c) => String(c.input.order_id).startsWith("race-")).length + cancelled.size >= n,
      "every delay called or cancelled",
      20_000,
    );
    await new Promise((r) => setTimeout(r, 500)); // a call after a cancel would show up now
    const called = calls.map((c) => String(c.input.order_id)).filter((id) => id.startsWith("race-"));
    expect(new Set(called).size).toBe(called.length); // each call once
    expect(called.filter((id) => cancelled.has(id))).toEqual([]); // never both
    expect(called.length + cancelled.size).toBe(n); // and each one of them
    // Claimed and started at the moment, never inside the clock's lookahead before it.
    const started = (await events("action.started")).filter((e) => String((e.data?.input as { order_id?: string })?.order_id ?? "").startsWith("race-"));
    expect(started).toHaveLength(called.length);
    for (const e of started) expect(Number(e.at!.seconds) * 1000 + e.at!.nanos / 1e6).toBeGreaterThanOrEqual(dueAt);
    console.log(`race: ${called.length} called, ${cancelled.size} cancelled`); // both outcomes, in proportions the machine's load decides
  }, 40_000);
});
