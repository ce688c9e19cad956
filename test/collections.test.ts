// Collections end to end through the real transport: create, replace, patch, delete, get and find with the generated
// CollectionService client; each write's change event read back from the log
// with the SDK client; private fields never in an event; `events: false`,
// `records` and `durable: false` leave no events; records reject updates;
// durable: false is lost on restart; a schema failure writes nothing; a
// write under a cause done twice is applied once; permissions; and
// collection names owned by one plugin.
//
// @module-tag postgres

import { toJson, type JsonObject } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient as createRpcClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, type ChronologClient } from "../sdk/ts/src/client.js";
import { CollectionService } from "@chronolog/sdk/gen/chronolog/v1/collection_pb";
import { EventSchema, type Event } from "@chronolog/sdk/gen/chronolog/v1/event_pb";
import { BadRequestSchema } from "@chronolog/sdk/gen/google/rpc/error_details_pb";
import { onPostgres, startTestOwner, tempDir } from "./helpers/owner.js";

type TestOwner = Awaited<ReturnType<typeof startTestOwner>>;
type Collections = Client<typeof CollectionService>;

const tokens = { admin: "admin-token-0123456789", exec: "executor-token-0123456", client: "client-token-012345678" };

/** The plugin under test: one collection per mode, and an event type to act under. */
const shop = {
  name: "shop",
  events: { "job.started": { allow: ["role:admin"] } },
  collections: {
    order: {
      schema: {
        type: "object",
        required: ["amount"],
        properties: {
          _id: { type: "string" },
          amount: { type: "number", minimum: 0 },
          sku: { type: "string" },
          card: { type: "string" },
          address: { type: "object" },
        },
      },
      privateFields: ["card"],
      allow: ["role:admin", "role:client"],
    },
    cart: { events: false, allow: ["*"] },
    ledger: { records: true, privateFields: ["iban"], allow: ["*"] },
    session: { durable: false, allow: ["*"] },
    internal: {},
  },
};

function bearer(token: string): Interceptor {
  return (next) => (req) => {
    req.header.set("authorization", `Bearer ${token}`);
    return next(req);
  };
}

/** The round trips the owner at `url` waited for so far (chronolog_store_waits_total, every connection). */
async function storeWaits(url: string): Promise<number> {
  const response = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${tokens.admin}` } });
  expect(response.status).toBe(200);
  const text = await response.text();
  return [...text.matchAll(/^chronolog_store_waits_total\{[^}]*\} (\d+)$/gm)].reduce((sum, [, n]) => sum + Number(n), 0);
}

/** Awaits `p`, expecting a ConnectError of `code`; returns it. */
async function expectCode(p: Promise<unknown>, code: Code, message?: RegExp): Promise<ConnectError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => ConnectError.from(e),
  );
  expect(err, "the call should have failed").toBeDefined();
  expect(Code[err!.code]).toBe(Code[code]);
  if (message) expect(err!.rawMessage).toMatch(message);
  return err!;
}

async function allEvents(log: ChronologClient): Promise<Event[]> {
  const events: Event[] = [];
  for await (const e of log.read()) events.push(e);
  return events;
}

async function head(log: ChronologClient): Promise<bigint> {
  return (await log.log.readLog({ pageSize: 1 })).headSeq;
}

describe("collections through CollectionService", () => {
  let owner: TestOwner;
  let admin: Collections;
  let exec: Collections;
  let client: Collections;
  let log: ChronologClient;

  beforeAll(async () => {
    owner = await startTestOwner({
      config: {
        principals: [
          { name: "ops", token: tokens.admin, role: "admin", assert: { id: ["*"], in: ["*"] } },
          { name: "worker", token: tokens.exec, role: "executor" },
          { name: "web", token: tokens.client, role: "client", actor: { id: "user:ana" } },
        ],
      },
    });
    const rpc = (token: string) => createRpcClient(CollectionService, createGrpcTransport({ baseUrl: owner.url, interceptors: [bearer(token)] }));
    admin = rpc(tokens.admin);
    exec = rpc(tokens.exec);
    client = rpc(tokens.client);
    log = createClient({ url: owner.url, token: tokens.admin });
    await log.registerPlugin(shop);
  });
  afterAll(async () => owner?.close());

  it("creates, replaces, patches, gets, finds and deletes, each write with its change event", async () => {
    const generated = await client.createDocument({ collection: "order", doc: { amount: 3, sku: "a" } });
    const genId = generated.document!.id;
    expect(genId).not.toBe("");
    expect(generated.document!.doc).toEqual({ _id: genId, amount: 3, sku: "a" });
    expect(generated.seq).toBeGreaterThan(0n);

    const created = await client.createDocument({
      collection: "order",
      doc: { _id: "o-1", amount: 10, sku: "b", card: "4111", address: { city: "Paris", zip: "75001" } },
    });
    expect(created.document!.id).toBe("o-1");
    expect(created.document!.doc).not.toHaveProperty("card"); // a client does not read private fields
    await expectCode(client.createDocument({ collection: "order", doc: { _id: "o-1", amount: 1 } }), Code.AlreadyExists, /o-1/);

    const replaced = await admin.replaceDocument({
      collection: "order",
      id: "o-1",
      doc: { amount: 12, sku: "b", card: "4111", address: { city: "Paris", zip: "75002" }, note: "gift" },
    });
    expect(replaced.document!.doc).toEqual({ _id: "o-1", amount: 12, sku: "b", card: "4111", address: { city: "Paris", zip: "75002" }, note: "gift" });
    const patched = await admin.patchDocument({
      collection: "order",
      id: "o-1",
      set: { "address.city": "Lyon", amount: 15, card: "5500" },
      unset: ["sku", "note"],
    });
    expect(patched.document!.doc).toEqual({ _id: "o-1", amount: 15, card: "5500", address: { city: "Lyon", zip: "75002" } });
    expect(patched.seq).toBe(replaced.seq + 1n);

    expect((await admin.getDocument({ collection: "order", id: "o-1" })).document!.doc).toEqual(patched.document!.doc);
    expect((await client.getDocument({ collection: "order", id: "o-1" })).document!.doc).toEqual({
      _id: "o-1",
      amount: 15,
      address: { city: "Lyon", zip: "75002" },
    });
    const found = await client.findDocuments({ collection: "order", filter: { amount: { $gte: 3 } }, sort: { amount: -1 } });
    expect(found.documents.map((d) => d.id)).toEqual(["o-1", genId]);
    expect((await client.findDocuments({ collection: "order", filter: { "address.city": "Lyon" } })).documents.map((d) => d.id)).toEqual(["o-1"]);
    expect((await client.findDocuments({ collection: "order", sort: { amount: 1 }, limit: 1 })).documents.map((d) => d.id)).toEqual([genId]);
    await expectCode(client.findDocuments({ collection: "order", filter: { amount: { $nope: 1 } } }), Code.InvalidArgument, /filter/);
    await expectCode(client.findDocuments({ collection: "order", sort: { amount: 2 } }), Code.InvalidArgument, /sort/);
    await expectCode(client.findDocuments({ collection: "order", limit: 1001 }), Code.InvalidArgument, /limit/);

    const deleted = await admin.deleteDocument({ collection: "order", id: "o-1" });
    await expectCode(admin.getDocument({ collection: "order", id: "o-1" }), Code.NotFound, /o-1/);
    await expectCode(admin.deleteDocument({ collection: "order", id: "o-1" }), Code.NotFound);
    await expectCode(admin.patchDocument({ collection: "order", id: "o-1", set: { amount: 1 } }), Code.NotFound);
    await expectCode(admin.getDocument({ collection: "nope", id: "x" }), Code.NotFound, /nope/);

    const events = (await allEvents(log)).filter((e) => e.type.startsWith("order."));
    const byId = (seq: bigint) => events.find((e) => e.seq === seq)!;
    expect(byId(generated.seq)).toMatchObject({ type: "order.created", data: { _id: genId, doc: { _id: genId, amount: 3, sku: "a" } } });
    expect(byId(created.seq)).toMatchObject({
      type: "order.created",
      data: { _id: "o-1", doc: { _id: "o-1", amount: 10, sku: "b", address: { city: "Paris", zip: "75001" } } },
    });
    expect(byId(created.seq).actor).toMatchObject({ id: "user:ana" });
    expect(byId(replaced.seq).data).toEqual({
      _id: "o-1",
      doc: { _id: "o-1", amount: 12, sku: "b", address: { city: "Paris", zip: "75002" }, note: "gift" },
      changed: ["address.zip", "amount", "note"],
      removed: [],
    });
    expect(byId(patched.seq).data).toEqual({
      _id: "o-1",
      doc: { _id: "o-1", amount: 15, address: { city: "Lyon", zip: "75002" } },
      changed: ["address.city", "amount"], // card changed too, but it is private: not named
      removed: ["note", "sku"],
    });
    expect(byId(deleted.seq)).toMatchObject({ type: "order.deleted", data: { _id: "o-1", doc: { _id: "o-1", amount: 15 } } });
  });

  it("never puts a private field in an event, and clients cannot filter or sort on one", async () => {
    await admin.createDocument({ collection: "order", doc: { _id: "p-1", amount: 1, card: "secret-card-1" } });
    await admin.patchDocument({ collection: "order", id: "p-1", set: { card: "secret-card-2" } });
    await admin.replaceDocument({ collection: "order", id: "p-1", doc: { amount: 2, card: "secret-card-3" } });
    await admin.patchDocument({ collection: "order", id: "p-1", unset: ["card"] });
    await admin.createDocument({ collection: "order", doc: { _id: "p-2", amount: 1, card: "secret-card-4" } });
    await admin.deleteDocument({ collection: "order", id: "p-2" });
    for (const e of await allEvents(log)) {
      const json = JSON.stringify(toJson(EventSchema, e));
      expect(json).not.toMatch(/secret-card/);
      expect(json).not.toMatch(/"card"/);
    }
    await admin.createDocument({ collection: "order", doc: { _id: "p-3", amount: 1, card: "secret-card-5" } });
    expect((await client.findDocuments({ collection: "order", filter: { card: "secret-card-5" } })).documents).toEqual([]);
    expect((await admin.findDocuments({ collection: "order", filter: { card: "secret-card-5" } })).documents.map((d) => d.id)).toEqual(["p-3"]);
    expect((await exec.getDocument({ collection: "order", id: "p-3" })).document!.doc).toHaveProperty("card", "secret-card-5");
  });

  it("events: false, records and durable: false collections write no events", async () => {
    const before = await head(log);
    const cart = await client.createDocument({ collection: "cart", doc: { items: 1 } });
    expect(cart.seq).toBe(0n);
    expect((await client.patchDocument({ collection: "cart", id: cart.document!.id, set: { items: 2 } })).seq).toBe(0n);
    expect((await client.replaceDocument({ collection: "cart", id: cart.document!.id, doc: { items: 3 } })).seq).toBe(0n);
    expect((await client.getDocument({ collection: "cart", id: cart.document!.id })).document!.doc).toEqual({ _id: cart.document!.id, items: 3 });
    expect((await client.deleteDocument({ collection: "cart", id: cart.document!.id })).seq).toBe(0n);
    const entry = await client.createDocument({ collection: "ledger", doc: { _id: "l-1", amount: 5, iban: "FR76" } });
    expect(entry).toMatchObject({ seq: 0n, document: { id: "l-1", doc: { _id: "l-1", amount: 5 } } });
    const session = await client.createDocument({ collection: "session", doc: { user: "ana" } });
    expect(session.seq).toBe(0n);
    expect((await client.patchDocument({ collection: "session", id: session.document!.id, set: { seen: true } })).document!.doc).toEqual({
      _id: session.document!.id,
      user: "ana",
      seen: true,
    });
    expect((await client.findDocuments({ collection: "session" })).documents).toHaveLength(1);
    expect(await head(log)).toBe(before);
  });

  it("records are append-only: replace, patch and delete are FAILED_PRECONDITION; a taken _id is ALREADY_EXISTS", async () => {
    await admin.createDocument({ collection: "ledger", doc: { _id: "l-2", amount: 1 } });
    await expectCode(admin.replaceDocument({ collection: "ledger", id: "l-2", doc: { amount: 2 } }), Code.FailedPrecondition, /records/);
    await expectCode(admin.patchDocument({ collection: "ledger", id: "l-2", set: { amount: 2 } }), Code.FailedPrecondition, /records/);
    await expectCode(admin.deleteDocument({ collection: "ledger", id: "l-2" }), Code.FailedPrecondition, /records/);
    await expectCode(admin.createDocument({ collection: "ledger", doc: { _id: "l-2", amount: 3 } }), Code.AlreadyExists);
    expect((await admin.getDocument({ collection: "ledger", id: "l-2" })).document!.doc).toEqual({ _id: "l-2", amount: 1 });
  });

  it("a schema failure writes nothing: INVALID_ARGUMENT with doc/<path> violations, log head and document unchanged", async () => {
    await admin.createDocument({ collection: "order", doc: { _id: "s-1", amount: 4 } });
    const before = await head(log);
    const bad = await expectCode(admin.createDocument({ collection: "order", doc: { _id: "s-2", amount: -1 } }), Code.InvalidArgument, /doc\/amount/);
    expect(bad.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field)).toEqual(["doc/amount"]);
    await expectCode(admin.getDocument({ collection: "order", id: "s-2" }), Code.NotFound);
    const badPatch = await expectCode(admin.patchDocument({ collection: "order", id: "s-1", set: { amount: "four" }, unset: [] }), Code.InvalidArgument);
    expect(badPatch.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field)).toEqual(["doc/amount"]);
    const missing = await expectCode(admin.replaceDocument({ collection: "order", id: "s-1", doc: { sku: "x" } }), Code.InvalidArgument);
    expect(missing.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => [v.field, v.description])).toEqual([
      ["doc", "must have required property 'amount' (rule: required)"],
    ]);
    await expectCode(admin.patchDocument({ collection: "order", id: "s-1", set: { _id: "other" } }), Code.InvalidArgument, /_id/);
    await expectCode(admin.patchDocument({ collection: "order", id: "s-1", set: { address: {} }, unset: ["address.city"] }), Code.InvalidArgument, /overlap/);
    await expectCode(admin.replaceDocument({ collection: "order", id: "s-1", doc: { _id: "s-9", amount: 1 } }), Code.InvalidArgument, /_id/);
    expect(await head(log)).toBe(before);
    expect((await admin.getDocument({ collection: "order", id: "s-1" })).document!.doc).toEqual({ _id: "s-1", amount: 4 });
  });

  it("a write under a cause done twice creates one document and one event, with the cause's actor", async () => {
    const cause = (await log.emit("job.started", { n: 1 }, { actor: { id: "user:bob", in: "space:acme" } })).event!;
    const write = () => exec.createDocument({ collection: "internal", doc: { step: "one" }, cause: { eventId: cause.id, position: 0 } });
    const first = await write();
    const headAfterFirst = await head(log);
    const second = await write();
    expect(second.document).toEqual(first.document);
    expect(second.seq).toBe(first.seq);
    expect(await head(log)).toBe(headAfterFirst);
    expect((await admin.findDocuments({ collection: "internal" })).documents).toHaveLength(1);
    // The document is in the cause's space, which this executor's token may not read (no assert.in).
    expect((await exec.findDocuments({ collection: "internal" })).documents).toHaveLength(0);
    const event = (await log.log.readLog({ afterSeq: first.seq - 1n, pageSize: 1 })).events[0];
    expect(event).toMatchObject({ type: "internal.created", cause: cause.id, actor: { id: "user:bob", in: "space:acme" } });

    // Another position is another write.
    const third = await exec.createDocument({ collection: "internal", doc: { step: "one" }, cause: { eventId: cause.id, position: 1 } });
    expect(third.document!.id).not.toBe(first.document!.id);

    // A patch retried after a later write is answered from the log, not applied again.
    const patch = () => exec.patchDocument({ collection: "internal", id: first.document!.id, set: { step: "two" }, cause: { eventId: cause.id, position: 2 } });
    const p1 = await patch();
    await exec.patchDocument({ collection: "internal", id: first.document!.id, set: { step: "three" }, cause: { eventId: cause.id, position: 3 } });
    const before = await head(log);
    const p2 = await patch();
    expect(p2.seq).toBe(p1.seq);
    expect(p2.document!.doc).toMatchObject({ step: "three" }); // the current document
    expect(await head(log)).toBe(before);
  });

  it("a write under a cause to a collection without events is applied once too", async () => {
    const cause = (await log.emit("job.started", { n: 2 })).event!;
    const write = () => exec.createDocument({ collection: "cart", doc: { from: "job" }, cause: { eventId: cause.id, position: 0 } });
    const first = await write();
    const second = await write();
    expect(second.document).toEqual(first.document);
    expect((await exec.findDocuments({ collection: "cart", filter: { from: "job" } })).documents).toHaveLength(1);
    const session = () => exec.createDocument({ collection: "session", doc: { from: "job" }, cause: { eventId: cause.id, position: 1 } });
    expect((await session()).document).toEqual((await session()).document);
    expect((await exec.findDocuments({ collection: "session", filter: { from: "job" } })).documents).toHaveLength(1);
  });

  it.runIf(onPostgres)(
    "a write under a cause to a collection without events waits for no round trip: whether it was applied is read ahead of its batch",
    async () => {
      const causes = await Promise.all(Array.from({ length: 20 }, (_, n) => log.emit("job.started", { n: 100 + n })));
      const write = (n: number, position: number) =>
        exec.createDocument({ collection: "cart", doc: { from: `job-${n}-${position}` }, cause: { eventId: causes[n].event!.id, position } });
      for (let n = 0; n < 20; n++) await write(n, 0); // the causes looked up once, the statements prepared
      const before = await storeWaits(owner.url);
      const first = [];
      for (let n = 0; n < 20; n++) first.push(await write(n, 1));
      expect(await storeWaits(owner.url), "waits for 20 writes").toBeLessThan(before + 3);
      const again = [];
      for (let n = 0; n < 20; n++) again.push(await write(n, 1)); // made twice: answered from what was applied
      expect(again.map((r) => r.document?.id)).toEqual(first.map((r) => r.document?.id));
      expect((await exec.findDocuments({ collection: "cart", filter: { from: "job-3-1" } })).documents).toHaveLength(1);
    },
  );

  it("permissions: a client under a cause, a write the collection's allow does not admit, an absent cause event", async () => {
    const cause = (await log.emit("job.started", { n: 3 })).event!;
    const before = await head(log);
    await expectCode(client.createDocument({ collection: "internal", doc: {}, cause: { eventId: cause.id, position: 0 } }), Code.PermissionDenied, /cause/);
    await expectCode(client.createDocument({ collection: "internal", doc: {} }), Code.PermissionDenied, /internal/);
    await expectCode(admin.createDocument({ collection: "internal", doc: {} }), Code.PermissionDenied, /internal/);
    await expectCode(exec.createDocument({ collection: "order", doc: { amount: 1 } }), Code.PermissionDenied, /order/);
    await expectCode(
      exec.createDocument({ collection: "internal", doc: {}, cause: { eventId: "no-such-event", position: 0 } }),
      Code.FailedPrecondition,
      /no-such-event/,
    );
    await expectCode(
      exec.createDocument({ collection: "internal", doc: {}, cause: { eventId: cause.id, position: 0 }, actor: { id: "user:eve" } }),
      Code.InvalidArgument,
      /actor/,
    );
    expect(await head(log)).toBe(before);
  });

  it("a collection name belongs to one plugin, and its change types are reserved", async () => {
    await expectCode(log.registerPlugin({ name: "other", collections: { order: {} } }), Code.InvalidArgument, /order.*already declared by plugin shop/);
    await expectCode(log.registerPlugin({ name: "other", events: { "cart.updated": {} } }), Code.InvalidArgument, /cart\.updated/);
    await expectCode(
      log.registerPlugin({ name: "other", events: { "thing.created": {} }, collections: { thing: {} } }),
      Code.InvalidArgument,
      /thing\.created/,
    );
    await expectCode(log.emit("order.created", { _id: "x", doc: {} }), Code.InvalidArgument);
    expect((await log.plugins.listPlugins({})).plugins.map((p) => p.manifest!.name)).toEqual(["shop"]);
  });

  it("the SDK client helpers write and read documents", async () => {
    const sdk = createClient({ url: owner.url, token: tokens.client });
    const { doc, seq } = await sdk.createDocument("order", { _id: "k-1", amount: 1 });
    expect(doc).toEqual({ _id: "k-1", amount: 1 });
    expect(seq).toBeGreaterThan(0n);
    await sdk.patchDocument("order", "k-1", { set: { amount: 2 } });
    await sdk.replaceDocument("order", "k-1", { amount: 3, sku: "z" });
    expect(await sdk.getDocument("order", "k-1")).toEqual({ _id: "k-1", amount: 3, sku: "z" });
    expect((await sdk.findDocuments("order", { filter: { sku: "z" } })).map((d: JsonObject) => d._id)).toEqual(["k-1"]);
    expect((await sdk.deleteDocument("order", "k-1")).seq).toBeGreaterThan(seq);
  });
});

describe("collections across a restart", () => {
  it("durable: false documents are lost when the owner restarts on the same folder; durable ones survive", async () => {
    const dataDir = tempDir();
    let owner = await startTestOwner({ dataDir });
    try {
      const sdk = createClient({ url: owner.url });
      await sdk.registerPlugin({ name: "mem", collections: { kept: { allow: ["*"] }, scratch: { durable: false, allow: ["*"] } } });
      await sdk.createDocument("kept", { _id: "a", v: 1 });
      await sdk.createDocument("scratch", { _id: "b", v: 2 });
      expect(await sdk.getDocument("scratch", "b")).toEqual({ _id: "b", v: 2 });
    } finally {
      await owner.close();
    }
    owner = await startTestOwner({ dataDir });
    try {
      const sdk = createClient({ url: owner.url });
      expect(await sdk.getDocument("kept", "a")).toEqual({ _id: "a", v: 1 });
      await expectCode(sdk.getDocument("scratch", "b"), Code.NotFound);
      expect(await sdk.findDocuments("scratch")).toEqual([]);
      expect((await allEvents(sdk)).map((e) => e.type)).toEqual(["kept.created"]);
    } finally {
      await owner.close();
    }
  });
});
