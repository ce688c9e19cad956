// Metrics: an in-process owner's `GET /metrics`, scraped over HTTP/1.1 with fetch
// on the owner's own port, while a processor, an SDK executor, a Watch stream and a timer
// work. Values are read from the Prometheus text format; tests wait on scraped values
// (`until`), never on sleeps. The timer test runs on a ManualClock (as in time.test.ts): the
// clock moved exactly to the due moment makes the call 0 s late.
//
// @module-tag postgres

import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../server/src/clock.js";
import { createClient } from "../sdk/ts/src/client.js";
import { runExecutor, TerminalError, type DeliveryContext } from "../sdk/ts/src/executor.js";
import { definePlugin, manifestOf, type PluginDefinition } from "../sdk/ts/src/plugin.js";
import { startTestOwner } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

type Samples = Map<string, number>;

/** Scrapes `url`/metrics; samples by their series as written (`name` or `name{label="value",...}`). */
async function scrape(url: string, headers: Record<string, string> = {}): Promise<Samples> {
  const res = await fetch(`${url}/metrics`, { headers });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
  const samples: Samples = new Map();
  for (const line of (await res.text()).split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    samples.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return samples;
}

/** The value of one series; fails when the owner did not expose it. */
function value(samples: Samples, series: string): number {
  const v = samples.get(series);
  if (v === undefined) throw new Error(`no series ${series} in the scrape`);
  return v;
}

const metric = async (url: string, series: string) => value(await scrape(url), series);

async function startExecutor(url: string, plugin: PluginDefinition) {
  const ex = runExecutor({ url, plugins: [plugin], credits: 16, maxBackoffMs: 200, onError: () => {} });
  cleanups.push(() => ex.stop(100));
  await ex.ready;
  return ex;
}

describe("GET /metrics", () => {
  it("processor lag, in flight, retries and failures; executors; commits; watchers; log head", async () => {
    const owner = await startTestOwner({ shutdownGraceMs: 200 });
    cleanups.push(() => owner.close());
    const client = createClient({ url: owner.url });

    // Deliveries wait on `gate` until the test has seen them in flight.
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const handled: number[] = [];
    const plugin = definePlugin({
      name: "orders",
      events: { "order.placed": { allow: ["*"] } },
      processors: {
        track: {
          on: "order.placed",
          concurrency: 8,
          start: "beginning",
          retryDelaysMs: [10],
          async run(ctx: DeliveryContext) {
            await gate;
            if (ctx.data.kind === "flaky" && ctx.attempt === 1) throw new Error("first try fails");
            if (ctx.data.kind === "bad") throw new TerminalError("never");
            handled.push(Number(ctx.event.seq));
          },
        },
      },
    });
    await client.registerPlugin(manifestOf(plugin));

    const before = await scrape(owner.url);
    expect(value(before, "chronolog_executors_connected")).toBe(0);
    expect(value(before, 'chronolog_processor_lag_events{processor="orders.track"}')).toBe(0);
    expect(value(before, "chronolog_watchers")).toBe(0);

    await startExecutor(owner.url, plugin);
    await until(async () => (await metric(owner.url, "chronolog_executors_connected")) === 1, "executors_connected 1");

    // 3 events: one handled at once, one retried once, one failed terminally.
    const emitted = await client.emitBatch([
      { type: "order.placed", data: { kind: "ok" } },
      { type: "order.placed", data: { kind: "flaky" } },
      { type: "order.placed", data: { kind: "bad" } },
    ]);
    const lastSeq = Number(emitted[2].event!.seq);
    await until(async () => (await metric(owner.url, 'chronolog_processor_in_flight{processor="orders.track"}')) === 3, "3 deliveries in flight");
    const busy = await scrape(owner.url);
    expect(value(busy, "chronolog_log_head_seq")).toBe(lastSeq);
    expect(value(busy, 'chronolog_processor_lag_events{processor="orders.track"}')).toBe(3); // head 3, ack floor 0
    expect(value(busy, 'chronolog_processor_retries_total{processor="orders.track"}')).toBe(0);

    open();
    // Handled: the floor passes every event, including the processor.retried / processor.failed ones it does not take.
    await until(async () => {
      const s = await scrape(owner.url);
      return (
        value(s, 'chronolog_processor_failures_total{processor="orders.track"}') === 1 &&
        value(s, 'chronolog_processor_lag_events{processor="orders.track"}') === 0
      );
    }, "lag 0 after handling");
    const done = await scrape(owner.url);
    expect(handled).toHaveLength(2);
    expect(value(done, 'chronolog_processor_in_flight{processor="orders.track"}')).toBe(0);
    expect(value(done, 'chronolog_processor_retries_total{processor="orders.track"}')).toBe(1);
    expect(value(done, 'chronolog_processor_failures_total{processor="orders.track"}')).toBe(1);
    // Head: the 3 events, one processor.retried and one processor.failed.
    expect(value(done, "chronolog_log_head_seq")).toBe(lastSeq + 2);
    expect(value(done, "chronolog_commit_batch_size_count")).toBeGreaterThan(0);
    expect(value(done, "chronolog_commit_batch_size_sum")).toBeGreaterThanOrEqual(value(done, "chronolog_commit_batch_size_count"));
    expect(value(done, 'chronolog_commit_batch_size_bucket{le="+Inf"}')).toBe(value(done, "chronolog_commit_batch_size_count"));
    expect(value(done, "chronolog_commit_duration_seconds_count")).toBe(value(done, "chronolog_commit_batch_size_count"));
    expect(value(done, "chronolog_commit_duration_seconds_sum")).toBeGreaterThan(0);
    expect(value(done, "chronolog_executors_connected")).toBe(1);
    // process_* default metrics on the same page.
    expect(value(done, "process_start_time_seconds")).toBeGreaterThan(0);
    expect(value(done, "process_resident_memory_bytes")).toBeGreaterThan(0);

    // A Watch stream is counted while it is open.
    const watching = new AbortController();
    const seen: string[] = [];
    const reading = (async () => {
      for await (const e of client.watch({}, { signal: watching.signal })) seen.push(e.type);
    })().catch(() => {});
    await until(async () => (await metric(owner.url, "chronolog_watchers")) === 1, "one watcher");
    watching.abort();
    await reading;
    await until(async () => (await metric(owner.url, "chronolog_watchers")) === 0, "no watcher after the stream ended");
    expect(seen).toContain("order.placed");
  });

  it("the stages of each event's way: emit → committed, committed → written, written → ack, finished → cursor saved", async () => {
    const owner = await startTestOwner({ shutdownGraceMs: 200 });
    cleanups.push(() => owner.close());
    const client = createClient({ url: owner.url });
    const plugin = definePlugin({
      name: "shop",
      events: { "cart.checked_out": { allow: ["*"] } },
      processors: {
        bill: {
          on: "cart.checked_out",
          concurrency: 8,
          start: "beginning",
          retryDelaysMs: [10],
          run(ctx: DeliveryContext) {
            if (ctx.data.flaky === true && ctx.attempt === 1) throw new Error("first try fails");
          },
        },
      },
    });
    await client.registerPlugin(manifestOf(plugin));
    const bill = (stage: string, part: string) => `chronolog_delivery_${stage}_seconds_${part}{processor="shop.bill"}`;
    const before = await scrape(owner.url);
    for (const stage of ["send", "ack", "cursor", "latency"]) expect(value(before, bill(stage, "count"))).toBe(0);
    const emitted0 = value(before, "chronolog_emit_commit_seconds_count");

    await startExecutor(owner.url, plugin);
    const began = performance.now();
    // 8 events: 5 on the SDK's Publish stream, 3 in one EmitBatch, one of which fails its first try.
    await Promise.all(Array.from({ length: 5 }, (_, i) => client.emit("cart.checked_out", { n: i })));
    await client.emitBatch([
      { type: "cart.checked_out", data: { n: 5 } },
      { type: "cart.checked_out", data: { n: 6, flaky: true } },
      { type: "cart.checked_out", data: { n: 7 } },
    ]);
    await until(async () => (await metric(owner.url, bill("cursor", "count"))) === 8, "8 events past the saved cursor");

    const after = await scrape(owner.url);
    const elapsedSeconds = (performance.now() - began) / 1000; // no stage of these events lasted longer
    expect(value(after, "chronolog_emit_commit_seconds_count") - emitted0).toBe(8); // one per event answered
    expect(value(after, bill("send", "count"))).toBe(8); // each event's first try
    expect(value(after, bill("ack", "count"))).toBe(9); // every try answered: the flaky event's two
    expect(value(after, bill("latency", "count"))).toBe(8); // committed → first answer, once per event
    // An event's latency is its first try's send and ack stages together.
    expect(value(after, bill("latency", "sum"))).toBeGreaterThanOrEqual(value(after, bill("send", "sum")) - 1e-9);
    expect(value(after, bill("latency", "sum"))).toBeLessThanOrEqual(value(after, bill("send", "sum")) + value(after, bill("ack", "sum")) + 1e-9);
    // ListProcessors (the console's processors view) has its percentiles over the last minute.
    const latency = (await client.admin.listProcessors({})).processors.find((p) => p.name === "shop.bill")?.latency;
    expect(latency?.count).toBe(8n);
    expect(latency!.p50Ms).toBeGreaterThan(0);
    expect(latency!.p99Ms).toBeGreaterThanOrEqual(latency!.p50Ms);
    expect(latency!.p99Ms).toBeLessThanOrEqual(elapsedSeconds * 1000 * 2); // within the bucket holding the slowest (bounds at most 2× apart)
    expect(latency!.windowSeconds).toBeGreaterThan(0);
    expect(value(after, 'chronolog_processor_retries_total{processor="shop.bill"}')).toBe(1);
    for (const series of [
      "chronolog_emit_commit_seconds",
      "chronolog_delivery_send_seconds",
      "chronolog_delivery_ack_seconds",
      "chronolog_delivery_cursor_seconds",
      "chronolog_delivery_latency_seconds",
    ]) {
      const labels = series === "chronolog_emit_commit_seconds" ? "" : ',processor="shop.bill"';
      const buckets = [...after].filter(([k]) => k.startsWith(`${series}_bucket{`) && k.endsWith(`${labels}}`)).map(([, v]) => v);
      expect(buckets).toHaveLength(28); // 0.1 ms to 10 s, and +Inf
      expect(buckets).toEqual([...buckets].sort((a, b) => a - b)); // cumulative
      const count = value(after, labels ? `${series}_count{${labels.slice(1)}}` : `${series}_count`);
      expect(value(after, `${series}_bucket{le="+Inf"${labels}}`)).toBe(count);
      const sum = value(after, labels ? `${series}_sum{${labels.slice(1)}}` : `${series}_sum`);
      expect(sum).toBeGreaterThan(0);
      expect(sum).toBeLessThanOrEqual(count * elapsedSeconds);
    }
    // A cursor is saved at most 20 ms after the floor moves: the event that moved it waits that long.
    expect(value(after, bill("cursor", "sum"))).toBeGreaterThan(0.02);
  });

  it("timers pending and the lateness histogram after a timer fires (ManualClock)", async () => {
    const T0 = Date.UTC(2026, 2, 2, 12);
    const clock = new ManualClock(T0);
    const owner = await startTestOwner({ clock, timers: clock, heartbeatIntervalMs: 600_000, shutdownGraceMs: 200 });
    cleanups.push(() => owner.close());
    const client = createClient({ url: owner.url });
    const calls: unknown[] = [];
    const plugin = definePlugin({ name: "remind", actions: { send: { allow: ["*"], run: (ctx) => void calls.push(ctx.input) } } });
    await client.registerPlugin(manifestOf(plugin));
    await startExecutor(owner.url, plugin);

    await client.schedule("remind.send", { to: "ana" }, { at: T0 + 60_000 }, { timerId: "once" });
    const armed = await scrape(owner.url);
    expect(value(armed, "chronolog_timers_pending")).toBe(1);
    expect(value(armed, "chronolog_timer_lateness_seconds_count")).toBe(0);

    clock.advance(60_000); // exactly the due moment: 0 ms late
    await until(() => calls.length === 1, "the timer's call");
    await until(async () => (await metric(owner.url, "chronolog_timer_lateness_seconds_count")) === 1, "one lateness observation");
    const fired = await scrape(owner.url);
    expect(value(fired, "chronolog_timers_pending")).toBe(0); // an `at` timer is spent once called
    expect(value(fired, 'chronolog_timer_lateness_seconds_bucket{le="0"}')).toBe(1);
    expect(value(fired, "chronolog_timer_lateness_seconds_sum")).toBe(0);
    expect(owner.lateness.snapshot().count).toBe(1); // the in-memory recorder saw the same call
    expect(value(fired, "chronolog_timer_calls_sent_late_total")).toBe(0); // written at its moment, not after

    // Late, but not because the owner's commits and send path fell behind: not counted.
    await client.schedule("remind.send", { to: "bo" }, { at: T0 + 120_000 }, { timerId: "jumped" });
    clock.advance(60_050); // the clock jumps past the moment before the claim (a ring can only follow it)
    await until(() => calls.length === 2, "the jumped timer's call");
    await client.delay("remind.send", { to: "cy" }, { intervalMs: 0 }, "unbounded"); // due when set
    await until(() => calls.length === 3, "the delay's call");
    await until(async () => (await metric(owner.url, "chronolog_timer_lateness_seconds_count")) === 3, "three lateness observations");
    const three = await scrape(owner.url);
    expect(value(three, "chronolog_timer_calls_sent_late_total")).toBe(0);
    // Each call's lateness, stage by stage: the jumped timer's 50 ms were the claim's (the clock rang past its moment); sending and starting added none.
    for (const stage of ["claim", "send", "start"]) expect(value(three, `chronolog_timer_${stage}_seconds_count`)).toBe(3);
    expect(value(three, "chronolog_timer_claim_seconds_sum")).toBeCloseTo(0.05, 9);
    expect(value(three, "chronolog_timer_send_seconds_sum")).toBe(0);
    expect(value(three, "chronolog_timer_start_seconds_sum")).toBe(0);
    expect(value(three, "chronolog_timer_lateness_seconds_sum")).toBeCloseTo(0.05, 9);
    expect(value(three, 'chronolog_timer_claim_seconds_bucket{le="0.03"}')).toBe(2);
    expect(value(three, 'chronolog_timer_claim_seconds_bucket{le="0.05"}')).toBe(3);
  });

  it("a delay's call on the owner's own clock: its claim, send and start stages add up to its lateness", async () => {
    const owner = await startTestOwner({ shutdownGraceMs: 200 });
    cleanups.push(() => owner.close());
    const client = createClient({ url: owner.url });
    const calls: unknown[] = [];
    const plugin = definePlugin({ name: "remind", actions: { send: { allow: ["*"], run: (ctx) => void calls.push(ctx.input) } } });
    await client.registerPlugin(manifestOf(plugin));
    await startExecutor(owner.url, plugin);
    const before = await scrape(owner.url);
    for (const stage of ["claim", "send", "start"]) expect(value(before, `chronolog_timer_${stage}_seconds_count`)).toBe(0);

    const began = performance.now();
    await client.delay("remind.send", { to: "di" }, { intervalMs: 400 }, "unbounded"); // past the lookahead: armed, then claimed ahead of its moment
    await until(() => calls.length === 1, "the delay's call");
    await until(async () => (await metric(owner.url, "chronolog_timer_lateness_seconds_count")) === 1, "its lateness observed");
    const elapsedSeconds = (performance.now() - began) / 1000;
    const fired = await scrape(owner.url);
    let stages = 0;
    for (const stage of ["claim", "send", "start"]) {
      expect(value(fired, `chronolog_timer_${stage}_seconds_count`)).toBe(1);
      expect(value(fired, `chronolog_timer_${stage}_seconds_bucket{le="+Inf"}`)).toBe(1);
      const sum = value(fired, `chronolog_timer_${stage}_seconds_sum`);
      expect(sum).toBeGreaterThanOrEqual(0);
      expect(sum).toBeLessThan(elapsedSeconds);
      stages += sum;
    }
    expect(stages).toBeCloseTo(value(fired, "chronolog_timer_lateness_seconds_sum"), 6);
  });

  it("the event-loop delay histogram keeps a stall between scrapes, for every scraper (it never starts again at a scrape)", async () => {
    const owner = await startTestOwner();
    cleanups.push(() => owner.close());
    const count = (s: Samples) => value(s, "chronolog_event_loop_delay_seconds_count");
    const under = (s: Samples, le: string) => value(s, `chronolog_event_loop_delay_seconds_bucket{le="${le}"}`);
    const before = await scrape(owner.url);
    const stalled = performance.now() + 300;
    while (performance.now() < stalled); // the owner's thread held for 300 ms
    await until(async () => count(await scrape(owner.url)) > count(before) + 2, "samples after the stall");
    const first = await scrape(owner.url);
    const second = await scrape(owner.url); // another scraper's: the same series, grown, not started again
    for (const s of [first, second]) expect(count(s) - under(s, "0.25")).toBeGreaterThan(count(before) - under(before, "0.25")); // the stall's sample is over 250 ms
    expect(count(second)).toBeGreaterThanOrEqual(count(first));
  });

  it("with principals: an admin bearer token is required (401 without or unknown, 403 for a non-admin)", async () => {
    const tokens = { admin: "admin-token-0123456789", client: "client-token-0123456789" };
    const owner = await startTestOwner({
      config: {
        principals: [
          { name: "ops", token: tokens.admin, role: "admin" },
          { name: "web", token: tokens.client, role: "client" },
        ],
      },
    });
    cleanups.push(() => owner.close());
    const none = await fetch(`${owner.url}/metrics`);
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toContain("Bearer");
    expect(await none.text()).toContain("missing bearer token");
    expect((await fetch(`${owner.url}/metrics`, { headers: { authorization: "Bearer not-a-known-token-000" } })).status).toBe(401);
    const client = await fetch(`${owner.url}/metrics`, { headers: { authorization: `Bearer ${tokens.client}` } });
    expect(client.status).toBe(403);
    expect(await client.text()).toContain("admin role is needed");
    const admin = await scrape(owner.url, { authorization: `Bearer ${tokens.admin}` });
    expect(value(admin, "chronolog_executors_connected")).toBe(0);
    expect((await fetch(`${owner.url}/metrics`, { method: "POST", headers: { authorization: `Bearer ${tokens.admin}` } })).status).toBe(405);
  });
});
