// The publish stream (LogService.Publish) end to end against a real owner (child process): acks
// in request order with dense seqs, once durable; a refused emit answered with its own error while
// its neighbours commit and the stream goes on; the owner's window holding a fast client back
// (the SDK never has more unacknowledged; a client that does not read acks is stopped by HTTP/2
// flow control); the TypeScript SDK's emit re-sending its pending emits across an owner killed
// with SIGKILL and restarted, writing each once; event data as JSON text (Watch, deliveries) the
// same as the Struct form; and the Python SDK's publish path.
//
// @module-tag serial
// @module-tag postgres

import { execFile, spawn } from "node:child_process";
import { connect } from "node:http2";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { promisify } from "node:util";
import { create, toBinary, type JsonObject, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient as createRpcClient, type Transport } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ChronologClient, createClient } from "../sdk/ts/src/client.js";
import { createTransport } from "../sdk/ts/src/transport.js";
import { withData } from "../sdk/ts/src/event-data.js";
import { runExecutor, definePlugin } from "../sdk/ts/src/index.js";
import { LogService, PublishRequestSchema, type PublishResponse } from "@chronolog/sdk/gen/chronolog/v1/log_pb";
import { BadRequestSchema, ErrorInfoSchema } from "@chronolog/sdk/gen/google/rpc/error_details_pb";
import { spawnOwner, tempDir, type OwnerProcess } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

const repo = new URL("../", import.meta.url).pathname;
const PYTHON = join(repo, ".venv/bin/python");
const token = "publish-admin-token-0123456789";
const window = 64;
const encoder = new TextEncoder();

const plugin = {
  name: "pub",
  version: "1.0.0",
  events: {
    "pub.tick": { schema: { type: "object", required: ["n"], properties: { n: { type: "integer", minimum: 0 } } }, allow: ["*"] },
    "pub.any": { allow: ["*"] },
  },
};

type Request = MessageInitShape<typeof PublishRequestSchema>;

/** A queue of request messages as an async iterable; `pulled` counts those the transport took. */
function requestQueue() {
  const items: Request[] = [];
  let wake: (() => void) | undefined;
  let ended = false;
  const state = {
    pulled: 0,
    push(message: Request) {
      items.push(message);
      wake?.();
    },
    end() {
      ended = true;
      wake?.();
    },
    async *iterable(): AsyncGenerator<Request> {
      for (;;) {
        while (items.length > 0) {
          state.pulled++;
          yield items.shift()!;
        }
        if (ended) return;
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
      }
    },
  };
  return state;
}

const tick = (ref: number, n: number, id = "") => ({ ref: BigInt(ref), event: { type: "pub.tick", dataJson: encoder.encode(JSON.stringify({ n })), id } });

describe("LogService.Publish against a real owner", () => {
  let dir: string;
  let owner: OwnerProcess;
  let client: ChronologClient;
  let raw: ReturnType<typeof createRpcClient<typeof LogService>>;

  const start = async (port = 0) => {
    owner = await spawnOwner(join(dir, "data"), ["--config", join(dir, "owner.json")], port);
    client = createClient({ url: owner.url, token });
    raw = createRpcClient(LogService, createTransport({ url: owner.url, token }));
  };
  /** Every event of `type` in the log. */
  const logOf = async (type: string) => {
    const out = [];
    for await (const e of client.read({ types: [type] })) out.push(e);
    return out;
  };

  beforeAll(async () => {
    dir = tempDir("chronolog-publish-");
    writeFileSync(join(dir, "owner.json"), JSON.stringify({ principals: [{ name: "ops", token, role: "admin" }], limits: { publish_window: window } }));
    await start();
    await client.registerPlugin(plugin);
  });
  afterAll(async () => {
    owner?.child.kill("SIGKILL");
    await owner?.exited;
  });

  it("welcomes with the window, then acks every emit in request order with dense seqs once durable", async () => {
    const requests = requestQueue();
    const responses: PublishResponse[] = [];
    const done = (async () => {
      for await (const r of raw.publish(requests.iterable())) responses.push(r);
    })();
    // 200 emits in messages of 1 to 7, never more than the window unacknowledged.
    const acksSoFar = () => responses.flatMap((r) => (r.message.case === "acks" ? r.message.value.acks : []));
    let ref = 0;
    while (ref < 200) {
      const size = Math.min(1 + (ref % 7), 200 - ref);
      await until(() => responses.length > 0 && ref - acksSoFar().length + size <= window, "room in the window");
      requests.push({ emits: Array.from({ length: size }, () => (ref++, tick(ref, ref, `order-${ref}`))) });
    }
    requests.end();
    await done;
    expect(responses[0].message).toEqual({ case: "welcome", value: expect.objectContaining({ window }) });
    const acks = acksSoFar();
    expect(acks.map((a) => Number(a.ref))).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
    expect(acks.every((a) => !a.error && !a.existing && a.id === `order-${a.ref}`)).toBe(true);
    const seqs = acks.map((a) => Number(a.seq));
    expect(seqs).toEqual(Array.from({ length: 200 }, (_, i) => seqs[0] + i));
    // Durable and visible as acknowledged.
    const stored = await logOf("pub.tick");
    expect(stored.filter((e) => e.id.startsWith("order-")).map((e) => [e.id, Number(e.seq), (e.data as JsonObject).n])).toEqual(
      acks.map((a) => [a.id, Number(a.seq), Number(a.ref)]),
    );
  });

  it("answers a refused emit with its own error (as Emit's) and commits its neighbours; the stream goes on", async () => {
    const requests = requestQueue();
    const responses: PublishResponse[] = [];
    const done = (async () => {
      for await (const r of raw.publish(requests.iterable())) responses.push(r);
    })();
    requests.push({
      emits: [
        tick(1, 1, "bad-1"),
        { ref: 2n, event: { type: "nobody.declared", dataJson: encoder.encode("{}") } },
        tick(3, -5, "bad-3"), // schema: n >= 0
        { ref: 4n, event: { type: "pub.any", dataJson: encoder.encode("{not json") } },
        tick(5, 1, "bad-1"), // the same event again: existing
        tick(6, 2, "bad-1"), // the same id, other data: ALREADY_EXISTS
        { ref: 7n, event: { type: "pub.any", dataJson: encoder.encode('{"s":"\\ud800"}') } },
        { ref: 8n, event: { type: "pub.any", data: { a: 1 }, dataJson: encoder.encode('{"a":1}') } },
        tick(9, 9, "bad-9"),
      ],
    });
    await until(() => responses.flatMap((r) => (r.message.case === "acks" ? r.message.value.acks : [])).length === 9, "9 acks");
    requests.push({ emits: [tick(10, 10, "bad-10")] }); // the stream goes on
    requests.end();
    await done;
    const acks = responses.flatMap((r) => (r.message.case === "acks" ? r.message.value.acks : []));
    expect(acks.map((a) => Number(a.ref))).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    const codes = acks.map((a) => (a.error ? Code[a.error.code] : a.existing ? "existing" : "ok"));
    expect(codes).toEqual([
      "ok",
      "InvalidArgument",
      "InvalidArgument",
      "InvalidArgument",
      "existing",
      "AlreadyExists",
      "InvalidArgument",
      "InvalidArgument",
      "ok",
      "ok",
    ]);
    expect(acks[4].seq).toBe(acks[0].seq);
    // The same errors as Emit gives for the same events.
    for (const [i, request] of [
      [1, { type: "nobody.declared", data: {} }],
      [2, { type: "pub.tick", data: { n: -5 }, id: "bad-3" }],
      [5, { type: "pub.tick", data: { n: 2 }, id: "bad-1" }],
    ] as const) {
      const unary = await raw.emit(request).then(
        () => undefined,
        (e) => ConnectError.from(e),
      );
      const error = acks[i].error!;
      expect({ code: error.code, message: error.message, violations: error.fieldViolations.map((v) => [v.field, v.description]) }).toEqual({
        code: unary!.code,
        message: unary!.rawMessage,
        violations: unary!.findDetails(BadRequestSchema).flatMap((b) => b.fieldViolations.map((v) => [v.field, v.description])),
      });
      expect(error.reason).toBe(unary!.findDetails(ErrorInfoSchema)[0].reason);
    }
    expect(acks[2].error!.fieldViolations.map((v) => v.field)).toEqual(["data/n"]);
    expect(acks[3].error!.message).toMatch(/^data_json is not JSON/);
    expect(acks[6].error!.message).toMatch(/lone surrogate/);
    expect(acks[7].error!.message).toBe("set data or data_json, not both");
    const stored = (await logOf("pub.tick")).filter((e) => e.id.startsWith("bad-"));
    expect(stored.map((e) => [e.id, (e.data as JsonObject).n])).toEqual([
      ["bad-1", 1],
      ["bad-9", 9],
      ["bad-10", 10],
    ]);
  });

  it("the SDK's emit never has more than the window unacknowledged; a client that reads no acks is held back by flow control", async () => {
    // The SDK: count its emits sent and acks received on the wire.
    let sent = 0;
    let acked = 0;
    let most = 0;
    const base = createTransport({ url: owner.url, token });
    const counting: Transport = {
      unary: base.unary.bind(base),
      async stream(method, signal, timeoutMs, header, input, contextValues) {
        async function* counted() {
          for await (const m of input) {
            sent += (m as Request).emits?.length ?? 0;
            most = Math.max(most, sent - acked);
            yield m;
          }
        }
        const response = await base.stream(method, signal, timeoutMs, header, counted(), contextValues);
        async function* answers() {
          for await (const r of response.message) {
            if ((r as PublishResponse).message.case === "acks") acked += ((r as PublishResponse).message.value as { acks: unknown[] }).acks.length;
            yield r;
          }
        }
        return { ...response, message: answers() } as typeof response;
      },
    };
    const sdk = new ChronologClient(counting, { emitVia: "stream" });
    const results = await Promise.all(Array.from({ length: 3000 }, (_, n) => sdk.emit("pub.tick", { n })));
    expect(sent).toBe(3000);
    expect(most).toBeGreaterThan(1);
    expect(most).toBeLessThanOrEqual(window);
    const seqs = results.map((r) => Number(r.event!.seq));
    expect(seqs).toEqual(Array.from({ length: 3000 }, (_, i) => seqs[0] + i));
    expect(results.every((r, n) => r.event!.type === "pub.tick" && (r.event!.data as JsonObject).n === n && r.event!.id !== "")).toBe(true);

    // A raw HTTP/2 client that writes emits as fast as the stream takes them and never reads its acks.
    const session = connect(owner.url);
    const stream = session.request({
      ":method": "POST",
      ":path": "/chronolog.v1.LogService/Publish",
      "content-type": "application/grpc",
      te: "trailers",
      authorization: `Bearer ${token}`,
    });
    stream.pause(); // nothing is read: the acks stay unread, unacknowledged to HTTP/2
    const headBefore = (await client.log.readLog({ pageSize: 1 })).headSeq;
    let written = 0;
    let stop = false;
    const writer = (async () => {
      while (!stop) {
        const body = toBinary(PublishRequestSchema, create(PublishRequestSchema, { emits: [tick(written + 1, written + 1)] }));
        const frame = Buffer.alloc(5 + body.length);
        frame.writeUInt32BE(body.length, 1);
        frame.set(body, 5);
        written++;
        if (!stream.write(frame)) await new Promise<void>((resolve) => stream.once("drain", resolve).once("close", resolve));
        if (stream.destroyed) return;
      }
    })();
    await until(
      async () => {
        const before = written;
        await new Promise((r) => setTimeout(r, 1_000));
        return written === before; // stalled: the owner reads no more
      },
      "the writer to stall",
      30_000,
    );
    stop = true;
    const committed = Number((await client.log.readLog({ pageSize: 1 })).headSeq - headBefore);
    // The owner took at most the window beyond the acks it could send; the client was held back.
    expect(committed).toBeLessThan(written);
    expect(written).toBeLessThan(20_000);
    session.destroy(); // the writer, waiting for a drain, ends with it
    await Promise.race([writer, new Promise((r) => stream.once("close", r))]);
  }, 120_000);

  it("large emits from a client that reads no acks keep the owner's memory bounded: nothing of an acknowledged emit is kept, and unacknowledged data is capped", async () => {
    const rss = () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${owner.child.pid}/status`, "utf8"))![1]) / 1024;
    const before = rss();
    const session = connect(owner.url);
    const stream = session.request({
      ":method": "POST",
      ":path": "/chronolog.v1.LogService/Publish",
      "content-type": "application/grpc",
      te: "trailers",
      authorization: `Bearer ${token}`,
    });
    stream.pause(); // the acks stay unread
    const pad = "x".repeat(1024 * 1024);
    let written = 0;
    let most = 0;
    const deadline = Date.now() + 12_000;
    while (Date.now() < deadline && !stream.destroyed) {
      const body = toBinary(
        PublishRequestSchema,
        create(PublishRequestSchema, {
          emits: [{ ref: BigInt(++written), event: { type: "pub.any", dataJson: encoder.encode(JSON.stringify({ n: written, pad })) } }],
        }),
      );
      const frame = Buffer.alloc(5 + body.length);
      frame.writeUInt32BE(body.length, 1);
      frame.set(body, 5);
      const flowing = stream.write(frame);
      most = Math.max(most, rss() - before);
      if (!flowing) await Promise.race([new Promise((r) => stream.once("drain", r)), new Promise((r) => setTimeout(r, 1_000))]);
    }
    // Each emit was 1 MiB: hundreds of MiB went through (or the owner held the writer back), yet
    // the owner grew by far less (it grew by the whole stream before: 64 emits of window, and every
    // acknowledged event kept until 1,024 acks had gone).
    console.log(`large emits: ${written} written (1 MiB each), owner RSS grew by at most ${most.toFixed(0)} MiB`);
    expect(most).toBeLessThan(400);
    session.destroy();
  }, 60_000);

  it("the SDK re-sends its pending emits across an owner killed (SIGKILL) mid-stream and restarted: each event once, seqs dense", async () => {
    const before = (await logOf("pub.any")).length;
    const port = owner.port;
    const sdk = createClient({ url: owner.url, token });
    const n = 4000;
    let resolved = 0;
    const all = Promise.all(Array.from({ length: n }, (_, i) => sdk.emit("pub.any", { i }).then((r) => (resolved++, r))));
    await until(() => resolved >= 200, "200 emits acknowledged", 20_000);
    owner.child.kill("SIGKILL");
    await owner.exited;
    expect(resolved).toBeLessThan(n); // killed mid-stream
    await start(port);
    const results = await all;
    const stored = (await logOf("pub.any")).slice(before);
    expect(stored.length).toBe(n);
    expect(new Set(stored.map((e) => e.id)).size).toBe(n);
    const seqs = stored.map((e) => Number(e.seq));
    expect(seqs).toEqual(Array.from({ length: n }, (_, i) => seqs[0] + i));
    // Every emit resolved with the event the log has under its id, in emit order.
    const byId = new Map(stored.map((e) => [e.id, e]));
    expect(results.map((r) => (byId.get(r.event!.id)!.data as JsonObject).i)).toEqual(Array.from({ length: n }, (_, i) => i));
    expect(results.map((r) => Number(r.event!.seq))).toEqual(results.map((r) => Number(byId.get(r.event!.id)!.seq)));
  }, 120_000);

  it("Watch and deliveries with data as JSON text give the same data as with Struct", async () => {
    const samples: JsonObject[] = [
      { text: "héllo ✓ 😀 \u2028", quote: '"\\', empty: "" },
      { n: 0, neg: -0, big: 1e21, small: 5e-324, frac: 0.1, max: 9007199254740991, list: [1, "a", null, true, [], {}] },
      { deep: { a: { b: { c: [{ d: [null] }] } } }, keys: { "": 1, "a.b": 2, "/~": 3 } },
      {},
    ];
    const first = (await client.log.readLog({ pageSize: 1 })).headSeq;
    for (const [i, data] of samples.entries()) {
      await client.emit("pub.any", data, { id: `same-${i}` });
      await client.log.emit({ type: "pub.any", dataJson: encoder.encode(JSON.stringify(data)), id: `same-json-${i}` });
    }
    const watch = async (dataJson: boolean) => {
      const out: JsonObject[] = [];
      const abort = new AbortController();
      for await (const r of client.log.watch({ afterSeq: first, types: ["pub.any"], dataJson }, { signal: abort.signal })) {
        if (r.message.case !== "event") break;
        const e = r.message.value;
        expect(dataJson ? e.dataJson.length > 0 && e.data === undefined : e.dataJson.length === 0).toBe(true);
        out.push(withData(e).data as JsonObject);
        if (out.length === samples.length * 2) break;
      }
      return out;
    };
    const viaStruct = await watch(false);
    const viaJson = await watch(true);
    expect(viaJson).toEqual(viaStruct);
    expect(viaJson).toEqual(samples.flatMap((s) => [JSON.parse(JSON.stringify(s)), JSON.parse(JSON.stringify(s))]));

    // Deliveries: two processors on the same events, one executor asking for JSON text, one for the Struct.
    const seen: Record<string, JsonObject[]> = { json: [], struct: [] };
    const plugins = (["json", "struct"] as const).map((kind) =>
      definePlugin({
        name: `same${kind}`,
        processors: {
          see: {
            on: ["pub.any"],
            start: { afterSeq: Number(first) },
            run: async (ctx) => void (ctx.event.id.startsWith("same-") && seen[kind].push(ctx.data)),
          },
        },
      }),
    );
    const executors = [
      runExecutor({ url: owner.url, token, plugins: [plugins[0]], dataJson: true }),
      runExecutor({ url: owner.url, token, plugins: [plugins[1]], dataJson: false }),
    ];
    try {
      await until(() => seen.json.length === samples.length * 2 && seen.struct.length === samples.length * 2, "every delivery", 20_000);
      expect(seen.json).toEqual(seen.struct);
      expect(seen.json).toEqual(viaStruct);
    } finally {
      await Promise.all(executors.map((e) => e.stop()));
    }
  }, 60_000);

  it.skipIf(!existsSync(PYTHON))(
    "the Python SDK re-sends its pending emits across an owner killed (SIGKILL) and restarted: each event once (sdk/python/tests/publish_through_restart.py)",
    async () => {
      const before = (await logOf("pub.any")).length;
      const port = owner.port;
      const n = 2000;
      const env = {
        ...process.env,
        PYTHONPATH: join(repo, "sdk/python"),
        CHRONOLOG_URL: owner.url,
        CHRONOLOG_ADMIN_TOKEN: token,
        CHRONOLOG_COUNT: String(n),
        CHRONOLOG_KILL_AFTER: "100",
      };
      const child = spawn(PYTHON, ["sdk/python/tests/publish_through_restart.py"], { cwd: repo, env, stdio: ["ignore", "pipe", "pipe"] });
      const lines: string[] = [];
      let stderr = "";
      child.stderr!.on("data", (chunk) => (stderr += chunk));
      createInterface({ input: child.stdout! }).on("line", (line) => lines.push(line));
      const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
      await until(() => lines.includes("acked 100"), "100 Python emits acknowledged", 30_000);
      owner.child.kill("SIGKILL");
      await owner.exited;
      await start(port);
      expect(await exited, stderr).toBe(0);
      const result = JSON.parse(lines.at(-1)!) as { ids: string[]; seqs: number[] };
      const stored = (await logOf("pub.any")).slice(before);
      expect(stored.length).toBe(n);
      expect(new Set(stored.map((e) => e.id)).size).toBe(n);
      expect(stored.map((e) => (e.data as JsonObject).py)).toEqual(Array.from({ length: n }, (_, i) => i));
      expect(stored.map((e) => [e.id, Number(e.seq)])).toEqual(result.ids.map((id, i) => [id, result.seqs[i]]));
    },
    120_000,
  );

  it.skipIf(!existsSync(PYTHON))(
    "the Python SDK publishes on the stream: acks in order, a refused emit fails alone, Watch with JSON text equals Struct (unittest: sdk/python/tests/test_publish.py)",
    async () => {
      const env = { ...process.env, PYTHONPATH: join(repo, "sdk/python"), CHRONOLOG_URL: owner.url, CHRONOLOG_ADMIN_TOKEN: token };
      const result = await promisify(execFile)(PYTHON, ["-m", "unittest", "-v", "sdk/python/tests/test_publish.py"], { cwd: repo, env, timeout: 60_000 }).catch(
        (e: { stdout: string; stderr: string }) => e,
      );
      const output = `${result.stdout}${result.stderr}`;
      expect(output, output).toMatch(/\nOK\s*$/);
    },
    90_000,
  );
});
