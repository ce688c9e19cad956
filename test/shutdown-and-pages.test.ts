// Reads of large events, the owner's shutdown during action calls, and duplicate answers.
//
// - ReadLog pages stop at a byte budget (log/read.ts `pageByteBudget`): a page of large
//   events stays within it (one event larger than the budget comes alone), and paging by
//   its token reaches the end with every event exactly once; Watch's catch-up too. A
//   processor reads ahead of its floor within a byte budget as well.
// - SIGTERM during CallAction: running invocations get the shutdown grace deliveries get.
//   One answered within it is recorded (action.completed, found after the restart) and its
//   caller gets the answer; a caller whose invocation outlasts it gets UNAVAILABLE "the
//   owner is stopping", never CANCELLED, and a later call with the same id runs it again.
// - A second ack of a delivery this session answered is STALE_ACK (not UNKNOWN_DELIVERY), a
//   second result of an invocation STALE_RESULT; an id never received stays UNKNOWN_*.
//
// @module-tag postgres

import { toBinary, type JsonObject, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient as createRpcClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { rmSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { pageByteBudget } from "../server/src/log/read.js";
import { processorReadAheadBytes } from "../server/src/processors/reader.js";
import { createClient, type ChronologClient } from "../sdk/ts/src/client.js";
import { runExecutor, type Executor } from "../sdk/ts/src/executor.js";
import { AdminService } from "@chronolog/sdk/gen/chronolog/v1/admin_pb";
import type { Event } from "@chronolog/sdk/gen/chronolog/v1/event_pb";
import { ExecutorService, type SubscribeRequestSchema, type SubscribeResponse } from "@chronolog/sdk/gen/chronolog/v1/executor_pb";
import { LogService, ReadLogResponseSchema } from "@chronolog/sdk/gen/chronolog/v1/log_pb";
import { definePlugin, manifestOf } from "../sdk/ts/src/plugin.js";
import { spawnOwner, startTestOwner, tempDir, type OwnerProcess } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

const KiB = 1024;
const MiB = 1024 * KiB;
const loose = definePlugin({ name: "loose", events: { "loose.any": { allow: ["*"] } } });

async function inProcessOwner(): Promise<{ url: string; client: ChronologClient }> {
  const owner = await startTestOwner({ shutdownGraceMs: 200 });
  cleanups.push(() => owner.close());
  return { url: owner.url, client: createClient({ url: owner.url }) };
}

/** The stored size the page budget counts for the data of an event (its JSON, UTF-8). */
function dataBytes(e: Event): number {
  return Buffer.byteLength(JSON.stringify(e.data ?? {}));
}

describe("a byte budget per page of events", () => {
  it("ReadLog pages of large events stay within the budget, a larger event comes alone, and paging reaches the end with every event once", async () => {
    const { url, client } = await inProcessOwner();
    await client.registerPlugin(manifestOf(loose));
    // ~9 MiB in all: events of 300 KiB (3 fit a page), one of 2.5 MiB (over the budget: alone), small ones between.
    const sizes = [...Array(8).fill(300 * KiB), 2.5 * MiB, ...Array(8).fill(300 * KiB)].flatMap((size, i) => [size, i % 3 === 0 ? 10 : 0]).filter((s) => s > 0);
    const emitted: bigint[] = [];
    for (const [n, size] of sizes.entries()) emitted.push((await client.emit("loose.any", { n, pad: "x".repeat(size) })).event!.seq);

    const log = createRpcClient(LogService, createGrpcTransport({ baseUrl: url }));
    const seen: bigint[] = [];
    let pageToken = "";
    let pages = 0;
    do {
      const page = await log.readLog({ afterSeq: 0n, pageSize: 1000, types: ["loose.any"], pageToken });
      pages++;
      expect(page.events.length).toBeGreaterThan(0);
      const bytes = page.events.reduce((sum, e) => sum + dataBytes(e), 0);
      if (page.events.length > 1) expect(bytes).toBeLessThanOrEqual(pageByteBudget);
      // The whole response is not much more than the events' data (what a receiver's message limit sees).
      expect(toBinary(ReadLogResponseSchema, page).length).toBeLessThanOrEqual(Math.max(bytes, pageByteBudget) + 64 * KiB);
      seen.push(...page.events.map((e) => e.seq));
      if (page.events.some((e) => dataBytes(e) > pageByteBudget)) expect(page.events).toHaveLength(1);
      pageToken = page.nextPageToken;
    } while (pageToken !== "" && pages < 100);
    expect(pageToken).toBe("");
    expect(seen).toEqual(emitted);
    // 3 events of 300 KiB (and the small ones) fit a page of 1 MiB: 8 of them on 3 pages, the large one alone, 8 more on 3.
    expect(pages).toBe(Math.ceil(8 / Math.floor(pageByteBudget / (300 * KiB + 100))) * 2 + 1);

    // The SDK's reader (pages of 500, no type filter) and Watch's catch-up read every event once too.
    const all: bigint[] = [];
    for await (const e of client.read({}, 500)) if (e.type === "loose.any") all.push(e.seq);
    expect(all).toEqual(emitted);
    const abort = new AbortController();
    const watched: bigint[] = [];
    try {
      for await (const e of client.watch({ types: ["loose.any"] }, { signal: abort.signal, onCaughtUp: () => abort.abort() })) watched.push(e.seq);
    } catch (e) {
      if (!abort.signal.aborted) throw e; // ended by the test at the catch-up's end
    }
    expect(watched).toEqual(emitted);
  });

  it("a processor reads ahead of its floor within a byte budget, then delivers the rest as work finishes", async () => {
    const { url, client } = await inProcessOwner();
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const handled: number[] = [];
    const plugin = definePlugin({
      name: "big",
      events: { "big.blob": { allow: ["*"] } },
      processors: { p: { on: "big.blob", run: async (ctx) => void (await held, handled.push(Number((ctx.event.data as JsonObject).n))) } },
    });
    const ex = runExecutor({ url, plugins: [plugin], credits: 1, onError: () => {} });
    cleanups.push(() => ex.stop(100));
    await ex.ready;
    const count = Math.ceil((processorReadAheadBytes * 1.5) / (3 * MiB));
    for (let n = 0; n < count; n++) await client.emit("big.blob", { n, pad: "y".repeat(3 * MiB) });
    const admin = createRpcClient(AdminService, createGrpcTransport({ baseUrl: url }));
    const cursor = async () => (await admin.listProcessors({})).processors.find((c) => c.name === "big.p")!;
    await until(async () => (await cursor()).inFlight === 1, "the first delivery in flight");
    const head = (await client.emit("big.blob", { n: count, pad: "" })).event!.seq;
    await new Promise((r) => setTimeout(r, 200));
    // Read ahead: what the budget holds (plus one chunk), not the whole backlog.
    expect(Number((await cursor()).delivered)).toBeLessThan(Number(head) - 2);
    release();
    await until(() => handled.length === count + 1, "every event delivered", 30_000);
    expect(handled).toEqual([...Array(count + 1).keys()]);
  });
});

/** A plugin with one action that sleeps `ms` on its first attempt (later attempts answer at once). */
const slow = definePlugin({
  name: "slow",
  actions: {
    nap: {
      allow: ["*"],
      async run(ctx, input) {
        if (ctx.attempt === 1) await new Promise((r) => setTimeout(r, Number(input.ms)));
        return { slept: ctx.attempt === 1 ? Number(input.ms) : 0, attempt: ctx.attempt };
      },
    },
  },
});

async function callOutcome(p: Promise<{ output: JsonObject }>): Promise<{ output?: JsonObject; error?: ConnectError }> {
  try {
    return { output: (await p).output };
  } catch (e) {
    return { error: ConnectError.from(e) };
  }
}

describe("SIGTERM during CallAction (the owner's shutdown grace, a second signal ignored)", { tags: ["serial"] }, () => {
  it("an invocation answered within the grace is recorded and answered; one that outlasts it gets UNAVAILABLE and runs again with its call id", async () => {
    const data = tempDir("chronolog-shutdown-");
    cleanups.push(() => rmSync(data, { recursive: true, force: true }));
    const owners: OwnerProcess[] = [];
    cleanups.push(async () => {
      for (const o of owners) {
        if (o.child.exitCode === null && o.child.signalCode === null) o.child.kill("SIGKILL");
        await o.exited;
      }
    });
    const first = await spawnOwner(data);
    owners.push(first);
    const executor: Executor = runExecutor({ url: first.url, plugins: [slow], maxBackoffMs: 200, onError: () => {} });
    cleanups.push(() => executor.stop(0));
    await executor.ready;
    const client = createClient({ url: first.url });
    // Within the owner's 5 s grace, and well past it.
    const short = callOutcome(client.call("slow.nap", { ms: 2_500 }, { callId: "nap-short" }));
    const long = callOutcome(client.call("slow.nap", { ms: 12_000 }, { callId: "nap-long" }));
    await new Promise((r) => setTimeout(r, 1_000));
    const termAt = Date.now();
    first.child.kill("SIGTERM");
    setTimeout(() => first.child.kill("SIGINT"), 500); // a second signal (Ctrl-C again) does not cut the grace short
    const shortOutcome = await short;
    expect(shortOutcome.error).toBeUndefined();
    expect(shortOutcome.output).toEqual({ slept: 2_500, attempt: 1 });
    const longOutcome = await long;
    expect(longOutcome.error?.code).toBe(Code.Unavailable);
    expect(longOutcome.error?.rawMessage).toMatch(/^the owner is stopping; call again/);
    expect(await first.exited).toBe(0);
    expect(first.logs.some((line) => line.includes("owner already stopping"))).toBe(true); // the second signal was heard and not obeyed
    expect(Date.now() - termAt).toBeGreaterThanOrEqual(4_000); // it waited for the grace (5 s), not 0.1 s

    const second = await spawnOwner(data, [], first.port);
    owners.push(second);
    const again = createClient({ url: second.url });
    const ofCall = async (callId: string) => {
      const types: string[] = [];
      for await (const e of again.read({ types: ["action.started", "action.retried", "action.completed", "action.failed"] }))
        if ((e.data as JsonObject).call_id === callId) types.push(e.type);
      return types;
    };
    expect(await ofCall("nap-short")).toEqual(["action.started", "action.completed"]);
    expect(await ofCall("nap-long")).toEqual(["action.started"]); // left running, as documented: no end recorded
    expect(await again.call("slow.nap", { ms: 2_500 }, { callId: "nap-short" })).toMatchObject({ fromLog: true, output: { slept: 2_500, attempt: 1 } });
    await until(
      async () => (await callOutcome(again.call("slow.nap", { ms: 12_000 }, { callId: "nap-long" }))).output !== undefined,
      "the long call run again",
      15_000,
    );
    expect(await ofCall("nap-long")).toEqual(["action.started", "action.retried", "action.completed"]);
  });
});

/** A request stream the test writes to as it goes. */
function requestStream() {
  type Request = MessageInitShape<typeof SubscribeRequestSchema>;
  const items: Request[] = [];
  let wake: (() => void) | null = null;
  let ended = false;
  return {
    push(item: Request) {
      items.push(item);
      wake?.();
    },
    end() {
      ended = true;
      wake?.();
    },
    async *[Symbol.asyncIterator](): AsyncGenerator<Request> {
      for (;;) {
        while (items.length > 0) yield items.shift()!;
        if (ended) return;
        await new Promise<void>((r) => (wake = r));
        wake = null;
      }
    },
  };
}

describe("answers given twice", () => {
  it("a second ack of an answered delivery is STALE_ACK, a second result of an invocation STALE_RESULT; never-received ids stay UNKNOWN_*", async () => {
    const { url, client } = await inProcessOwner();
    const plugin = definePlugin({
      name: "dup",
      events: { "dup.happened": { allow: ["*"] } },
      processors: { p: { on: "dup.happened", run: () => undefined } },
      actions: { act: { allow: ["*"], run: () => ({}) } },
    });
    const requests = requestStream();
    cleanups.push(() => requests.end());
    const rpc = createRpcClient(ExecutorService, createGrpcTransport({ baseUrl: url }));
    const responses = rpc.subscribe(requests)[Symbol.asyncIterator]();
    const next = async (): Promise<SubscribeResponse["message"]> => {
      for (;;) {
        const { value, done } = await responses.next();
        if (done) throw new Error("the stream ended");
        if (value.message.case !== "heartbeat") return value.message;
      }
    };
    requests.push({
      message: { case: "hello", value: { executor: "dup-test", plugins: [manifestOf(plugin)], processors: ["dup.p"], actions: ["dup.act"], credits: 4 } },
    });
    expect((await next()).case).toBe("welcome");

    await client.emit("dup.happened", {});
    const delivery = await next();
    if (delivery.case !== "delivery") throw new Error(`expected a delivery, got ${delivery.case}`);
    const deliveryId = delivery.value.deliveryId;
    requests.push({ message: { case: "ack", value: { deliveryId } } });
    requests.push({ message: { case: "ack", value: { deliveryId } } });
    requests.push({ message: { case: "ack", value: { deliveryId: "dup.p/999/1" } } });
    const stale = await next();
    expect(stale).toMatchObject({ case: "notice", value: { reason: "STALE_ACK", workId: deliveryId } });
    expect(await next()).toMatchObject({ case: "notice", value: { reason: "UNKNOWN_DELIVERY", workId: "dup.p/999/1" } });

    const called = client.call("dup.act", {}, { callId: "dup-call" });
    const invocation = await next();
    if (invocation.case !== "invocation") throw new Error(`expected an invocation, got ${invocation.case}`);
    const invocationId = invocation.value.invocationId;
    requests.push({ message: { case: "actionResult", value: { invocationId, output: { first: true } } } });
    requests.push({ message: { case: "actionResult", value: { invocationId, output: { first: false } } } });
    requests.push({ message: { case: "actionResult", value: { invocationId: "never#1" } } });
    expect(await next()).toMatchObject({ case: "notice", value: { reason: "STALE_RESULT", workId: invocationId } });
    expect(await next()).toMatchObject({ case: "notice", value: { reason: "UNKNOWN_INVOCATION", workId: "never#1" } });
    expect((await called).output).toEqual({ first: true });
  });
});
