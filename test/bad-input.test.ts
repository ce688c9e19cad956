// Bad input: every bad request fails with the right
// gRPC code and a message naming the problem, and writes nothing: each case
// compares the whole log (head and events, via ReadLog) before and after.
//
// @module-tag postgres

import * as http2 from "node:http2";
import * as net from "node:net";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError, createClient as createRpcClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { createClient, type ChronologClient } from "../sdk/ts/src/client.js";
import { ExecutorService, type SubscribeRequestSchema } from "@chronolog/sdk/gen/chronolog/v1/executor_pb";
import { BadRequestSchema, ErrorInfoSchema } from "@chronolog/sdk/gen/google/rpc/error_details_pb";
import { Health, HealthCheckResponse_ServingStatus as ServingStatus } from "@chronolog/sdk/gen/grpc/health/v1/health_pb";
import { loadConfig, type OwnerConfig } from "../server/src/config.js";
import { expectConnectError, expectUnchanged, logSnapshot, type LogSnapshot } from "./helpers/log-snapshot.js";
import { startTestOwner, tempDir } from "./helpers/owner.js";
import { postJson } from "./helpers/post-json.js";

type TestOwner = Awaited<ReturnType<typeof startTestOwner>>;

const ADMIN_TOKEN = "admin-token-0123456789abcdef";
const CLIENT_TOKEN = "client-token-0123456789abcdef";

const config: OwnerConfig = {
  principals: [
    { name: "ops", token: ADMIN_TOKEN, role: "admin", assert: { id: ["*"], for: ["*"], in: ["*"], via: ["*"] } },
    {
      name: "alice-app",
      token: CLIENT_TOKEN,
      role: "client",
      actor: { id: "user:alice", in: "space:acme" },
      assert: { id: ["user:alice"], via: ["app:*"] },
    },
  ],
  limits: { max_message_bytes: 2048 },
};

const manifest = {
  name: "shop",
  events: {
    "order.placed": {
      schema: {
        type: "object",
        required: ["amount"],
        additionalProperties: false,
        properties: { amount: { type: "number", minimum: 0 }, note: { type: "string" } },
      },
      allow: ["*"],
    },
    "audit.logged": { allow: ["role:admin"] },
    "internal.tick": {}, // no allow: only code under a cause
  },
};

describe("bad input writes nothing", () => {
  let owner: TestOwner;
  let admin: ChronologClient;
  let alice: ChronologClient;
  let before: LogSnapshot;

  beforeAll(async () => {
    owner = await startTestOwner({ config });
    admin = createClient({ url: owner.url, token: ADMIN_TOKEN });
    alice = createClient({ url: owner.url, token: CLIENT_TOKEN });
    await admin.registerPlugin(manifest);
    // Some history, so "nothing written" is checked against a non-empty log.
    await admin.emit("order.placed", { amount: 1 });
    await alice.emit("order.placed", { amount: 2 });
    before = await logSnapshot(admin);
    expect(before.head).toBe(2n);
  });
  afterAll(async () => owner?.close());

  it("an undeclared type is INVALID_ARGUMENT naming the type", async () => {
    const err = await expectConnectError(admin.emit("order.cancelled", { amount: 1 }), Code.InvalidArgument, /"order\.cancelled"/, /not declared/);
    expect(err.findDetails(BadRequestSchema)[0]?.fieldViolations).toMatchObject([{ field: "type" }]);
    expect(err.findDetails(ErrorInfoSchema)[0]?.reason).toBe("UNDECLARED_EVENT_TYPE");
    await expectConnectError(admin.emit("", {}), Code.InvalidArgument, /type is required/);
    // In a batch, the message names which event (nothing of the batch is written).
    const inBatch = await expectConnectError(
      admin.emitBatch([
        { type: "order.placed", data: { amount: 1 } },
        { type: "order.cancelled", data: {} },
      ]),
      Code.InvalidArgument,
      /^events\[1\]: event type "order\.cancelled" is not declared/,
    );
    expect(inBatch.findDetails(BadRequestSchema)[0]?.fieldViolations).toMatchObject([{ field: "events[1].type" }]);
    await expectUnchanged(admin, before);
  });

  it("data failing its schema is INVALID_ARGUMENT with google.rpc.BadRequest: JSON pointer and rule", async () => {
    const err = await expectConnectError(alice.emit("order.placed", { amount: -3 }), Code.InvalidArgument, /order\.placed/, /data\/amount/, /minimum/);
    const violations = err.findDetails(BadRequestSchema)[0]?.fieldViolations ?? [];
    expect(violations).toHaveLength(1);
    expect(violations[0].field).toBe("data/amount");
    expect(violations[0].description).toMatch(/minimum/);
    expect(violations[0].description).toMatch(/>= 0/);

    // Several problems at once: each one reported, with its own pointer.
    const many = await expectConnectError(admin.emit("order.placed", { note: 5, extra: true }), Code.InvalidArgument);
    const fields = (many.findDetails(BadRequestSchema)[0]?.fieldViolations ?? []).map((v) => [v.field, v.description.match(/rule: (\w+)/)?.[1]]);
    expect(fields).toEqual(
      expect.arrayContaining([
        ["data", "required"], // on the object that lacks it; the description names `amount`
        ["data/extra", "additionalProperties"],
        ["data/note", "type"],
      ]),
    );
    expect(fields).toHaveLength(3);
    await expectUnchanged(admin, before);
  });

  it("a type whose allow excludes the caller is PERMISSION_DENIED", async () => {
    await expectConnectError(alice.emit("audit.logged", { what: "x" }), Code.PermissionDenied, /alice-app/, /audit\.logged/);
    // Without allow, nobody may emit it from outside, admins included.
    await expectConnectError(admin.emit("internal.tick", {}), Code.PermissionDenied, /internal\.tick/, /only code under a cause/);
    await expectConnectError(alice.emit("internal.tick", {}), Code.PermissionDenied, /internal\.tick/);
    await expectUnchanged(admin, before);
  });

  it("asserting an actor field the principal may not assert is PERMISSION_DENIED naming the field", async () => {
    await expectConnectError(alice.emit("order.placed", { amount: 1 }, { actor: { id: "user:bob" } }), Code.PermissionDenied, /actor\.id/, /user:bob/);
    await expectConnectError(alice.emit("order.placed", { amount: 1 }, { actor: { in: "space:other" } }), Code.PermissionDenied, /actor\.in/);
    await expectConnectError(alice.emit("order.placed", { amount: 1 }, { actor: { via: "agent:x" } }), Code.PermissionDenied, /actor\.via/);
    await expectUnchanged(admin, before);
  });

  it("the allowed actor fields are stored: defaults plus what the principal may assert", async () => {
    // (control case for the tests above; writes, so it checks a fresh snapshot)
    const o = await startTestOwner({ config });
    try {
      const a = createClient({ url: o.url, token: ADMIN_TOKEN });
      const c = createClient({ url: o.url, token: CLIENT_TOKEN });
      await a.registerPlugin(manifest);
      const e1 = (await c.emit("order.placed", { amount: 1 })).event!;
      expect(e1.actor).toMatchObject({ id: "user:alice", for: "", in: "space:acme", via: "" });
      const e2 = (await c.emit("order.placed", { amount: 1 }, { actor: { via: "app:mobile" } })).event!;
      expect(e2.actor).toMatchObject({ id: "user:alice", in: "space:acme", via: "app:mobile" });
      expect((await a.emit("audit.logged", {})).event!.actor).toMatchObject({ id: "", via: "principal:ops" }); // no defaults: through its principal
    } finally {
      await o.close();
    }
  });

  it("a missing or wrong token is UNAUTHENTICATED; health Check needs no token", async () => {
    const anonymous = createClient({ url: owner.url });
    await expectConnectError(anonymous.emit("order.placed", { amount: 1 }), Code.Unauthenticated, /missing bearer token/);
    await expectConnectError(anonymous.log.readLog({}), Code.Unauthenticated, /missing bearer token/);
    const wrong = createClient({ url: owner.url, token: "not-a-token-0123456789" });
    await expectConnectError(wrong.emit("order.placed", { amount: 1 }), Code.Unauthenticated, /unknown bearer token/);
    const watch = wrong.log.watch({})[Symbol.asyncIterator]();
    await expectConnectError(watch.next(), Code.Unauthenticated, /unknown bearer token/);
    const health = createRpcClient(Health, createGrpcTransport({ baseUrl: owner.url }));
    expect((await health.check({})).status).toBe(ServingStatus.SERVING);
    expect((await health.check({ service: "chronolog.v1.LogService" })).status).toBe(ServingStatus.SERVING);
    await expectUnchanged(admin, before);
  });

  it("a message over limits.max_message_bytes is RESOURCE_EXHAUSTED", async () => {
    await expectConnectError(admin.emit("order.placed", { amount: 1, note: "x".repeat(3000) }), Code.ResourceExhausted);
    await expectConnectError(
      admin.emitBatch(Array.from({ length: 60 }, (_, i) => ({ type: "order.placed", data: { amount: i, note: "y".repeat(40) } }))),
      Code.ResourceExhausted,
    );
    await expectUnchanged(admin, before);
    // Just under the limit still works (on a separate owner, to keep this log unchanged).
    const o = await startTestOwner({ config });
    try {
      const a = createClient({ url: o.url, token: ADMIN_TOKEN });
      await a.registerPlugin(manifest);
      expect((await a.emit("order.placed", { amount: 1, note: "x".repeat(1500) })).event!.seq).toBe(1n);
    } finally {
      await o.close();
    }
  });

  it("an executor's message over the limit ends its stream with RESOURCE_EXHAUSTED (it hears why); the welcome says the limit", async () => {
    type Request = MessageInitShape<typeof SubscribeRequestSchema>;
    const outbox: Request[] = [{ message: { case: "hello", value: { executor: "raw", credits: 1 } } }];
    let wake = () => {};
    async function* requests() {
      for (;;) {
        while (outbox.length > 0) yield outbox.shift()!;
        await new Promise<void>((r) => (wake = r));
      }
    }
    const stream = createRpcClient(ExecutorService, admin.transport).subscribe(requests())[Symbol.asyncIterator]();
    const welcome = (await stream.next()).value?.message;
    expect(welcome).toMatchObject({ case: "welcome", value: { maxMessageBytes: 2048, actionResultBatches: true } });
    outbox.push({ message: { case: "actionResult", value: { invocationId: "none", error: "x".repeat(3000) } } });
    wake();
    const ended = await (async () => {
      try {
        for (let m = await stream.next(); !m.done; m = await stream.next());
        return "ended without an error";
      } catch (e) {
        return ConnectError.from(e).code;
      }
    })();
    expect(ended).toBe(Code.ResourceExhausted);
    await expectUnchanged(admin, before);
  });

  it("malformed protobuf bytes get an error status; the owner stays up", async () => {
    const garbage = [
      Buffer.from([0x0f, 0xff, 0xff]), // wire type 7 does not exist
      Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01]), // field 1: a length far past the end
      Buffer.from([0x12, 0x05, 0x0a, 0x03]), // data: a Struct cut short
    ];
    for (const body of garbage) {
      const res = await rawGrpc(owner.port, "/chronolog.v1.LogService/Emit", body, { authorization: `Bearer ${ADMIN_TOKEN}` });
      expect(res.httpStatus).toBe(200);
      expect(["3", "13"]).toContain(res.grpcStatus); // INVALID_ARGUMENT or INTERNAL
      expect(res.grpcMessage).not.toBe("");
    }
    // A length prefix that promises more than is sent, then the stream ends.
    const short = await rawGrpc(owner.port, "/chronolog.v1.LogService/Emit", Buffer.from([0x0a, 0x01]), { authorization: `Bearer ${ADMIN_TOKEN}` }, 50);
    expect(["3", "13"]).toContain(short.grpcStatus);
    await expectUnchanged(admin, before);
    expect((await createRpcClient(Health, createGrpcTransport({ baseUrl: owner.url })).check({})).status).toBe(ServingStatus.SERVING);
  });

  it("an invalid where filter or type filter is INVALID_ARGUMENT at request time, for ReadLog and for Watch", async () => {
    const bad = { $foo: 1 };
    await expectConnectError(admin.log.readLog({ where: bad }), Code.InvalidArgument, /where/, /\$foo/);
    await expectConnectError(admin.log.readLog({ where: { amount: { $bogus: 2 } } }), Code.InvalidArgument, /where/, /\$bogus/);
    // Watch fails at once, before any event, although the log has events to catch up on.
    const received: unknown[] = [];
    const t0 = Date.now();
    const failure = (async () => {
      for await (const m of admin.log.watch({ where: bad })) received.push(m);
    })();
    await expectConnectError(failure, Code.InvalidArgument, /where/, /\$foo/);
    expect(received).toEqual([]);
    expect(Date.now() - t0).toBeLessThan(2000);
    // Same through the SDK's watch()
    const sdk = admin.watch({ where: bad })[Symbol.asyncIterator]();
    await expectConnectError(sdk.next(), Code.InvalidArgument, /\$foo/);
    // A type filter names each type: a pattern or an empty name would match nothing, silently.
    await expectConnectError(
      admin.log.readLog({ types: ["order.placed", "timer.*"] }),
      Code.InvalidArgument,
      /types\[1\] "timer\.\*" is not an event type.*patterns are not supported/,
    );
    await expectConnectError(
      admin.log
        .watch({ types: [""] })
        [Symbol.asyncIterator]()
        .next(),
      Code.InvalidArgument,
      /types\[0\] "" is not an event type/,
    );
    await expectUnchanged(admin, before);
  });

  it("an invalid manifest is INVALID_ARGUMENT naming the declaration; nothing registered", async () => {
    const plugins = () => admin.plugins.listPlugins({}).then((r) => r.plugins.map((p) => [p.manifest!.name, p.revision]));
    const registered = await plugins();
    expect(registered).toEqual([["shop", 1]]);

    // A schema that is not a JSON Schema.
    let err = await expectConnectError(
      admin.registerPlugin({ name: "bad", events: { "thing.done": { schema: { type: "nonsense" }, allow: ["*"] } } }),
      Code.InvalidArgument,
      /events\.thing\.done\.schema/,
    );
    expect(err.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field)).toEqual(["events.thing.done.schema"]);
    // A processor with a bad where filter.
    err = await expectConnectError(
      admin.registerPlugin({ name: "bad", processors: { mailer: { on: ["order.placed"], where: { $foo: 1 } } } }),
      Code.InvalidArgument,
      /processors\.mailer\.where/,
    );
    expect(err.findDetails(BadRequestSchema)[0]?.fieldViolations[0]?.description).toMatch(/\$foo/);
    // A runtime type, a bad name and a bad allow entry, reported together.
    err = await expectConnectError(
      admin.registerPlugin({ name: "Bad Name", events: { "action.started": {}, "x.y": { allow: ["role:superuser"] } } }),
      Code.InvalidArgument,
    );
    expect(
      err
        .findDetails(BadRequestSchema)[0]
        ?.fieldViolations.map((v) => v.field)
        .sort(),
    ).toEqual(["events.action.started", "events.x.y.allow", "name"]);
    // Stealing another plugin's type.
    await expectConnectError(admin.registerPlugin({ name: "thief", events: { "order.placed": {} } }), Code.InvalidArgument, /order\.placed/, /shop/);
    // A bad update of an existing plugin keeps its current revision.
    await expectConnectError(
      admin.registerPlugin({ ...manifest, events: { ...manifest.events, "order.placed": { schema: { minimum: "zero" }, allow: ["*"] } } }),
      Code.InvalidArgument,
      /events\.order\.placed\.schema/,
    );
    // Only admins register.
    await expectConnectError(alice.registerPlugin({ name: "mine" }), Code.PermissionDenied, /alice-app/, /admin/);

    // An unknown field (Connect JSON, as a browser or curl would send it).
    const res = await postJson(owner.port, "/chronolog.v1.PluginService/RegisterPlugin", { manifest: { name: "typo", evnts: { "a.b": {} } } }, ADMIN_TOKEN);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("invalid_argument");
    expect(res.body.message).toMatch(/evnts/);

    expect(await plugins()).toEqual(registered);
    await expectConnectError(admin.plugins.getPlugin({ name: "bad" }), Code.NotFound, /bad/);
    // The old schema still applies.
    await expectConnectError(admin.emit("order.placed", { amount: -1 }), Code.InvalidArgument, /minimum/);
    await expectUnchanged(admin, before);
  });

  it("in JSON (curl, a browser), a misspelt field or enum name is INVALID_ARGUMENT for every service, not dropped; nothing written", async () => {
    const refused = async (path: string, body: unknown, named: RegExp) => {
      const res = await postJson(owner.port, path, body, ADMIN_TOKEN);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe("invalid_argument");
      expect(res.body.message).toMatch(named);
    };
    const every = { timerId: "typo", action: "shop.remind", spec: { everyMs: "60000" } };
    await refused("/chronolog.v1.TimeService/Schedule", { ...every, policy: { overlap: "OVERLAP_POLICY_SKIPP" } }, /OVERLAP_POLICY_SKIPP/);
    await refused("/chronolog.v1.TimeService/Schedule", { ...every, policy: { catchUp: "CATCH_UP_POLICY_NONEE" } }, /CATCH_UP_POLICY_NONEE/);
    await refused("/chronolog.v1.TimeService/Delay", { action: "shop.remind", intervalMs: "1000", overdu: { unbounded: true } }, /overdu/);
    await refused("/chronolog.v1.TimeService/ListTimers", { kind: "TIMER_KIND_BOGUS" }, /TIMER_KIND_BOGUS/);
    // A day the month does not have, or hour 24, is refused, not moved to the next month or day (JavaScript's Date.parse moves it: patches/).
    await refused("/chronolog.v1.TimeService/Schedule", { timerId: "feb30", action: "shop.remind", spec: { at: "2027-02-30T00:00:00Z" } }, /RFC 3339/);
    await refused("/chronolog.v1.TimeService/Schedule", { ...every, policy: { start: "2027-04-31T00:00:00Z" } }, /RFC 3339/);
    await refused("/chronolog.v1.TimeService/Delay", { action: "shop.remind", at: "2027-01-01T24:00:00Z", overdue: { unbounded: true } }, /RFC 3339/);
    await refused("/chronolog.v1.LogService/Emit", { type: "order.placed", data: { amount: 3 }, caus: "x" }, /caus/);
    // A lone surrogate in a Struct sent as JSON: binary protobuf (UTF-8) could not carry it, so readers would see different data.
    await refused("/chronolog.v1.LogService/Emit", { type: "order.placed", data: { amount: 3, note: "\ud800x" } }, /lone surrogate \(at data\/note\)/);
    expect((await admin.time.listTimers({})).timers).toEqual([]);
    await expectUnchanged(admin, before);
  });

  it("non-HTTP garbage and half-open connections do not stop the owner", async () => {
    const sockets = await Promise.all(Array.from({ length: 6 }, () => connectRaw(owner.port)));
    const [garbage, tlsHello, _silent, halfPreface, badFrames, halfClosed] = sockets;
    garbage.write(Buffer.from("\x00\x01\x02 hello there \xff\xfe\r\n\r\n\r\n", "latin1"));
    tlsHello.write(Buffer.from([0x16, 0x03, 0x01, 0x00, 0xa5, 0x01, 0x00, 0x00, 0xa1, 0x03, 0x03]));
    // `silent` connects and sends nothing.
    halfPreface.write("PRI * HTTP/2.0\r\n");
    badFrames.write(Buffer.concat([Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1"), Buffer.alloc(64, 0xee)]));
    halfClosed.end('POST /chronolog.v1.LogService/Emit HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"type":'); // FIN after a partial body
    await new Promise((r) => setTimeout(r, 100));

    // While all of them are still around, the owner answers every protocol.
    expect((await createRpcClient(Health, createGrpcTransport({ baseUrl: owner.url })).check({})).status).toBe(ServingStatus.SERVING);
    expect((await admin.log.readLog({})).headSeq).toBe(2n);
    const h1 = createClient({ url: owner.url, token: ADMIN_TOKEN, protocol: "connect", httpVersion: "1.1" });
    expect((await h1.log.readLog({})).events).toHaveLength(2);
    await expectConnectError(h1.emit("order.placed", { amount: -1 }), Code.InvalidArgument, /minimum/);
    await expectUnchanged(admin, before);
    for (const s of sockets) s.destroy();

    // A burst of connections that open and vanish.
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        const s = await connectRaw(owner.port);
        s.write(Math.random() < 0.5 ? "PRI * HTTP" : "GARBAGE");
        s.destroy();
      }),
    );
    expect((await admin.log.readLog({})).headSeq).toBe(2n);
    await expectUnchanged(admin, before);
  });
});

describe("one id rule: at most 256 characters (code points), no control characters, not only whitespace", () => {
  const emoji256 = "\u{1F600}".repeat(256); // 512 UTF-16 units
  const bad: [string, RegExp][] = [
    ["\u{1F600}".repeat(257), /longer than 256 characters/],
    ["x".repeat(257), /longer than 256 characters/],
    [" ", /only whitespace/],
    ["\t\n\u3000", /only whitespace/],
    ["a\u0000b", /control character \(U\+0000 at character 2\)/],
    ["a\u007fb", /control character \(U\+007F/],
    ["\u{1F600}\u0085", /control character \(U\+0085 at character 2\)/],
  ];

  it("event ids, call ids, timer ids and document ids: INVALID_ARGUMENT naming the field, nothing written; 256 emoji are accepted", async () => {
    const owner = await startTestOwner({ config });
    try {
      const admin = createClient({ url: owner.url, token: ADMIN_TOKEN });
      await admin.registerPlugin({
        name: "ids",
        events: { "thing.done": { allow: ["*"] } },
        actions: { work: { allow: ["*"] } },
        collections: { thing: { allow: ["*"] } },
      });
      const before = await logSnapshot(admin);
      const field = (err: ConnectError) => err.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field);
      for (const [id, message] of bad) {
        expect(field(await expectConnectError(admin.emit("thing.done", {}, { id }), Code.InvalidArgument, /^id /, message))).toEqual(["id"]);
        expect(
          field(
            await expectConnectError(
              admin.emitBatch([
                { type: "thing.done", data: {} },
                { type: "thing.done", data: {}, id },
              ]),
              Code.InvalidArgument,
              /^events\[1\]\.id /,
              message,
            ),
          ),
        ).toEqual(["events[1].id"]);
        expect(field(await expectConnectError(admin.call("ids.work", {}, { callId: id }), Code.InvalidArgument, /^call_id /, message))).toEqual(["call_id"]);
        expect(
          field(await expectConnectError(admin.schedule("ids.work", {}, { everyMs: 60_000 }, { timerId: id }), Code.InvalidArgument, /^timer_id /, message)),
        ).toEqual(["timer_id"]);
        expect(field(await expectConnectError(admin.createDocument("thing", { _id: id }), Code.InvalidArgument, /^doc\._id /, message))).toEqual(["doc._id"]);
        expect(field(await expectConnectError(admin.getDocument("thing", id), Code.InvalidArgument, /^id /, message))).toEqual(["id"]);
      }
      await expectUnchanged(admin, before);

      // 256 characters of two UTF-16 units each are within the limit everywhere.
      expect((await admin.emit("thing.done", {}, { id: emoji256 })).event!.id).toBe(emoji256);
      expect((await admin.emitBatch([{ type: "thing.done", data: { n: 2 }, id: `${emoji256.slice(2)}a` }]))[0].event!.id).toBe(`${emoji256.slice(2)}a`);
      expect((await admin.schedule("ids.work", {}, { everyMs: 60_000 }, { timerId: emoji256 })).id).toBe(emoji256);
      expect((await admin.createDocument("thing", { _id: emoji256 })).doc?._id).toBe(emoji256);
      expect((await admin.getDocument("thing", emoji256))._id).toBe(emoji256);
      // No executor hosts ids.work: the call id passed the rule, so the call waits and runs out of time.
      await expectConnectError(admin.call("ids.work", {}, { callId: emoji256, timeoutMs: 300 }), Code.Unavailable);
      // Leading and trailing spaces are part of an id, not a problem.
      expect((await admin.emit("thing.done", {}, { id: " a " })).event!.id).toBe(" a ");
    } finally {
      await owner.close();
    }
  });
});

describe("principal names cannot pose as roles", () => {
  it("a config principal named role:<x> is refused, so it can never match an allow entry meant for a role", () => {
    const dir = tempDir();
    const file = join(dir, "owner.yaml");
    writeFileSync(file, `principals:\n  - name: "role:admin"\n    role: client\n    token: ${CLIENT_TOKEN}\n`);
    expect(() => loadConfig(file)).toThrow(/invalid config .*owner\.yaml: \/principals\/0\/name/);
    writeFileSync(file, `principals:\n  - name: "svc:role-admin"\n    role: client\n    token: ${CLIENT_TOKEN}\n`);
    expect(loadConfig(file).principals?.[0].name).toBe("svc:role-admin");
  });
});

describe("an invalid manifest file stops the owner from starting", () => {
  it("names the file and the unknown field, and leaves the folder usable", async () => {
    const pluginsDir = join(tempDir(), "plugins");
    mkdirSync(pluginsDir);
    writeFileSync(join(pluginsDir, "typo.yaml"), "name: typo\nevnts:\n  a.b: {}\n");
    const dataDir = tempDir();
    await expect(startTestOwner({ dataDir, pluginsDir })).rejects.toThrow(/typo\.yaml.*evnts|evnts.*typo\.yaml/s);
    writeFileSync(join(pluginsDir, "typo.yaml"), "name: typo\nprocessors:\n  p:\n    where: { $foo: 1 }\n");
    await expect(startTestOwner({ dataDir, pluginsDir })).rejects.toThrow(/processors\.p\.where/);
    writeFileSync(join(pluginsDir, "typo.yaml"), "name: typo\nevents: [not, a, map\n");
    await expect(startTestOwner({ dataDir, pluginsDir })).rejects.toThrow(/typo\.yaml/);
    // The failed starts released the folder and registered nothing.
    const o = await startTestOwner({ dataDir });
    try {
      const c = createClient({ url: o.url });
      expect((await c.plugins.listPlugins({})).plugins).toEqual([]);
      expect((await c.log.readLog({})).headSeq).toBe(0n);
    } finally {
      await o.close();
    }
  });
});

/** Sends one gRPC request with a hand-made body over h2c and returns the status. */
function rawGrpc(
  port: number,
  path: string,
  message: Buffer,
  headers: Record<string, string>,
  claimedLength = message.length,
): Promise<{ httpStatus: number; grpcStatus: string; grpcMessage: string }> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(`http://127.0.0.1:${port}`);
    session.on("error", reject);
    const prefix = Buffer.alloc(5);
    prefix.writeUInt32BE(claimedLength, 1);
    const req = session.request({ ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers", ...headers });
    let httpStatus = 0;
    let status: string | undefined;
    let msg = "";
    const take = (h: http2.IncomingHttpHeaders) => {
      if (h["grpc-status"] !== undefined) {
        status = String(h["grpc-status"]);
        msg = decodeURIComponent(String(h["grpc-message"] ?? ""));
      }
    };
    req.on("response", (h) => {
      httpStatus = Number(h[":status"]);
      take(h); // trailers-only responses
    });
    req.on("trailers", take);
    req.on("data", () => {});
    req.on("error", reject);
    req.on("close", () => {
      session.close();
      if (status === undefined) reject(new Error(`no grpc-status (http ${httpStatus})`));
      else resolve({ httpStatus, grpcStatus: status, grpcMessage: msg });
    });
    req.end(Buffer.concat([prefix, message]));
  });
}

function connectRaw(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, "127.0.0.1", () => resolve(s));
    s.on("error", () => {});
    s.once("error", reject);
  });
}
