// Limits that keep one request from stalling or poisoning the owner, asserted through the real
// transport: schema patterns run on RE2 (no ReDoS), JSON nested deeper than maxJsonDepth (32)
// is refused wherever the owner takes client data (binary clients decode ~49 levels), and an
// executor's credits are clamped to maxCredits, so ListExecutors always encodes.
//
// @module-tag sqlite-only

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { JsonObject, MessageInitShape } from "@bufbuild/protobuf";
import { Code, type ConnectError, createClient as createRpcClient } from "@connectrpc/connect";
import { createClient, type ChronologClient } from "../sdk/ts/src/client.js";
import { ExecutorService, type SubscribeRequestSchema, type SubscribeResponse } from "@chronolog/sdk/gen/chronolog/v1/executor_pb";
import { BadRequestSchema } from "@chronolog/sdk/gen/google/rpc/error_details_pb";
import { maxJsonDepth } from "../server/src/json-limits.js";
import { maxCredits } from "../server/src/executors/session.js";
import { expectConnectError, expectUnchanged, logSnapshot } from "./helpers/log-snapshot.js";
import { startTestOwner } from "./helpers/owner.js";
import { postJson } from "./helpers/post-json.js";

type TestOwner = Awaited<ReturnType<typeof startTestOwner>>;

/** JSON exactly `levels` levels deep in the owner's count (objects and arrays: `{}` and `{"a": 1}` are 1); every fourth level an array. */
function nested(levels: number): JsonObject {
  let value: unknown = "bottom";
  for (let level = levels; level >= 1; level--) value = level % 4 === 0 ? [value] : { a: value };
  return value as JsonObject;
}

/** Depth of a JSON value in the owner's count. */
function depthOf(value: unknown): number {
  if (value === null || typeof value !== "object") return 0;
  const children = Array.isArray(value) ? value : Object.values(value);
  return 1 + Math.max(0, ...children.map(depthOf));
}

/** A raw executor stream (grpc, binary): send messages, read the owner's. */
function rawExecutor(client: ChronologClient, hello: MessageInitShape<typeof SubscribeRequestSchema>) {
  type Request = MessageInitShape<typeof SubscribeRequestSchema>;
  const outbox: Request[] = [hello];
  let wake = () => {};
  let open = true;
  async function* requests() {
    while (open) {
      while (outbox.length > 0) yield outbox.shift()!;
      await new Promise<void>((r) => (wake = r));
    }
  }
  const abort = new AbortController();
  const stream = createRpcClient(ExecutorService, client.transport).subscribe(requests(), { signal: abort.signal })[Symbol.asyncIterator]();
  return {
    send(m: Request) {
      outbox.push(m);
      wake();
    },
    /** The next owner message that is not a heartbeat. */
    async next(): Promise<SubscribeResponse["message"]> {
      for (;;) {
        const r = await stream.next();
        if (r.done) throw new Error("stream ended");
        if (r.value.message.case !== "heartbeat") return r.value.message;
      }
    },
    close() {
      open = false;
      wake();
      abort.abort();
    },
  };
}

const violationFields = (err: ConnectError) => err.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field);

describe("schema patterns run on RE2", () => {
  let owner: TestOwner;
  let admin: ChronologClient;
  beforeAll(async () => {
    owner = await startTestOwner();
    admin = createClient({ url: owner.url });
  });
  afterAll(async () => owner?.close());

  it("a catastrophic-backtracking pattern registers, and its evil input is checked fast and right; patterns search unanchored", async () => {
    await admin.registerPlugin({
      name: "redos",
      events: {
        "thing.said": {
          schema: {
            type: "object",
            properties: { s: { type: "string", pattern: "^(a+)+$" }, t: { type: "string", pattern: "b+" }, u: { type: "string", pattern: "^caf\\u00e9$" } },
            patternProperties: { "^(x+)+$": { type: "number" } },
          },
          allow: ["*"],
        },
      },
    });
    const evil = `${"a".repeat(28)}!`;
    let t0 = performance.now();
    await expectConnectError(admin.emit("thing.said", { s: evil }), Code.InvalidArgument, /data\/s/, /must match pattern/);
    expect(performance.now() - t0).toBeLessThan(500);
    // A key that does not match patternProperties' evil pattern is not checked by it (fast too).
    t0 = performance.now();
    expect((await admin.emit("thing.said", { [`${"x".repeat(28)}!`]: "text" })).event?.seq).toBe(1n);
    expect(performance.now() - t0).toBeLessThan(500);
    await expectConnectError(admin.emit("thing.said", { xxxx: "not a number" }), Code.InvalidArgument, /data\/xxxx/, /must be number/);
    // Matches as JSON Schema says: anchored only by ^ and $, searched anywhere otherwise.
    expect((await admin.emit("thing.said", { s: "a".repeat(5000), t: "abbbc", u: "café", xx: 1 })).event?.seq).toBe(2n);
    await expectConnectError(admin.emit("thing.said", { t: "ac" }), Code.InvalidArgument, /data\/t/);
    await expectConnectError(admin.emit("thing.said", { u: "cafe" }), Code.InvalidArgument, /data\/u/);
    await expectConnectError(admin.emit("thing.said", { s: "aab" }), Code.InvalidArgument, /data\/s/);
  });

  it("a pattern RE2 cannot run (backreference, lookaround) is refused at registration, naming the schema path", async () => {
    const before = await admin.plugins.listPlugins({});
    const err = await expectConnectError(
      admin.registerPlugin({
        name: "backref",
        events: { "pair.seen": { schema: { properties: { s: { type: "string", pattern: "^(a)\\1$" } } }, allow: ["*"] } },
      }),
      Code.InvalidArgument,
      /events\.pair\.seen\.schema/,
      /#\/properties\/s\/pattern/,
      /not RE2 syntax/,
    );
    expect(violationFields(err)).toEqual(["events.pair.seen.schema"]);
    await expectConnectError(
      admin.registerPlugin({ name: "lookahead", collections: { note: { schema: { patternProperties: { "^(?=x)": true } } } } }),
      Code.InvalidArgument,
      /collections\.note\.schema/,
      /#\/patternProperties\/\^\(\?=x\)/,
    );
    // A "pattern" that is data (in const) is not compiled.
    expect((await admin.registerPlugin({ name: "data-pattern", events: { "pat.data": { schema: { const: { pattern: "(a)\\1" } } } } })).plugin?.revision).toBe(
      1,
    );
    const names = (r: { plugins: { manifest?: { name: string } }[] }) => r.plugins.map((p) => p.manifest?.name).sort();
    expect(names(await admin.plugins.listPlugins({}))).toEqual([...names(before), "data-pattern"].sort());
  });
});

describe(`JSON nested deeper than ${maxJsonDepth} levels is refused wherever the owner takes it`, () => {
  let owner: TestOwner;
  let admin: ChronologClient;
  const deep = nested(maxJsonDepth + 1);
  const atLimit = nested(maxJsonDepth);

  beforeAll(async () => {
    owner = await startTestOwner();
    admin = createClient({ url: owner.url });
    await admin.registerPlugin({
      name: "deep",
      events: { "deep.thing": { allow: ["*"] } },
      collections: { box: { allow: ["*"] } },
      actions: { work: { allow: ["*"] } },
    });
    await admin.emit("deep.thing", { n: 1 });
    expect(depthOf(deep)).toBe(maxJsonDepth + 1);
    expect(depthOf(atLimit)).toBe(maxJsonDepth);
  });
  afterAll(async () => owner?.close());

  it("Emit and EmitBatch: INVALID_ARGUMENT naming the field, over gRPC and Connect JSON; nothing written", async () => {
    const before = await logSnapshot(admin);
    let err = await expectConnectError(admin.emit("deep.thing", deep), Code.InvalidArgument, /^data is nested deeper than 32 levels \(at data\/a\//);
    expect(violationFields(err)).toEqual(["data"]);
    err = await expectConnectError(
      admin.emitBatch([
        { type: "deep.thing", data: {} },
        { type: "deep.thing", data: deep },
      ]),
      Code.InvalidArgument,
      /events\[1\]\.data is nested deeper/,
    );
    expect(violationFields(err)).toEqual(["events[1].data"]);
    // Connect JSON decodes far deeper (40, 48 and 60 levels are accepted).
    for (const levels of [40, 48, 60]) {
      const res = await postJson(owner.port, "/chronolog.v1.LogService/Emit", { type: "deep.thing", data: nested(levels) });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe("invalid_argument");
      expect(res.body.message).toMatch(/data is nested deeper than 32 levels/);
    }
    await expectUnchanged(admin, before);
  });

  it("data at the limit is accepted over Connect JSON and read back by binary clients (SDK read and watch over gRPC)", async () => {
    const res = await postJson(owner.port, "/chronolog.v1.LogService/Emit", { type: "deep.thing", data: atLimit, id: "at-limit" });
    expect(res.status).toBe(200);
    const read = [];
    for await (const e of admin.read({ types: ["deep.thing"] })) read.push(e);
    expect(read.at(-1)?.id).toBe("at-limit");
    expect(read.at(-1)?.data).toEqual(atLimit);
    const abort = new AbortController();
    const watched = [];
    for await (const e of admin.watch({ types: ["deep.thing"] }, { signal: abort.signal })) {
      watched.push(e);
      if (e.id === "at-limit") break;
    }
    expect(watched.at(-1)?.data).toEqual(atLimit);
  });

  it("collection documents and patches (a patch's path counts), action inputs, timer and delay inputs; nothing written", async () => {
    const before = await logSnapshot(admin);
    const fieldOf = async (p: Promise<unknown>, field: string) =>
      expect(violationFields(await expectConnectError(p, Code.InvalidArgument, /nested deeper than 32 levels/))).toEqual([field]);
    await fieldOf(admin.createDocument("box", { _id: "b", ...deep }), "doc");
    await fieldOf(admin.call("deep.work", deep), "input");
    await fieldOf(admin.schedule("deep.work", deep, { everyMs: 60_000 }), "input");
    await fieldOf(admin.delay("deep.work", deep, { intervalMs: 60_000 }, "unbounded"), "input");
    await expectUnchanged(admin, before);

    // A document at the limit; a patch whose path takes a value past it is refused, one within it is taken.
    const created = await admin.createDocument("box", { _id: "b", ...atLimit });
    expect(await admin.getDocument("box", "b")).toEqual({ _id: "b", ...atLimit });
    expect(created.seq).toBeGreaterThan(0n);
    const afterCreate = await logSnapshot(admin);
    const path = Array.from({ length: 30 }, () => "p").join(".");
    await fieldOf(admin.patchDocument("box", "b", { set: { [path]: { q: { r: { s: 1 } } } } }), `set.${path}`); // the document and 29 objects on the path, then 3 levels: 33
    await fieldOf(admin.patchDocument("box", "b", { set: { [`${path}.p.p.p`]: 1 } }), `set.${path}.p.p.p`); // 33 objects made on the way
    await fieldOf(admin.replaceDocument("box", "b", deep), "doc");
    await expectUnchanged(admin, afterCreate);
    await admin.patchDocument("box", "b", { set: { [path]: { q: { r: 1 } } } }); // 30 + 2 levels: 32
    expect(depthOf(await admin.getDocument("box", "b"))).toBe(maxJsonDepth);
    // Read back over gRPC: the document's created and updated events.
    const changes = [];
    for await (const e of admin.read({ types: ["box.created", "box.updated"] })) changes.push(e.type);
    expect(changes).toEqual(["box.created", "box.updated"]);
  });

  it("filters: ReadLog's and Watch's where, FindDocuments' filter", async () => {
    const where = { a: nested(maxJsonDepth) }; // 33 levels
    await expectConnectError(admin.log.readLog({ where }), Code.InvalidArgument, /^where is nested deeper than 32 levels/);
    const watch = async () => {
      for await (const _ of admin.log.watch({ where })) break;
    };
    await expectConnectError(watch(), Code.InvalidArgument, /^where is nested deeper than 32 levels/);
    await expectConnectError(admin.findDocuments("box", { filter: where }), Code.InvalidArgument, /^filter is nested deeper than 32 levels/);
    expect((await admin.log.readLog({ where: nested(maxJsonDepth) })).events).toBeDefined(); // 32 levels: taken
  });

  it("a manifest's schedule input (it becomes the calls' input) is refused at registration", async () => {
    await expectConnectError(
      admin.registerPlugin({ name: "deep-schedule", actions: { tick: {} }, schedules: { often: { action: "tick", everyMs: 60_000n, input: deep } } }),
      Code.InvalidArgument,
      /schedules\.often\.input/,
      /nested deeper than 32 levels/,
    );
    await expectConnectError(admin.plugins.getPlugin({ name: "deep-schedule" }), Code.NotFound);
  });

  it("an executor's action output too deep ends the call failed (the executor gets a notice), not a poison action.completed", async () => {
    const executor = rawExecutor(admin, { message: { case: "hello", value: { executor: "deep-exec", actions: ["deep.work"], credits: 4 } } });
    try {
      expect((await executor.next()).case).toBe("welcome");
      const call = admin.call("deep.work", { go: 1 });
      call.catch(() => {});
      const invocation = await executor.next();
      expect(invocation.case).toBe("invocation");
      const invocationId = invocation.case === "invocation" ? invocation.value.invocationId : "";
      executor.send({ message: { case: "actionResult", value: { invocationId, output: deep } } });
      await expectConnectError(call, Code.Aborted, /output is nested deeper than 32 levels/);
      const notice = await executor.next();
      expect(notice).toMatchObject({ case: "notice", value: { reason: "INVALID_OUTPUT", workId: invocationId } });
      // An output at the limit completes, and its action.completed reads back over gRPC.
      const ok = admin.call("deep.work", { go: 2 });
      const second = await executor.next();
      const secondId = second.case === "invocation" ? second.value.invocationId : "";
      executor.send({ message: { case: "actionResult", value: { invocationId: secondId, output: atLimit } } });
      expect((await ok).output).toEqual(atLimit);
      const completed = [];
      for await (const e of admin.read({ types: ["action.completed", "action.failed"] })) completed.push(e.type);
      expect(completed).toEqual(["action.failed", "action.completed"]);
    } finally {
      executor.close();
    }
  });

  it("binary requests deeper than protobuf's own limit (~49 levels) fail in decoding, before any handler: INVALID_ARGUMENT, nothing written", async () => {
    const before = await logSnapshot(admin);
    await expectConnectError(
      admin.log.emit({ type: "deep.thing", data: nested(60) }),
      Code.InvalidArgument,
      /not a valid chronolog\.v1\.EmitRequest .*maximum recursion depth/,
    );
    await expectUnchanged(admin, before);
  });
});

describe(`an executor's credits are clamped to ${maxCredits}`, () => {
  let owner: TestOwner;
  let admin: ChronologClient;
  beforeAll(async () => {
    owner = await startTestOwner();
    admin = createClient({ url: owner.url });
  });
  afterAll(async () => owner?.close());

  it("hello 4294967295 then Credit 1: ListExecutors still answers, with the clamped credits; the executor is told", async () => {
    const executor = rawExecutor(admin, { message: { case: "hello", value: { executor: "greedy", credits: 4294967295 } } });
    const modest = rawExecutor(admin, { message: { case: "hello", value: { executor: "modest", credits: 65_000 } } });
    try {
      expect((await executor.next()).case).toBe("welcome");
      expect(await executor.next()).toMatchObject({ case: "notice", value: { reason: "CREDITS_CLAMPED" } });
      executor.send({ message: { case: "credit", value: { credits: 1 } } });
      expect(await executor.next()).toMatchObject({ case: "notice", value: { reason: "CREDITS_CLAMPED" } });
      expect((await modest.next()).case).toBe("welcome");
      modest.send({ message: { case: "credit", value: { credits: 500 } } }); // 65,500: within
      modest.send({ message: { case: "credit", value: { credits: 4294967295 } } }); // over
      const notice = await modest.next();
      expect(notice).toMatchObject({ case: "notice", value: { reason: "CREDITS_CLAMPED" } });
      const listed = (await admin.admin.listExecutors({})).executors.map((e) => [e.executor, e.credits]);
      expect(listed.sort()).toEqual([
        ["greedy", maxCredits],
        ["modest", maxCredits],
      ]);
    } finally {
      executor.close();
      modest.close();
    }
  });
});
