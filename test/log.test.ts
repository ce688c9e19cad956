// The event log through the TypeScript SDK client:
// emit, idempotent ids, atomic batches, paged reads with filters, GetEvent,
// Watch (catch-up, caught_up marker, live events, filters), plugin manifests
// persisting across restarts, and the owner lock on the data folder.
//
// @module-tag postgres

import { mkdirSync, writeFileSync } from "node:fs";
import { connect } from "node:http2";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { createClient, type ChronologClient } from "../sdk/ts/src/client.js";
import type { Event } from "@chronolog/sdk/gen/chronolog/v1/event_pb";
import type { WatchResponse } from "@chronolog/sdk/gen/chronolog/v1/log_pb";
import { BadRequestSchema } from "@chronolog/sdk/gen/google/rpc/error_details_pb";
import { expectConnectError, expectUnchanged, logSnapshot } from "./helpers/log-snapshot.js";
import { onPostgres, startTestOwner, tempDir } from "./helpers/owner.js";

type TestOwner = Awaited<ReturnType<typeof startTestOwner>>;

/** The plugin most tests use: a schema'd type anyone may emit, and a free-form one. */
const shop = {
  name: "shop",
  version: "1.0.0",
  events: {
    "order.placed": {
      schema: {
        type: "object",
        required: ["amount"],
        properties: { amount: { type: "number", minimum: 0 }, sku: { type: "string" } },
      },
      allow: ["*"],
    },
    "order.shipped": { allow: ["role:admin"] },
  },
};

async function startShop(): Promise<{ owner: TestOwner; client: ChronologClient }> {
  const owner = await startTestOwner();
  const client = createClient({ url: owner.url });
  const reg = await client.registerPlugin(shop);
  expect(reg.changed).toBe(true);
  expect(reg.plugin?.revision).toBe(1);
  return { owner, client };
}

/** Pulls items from a watch stream one at a time, each with a time limit. */
function puller(stream: AsyncIterable<WatchResponse>) {
  const it = stream[Symbol.asyncIterator]();
  // A pull that timed out stays pending; the next call takes it over, so no message is lost.
  let pending: Promise<IteratorResult<WatchResponse>> | undefined;
  const pull = () => (pending ??= it.next());
  const within = async <T>(ms: number, onTimeout: () => T): Promise<IteratorResult<WatchResponse> | T> => {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<T>((resolve) => (timer = setTimeout(() => resolve(onTimeout()), ms)));
    const r = await Promise.race([pull(), timeout]);
    clearTimeout(timer);
    return r;
  };
  const take = (r: IteratorResult<WatchResponse>): WatchResponse => {
    pending = undefined;
    if (r.done) throw new Error("watch stream ended");
    return r.value;
  };
  return {
    async next(limitMs = 3000): Promise<WatchResponse> {
      const r = await within(limitMs, () => "timeout" as const);
      if (r === "timeout") throw new Error(`no watch message within ${limitMs} ms`);
      return take(r);
    },
    /** Resolves true if nothing arrives within `ms` (the stream stays open and quiet). */
    async quietFor(ms: number): Promise<boolean> {
      const r = await within(ms, () => "quiet" as const);
      if (r === "quiet") return true;
      const m = take(r);
      throw new Error(`unexpected watch message: ${JSON.stringify(m, (_k, v) => (typeof v === "bigint" ? String(v) : v))}`);
    },
  };
}

const seqs = (events: Event[]) => events.map((e) => Number(e.seq));

describe("emit through the SDK client", () => {
  let owner: TestOwner;
  let client: ChronologClient;
  beforeAll(async () => ({ owner, client } = await startShop()));
  afterAll(async () => owner?.close());

  it("stores events with dense seqs from 1, the commit time and no actor for the local admin", async () => {
    const t0 = Date.now();
    const results = [];
    for (let i = 0; i < 5; i++) results.push(await client.emit("order.placed", { amount: i, sku: `sku-${i}` }));
    const t1 = Date.now();
    expect(results.map((r) => Number(r.event!.seq))).toEqual([1, 2, 3, 4, 5]);
    for (const [i, r] of results.entries()) {
      const e = r.event!;
      expect(r.existing).toBe(false);
      expect(e.type).toBe("order.placed");
      expect(e.data).toEqual({ amount: i, sku: `sku-${i}` });
      expect(e.id).not.toBe("");
      expect(e.cause).toBe("");
      expect(e.actor).toMatchObject({ id: "", for: "", in: "", via: "principal:local" }); // no config: the local admin, asserting nothing
      const at = Number(e.at!.seconds) * 1000 + e.at!.nanos / 1e6;
      expect(at).toBeGreaterThanOrEqual(t0 - 1);
      expect(at).toBeLessThanOrEqual(t1 + 1);
      expect(e.at!.nanos % 1_000_000).toBe(0); // millisecond precision
    }
    expect(new Set(results.map((r) => r.event!.id)).size).toBe(5);
    // What was returned is what is stored.
    const stored = [];
    for await (const e of client.read()) stored.push(e);
    expect(stored.map((e) => e.id)).toEqual(results.map((r) => r.event!.id));
    expect(seqs(stored)).toEqual([1, 2, 3, 4, 5]);
    const got = await client.log.getEvent({ id: results[2].event!.id });
    expect(got.event).toEqual(results[2].event);
  });

  it("a client-given id emitted twice with the same data returns the stored event and writes nothing", async () => {
    const first = await client.emit("order.placed", { amount: 7, sku: "a" }, { id: "ord-dup-1" });
    expect(first.existing).toBe(false);
    expect(first.event!.id).toBe("ord-dup-1");
    const before = await logSnapshot(client);
    // Same data with keys in another order: the same JSON object.
    const again = await client.emit("order.placed", { sku: "a", amount: 7 }, { id: "ord-dup-1" });
    expect(again.existing).toBe(true);
    expect(again.event).toEqual(first.event);
    await expectUnchanged(client, before);
  });

  it("the same id with different data or type is ALREADY_EXISTS naming the id, and the original stands", async () => {
    const original = await client.emit("order.placed", { amount: 1 }, { id: "ord-conflict" });
    const before = await logSnapshot(client);
    await expectConnectError(client.emit("order.placed", { amount: 2 }, { id: "ord-conflict" }), Code.AlreadyExists, /ord-conflict/, /data/);
    await expectConnectError(client.emit("order.shipped", { amount: 1 }, { id: "ord-conflict" }), Code.AlreadyExists, /ord-conflict/, /type/);
    await expectUnchanged(client, before);
    expect((await client.log.getEvent({ id: "ord-conflict" })).event).toEqual(original.event);
  });

  it("the same event twice in one EmitBatch is written once; the second answers with it (existing)", async () => {
    const results = await client.emitBatch([
      { type: "order.placed", data: { amount: 7 }, id: "batch-same" },
      { type: "order.placed", data: { amount: 7 }, id: "batch-same" },
    ]);
    expect(results.map((r) => [r.event?.seq, r.existing])).toEqual([
      [results[0].event!.seq, false],
      [results[0].event!.seq, true],
    ]);
  });

  it("EmitBatch commits all events with consecutive seqs, or none when one is bad", async () => {
    const before = await logSnapshot(client);
    // A schema violation in the middle of the batch.
    const err = await expectConnectError(
      client.emitBatch([
        { type: "order.placed", data: { amount: 1 }, id: "batch-a" },
        { type: "order.placed", data: { amount: -5 }, id: "batch-b" },
        { type: "order.placed", data: { amount: 3 }, id: "batch-c" },
      ]),
      Code.InvalidArgument,
      /events\[1\]\.data\/amount/,
    );
    expect(err.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field)).toEqual(["events[1].data/amount"]);
    // An undeclared type last.
    await expectConnectError(
      client.emitBatch([
        { type: "order.placed", data: { amount: 1 }, id: "batch-a" },
        { type: "order.nope", data: {} },
      ]),
      Code.InvalidArgument,
      /order\.nope/,
    );
    // An id conflict (only detectable inside the commit) rolls back the events before it, and names the event.
    const conflict = await expectConnectError(
      client.emitBatch([
        { type: "order.placed", data: { amount: 1 }, id: "batch-a" },
        { type: "order.placed", data: { amount: 999 }, id: "ord-conflict" },
      ]),
      Code.AlreadyExists,
      /^events\[1\]: event id "ord-conflict" is already in the log/,
    );
    expect(conflict.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field)).toEqual(["events[1].id"]);
    // Two events of one batch with the same id and different data: named by their indexes, not as "already in the log".
    const twice = await expectConnectError(
      client.emitBatch([
        { type: "order.placed", data: { amount: 1 }, id: "batch-twice" },
        { type: "order.placed", data: { amount: 2 }, id: "batch-twice" },
      ]),
      Code.InvalidArgument,
      /events\[1\]\.id "batch-twice" repeats events\[0\]\.id with a different data; nothing was written/,
    );
    expect(twice.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field)).toEqual(["events[1].id"]);
    await expectUnchanged(client, before);
    await expectConnectError(client.log.getEvent({ id: "batch-a" }), Code.NotFound, /batch-a/);

    const ok = await client.emitBatch([
      { type: "order.placed", data: { amount: 1 }, id: "batch-a" },
      { type: "order.shipped", data: { note: "x" } },
      { type: "order.placed", data: { amount: 3 } },
    ]);
    const head = Number(before.head);
    expect(ok.map((r) => Number(r.event!.seq))).toEqual([head + 1, head + 2, head + 3]);
    expect(ok.map((r) => r.existing)).toEqual([false, false, false]);
    // One commit: one commit time.
    expect(new Set(ok.map((r) => `${r.event!.at!.seconds}.${r.event!.at!.nanos}`)).size).toBe(1);
    // Retrying the whole batch returns the stored events for the ids it gave.
    const retry = await client.emitBatch([{ type: "order.placed", data: { amount: 1 }, id: "batch-a" }]);
    expect(retry[0].existing).toBe(true);
    expect(retry[0].event).toEqual(ok[0].event);
  });

  it("GetEvent of an unknown id is NOT_FOUND naming the id", async () => {
    await expectConnectError(client.log.getEvent({ id: "no-such-event" }), Code.NotFound, /no-such-event/);
  });
});

describe("ReadLog through the SDK client", () => {
  let owner: TestOwner;
  let client: ChronologClient;
  beforeAll(async () => {
    ({ owner, client } = await startShop());
    // 25 events: seq 1..25; odd seqs are order.placed with amount = seq, even ones order.shipped.
    const events = Array.from({ length: 25 }, (_, i) =>
      i % 2 === 0 ? { type: "order.placed", data: { amount: i + 1 } } : { type: "order.shipped", data: { amount: i + 1 } },
    );
    await client.emitBatch(events);
  });
  afterAll(async () => owner?.close());

  async function allPages(req: { types?: string[]; where?: Record<string, never> | object; afterSeq?: bigint }, pageSize: number) {
    const pages: number[][] = [];
    let pageToken = "";
    for (let i = 0; i < 100; i++) {
      const page = await client.log.readLog({ ...req, where: req.where as never, pageSize, pageToken });
      expect(page.headSeq).toBe(25n);
      pages.push(seqs(page.events));
      pageToken = page.nextPageToken;
      if (pageToken === "") return pages;
    }
    throw new Error("ReadLog never ended");
  }

  it("pages with page_size and next_page_token until the end", async () => {
    const pages = await allPages({}, 10);
    expect(pages.flat()).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
    expect(pages.slice(0, 3).map((p) => p.length)).toEqual([10, 10, 5]);
    for (const p of pages.slice(3)) expect(p).toEqual([]);
    // after_seq starts later
    expect((await allPages({ afterSeq: 20n }, 3)).flat()).toEqual([21, 22, 23, 24, 25]);
    // at the head: nothing, and no token
    const end = await client.log.readLog({ afterSeq: 25n });
    expect(end.events).toEqual([]);
    expect(end.nextPageToken).toBe("");
  });

  it("filters by type and by a where filter, across pages", async () => {
    const odd = Array.from({ length: 13 }, (_, i) => 2 * i + 1);
    expect((await allPages({ types: ["order.placed"] }, 4)).flat()).toEqual(odd);
    expect((await allPages({ types: ["order.shipped"] }, 100)).flat()).toEqual(odd.slice(0, 12).map((s) => s + 1));
    expect((await allPages({ where: { amount: { $gte: 20 } } }, 2)).flat()).toEqual([20, 21, 22, 23, 24, 25]);
    expect((await allPages({ types: ["order.placed"], where: { amount: { $in: [3, 4, 5, 25] } } }, 1)).flat()).toEqual([3, 5, 25]);
    expect((await allPages({ types: ["nobody.declared"] }, 10)).flat()).toEqual([]);
    // The SDK's read() does the same paging.
    const viaSdk: number[] = [];
    for await (const e of client.read({ types: ["order.shipped"], where: { amount: { $lt: 7 } } }, 2)) viaSdk.push(Number(e.seq));
    expect(viaSdk).toEqual([2, 4, 6]);
  });

  it("rejects a page_size above 1000 and a forged page_token", async () => {
    await expectConnectError(client.log.readLog({ pageSize: 1001 }), Code.InvalidArgument, /page_size/);
    await expectConnectError(client.log.readLog({ pageToken: "bm9wZQ" }), Code.InvalidArgument, /page_token/);
    const pastSafeIntegers = Buffer.from("seq:99999999999999999999999").toString("base64url");
    await expectConnectError(client.log.readLog({ pageToken: pastSafeIntegers }), Code.InvalidArgument, /page_token/);
  });
});

describe("Watch through the SDK client", () => {
  let owner: TestOwner;
  let client: ChronologClient;
  beforeAll(async () => {
    ({ owner, client } = await startShop());
    for (let i = 1; i <= 5; i++) await client.emit("order.placed", { amount: i * 10 });
  });
  afterAll(async () => owner?.close());

  it("a watch whose deadline passes ends with DEADLINE_EXCEEDED, not OK (the server's status, over raw HTTP/2)", async () => {
    const session = connect(owner.url);
    try {
      const status = await new Promise<string | undefined>((resolve, reject) => {
        const stream = session.request({
          ":method": "POST",
          ":path": "/chronolog.v1.LogService/Watch",
          "content-type": "application/grpc",
          te: "trailers",
          "grpc-timeout": "300m",
        });
        stream.on("trailers", (trailers) => resolve(trailers["grpc-status"] as string | undefined));
        stream.on("error", reject);
        stream.on("data", () => undefined);
        stream.end(Buffer.from([0, 0, 0, 0, 0])); // one empty WatchRequest
      });
      expect(status).toBe(String(Code.DeadlineExceeded));
    } finally {
      session.close();
    }
  });

  it("catches up from after_seq, sends caught_up once, then follows live events", async () => {
    const abort = new AbortController();
    const w = puller(client.log.watch({ afterSeq: 2n }, { signal: abort.signal }));
    try {
      const caughtUp: number[] = [];
      const got: number[] = [];
      for (let i = 0; i < 4; i++) {
        const m = (await w.next()).message;
        if (m.case === "event") got.push(Number(m.value.seq));
        else if (m.case === "caughtUp") caughtUp.push(Number(m.value.headSeq));
      }
      expect(got).toEqual([3, 4, 5]);
      expect(caughtUp).toEqual([5]);
      expect(await w.quietFor(150)).toBe(true);
      // Live: emitted after the watch caught up.
      await client.emit("order.placed", { amount: 60 });
      await client.emitBatch([
        { type: "order.shipped", data: {} },
        { type: "order.placed", data: { amount: 80 } },
      ]);
      const live: { seq: number; type: string }[] = [];
      for (let i = 0; i < 3; i++) {
        const m = (await w.next()).message;
        expect(m.case).toBe("event"); // no second caught_up
        if (m.case === "event") live.push({ seq: Number(m.value.seq), type: m.value.type });
      }
      expect(live).toEqual([
        { seq: 6, type: "order.placed" },
        { seq: 7, type: "order.shipped" },
        { seq: 8, type: "order.placed" },
      ]);
      expect(await w.quietFor(100)).toBe(true);
    } finally {
      abort.abort();
    }
  });

  it("a watch from past the head says the log's head when it catches up, then follows from its after_seq", async () => {
    const abort = new AbortController();
    const head = (await client.log.readLog({ pageSize: 1 })).headSeq;
    const w = puller(client.log.watch({ afterSeq: head + 1000n }, { signal: abort.signal }));
    try {
      const m = (await w.next()).message;
      expect(m.case === "caughtUp" && m.value.headSeq).toBe(head);
      await client.emit("order.placed", { amount: 1 });
      expect(await w.quietFor(150)).toBe(true); // seq head+1 is not after head+1000
    } finally {
      abort.abort();
    }
  });

  it("applies type and where filters to catch-up and live events", async () => {
    const abort = new AbortController();
    const head = Number((await client.log.readLog({ pageSize: 1 })).headSeq);
    let caughtUpAt = -1;
    const seen: Event[] = [];
    const watching = (async () => {
      try {
        for await (const e of client.watch(
          { types: ["order.placed"], where: { amount: { $gte: 40 } } },
          { signal: abort.signal, onCaughtUp: (h) => (caughtUpAt = Number(h)) },
        )) {
          seen.push(e);
        }
      } catch (e) {
        if (ConnectError.from(e).code !== Code.Canceled) throw e;
      }
    })();
    await expect.poll(() => caughtUpAt, { timeout: 3000 }).toBe(head);
    // Catch-up: seq 4 (40), 5 (50), 6 (60), 8 (80); 7 is order.shipped.
    expect(seqs(seen)).toEqual([4, 5, 6, 8]);
    await client.emit("order.placed", { amount: 5 }); // filtered out by where
    await client.emit("order.shipped", { amount: 500 }); // filtered out by type
    const match = await client.emit("order.placed", { amount: 41 });
    await expect.poll(() => seqs(seen), { timeout: 3000 }).toEqual([4, 5, 6, 8, Number(match.event!.seq)]);
    abort.abort();
    await watching;
    expect(seen.at(-1)!.data).toEqual({ amount: 41 });
  });
});

describe("plugin manifests across restarts (same data folder)", () => {
  const dataDir = tempDir();
  const pluginsDir = join(tempDir(), "plugins");
  const manifest = (maximum: number) =>
    [
      "name: billing",
      "version: '1'",
      "events:",
      "  invoice.issued:",
      "    allow: ['*']",
      "    schema:",
      "      type: object",
      "      required: [total]",
      "      properties:",
      `        total: { type: integer, minimum: 0, maximum: ${maximum} }`,
      "",
    ].join("\n");
  let owner: TestOwner | undefined;
  afterAll(async () => owner?.close());

  it("keeps the manifest, its revision and the log; a changed manifest is revision 2, an identical one stays 1", async () => {
    mkdirSync(pluginsDir, { recursive: true });
    writeFileSync(join(pluginsDir, "billing.yaml"), manifest(100));

    owner = await startTestOwner({ dataDir, pluginsDir });
    let client = createClient({ url: owner.url });
    expect((await client.plugins.getPlugin({ name: "billing" })).plugin?.revision).toBe(1);
    const first = await client.emit("invoice.issued", { total: 50 });
    await expectConnectError(client.emit("invoice.issued", { total: 150 }), Code.InvalidArgument, /maximum/);
    await owner.close();

    // Restart without the plugins folder: the stored manifest still declares the type.
    owner = await startTestOwner({ dataDir });
    client = createClient({ url: owner.url });
    const stored = (await client.plugins.getPlugin({ name: "billing" })).plugin!;
    expect(stored.revision).toBe(1);
    expect(Object.keys(stored.manifest!.events)).toEqual(["invoice.issued"]);
    expect((await client.log.getEvent({ id: first.event!.id })).event).toEqual(first.event);
    const second = await client.emit("invoice.issued", { total: 60 });
    expect(second.event!.seq).toBe(2n); // seqs continue after a restart
    await expectConnectError(client.emit("invoice.issued", { total: 150 }), Code.InvalidArgument, /maximum/);
    await owner.close();

    // Restart with the same folder: identical manifest, revision unchanged.
    owner = await startTestOwner({ dataDir, pluginsDir });
    client = createClient({ url: owner.url });
    expect((await client.plugins.getPlugin({ name: "billing" })).plugin?.revision).toBe(1);
    await owner.close();

    // A changed manifest on disk becomes revision 2 at the next start.
    writeFileSync(join(pluginsDir, "billing.yaml"), manifest(1000));
    owner = await startTestOwner({ dataDir, pluginsDir });
    client = createClient({ url: owner.url });
    expect((await client.plugins.getPlugin({ name: "billing" })).plugin?.revision).toBe(2);
    expect((await client.emit("invoice.issued", { total: 150 })).event!.seq).toBe(3n);
    // Registering it again through the API: identical, so unchanged.
    const current = (await client.plugins.getPlugin({ name: "billing" })).plugin!.manifest!;
    const same = await client.plugins.registerPlugin({ manifest: current });
    expect(same.changed).toBe(false);
    expect(same.plugin?.revision).toBe(2);
    await owner.close();

    // And revision 2 is what the next owner loads.
    owner = await startTestOwner({ dataDir });
    client = createClient({ url: owner.url });
    expect((await client.plugins.getPlugin({ name: "billing" })).plugin?.revision).toBe(2);
    expect((await client.emit("invoice.issued", { total: 999 })).event!.seq).toBe(4n);
  });

  it("identical registration through the API stays revision 1 (changed false); a changed one is revision 2", async () => {
    const o = await startTestOwner();
    try {
      const client = createClient({ url: o.url });
      const a = await client.registerPlugin(shop);
      expect([a.changed, a.plugin?.revision]).toEqual([true, 1]);
      const b = await client.registerPlugin(structuredClone(shop));
      expect([b.changed, b.plugin?.revision]).toEqual([false, 1]);
      const c = await client.registerPlugin({ ...shop, version: "1.0.1" });
      expect([c.changed, c.plugin?.revision]).toEqual([true, 2]);
      expect((await client.plugins.listPlugins({})).plugins.map((p) => [p.manifest?.name, p.revision])).toEqual([["shop", 2]]);
    } finally {
      await o.close();
    }
  });
});

// On PostgreSQL a second owner waits as a standby instead (test/leadership.test.ts).
describe.skipIf(onPostgres)("owner lock", () => {
  it("a second owner on a folder in use fails with a clear 'in use' error; the first keeps serving", async () => {
    const dataDir = tempDir();
    const first = await startTestOwner({ dataDir });
    try {
      const client = createClient({ url: first.url });
      await client.registerPlugin(shop);
      await client.emit("order.placed", { amount: 1 });
      await expect(startTestOwner({ dataDir })).rejects.toThrow(/data folder .* is in use by another Chronolog owner/);
      // The failed start changed nothing: the first owner still serves the same log.
      const page = await client.log.readLog({});
      expect(seqs(page.events)).toEqual([1]);
      expect((await client.emit("order.placed", { amount: 2 })).event!.seq).toBe(2n);
    } finally {
      await first.close();
    }
    // Once closed, the folder can be opened again.
    const next = await startTestOwner({ dataDir });
    try {
      const page = await createClient({ url: next.url }).log.readLog({});
      expect(seqs(page.events)).toEqual([1, 2]);
    } finally {
      await next.close();
    }
  });
});
