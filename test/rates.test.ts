// @module-tag postgres

import { Code, ConnectError } from "@connectrpc/connect";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../server/src/clock.js";
import { KeyRates } from "../server/src/flow/rate.js";
import { keyPath } from "../server/src/log/key-path.js";
import { createClient } from "../sdk/ts/src/client.js";
import { runExecutor } from "../sdk/ts/src/executor.js";
import { definePlugin, manifestOf, type PluginDefinition } from "../sdk/ts/src/plugin.js";
import { startTestOwner, tempDir } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function owner() {
  const o = await startTestOwner({ shutdownGraceMs: 200 });
  cleanups.push(() => o.close());
  return { url: o.url, client: createClient({ url: o.url }) };
}

async function executor(url: string, plugin: PluginDefinition): Promise<void> {
  const ex = runExecutor({ url, plugins: [plugin], credits: 16, onError: () => {} });
  cleanups.push(() => ex.stop(100));
  await ex.ready;
}

/** One series of the owner's `GET /metrics` (0 when absent). */
async function metric(url: string, series: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

describe("token buckets per key (fake clock)", () => {
  const spec = { limit: 10, periodMs: 1_000, burst: 3, keyOf: keyPath("data.k") };

  it("take: a burst at once, then one token per period / limit; each key its own bucket", () => {
    let now = 0;
    const rates = new KeyRates(spec, () => now);
    expect([rates.take("a"), rates.take("a"), rates.take("a")]).toEqual([0, 0, 0]);
    expect(rates.take("a")).toBe(100); // nothing taken: the next token is 100 ms away
    expect(rates.take("b")).toBe(0);
    now = 99;
    expect(rates.take("a")).toBe(1);
    now = 100;
    expect(rates.take("a")).toBe(0);
    now = 10_000; // a quiet time fills the bucket up to its burst, no further
    expect([rates.take("a"), rates.take("a"), rates.take("a"), rates.take("a")]).toEqual([0, 0, 0, 100]);
  });

  it("emptied at a moment (a restarted owner's processor): every key's bucket fills from then, up to its burst", () => {
    let now = 5_000;
    const rates = new KeyRates(spec, () => now);
    expect(rates.take("a")).toBe(0);
    rates.emptiedAt(5_000);
    expect([rates.take("a"), rates.take("b")]).toEqual([100, 100]);
    now = 5_250;
    expect([rates.take("a"), rates.take("a"), rates.take("a")]).toEqual([0, 0, 50]);
    expect([rates.take("c"), rates.take("c"), rates.take("c")]).toEqual([0, 0, 50]);
    now = 60_000;
    expect([rates.take("d"), rates.take("d"), rates.take("d"), rates.take("d")]).toEqual([0, 0, 0, 100]);
  });

  it("reserve: each call books the next token in turn; a refund gives one back", () => {
    const now = 0;
    const rates = new KeyRates({ ...spec, burst: 1 }, () => now);
    expect([rates.reserve(null), rates.reserve(null), rates.reserve(null)]).toEqual([0, 100, 200]);
    rates.refund(null);
    expect(rates.reserve(null)).toBe(200);
  });
});

describe("rates through executors", () => {
  it("a processor's key past its rate waits (nothing dropped) while other keys go on, and the wait is in the metrics", async () => {
    const { url, client } = await owner();
    const done: { tenant: string; at: number }[] = [];
    const plugin = definePlugin({
      name: "rated",
      events: { "job.queued": { allow: ["*"] } },
      processors: {
        work: {
          on: "job.queued",
          concurrency: { key: "data.tenant", limit: 4, total: 8 },
          rate: { limit: 10, periodMs: 1_000, key: "data.tenant", burst: 1 },
          start: "beginning",
          run: (ctx) => void done.push({ tenant: String(ctx.data.tenant), at: Date.now() }),
        },
      },
    });
    await client.registerPlugin(manifestOf(plugin));
    await client.emitBatch([
      ...Array.from({ length: 11 }, (_, n) => ({ type: "job.queued", data: { tenant: "busy", n } })),
      { type: "job.queued", data: { tenant: "quiet", n: 0 } },
    ]);
    const start = Date.now();
    await executor(url, plugin);
    await until(() => done.length === 12, "every event handled", 20_000);
    const busy = done.filter((d) => d.tenant === "busy");
    // 11 starts at 10 a second with a burst of 1: 10 waits of 100 ms at least (a generous bound below).
    expect(busy[busy.length - 1].at - start).toBeGreaterThanOrEqual(800);
    const quiet = done.find((d) => d.tenant === "quiet")!;
    expect(quiet.at).toBeLessThan(busy[busy.length - 1].at);
    expect(await metric(url, 'chronolog_rate_waits_total{kind="processor",name="rated.work"}')).toBeGreaterThanOrEqual(5);
    expect(await metric(url, 'chronolog_rate_wait_seconds_total{kind="processor",name="rated.work"}')).toBeGreaterThan(0.3);
  });

  it("a processor's rate holds across an owner's restart: the restarted owner's buckets start empty, not full (fake clock)", async () => {
    const dataDir = tempDir();
    const clock = new ManualClock(Date.UTC(2026, 2, 2, 12));
    const done: number[] = [];
    const plugin = definePlugin({
      name: "rated",
      events: { "job.queued": { allow: ["*"] } },
      processors: { work: { on: "job.queued", rate: { limit: 10, periodMs: 1_000, burst: 5 }, start: "beginning", run: () => void done.push(clock.now()) } },
    });
    const first = await startTestOwner({ dataDir, clock, shutdownGraceMs: 200 });
    await createClient({ url: first.url }).registerPlugin(manifestOf(plugin));
    await first.close(); // the processor ran here (its cursor is saved)
    const again = await startTestOwner({ dataDir, clock, shutdownGraceMs: 200 });
    cleanups.push(() => again.close());
    await createClient({ url: again.url }).emitBatch(Array.from({ length: 6 }, (_, n) => ({ type: "job.queued", data: { n } })));
    await executor(again.url, plugin);
    await new Promise((resolve) => setTimeout(resolve, 500)); // a full bucket would have let 5 go at once
    expect(done).toEqual([]);
    clock.advance(1_000); // 10 tokens' time: the bucket holds its burst of 5
    await until(() => done.length === 5, "a burst's worth handled", 20_000);
    clock.advance(100);
    await until(() => done.length === 6, "the sixth, a token later", 20_000);
  });

  it("an action's calls past its rate wait in turn; a call that cannot wait long enough is UNAVAILABLE at once", async () => {
    const { url, client } = await owner();
    const plugin = definePlugin({
      name: "rated",
      actions: {
        ping: { allow: ["*"], rate: { limit: 20, periodMs: 1_000, burst: 1 }, run: () => ({ at: Date.now() }) },
        rare: { allow: ["*"], rate: { limit: 1, periodMs: 60_000 }, run: () => ({}) },
      },
    });
    await client.registerPlugin(manifestOf(plugin));
    await executor(url, plugin);
    const start = Date.now();
    const outputs = await Promise.all(Array.from({ length: 11 }, () => client.call("rated.ping", {})));
    expect(Math.max(...outputs.map((o) => Number(o.output.at))) - start).toBeGreaterThanOrEqual(400); // 10 waits of 50 ms
    expect(await metric(url, 'chronolog_rate_waits_total{kind="action",name="rated.ping"}')).toBeGreaterThanOrEqual(5);
    // One call a minute: the second may wait 5 s only, so it is refused at once.
    await client.call("rated.rare", {});
    const asked = Date.now();
    const e = await client.call("rated.rare", {}, { timeoutMs: 5_000 }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(e).toBeInstanceOf(ConnectError);
    expect((e as ConnectError).code).toBe(Code.Unavailable);
    expect((e as ConnectError).rawMessage).toContain("past its rate");
    expect(Date.now() - asked).toBeLessThan(4_000); // not after waiting its 5 s
  });
});
