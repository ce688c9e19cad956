// @module-tag postgres

import http2 from "node:http2";
import { create, fromBinary, toBinary, type JsonObject } from "@bufbuild/protobuf";
import { CallActionRequestSchema, CallActionResponseSchema } from "@chronolog/sdk/gen/chronolog/v1/action_pb";
import { Code, ConnectError } from "@connectrpc/connect";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { createClient, eventToJson, type ChronologClient } from "../sdk/ts/src/client.js";
import { runExecutor, TerminalError, type ActionContext, type Executor } from "../sdk/ts/src/executor.js";
import type { Event } from "@chronolog/sdk/gen/chronolog/v1/event_pb";
import { BadRequestSchema } from "@chronolog/sdk/gen/google/rpc/error_details_pb";
import { definePlugin, manifestOf, type PluginDefinition } from "../sdk/ts/src/plugin.js";
import { unansweredWarnMs } from "../server/src/actions/invocations.js";
import { startTestOwner } from "./helpers/owner.js";
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

async function executor(url: string, plugin: PluginDefinition, options: { credits?: number; token?: string } = {}): Promise<Executor> {
  const ex = runExecutor({ url, plugins: [plugin], credits: options.credits ?? 16, token: options.token, onError: () => {} });
  cleanups.push(() => ex.stop(100));
  await ex.ready;
  return ex;
}

async function readAll(client: ChronologClient, types?: string[]): Promise<Event[]> {
  const events: Event[] = [];
  for await (const e of client.read({ types })) events.push(e);
  return events;
}

async function countTypes(client: ChronologClient): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for await (const e of client.read()) counts[e.type] = (counts[e.type] ?? 0) + 1;
  return counts;
}

async function callError(p: Promise<unknown>): Promise<ConnectError> {
  try {
    await p;
  } catch (e) {
    return ConnectError.from(e);
  }
  throw new Error("expected the call to fail");
}

describe("actions through the real transport and SDK executors", () => {
  it("records action.started and action.completed and returns the output; the same call id answers from the log without running", async () => {
    const { owner: o, client } = await owner();
    const runs: ActionContext[] = [];
    const plugin = definePlugin({
      name: "pay",
      actions: {
        charge: {
          allow: ["*"],
          run(ctx, input) {
            runs.push(ctx);
            return { charged: input.amount, by: ctx.actor?.id ?? "" };
          },
        },
      },
    });
    await client.registerPlugin(manifestOf(plugin));
    await executor(o.url, plugin);
    const first = await client.call("pay.charge", { amount: 5 }, { callId: "c-1", actor: { id: "user:ana" } });
    expect(first).toEqual({ callId: "c-1", output: { charged: 5, by: "user:ana" }, fromLog: false });
    expect(runs.map((r) => [r.callId, r.attempt, r.retry])).toEqual([["c-1", 1, false]]);
    const events = await readAll(client);
    expect(events.map((e) => e.type)).toEqual(["action.started", "action.completed"]);
    const [started, completed] = events;
    expect(started.data).toEqual({ call_id: "c-1", action: "pay.charge", input: { amount: 5 }, attempt: 1 });
    expect(started.cause).toBe("");
    expect(started.actor?.id).toBe("user:ana");
    expect(completed.data).toEqual({ call_id: "c-1", action: "pay.charge", attempt: 1, output: { charged: 5, by: "user:ana" } });
    expect(completed.cause).toBe(started.id);
    expect(completed.actor?.id).toBe("user:ana");

    const again = await client.call("pay.charge", { amount: 5 }, { callId: "c-1" });
    expect(again).toEqual({ callId: "c-1", output: { charged: 5, by: "user:ana" }, fromLog: true });
    expect(runs).toHaveLength(1);
    expect(await readAll(client)).toHaveLength(2);
    // The same id with another input is a conflict, not a silent answer.
    expect((await callError(client.call("pay.charge", { amount: 6 }, { callId: "c-1" }))).code).toBe(Code.AlreadyExists);
    // Without a call id every call runs.
    const fresh = await client.call("pay.charge", { amount: 5 });
    expect(fresh.callId).not.toBe("c-1");
    expect(fresh.fromLog).toBe(false);
    expect(runs).toHaveLength(2);
  });

  it("calls with one call id sent while it runs and just after it ended run it once, each answered with its output", async () => {
    const { owner: o, client } = await owner();
    let runs = 0;
    const plugin = definePlugin({ name: "pay", actions: { charge: { allow: ["*"], run: (_ctx, input) => (runs++, { charged: input.amount }) } } });
    await client.registerPlugin(manifestOf(plugin));
    await executor(o.url, plugin);
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) => new Promise((r) => setTimeout(r, i)).then(() => client.call("pay.charge", { amount: 7 }, { callId: "c-many" }))),
    );
    expect(runs).toBe(1);
    expect(new Set(answers.map((a) => JSON.stringify(a.output)))).toEqual(new Set([JSON.stringify({ charged: 7 })]));
    expect((await readAll(client)).map((e) => e.type)).toEqual(["action.started", "action.completed"]);
  });

  it("a failed run answers ABORTED and records action.failed; the same call id runs again with action.retried, then completes", async () => {
    const { owner: o, client } = await owner();
    const attempts: number[] = [];
    const plugin = definePlugin({
      name: "pay",
      actions: {
        flaky: {
          allow: ["*"],
          run(ctx) {
            attempts.push(ctx.attempt);
            if (ctx.attempt === 1) throw new Error("card declined");
            return { ok: true };
          },
        },
      },
    });
    await client.registerPlugin(manifestOf(plugin));
    await executor(o.url, plugin);
    const err = await callError(client.call("pay.flaky", { n: 1 }, { callId: "f-1" }));
    expect(err.code).toBe(Code.Aborted);
    expect(err.rawMessage).toContain("card declined");
    expect((await readAll(client)).map((e) => [e.type, e.data?.attempt, e.data?.error])).toEqual([
      ["action.started", 1, undefined],
      ["action.failed", 1, "card declined"],
    ]);
    const second = await client.call("pay.flaky", { n: 1 }, { callId: "f-1" });
    expect(second).toEqual({ callId: "f-1", output: { ok: true }, fromLog: false });
    expect(attempts).toEqual([1, 2]);
    const events = await readAll(client);
    expect(events.map((e) => [e.type, e.data?.attempt])).toEqual([
      ["action.started", 1],
      ["action.failed", 1],
      ["action.retried", 2],
      ["action.completed", 2],
    ]);
    expect(events[2].data?.error).toBe("card declined");
    expect(events.slice(1).every((e) => e.cause === events[0].id)).toBe(true);
    expect((await client.call("pay.flaky", { n: 1 }, { callId: "f-1" })).fromLog).toBe(true);
    expect(attempts).toEqual([1, 2]);
  });

  it("record: false leaves no events at all and is still idempotent", async () => {
    const { owner: o, client } = await owner();
    let runs = 0;
    const plugin = definePlugin({
      name: "quiet",
      actions: {
        ping: { allow: ["*"], record: false, run: (_ctx, input) => ({ pong: input.n, run: ++runs }) },
        fails: {
          allow: ["*"],
          record: false,
          run: (ctx) => {
            if (ctx.attempt === 1) throw new Error("first try fails");
            return { attempt: ctx.attempt };
          },
        },
      },
    });
    await client.registerPlugin(manifestOf(plugin));
    await executor(o.url, plugin);
    expect(await client.call("quiet.ping", { n: 1 }, { callId: "q-1" })).toEqual({ callId: "q-1", output: { pong: 1, run: 1 }, fromLog: false });
    expect(await client.call("quiet.ping", { n: 1 }, { callId: "q-1" })).toEqual({ callId: "q-1", output: { pong: 1, run: 1 }, fromLog: true });
    expect(runs).toBe(1);
    expect((await callError(client.call("quiet.fails", {}, { callId: "q-2" }))).code).toBe(Code.Aborted);
    expect((await client.call("quiet.fails", {}, { callId: "q-2" })).output).toEqual({ attempt: 2 });
    expect(await readAll(client)).toEqual([]);
  });

  it("keeps private fields out of action.started while the executor gets the whole input", async () => {
    const { owner: o, client } = await owner();
    const seen: JsonObject[] = [];
    const plugin = definePlugin({
      name: "pay",
      actions: { charge: { allow: ["*"], privateFields: ["card"], run: (ctx) => void seen.push(ctx.input) } },
    });
    await client.registerPlugin(manifestOf(plugin));
    await executor(o.url, plugin);
    const result = await client.call("pay.charge", { amount: 7, card: "4111-1111" });
    expect(result.output).toEqual({});
    expect(seen).toEqual([{ amount: 7, card: "4111-1111" }]);
    const [started] = await readAll(client, ["action.started"]);
    expect(started.data?.input).toEqual({ amount: 7 });
    expect(JSON.stringify((await readAll(client)).map(eventToJson))).not.toContain("4111");
  });

  it("answers UNAVAILABLE within the caller's deadline when no executor hosts the action, and writes nothing", async () => {
    const { client } = await owner();
    await client.registerPlugin({ name: "pay", actions: { charge: { allow: ["*"] } } });
    const t0 = Date.now();
    // The owner gives up a quarter of the deadline early (at most 500 ms), so the caller
    // hears UNAVAILABLE, not its own DEADLINE_EXCEEDED, even on a loaded machine.
    const err = await callError(client.call("pay.charge", { amount: 1 }, { callId: "u-1", timeoutMs: 1_200 }));
    const elapsed = Date.now() - t0;
    expect(err.code).toBe(Code.Unavailable);
    expect(err.rawMessage).toContain("no executor hosts pay.charge");
    expect(elapsed).toBeGreaterThanOrEqual(800);
    expect(elapsed).toBeLessThan(2_500);
    expect(await readAll(client)).toEqual([]);
  });

  it("waits for an executor that connects within the deadline; the action's timeout bounds the wait too", async () => {
    const { owner: o, client } = await owner();
    const plugin = definePlugin({
      name: "pay",
      actions: { charge: { allow: ["*"], run: () => ({ ok: 1 }) }, short: { allow: ["*"], timeoutMs: 150, run: () => ({}) } },
    });
    await client.registerPlugin({ name: "pay", actions: { charge: { allow: ["*"] }, short: { allow: ["*"], timeoutMs: 150 } } });
    const pending = client.call("pay.charge", {}, { timeoutMs: 5_000 });
    const t0 = Date.now();
    const short = await callError(client.call("pay.short", {}, { timeoutMs: 5_000 }));
    expect(short.code).toBe(Code.Unavailable);
    expect(Date.now() - t0).toBeLessThan(1_000);
    await new Promise((r) => setTimeout(r, 100));
    await executor(o.url, plugin);
    expect((await pending).output).toEqual({ ok: 1 });
    expect((await readAll(client)).map((e) => e.type)).toEqual(["action.started", "action.completed"]);
  });

  it("the caller's deadline and cancellation reach the executor as a cancelled signal; the run's end is recorded", async () => {
    const { owner: o, client } = await owner();
    const aborted: string[] = [];
    const plugin = definePlugin({
      name: "slow",
      actions: {
        wait: {
          allow: ["*"],
          run: (ctx) =>
            new Promise((_resolve, reject) => {
              ctx.signal.addEventListener("abort", () => {
                aborted.push(String((ctx.signal.reason as Error).message));
                reject(new Error("gave up"));
              });
            }),
        },
      },
    });
    await client.registerPlugin(manifestOf(plugin));
    await executor(o.url, plugin);
    const err = await callError(client.call("slow.wait", {}, { callId: "d-1", timeoutMs: 300 }));
    expect(err.code).toBe(Code.DeadlineExceeded);
    await until(() => aborted.length === 1, "the executor's signal aborted");
    expect(aborted[0]).toContain("deadline exceeded");
    const controller = new AbortController();
    const cancelled = callError(client.call("slow.wait", {}, { callId: "d-2", signal: controller.signal }));
    await until(async () => (await readAll(client, ["action.started"])).length === 2, "second run started");
    controller.abort();
    expect((await cancelled).code).toBe(Code.Canceled);
    await until(() => aborted.length === 2, "the executor's signal aborted again");
    expect(aborted[1]).toContain("caller cancelled");
    await until(async () => (await readAll(client, ["action.failed"])).length === 2, "both failures recorded");
    expect((await readAll(client, ["action.failed"])).map((e) => e.data?.error)).toEqual(["gave up", "gave up"]);
  });

  it("a run that reads its signal only after it was cancelled, or after its stream ended, finds it aborted with the reason", async () => {
    const { owner: o, client } = await owner();
    const seen: { aborted: boolean; reason: string }[] = [];
    const plugin = definePlugin({
      name: "late",
      actions: {
        look: {
          allow: ["*"],
          async run(ctx) {
            await new Promise((r) => setTimeout(r, 400)); // the signal is not read meanwhile
            seen.push({ aborted: ctx.signal.aborted, reason: String((ctx.signal.reason as Error | undefined)?.message) });
            return {};
          },
        },
      },
    });
    await client.registerPlugin(manifestOf(plugin));
    const ex = await executor(o.url, plugin);
    const controller = new AbortController();
    const cancelled = callError(client.call("late.look", {}, { callId: "l-1", signal: controller.signal }));
    await until(async () => (await readAll(client, ["action.started"])).length === 1, "the run started");
    controller.abort();
    expect((await cancelled).code).toBe(Code.Canceled);
    await until(() => seen.length === 1, "the run read its signal");
    expect(seen[0]).toEqual({ aborted: true, reason: expect.stringContaining("caller cancelled") });
    void client.call("late.look", {}, { callId: "l-2" }).catch(() => {});
    await until(async () => (await readAll(client, ["action.started"])).length === 2, "the second run started");
    await ex.stop(0); // the stream ends while the run waits
    await until(() => seen.length === 2, "the second run read its signal");
    expect(seen[1].aborted).toBe(true);
  });

  it("a retried processor delivery that calls an action and emits produces no duplicates", async () => {
    const { owner: o, client } = await owner();
    let actionRuns = 0;
    const outputs: JsonObject[] = [];
    const plugin = definePlugin({
      name: "orders",
      events: { "order.placed": { allow: ["*"] }, "order.noted": {} },
      actions: { reserve: { run: (_ctx, input) => ({ reserved: input.sku, run: ++actionRuns }) } },
      processors: {
        fulfil: {
          on: "order.placed",
          retryDelaysMs: [10, 10],
          async run(ctx) {
            const result = await ctx.call("orders.reserve", { sku: ctx.data.sku });
            outputs.push(result.output);
            await ctx.emit("order.noted", { reserved: result.output.reserved ?? null });
            if (ctx.attempt < 3) throw new Error("fail after the call and the emit");
          },
        },
      },
    });
    await client.registerPlugin(manifestOf(plugin));
    await executor(o.url, plugin);
    const placed = await client.emit("order.placed", { sku: "abc" }, { actor: { id: "user:bo" } });
    await until(async () => ((await countTypes(client))["processor.retried"] ?? 0) === 2, "two retries");
    await until(() => outputs.length === 3, "three deliveries");
    await new Promise((r) => setTimeout(r, 100));
    const counts = await countTypes(client);
    expect(counts).toMatchObject({ "order.placed": 1, "order.noted": 1, "action.started": 1, "action.completed": 1, "processor.retried": 2 });
    expect(counts["action.retried"]).toBeUndefined();
    expect(actionRuns).toBe(1);
    expect(outputs).toEqual([
      { reserved: "abc", run: 1 },
      { reserved: "abc", run: 1 },
      { reserved: "abc", run: 1 },
    ]);
    const [started] = await readAll(client, ["action.started"]);
    expect(started.cause).toBe(placed.event!.id);
    expect(started.actor?.id).toBe("user:bo");
  });

  it("work under an invocation names action.started as its cause, or the call id for record: false, with the call's actor", async () => {
    const { owner: o, client } = await owner();
    const plugin = definePlugin({
      name: "notes",
      events: { "note.written": {} },
      collections: { "notes.pages": {} },
      actions: {
        write: {
          allow: ["*"],
          async run(ctx, input) {
            const event = await ctx.emit("note.written", { text: input.text ?? "" });
            const doc = await ctx.collections.create("notes.pages", { text: input.text ?? "" });
            return { eventId: event.id, docId: doc.doc?._id ?? "" };
          },
        },
        scribble: {
          allow: ["*"],
          record: false,
          async run(ctx, input) {
            const { emit, collections, call } = ctx; // helpers taken off the context keep working, positions shared
            const event = await emit("note.written", { text: input.text ?? "" });
            await collections.create("notes.pages", { _id: "scribble", text: input.text ?? "" });
            const nested = await call("notes.write", { text: "nested" });
            return { eventId: event.id, nested: nested.output };
          },
        },
      },
    });
    await client.registerPlugin(manifestOf(plugin));
    await executor(o.url, plugin);
    const recorded = await client.call("notes.write", { text: "hello" }, { callId: "w-1", actor: { id: "user:cy", in: "space:a" } });
    const [started] = await readAll(client, ["action.started"]);
    const [note] = await readAll(client, ["note.written"]);
    expect(note.id).toBe(recorded.output.eventId);
    expect(note.cause).toBe(started.id);
    expect(note.actor).toMatchObject({ id: "user:cy", in: "space:a" });
    const [created] = await readAll(client, ["notes.pages.created"]);
    expect(created.cause).toBe(started.id);

    const quiet = await client.call("notes.scribble", { text: "psst" }, { callId: "s-1", actor: { id: "user:di" } });
    const notes = await readAll(client, ["note.written"]);
    const scribbled = notes.find((e) => e.id === quiet.output.eventId)!;
    expect(scribbled.cause).toBe("s-1");
    expect(scribbled.actor?.id).toBe("user:di");
    const pages = await readAll(client, ["notes.pages.created"]);
    expect(pages.find((e) => (e.data?._id as string) === "scribble")?.cause).toBe("s-1");
    // The nested call is recorded under the record:false call's id, as the same actor.
    const nestedStarted = (await readAll(client, ["action.started"])).find((e) => e.cause === "s-1")!;
    expect(nestedStarted.actor?.id).toBe("user:di");
    expect(await client.call("notes.scribble", { text: "psst" }, { callId: "s-1" })).toMatchObject({ fromLog: true });
    // Once the run is over the call id is no longer a cause.
    const late = await callError(client.log.emit({ type: "note.written", data: { text: "late" }, cause: { eventId: "s-1", position: 9 } }));
    expect(late.code).toBe(Code.FailedPrecondition);
  });

  it("moves the invocation of a vanished executor to another one as a retry", async () => {
    const { owner: o, client } = await owner();
    const stuck = new Promise<JsonObject>(() => {});
    let startedOnA = false;
    const slow = definePlugin({ name: "pay", actions: { charge: { allow: ["*"], run: () => ((startedOnA = true), stuck) } } });
    const exA = runExecutor({ url: o.url, plugins: [slow], onError: () => {} });
    await exA.ready;
    const pending = client.call("pay.charge", { amount: 3 }, { callId: "x-1", timeoutMs: 10_000 });
    await until(() => startedOnA, "attempt 1 on A");
    const fast = definePlugin({ name: "pay", actions: { charge: { allow: ["*"], run: (ctx) => ({ attempt: ctx.attempt }) } } });
    await executor(o.url, fast);
    await exA.stop(0); // the stream ends with the invocation unanswered
    expect(await pending).toEqual({ callId: "x-1", output: { attempt: 2 }, fromLog: false });
    expect((await readAll(client)).map((e) => [e.type, e.data?.attempt])).toEqual([
      ["action.started", 1],
      ["action.retried", 2],
      ["action.completed", 2],
    ]);
  });

  it("fails the call (action.failed, UNAVAILABLE) when its executor vanishes and no other one takes it within the deadline", async () => {
    const { owner: o, client } = await owner();
    let startedOnA = false;
    const slow = definePlugin({ name: "pay", actions: { charge: { allow: ["*"], run: () => ((startedOnA = true), new Promise<JsonObject>(() => {})) } } });
    const exA = runExecutor({ url: o.url, plugins: [slow], onError: () => {} });
    await exA.ready;
    const pending = callError(client.call("pay.charge", {}, { callId: "x-2", timeoutMs: 800 }));
    await until(() => startedOnA, "attempt 1 on A");
    await exA.stop(0);
    const err = await pending;
    expect(err.code).toBe(Code.Unavailable);
    expect(err.rawMessage).toContain("no executor hosts pay.charge");
    const events = await readAll(client);
    expect(events.map((e) => [e.type, e.data?.attempt])).toEqual([
      ["action.started", 1],
      ["action.failed", 1],
    ]);
    expect(events[1].data?.error).toContain("executor disconnected during attempt 1");
  });

  it("concurrent calls with one call id run the action once and share its answer", async () => {
    const { owner: o, client } = await owner();
    let runs = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const plugin = definePlugin({
      name: "pay",
      actions: {
        charge: {
          allow: ["*"],
          run: async () => {
            runs++;
            await gate;
            return { runs };
          },
        },
      },
    });
    await client.registerPlugin(manifestOf(plugin));
    await executor(o.url, plugin);
    const calls = [1, 2, 3].map(() => client.call("pay.charge", {}, { callId: "same" }));
    await until(() => runs === 1, "the run started");
    await new Promise((r) => setTimeout(r, 50));
    release();
    const results = await Promise.all(calls);
    expect(results.map((r) => r.output)).toEqual([{ runs: 1 }, { runs: 1 }, { runs: 1 }]);
    expect(runs).toBe(1);
    expect((await countTypes(client))["action.started"]).toBe(1);
  });
});

describe("a caller's deadline in microseconds (grpcurl -max-time, grpc-go)", () => {
  it("is the invocation's deadline to the ms: the call is answered, the executor's stream goes on", async () => {
    const { owner: o, client } = await owner();
    const runs: number[] = [];
    const plugin = definePlugin({ name: "tick", actions: { add: { allow: ["*"], run: (_ctx, input) => (runs.push(1), { sum: Number(input.a) + 1 }) } } });
    await client.registerPlugin(manifestOf(plugin));
    await executor(o.url, plugin);
    const session = http2.connect(o.url);
    try {
      const call = () =>
        new Promise<{ status: string; body: Buffer }>((resolve) => {
          const stream = session.request({
            ":method": "POST",
            ":path": "/chronolog.v1.ActionService/CallAction",
            "content-type": "application/grpc",
            te: "trailers",
            "grpc-timeout": "14999989u",
          });
          const body = toBinary(CallActionRequestSchema, create(CallActionRequestSchema, { action: "tick.add", input: { a: 1 } }));
          const frame = Buffer.alloc(5 + body.length);
          frame.writeUInt32BE(body.length, 1);
          frame.set(body, 5);
          stream.end(frame);
          const chunks: Buffer[] = [];
          let status = "";
          stream.on("data", (c: Buffer) => chunks.push(c));
          stream.on("trailers", (t) => (status = String(t["grpc-status"])));
          stream.on("end", () => resolve({ status, body: Buffer.concat(chunks) }));
        });
      for (let i = 0; i < 3; i++) {
        const answer = await call();
        expect(answer.status).toBe("0");
        expect(fromBinary(CallActionResponseSchema, answer.body.subarray(5)).output).toEqual({ sum: 2 });
      }
    } finally {
      session.close();
    }
    expect(runs).toHaveLength(3);
    expect(await readAll(client, ["action.retried", "action.failed"])).toEqual([]); // no executor stream broke
  });
});

describe("an action failing with an error of megabytes", () => {
  it("is answered ABORTED with the error's start and its length (the whole error is in action.failed), over gRPC, gRPC-Web and Connect, never a transport error", async () => {
    const { owner: o, client } = await owner();
    const huge = `${"é".repeat(500_000)} and 2,000,000 more bytes`;
    const plugin = definePlugin({
      name: "loud",
      actions: {
        fail: {
          allow: ["*"],
          run() {
            throw new TerminalError(huge);
          },
        },
      },
    });
    await client.registerPlugin(manifestOf(plugin));
    await executor(o.url, plugin);
    for (const [protocol, via] of [
      ["grpc", "unary"],
      ["grpc-web", "unary"],
      ["connect", "unary"],
    ] as const) {
      const e = await callError(createClient({ url: o.url, protocol, emitVia: via }).call("loud.fail", {}));
      expect(e.code).toBe(Code.Aborted);
      expect(Buffer.byteLength(e.rawMessage)).toBeLessThanOrEqual(1024);
      expect(e.rawMessage).toMatch(/^action loud\.fail failed \(attempt 1\): é+… \(cut from \d+ bytes\)$/);
    }
    const [failed] = await readAll(client, ["action.failed"]);
    expect(String((failed.data as { error: string }).error).length).toBeGreaterThan(100_000);
  });
});

describe("a handler that ignores its cancel signal", () => {
  it(
    "keeps its credit after the run timeout (the call fails ABORTED once the grace after it passed) and the owner warns of it 10 s later, naming the executor and the invocation",
    async () => {
      const lines: string[] = [];
      const { owner: o, client } = await owner({ logger: pino({ level: "warn" }, { write: (line: string) => void lines.push(line) }) });
      const plugin = definePlugin({ name: "stuck", actions: { hang: { allow: ["*"], timeoutMs: 300, run: () => new Promise(() => {}) } } });
      await client.registerPlugin(manifestOf(plugin));
      await executor(o.url, plugin, { credits: 1 });
      const timedOut = await callError(client.call("stuck.hang", {}, { callId: "h-1" }));
      expect(timedOut.code).toBe(Code.Aborted);
      expect(timedOut.message).toContain("timed out after 300 ms");
      // The handler still runs: its slot (the credit) is not given to another call.
      expect((await callError(client.call("stuck.hang", {}, { callId: "h-2", timeoutMs: 1_000 }))).code).toBe(Code.Unavailable);
      expect(lines.filter((l) => l.includes("has not answered"))).toEqual([]);
      await until(() => lines.some((l) => l.includes("has not answered")), "the warning", unansweredWarnMs + 3_000);
      const warning = JSON.parse(lines.find((l) => l.includes("has not answered"))!);
      expect(warning).toMatchObject({ invocation: "h-1#1", action: "stuck.hang", freeCredits: 0 });
      expect(warning.msg).toMatch(/300 ms timeout, cancel and grace: its credit stays held until it answers/);
    },
    unansweredWarnMs + 10_000,
  );
});

describe("CallAction bad input", () => {
  const tokens = { exec: "executor-token-0123456789", client: "client-token-0123456789", other: "other-client-token-0123456789" };
  const config = {
    principals: [
      { name: "ex", token: tokens.exec, role: "executor" as const },
      { name: "web", token: tokens.client, role: "client" as const },
      { name: "partner", token: tokens.other, role: "client" as const },
    ],
  };

  it("PERMISSION_DENIED when allow excludes the caller, INVALID_ARGUMENT (input/...) on schema violations, NOT_FOUND for an undeclared action; nothing written", async () => {
    const { owner: o } = await owner({ config });
    const web = createClient({ url: o.url, token: tokens.client });
    const partner = createClient({ url: o.url, token: tokens.other });
    const plugin = definePlugin({
      name: "pay",
      actions: {
        charge: {
          allow: ["partner"],
          inputSchema: { type: "object", required: ["amount"], properties: { amount: { type: "number", minimum: 1 } } },
          run: (_ctx, input) => ({ charged: input.amount }),
        },
        internal: { run: () => ({}) },
      },
    });
    await executor(o.url, plugin, { token: tokens.exec });
    const denied = await callError(web.call("pay.charge", { amount: 5 }));
    expect(denied.code).toBe(Code.PermissionDenied);
    expect(denied.rawMessage).toContain("pay.charge");
    expect((await callError(partner.call("pay.internal", {}))).code).toBe(Code.PermissionDenied);
    expect((await callError(partner.call("pay.charge", {}, { cause: { eventId: "x", position: 0 } }))).code).toBe(Code.PermissionDenied);
    const invalid = await callError(partner.call("pay.charge", { amount: 0 }));
    expect(invalid.code).toBe(Code.InvalidArgument);
    expect(invalid.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field)).toEqual(["input/amount"]);
    const missing = await callError(partner.call("pay.charge", {}));
    // A missing property is reported on the object that lacks it, naming the property.
    expect(missing.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => [v.field, v.description])).toEqual([
      ["input", "must have required property 'amount' (rule: required)"],
    ]);
    const unknown = await callError(partner.call("pay.nope", {}));
    expect(unknown.code).toBe(Code.NotFound);
    expect(unknown.rawMessage).toContain("pay.nope");
    expect(await readAll(createClient({ url: o.url, token: tokens.exec }))).toEqual([]);
    expect(await partner.call("pay.charge", { amount: 2 })).toMatchObject({ output: { charged: 2 }, fromLog: false });
  });
});
