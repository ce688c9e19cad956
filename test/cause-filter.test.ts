// ReadLog's and Watch's cause filter, through the real transport: an in-process owner on a
// manual clock with principals in two spaces, and an SDK executor whose processor, on
// `booking.requested`, notes it, calls a recorded action that sets a delay, and calls a
// `record: false` action that emits; the delay's call (when the test moves time) emits too.
// The filter finds what was made directly under an event or a call, and the whole chain down
// to the delay's call (paged, and followed live by a Watch), for a reader who may see it only.
//
// @module-tag postgres

import { Code } from "@connectrpc/connect";
import { afterEach, describe, expect, it } from "vitest";
import type { Event } from "@chronolog/sdk/gen/chronolog/v1/event_pb";
import { ManualClock } from "../server/src/clock.js";
import { createClient, type ChronologClient } from "../sdk/ts/src/client.js";
import { runExecutor } from "../sdk/ts/src/executor.js";
import { definePlugin, manifestOf } from "../sdk/ts/src/plugin.js";
import { cli } from "./helpers/cli.js";
import { expectConnectError } from "./helpers/log-snapshot.js";
import { startTestOwner } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

const T0 = Date.UTC(2026, 2, 2, 12);
const MINUTE = 60_000;
const tokens = { admin: "cause-admin-token-0123", a: "cause-a-client-token-0123", b: "cause-b-client-token-0123", runner: "cause-runner-token-0123" };

const plugin = definePlugin({
  name: "shop",
  events: {
    "booking.requested": { allow: ["*"], schema: { type: "object" } },
    "booking.noted": { schema: { type: "object" } },
    "booking.quiet": { schema: { type: "object" } },
    "booking.reminded": { schema: { type: "object" } },
  },
  actions: {
    // Client a may read confirm's action.* events; remind's (and the timer.* of the delay that calls it) are withheld from it.
    confirm: {
      read: ["web-a"],
      run: async (ctx) => ({ delay: (await ctx.delay("shop.remind", { booking: ctx.input.booking }, { intervalMs: MINUTE }, "unbounded")).delayId }),
    },
    quiet: { record: false, run: async (ctx) => void (await ctx.emit("booking.quiet", { booking: ctx.input.booking })) },
    remind: { run: async (ctx) => void (await ctx.emit("booking.reminded", { booking: ctx.input.booking })) },
  },
  processors: {
    handler: {
      on: "booking.requested",
      start: "beginning",
      run: async (ctx) => {
        const confirm = await ctx.call("shop.confirm", { booking: ctx.data.booking });
        const quiet = await ctx.call("shop.quiet", { booking: ctx.data.booking });
        await ctx.emit("booking.noted", { booking: ctx.data.booking, confirm_call: confirm.callId, quiet_call: quiet.callId });
      },
    },
  },
});

async function all(client: ChronologClient, query: Parameters<ChronologClient["read"]>[0], pageSize = 500): Promise<Event[]> {
  const events: Event[] = [];
  for await (const e of client.read(query, pageSize)) events.push(e);
  return events;
}

const typesOf = (events: Event[]) => events.map((e) => e.type);

/**
 * An owner with the executor and the chain of one `booking.requested` emitted by a client of
 * space a, up to the delay (not yet due: the clock has not moved).
 */
async function chainOwner() {
  const clock = new ManualClock(T0);
  const owner = await startTestOwner({
    clock,
    timers: clock,
    heartbeatIntervalMs: 600_000,
    shutdownGraceMs: 200,
    config: {
      principals: [
        { name: "ops", token: tokens.admin, role: "admin" },
        { name: "web-a", token: tokens.a, role: "client", actor: { in: "space:a" } },
        { name: "web-b", token: tokens.b, role: "client", actor: { in: "space:b" } },
        { name: "runner", token: tokens.runner, role: "executor" },
      ],
    },
  });
  cleanups.push(() => owner.close());
  const as = (who: keyof typeof tokens) => createClient({ url: owner.url, token: tokens[who] });
  const admin = as("admin");
  await admin.registerPlugin(manifestOf(plugin));
  const ex = runExecutor({ url: owner.url, token: tokens.runner, plugins: [plugin], credits: 8, maxBackoffMs: 200, onError: () => {} });
  cleanups.push(() => ex.stop(100));
  await ex.ready;

  const { event: root } = await as("a").emit("booking.requested", { booking: "b1" });
  let noted: Event | undefined;
  await until(async () => (noted = (await all(admin, { types: ["booking.noted"] }))[0]) !== undefined, "the processor's note");
  const confirmCall = String(noted!.data?.confirm_call);
  const quietCall = String(noted!.data?.quiet_call);
  await until(async () => (await all(admin, { types: ["action.completed"] })).length === 1, "the confirm call's end");

  return { owner, clock, as, admin, root: root!, confirmCall, quietCall };
}

describe("the cause filter", () => {
  it("reads what was made under an event or a call, directly or down the chain through a delay, for readers who may see it", async () => {
    const { clock, as, admin, root, confirmCall, quietCall } = await chainOwner();

    // Directly under the event: the processor's calls and its note (the record: false call leaves no event).
    expect(typesOf(await all(admin, { cause: root.id }))).toEqual(["action.started", "booking.noted"]);
    // Under a recorded call: its action.started's work and records; under a record: false call: its run's work.
    expect(typesOf(await all(admin, { cause: confirmCall }))).toEqual(["timer.scheduled", "action.completed"]);
    expect(typesOf(await all(admin, { cause: quietCall }))).toEqual(["booking.quiet"]);
    // With types.
    expect(typesOf(await all(admin, { cause: root.id, types: ["booking.noted"] }))).toEqual(["booking.noted"]);

    // A watch down the chain as client a, opened before the delay's call is made, follows it live.
    const watched: Event[] = [];
    const stop = new AbortController();
    let watchError: unknown;
    const watching = (async () => {
      try {
        for await (const e of as("a").watch({ cause: root.id, descendants: true }, { signal: stop.signal })) watched.push(e);
      } catch (e) {
        if (!stop.signal.aborted) watchError = e;
      }
    })();
    cleanups.push(() => stop.abort());
    await until(() => watched.length === 3, "the watch to catch up");
    clock.advance(MINUTE + 1_000);
    await until(async () => (await all(admin, { types: ["action.completed"] })).length === 2, "the delay's call to end");

    const chain = ["action.started", "timer.scheduled", "action.completed", "booking.noted", "action.started", "booking.reminded", "action.completed"];
    const tree = await all(admin, { cause: root.id, descendants: true });
    expect(typesOf(tree)).toEqual(chain);
    expect(tree.find((e) => e.type === "booking.reminded")?.data?.booking).toBe("b1");
    // Client a: the walk goes through the delay and remind's call, withheld from it, to the reminder below them.
    const treeOfA = await all(as("a"), { cause: root.id, descendants: true });
    expect(typesOf(treeOfA)).toEqual(["action.started", "action.completed", "booking.noted", "booking.reminded"]);
    // Paged two at a time: the same events, in seq order.
    expect((await all(as("a"), { cause: root.id, descendants: true }, 2)).map((e) => e.id)).toEqual(treeOfA.map((e) => e.id));
    expect((await all(admin, { cause: root.id, descendants: true }, 2)).map((e) => e.id)).toEqual(tree.map((e) => e.id));
    const page = await admin.log.readLog({ cause: root.id, descendants: true, pageSize: 3 });
    expect(page.events).toHaveLength(3);
    expect(page.nextPageToken).not.toBe("");
    expect(page.treeCut).toBe(false);
    // Down the chain of the call: from the delay on.
    expect(typesOf(await all(admin, { cause: confirmCall, descendants: true }))).toEqual([
      "timer.scheduled",
      "action.completed",
      "action.started",
      "booking.reminded",
      "action.completed",
    ]);
    // From a seq, with types and where.
    const reminded = tree.find((e) => e.type === "booking.reminded")!;
    expect(
      await all(admin, { cause: root.id, descendants: true, afterSeq: reminded.seq - 1n, types: ["booking.reminded"], where: { booking: "b1" } }),
    ).toHaveLength(1);
    expect(await all(admin, { cause: root.id, descendants: true, where: { booking: "other" } })).toHaveLength(0);

    await until(() => watched.length === treeOfA.length, "the watch to follow the delay's call");
    expect(watched.map((e) => e.id)).toEqual(treeOfA.map((e) => e.id));
    stop.abort();
    await watching;
    expect(watchError).toBeUndefined();

    // Another space's reader sees nothing of it, direct or down the chain; a reader of no space neither.
    expect(await all(as("b"), { cause: root.id })).toEqual([]);
    expect(await all(as("b"), { cause: root.id, descendants: true })).toEqual([]);
    expect(await all(as("b"), { cause: confirmCall, descendants: true })).toEqual([]);

    // Unknown causes have nothing under them; descendants without a cause is refused.
    expect(await all(admin, { cause: "no-such-event", descendants: true })).toEqual([]);
    await expectConnectError(admin.log.readLog({ descendants: true }), Code.InvalidArgument, /descendants needs a cause/);
  }, 60_000);

  it("walks a tree up to 10,000 events per page and says when it stopped there; the direct filter pages through all", async () => {
    const owner = await startTestOwner({ shutdownGraceMs: 100 });
    cleanups.push(() => owner.close());
    const client = createClient({ url: owner.url });
    await client.registerPlugin(manifestOf(definePlugin({ name: "wide", events: { "wide.x": { allow: ["*"], schema: { type: "object" } } } })));
    const root = (await client.log.emit({ type: "wide.x", data: {} })).event!;
    // The local admin may emit under a cause: 10,001 events under the root, in batches.
    for (let from = 0; from <= 10_000; from += 5_000) {
      const count = Math.min(5_000, 10_001 - from);
      await client.log.emitBatch({
        events: Array.from({ length: count }, (_, i) => ({ type: "wide.x", data: { n: from + i }, cause: { eventId: root.id, position: from + i } })),
      });
    }
    expect(await all(client, { cause: root.id }, 1000)).toHaveLength(10_001);
    const first = await client.log.readLog({ cause: root.id, descendants: true, pageSize: 1000 });
    expect([first.events.length, first.treeCut]).toEqual([1000, true]);
    const walked = await all(client, { cause: root.id, descendants: true }, 1000);
    expect(walked).toHaveLength(10_000);
    expect(walked.map((e) => e.data?.n)).toEqual(Array.from({ length: 10_000 }, (_, i) => i));
  }, 60_000);

  it("chronolog tail --cause prints what was made under an event or a call, down the chain with --descendants", {
    tags: ["serial"],
    timeout: 60_000,
  }, async () => {
    const { owner, clock, admin, root, confirmCall } = await chainOwner();
    clock.advance(MINUTE + 1_000);
    await until(async () => (await all(admin, { types: ["action.completed"] })).length === 2, "the delay's call to end");
    const tree = await all(admin, { cause: root.id, descendants: true });
    const reminded = tree.find((e) => e.type === "booking.reminded")!;
    // chronolog tail --cause, directly and down the chain, as JSON lines.
    const tail = async (...args: string[]) => {
      const out = await cli(["tail", "--url", owner.url, "--token", tokens.admin, "--no-follow", ...args]);
      expect(out.stderr).toBe("");
      return out.stdout
        .trim()
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { id: string; type: string });
    };
    expect((await tail("--cause", confirmCall)).map((e) => e.type)).toEqual(["timer.scheduled", "action.completed"]);
    expect((await tail("--cause", root.id, "--descendants")).map((e) => e.id)).toEqual(tree.map((e) => e.id));
    expect((await tail("--cause", root.id, "--descendants", "--type", "booking.reminded")).map((e) => e.id)).toEqual([reminded.id]);
    const lone = await cli(["tail", "--url", owner.url, "--token", tokens.a, "--no-follow", "--descendants"]);
    expect([lone.code, lone.stderr]).toEqual([1, expect.stringContaining("--descendants needs --cause")]);
  });
});
