// The TS SDK client refuses what it would otherwise send altered (protobuf-es turns a BigInt or
// undefined into null, a Date or Map into {}, NaN into what the owner stores as null) and bad
// numbers, moments and choices in options (raw RangeError/TypeError or "[internal] serialize
// binary: invalid uint64" before): a ConnectError INVALID_ARGUMENT naming the path or option,
// before anything is sent. Checked against a transport that records every request and answers
// with empty responses; no owner runs.

import { create, fromBinary, toBinary, type DescMessage, type JsonObject } from "@bufbuild/protobuf";
import { Code, ConnectError, type Transport } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { ChronologClient, createClient } from "../sdk/ts/src/client.js";
import { dstOf, schedulePolicyOf } from "../sdk/ts/src/time-requests.js";
import { CatchUpPolicy, DstGap, DstRepeated, OverlapPolicy, TimerKind } from "@chronolog/sdk/gen/chronolog/v1/time_pb";
import { jsonObjectProblem, jsonProblem } from "../sdk/ts/src/json-check.js";
import { runExecutor } from "../sdk/ts/src/executor.js";

interface Sent {
  method: string;
  input: DescMessage;
  message: unknown;
}

/** A client whose transport records each request (as protobuf-es would encode it) and answers an empty response. */
function recordingClient(): { client: ChronologClient; sent: Sent[] } {
  const sent: Sent[] = [];
  const transport: Transport = {
    async unary(method, _signal, _timeoutMs, _header, input) {
      sent.push({ method: method.name, input: method.input, message: input });
      return { stream: false, service: method.parent, method, header: new Headers(), message: create(method.output), trailer: new Headers() };
    },
    async stream(method, _signal, _timeoutMs, _header, input) {
      for await (const message of input) sent.push({ method: method.name, input: method.input, message });
      return { stream: true, service: method.parent, method, header: new Headers(), message: (async function* () {})(), trailer: new Headers() };
    },
  };
  return { client: new ChronologClient(transport), sent };
}

/** The request as the owner decodes it: encoded to binary and back. */
function onTheWire(s: Sent): Record<string, unknown> {
  return fromBinary(s.input, toBinary(s.input, create(s.input, s.message as never))) as unknown as Record<string, unknown>;
}

async function refusal(p: Promise<unknown>): Promise<ConnectError> {
  const caught = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(caught, "the call should have been refused").toBeInstanceOf(ConnectError);
  const err = caught as ConnectError;
  expect(Code[err.code]).toBe(Code[Code.InvalidArgument]);
  return err;
}

async function drain(it: AsyncIterable<unknown>): Promise<void> {
  for await (const _ of it);
}

class Money {
  constructor(readonly cents: number) {}
}

/** Values protobuf-es would alter, and how the refusal names them. */
const notJson: [string, () => unknown, string][] = [
  ["BigInt", () => 10n, "a BigInt is not JSON"],
  ["NaN", () => NaN, "NaN is not JSON"],
  ["Infinity", () => Infinity, "Infinity is not JSON"],
  ["-Infinity", () => -Infinity, "-Infinity is not JSON"],
  ["undefined", () => undefined, "undefined is not JSON"],
  ["function", () => () => 1, "a function is not JSON"],
  ["symbol", () => Symbol("s"), "a symbol is not JSON"],
  ["Date", () => new Date(0), "a Date is not JSON"],
  ["Map", () => new Map([["k", 1]]), "a Map is not JSON"],
  ["Set", () => new Set([1]), "a Set is not JSON"],
  ["class instance", () => new Money(5), "an instance of Money is not JSON"],
  ["typed array", () => new Uint8Array(2), "a Uint8Array is not JSON"],
  ["boxed number", () => Object(1), "a Number is not JSON"],
];

/** Every client method that sends JSON, given `bad` at `x` of its JSON, and the path it should name. */
const jsonMethods: [string, (c: ChronologClient, bad: unknown) => Promise<unknown>, string][] = [
  ["call input", (c, bad) => c.call("p.act", { x: bad } as JsonObject), "input.x"],
  ["emit data", (c, bad) => c.emit("p.ev", { x: bad } as JsonObject), "data.x"],
  [
    "emitBatch data",
    (c, bad) =>
      c.emitBatch([
        { type: "p.ev", data: {} },
        { type: "p.ev", data: { x: bad } as JsonObject },
      ]),
    "events[1].data.x",
  ],
  ["createDocument doc", (c, bad) => c.createDocument("things", { x: bad } as JsonObject), "doc.x"],
  ["replaceDocument doc", (c, bad) => c.replaceDocument("things", "t1", { x: bad } as JsonObject), "doc.x"],
  ["patchDocument set", (c, bad) => c.patchDocument("things", "t1", { set: { x: bad } as JsonObject }), "set.x"],
  ["findDocuments filter", (c, bad) => c.findDocuments("things", { filter: { x: bad } as JsonObject }), "filter.x"],
  ["findDocuments sort", (c, bad) => c.findDocuments("things", { sort: { x: bad } as JsonObject }), "sort.x"],
  ["read where", (c, bad) => drain(c.read({ where: { x: bad } as JsonObject })), "where.x"],
  ["watch where", (c, bad) => drain(c.watch({ where: { x: bad } as JsonObject })), "where.x"],
  ["schedule input", (c, bad) => c.schedule("p.act", { x: bad } as JsonObject, { everyMs: 60_000 }), "input.x"],
  ["delay input", (c, bad) => c.delay("p.act", { x: bad } as JsonObject, { intervalMs: 100_000 }, "unbounded"), "input.x"],
  [
    "registerPlugin schema",
    (c, bad) => c.registerPlugin({ name: "p", events: { "p.ev": { schema: { x: bad } as JsonObject } } }),
    'manifest.events["p.ev"].schema.x',
  ],
  ["raw log.emit", (c, bad) => c.log.emit({ type: "p.ev", data: { x: bad } as JsonObject }), "data.x"],
];

describe("the client refuses JSON it would send altered", () => {
  it("the reported cases: delay {a: 10n, n: NaN, inf: Infinity} and emit {a: 10n, d: Date, u: undefined}", async () => {
    const { client, sent } = recordingClient();
    const delay = await refusal(client.delay("tt.rec", { a: 10n, n: NaN, inf: Infinity } as unknown as JsonObject, { intervalMs: 100000 }, "unbounded"));
    expect(delay.rawMessage).toBe("input.a: a BigInt is not JSON");
    const emit = await refusal(client.emit("fill.ping", { a: 10n, d: new Date(0), u: undefined } as unknown as JsonObject));
    expect(emit.rawMessage).toBe("data.a: a BigInt is not JSON");
    expect((await refusal(client.emit("fill.ping", { d: new Date(0) } as unknown as JsonObject))).rawMessage).toBe("data.d: a Date is not JSON");
    expect((await refusal(client.emit("fill.ping", { u: undefined } as unknown as JsonObject))).rawMessage).toBe("data.u: undefined is not JSON");
    expect((await refusal(client.delay("tt.rec", { n: NaN }, { intervalMs: 100000 }, "unbounded"))).rawMessage).toBe("input.n: NaN is not JSON");
    expect(sent).toEqual([]);
  });

  for (const [method, invoke, path] of jsonMethods) {
    it(`${method}: every kind of non-JSON value is refused, naming ${path}; nothing is sent`, async () => {
      const { client, sent } = recordingClient();
      for (const [, make, what] of notJson) {
        const err = await refusal(invoke(client, make()));
        expect(err.rawMessage).toBe(`${path}: ${what}`);
      }
      const cycle: Record<string, unknown> = { n: 1 };
      cycle.self = cycle;
      expect((await refusal(invoke(client, cycle))).rawMessage).toBe(`${path}.self: a cycle (back to ${path}) is not JSON`);
      expect(sent).toEqual([]);
      // The same shape with plain JSON goes through.
      await invoke(client, { ok: [1, "two", null, true] });
      expect(sent.length).toBeGreaterThan(0);
    });
  }

  it("an id, type or other string field with a lone surrogate is refused: it would arrive as U+FFFD, so two different ids would be one", async () => {
    const { client, sent } = recordingClient();
    const expected = (path: string, unit: string) =>
      `${path}: a string with a lone surrogate (${unit}) cannot be sent (UTF-8 cannot encode it; it would arrive as U+FFFD)`;
    expect((await refusal(client.emit("p.ev", { q: 1 }, { id: "sur-\ud800" }))).rawMessage).toBe(expected("id", "U+D800"));
    expect((await refusal(client.emit("p.\udc00", { q: 1 }))).rawMessage).toBe(expected("type", "U+DC00"));
    expect((await refusal(client.delay("p.act", {}, { intervalMs: 1_000 }, "unbounded", { delayId: "dl-\udbff" }))).code).toBe(Code.InvalidArgument);
    expect((await refusal(client.read({ types: ["ok", "bad\ud800"] }).next())).rawMessage).toBe(expected("types[1]", "U+D800"));
    expect(sent).toEqual([]);
    await client.emit("p.ev", { q: 1 }, { id: "pair-\ud83d\ude00" }); // a surrogate pair (😀) is fine
    expect(sent).toHaveLength(1);
  });

  it("undefined, holes and bad values inside arrays and deep objects are named by their path", async () => {
    const { client, sent } = recordingClient();
    expect((await refusal(client.emit("p.ev", { list: [1, undefined, 3] } as unknown as JsonObject))).rawMessage).toBe("data.list[1]: undefined is not JSON");
    // biome-ignore lint/suspicious/noSparseArray: the empty slot is what the client must refuse
    expect((await refusal(client.emit("p.ev", { list: [1, , 3] } as unknown as JsonObject))).rawMessage).toBe(
      "data.list[1]: an empty array slot (undefined) is not JSON",
    );
    expect((await refusal(client.emit("p.ev", { a: { "b c": [{ d: [0, 1n] }] } } as unknown as JsonObject))).rawMessage).toBe(
      'data.a["b c"][0].d[1]: a BigInt is not JSON',
    );
    const ring: unknown[] = [1];
    ring.push({ back: ring });
    expect((await refusal(client.emit("p.ev", { ring } as unknown as JsonObject))).rawMessage).toBe(
      "data.ring[1].back: a cycle (back to data.ring) is not JSON",
    );
    expect((await refusal(client.emit("p.ev", { [Symbol("k")]: 1 } as unknown as JsonObject))).rawMessage).toBe("data: a symbol key (Symbol(k)) is not JSON");
    expect((await refusal(client.emit("p.ev", { s: "half \ud83d pair" }))).rawMessage).toBe(
      "data.s: a string with a lone surrogate (U+D83D) is not JSON (UTF-8 cannot encode it)",
    );
    expect((await refusal(client.emit("p.ev", [1, 2] as unknown as JsonObject))).rawMessage).toBe("data: an array is not a JSON object");
    expect((await refusal(client.emit("p.ev", "text" as unknown as JsonObject))).rawMessage).toBe("data: a string is not a JSON object");
    expect((await refusal(client.emit("p.ev", new Date(0) as unknown as JsonObject))).rawMessage).toBe("data: a Date is not JSON");
    expect(sent).toEqual([]);
  });

  it("google.protobuf.Value messages given to a raw client (ExecuteSql params) are checked too", async () => {
    const { client, sent } = recordingClient();
    const err = await refusal(
      client.admin.executeSql({
        sql: "select ?",
        params: { values: [{ kind: { case: "stringValue", value: "ok" } }, { kind: { case: "numberValue", value: NaN } }] },
      }),
    );
    expect(err.rawMessage).toBe("params.values[1]: NaN is not JSON");
    expect(sent).toEqual([]);
    await client.admin.executeSql({ sql: "select ?", params: { values: [{ kind: { case: "numberValue", value: 1.5 } }] } });
    expect(sent).toHaveLength(1);
  });

  it("plain JSON is sent unchanged, as the owner decodes it", async () => {
    const { client, sent } = recordingClient();
    const shared = { k: "v" };
    const data: JsonObject = {
      nil: null,
      yes: true,
      no: false,
      ints: [0, -0, 1, -1, Number.MAX_SAFE_INTEGER],
      floats: [0.1, -2.5e-300, 1.7976931348623157e308],
      strings: ["", "é", "😀 pair", "line\nbreak", "\u0000"],
      nested: { empty: {}, list: [[], [[1]], { deep: { er: [null] } }] },
      "odd key": 1,
      __proto__key: 2,
      same: shared,
      again: shared,
    };
    const copy = structuredClone(data);
    await client.emit("p.ev", data);
    await client.call("p.act", data);
    await client.createDocument("things", data);
    await client.patchDocument("things", "t1", { set: data, unset: ["x"] });
    await client.delay("p.act", data, { at: Date.now() + 60_000 }, { maxLatenessMs: 0 });
    expect(sent.map((s) => s.method)).toEqual(["Emit", "CallAction", "CreateDocument", "PatchDocument", "Delay"]);
    const fields = ["data", "input", "doc", "set", "input"];
    sent.forEach((s, i) => expect(onTheWire(s)[fields[i]]).toStrictEqual(copy));
    expect(data).toStrictEqual(copy); // the input itself is not touched
  });

  it("an unreachable owner: a refused value fails INVALID_ARGUMENT, a plain one tries to connect (UNAVAILABLE)", async () => {
    const client = createClient({ url: "http://127.0.0.1:1", protocol: "connect", httpVersion: "1.1" });
    expect((await refusal(client.emit("p.ev", { a: 10n } as unknown as JsonObject))).rawMessage).toBe("data.a: a BigInt is not JSON");
    const err = await client.emit("p.ev", { a: 10 }).catch((e: unknown) => ConnectError.from(e));
    expect(Code[(err as ConnectError).code]).toBe(Code[Code.Unavailable]);
  });
});

describe("jsonProblem", () => {
  it("accepts plain JSON, null-prototype objects, shared (non-cyclic) references and deep nesting", () => {
    const shared = [1, 2];
    expect(jsonProblem({ a: shared, b: shared, c: { d: shared } }, "v")).toBeUndefined();
    const bare = Object.assign(Object.create(null) as Record<string, unknown>, { x: 1 });
    expect(jsonProblem({ bare }, "v")).toBeUndefined();
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i++) deep = i % 2 ? [deep] : { d: deep };
    expect(jsonProblem(deep, "v")).toBeUndefined(); // iterative: no stack overflow
    expect(jsonProblem(null, "v")).toBeUndefined();
    expect(jsonObjectProblem(null, "v")).toBe("v: null is not a JSON object");
  });

  it("names the first offending value found", () => {
    expect(jsonProblem({ a: 1, b: [2, { c: NaN }], d: 10n }, "input")).toBe("input.b[1].c: NaN is not JSON");
    expect(jsonProblem(10n, "x")).toBe("x: a BigInt is not JSON");
    expect(jsonProblem({ "\ud800": 1 }, "x")).toBe('x: the key "\\ud800" has a lone surrogate (U+D800), which is not JSON (UTF-8 cannot encode it)');
  });
});

describe("the client refuses bad numbers, moments and choices in options before sending", () => {
  type Case = [string, (c: ChronologClient) => Promise<unknown>, string];
  const when = { intervalMs: 100_000 };
  const cases: Case[] = [
    ["intervalMs NaN", (c) => c.delay("a.b", {}, { intervalMs: NaN }, "unbounded"), "intervalMs must be a non-negative integer number of ms (got NaN)"],
    ["intervalMs 1.5", (c) => c.delay("a.b", {}, { intervalMs: 1.5 }, "unbounded"), "intervalMs must be a non-negative integer number of ms (got 1.5)"],
    [
      "intervalMs Infinity",
      (c) => c.delay("a.b", {}, { intervalMs: Infinity }, "unbounded"),
      "intervalMs must be a non-negative integer number of ms (got Infinity)",
    ],
    ["intervalMs -1", (c) => c.delay("a.b", {}, { intervalMs: -1 }, "unbounded"), "intervalMs must be a non-negative integer number of ms (got -1)"],
    [
      "intervalMs string",
      (c) => c.delay("a.b", {}, { intervalMs: "5" as unknown as number }, "unbounded"),
      'intervalMs must be a non-negative integer number of ms (got "5")',
    ],
    [
      "delay at invalid Date",
      (c) => c.delay("a.b", {}, { at: new Date("nope") }, "unbounded"),
      "at must be a valid Date or a number of ms since the epoch within the range of a Date (got an invalid Date)",
    ],
    [
      "delay at NaN",
      (c) => c.delay("a.b", {}, { at: NaN }, "unbounded"),
      "at must be a valid Date or a number of ms since the epoch within the range of a Date (got NaN)",
    ],
    [
      "delay at beyond a Date",
      (c) => c.delay("a.b", {}, { at: 1e300 }, "unbounded"),
      "at must be a valid Date or a number of ms since the epoch within the range of a Date (got 1e+300)",
    ],
    [
      "delay at string",
      (c) => c.delay("a.b", {}, { at: "2030-01-01" as unknown as Date }, "unbounded"),
      'at must be a valid Date or a number of ms since the epoch within the range of a Date (got "2030-01-01")',
    ],
    [
      "delay when both",
      (c) => c.delay("a.b", {}, { intervalMs: 5, at: 5 } as unknown as { at: number }, "unbounded"),
      'when must have exactly one of "intervalMs" or "at" (got intervalMs, at)',
    ],
    [
      "delay when neither",
      (c) => c.delay("a.b", {}, {} as unknown as { at: number }, "unbounded"),
      'when must have exactly one of "intervalMs" or "at" (got none)',
    ],
    ["maxLatenessMs NaN", (c) => c.delay("a.b", {}, when, { maxLatenessMs: NaN }), "maxLatenessMs must be a non-negative integer number of ms (got NaN)"],
    ["maxLatenessMs -5", (c) => c.delay("a.b", {}, when, { maxLatenessMs: -5 }), "maxLatenessMs must be a non-negative integer number of ms (got -5)"],
    [
      "overdue sometimes",
      (c) => c.delay("a.b", {}, when, "sometimes" as unknown as "unbounded"),
      'overdue must be "unbounded", "onTimeOrNever" or { maxLatenessMs } (got "sometimes")',
    ],
    [
      "overdue missing",
      (c) => c.delay("a.b", {}, when, undefined as unknown as "unbounded"),
      'overdue must be "unbounded", "onTimeOrNever" or { maxLatenessMs } (got undefined)',
    ],
    [
      "schedule overdue",
      (c) => c.schedule("a.b", {}, { everyMs: 60_000 }, { overdue: {} as unknown as "unbounded" }),
      'overdue must be "unbounded", "onTimeOrNever" or { maxLatenessMs } (got an object)',
    ],
    ["everyMs 1000.5", (c) => c.schedule("a.b", {}, { everyMs: 1000.5 }), "everyMs must be a non-negative integer number of ms (got 1000.5)"],
    ["everyMs -1000", (c) => c.schedule("a.b", {}, { everyMs: -1000 }), "everyMs must be a non-negative integer number of ms (got -1000)"],
    [
      "schedule at invalid",
      (c) => c.schedule("a.b", {}, { at: new Date("nope") }),
      "at must be a valid Date or a number of ms since the epoch within the range of a Date (got an invalid Date)",
    ],
    [
      "schedule when two",
      (c) => c.schedule("a.b", {}, { everyMs: 60_000, cron: "* * * * *" } as unknown as { everyMs: number }),
      'when must have exactly one of "at", "cron" or "everyMs" (got cron, everyMs)',
    ],
    ["cron not a string", (c) => c.schedule("a.b", {}, { cron: 5 as unknown as string }), "cron must be a string (got 5)"],
    ["zone not a string", (c) => c.schedule("a.b", {}, { cron: "* * * * *", zone: 1 as unknown as string }), "zone must be a string (got 1)"],
    ["dst.gap", (c) => c.schedule("a.b", {}, { cron: "0 2 * * *", dst: { gap: "jump" as "skip" } }), 'dst.gap must be "shift" or "skip" (got "jump")'],
    [
      "dst.repeated",
      (c) => c.schedule("a.b", {}, { cron: "0 2 * * *", dst: { repeated: "all" as "both" } }),
      'dst.repeated must be "first", "last" or "both" (got "all")',
    ],
    [
      "policy.jitterMs",
      (c) => c.schedule("a.b", {}, { everyMs: 60_000 }, { policy: { jitterMs: 0.5 } }),
      "policy.jitterMs must be a non-negative integer number of ms (got 0.5)",
    ],
    [
      "policy.maxCount",
      (c) => c.schedule("a.b", {}, { everyMs: 60_000 }, { policy: { maxCount: -1 } }),
      "policy.maxCount must be a non-negative integer (got -1)",
    ],
    [
      "policy misspelt key",
      (c) => c.schedule("a.b", {}, { everyMs: 60_000 }, { policy: { jiter: 5 } as never }),
      "policy.jiter is not a policy option (jitterMs, start, end, maxCount, overlap, catchUp, catchUpWindowMs)",
    ],
    [
      "freshChain not a boolean",
      (c) => c.delay("a.b", {}, { intervalMs: 1_000 }, "unbounded", { freshChain: "yes" as unknown as boolean }),
      'freshChain must be true or false (got "yes")',
    ],
    ["note not a string", (c) => c.pauseTimer("t", { note: 5 as unknown as string }), "note must be a string (got 5)"],
    [
      "policy.catchUpWindowMs",
      (c) => c.schedule("a.b", {}, { everyMs: 60_000 }, { policy: { catchUp: "allWithinWindow", catchUpWindowMs: NaN } }),
      "policy.catchUpWindowMs must be a non-negative integer number of ms (got NaN)",
    ],
    [
      "policy.start",
      (c) => c.schedule("a.b", {}, { everyMs: 60_000 }, { policy: { start: new Date("nope") } }),
      "policy.start must be a valid Date or a number of ms since the epoch within the range of a Date (got an invalid Date)",
    ],
    [
      "policy.end",
      (c) => c.schedule("a.b", {}, { everyMs: 60_000 }, { policy: { end: Infinity } }),
      "policy.end must be a valid Date or a number of ms since the epoch within the range of a Date (got Infinity)",
    ],
    [
      "policy.overlap",
      (c) => c.schedule("a.b", {}, { everyMs: 60_000 }, { policy: { overlap: "never" as "skip" } }),
      'policy.overlap must be "allow", "skip" or "bufferOne" (got "never")',
    ],
    [
      "policy.catchUp",
      (c) => c.schedule("a.b", {}, { everyMs: 60_000 }, { policy: { catchUp: "toString" as "none" } }),
      'policy.catchUp must be "latest", "allWithinWindow" or "none" (got "toString")',
    ],
    [
      "backfill start",
      (c) => c.backfillTimer("t", new Date("nope"), Date.now()),
      "start must be a valid Date or a number of ms since the epoch within the range of a Date (got an invalid Date)",
    ],
    ["backfill end", (c) => c.backfillTimer("t", 0, NaN), "end must be a valid Date or a number of ms since the epoch within the range of a Date (got NaN)"],
    ["call timeoutMs NaN", (c) => c.call("a.b", {}, { timeoutMs: NaN }), "timeoutMs must be a positive integer number of ms, at most 99999999 (got NaN)"],
    ["call timeoutMs 1.5", (c) => c.call("a.b", {}, { timeoutMs: 1.5 }), "timeoutMs must be a positive integer number of ms, at most 99999999 (got 1.5)"],
    ["call timeoutMs 0", (c) => c.call("a.b", {}, { timeoutMs: 0 }), "timeoutMs must be a positive integer number of ms, at most 99999999 (got 0)"],
    [
      "call timeoutMs too long for gRPC",
      (c) => c.call("a.b", {}, { timeoutMs: 100_000_000 }),
      "timeoutMs must be a positive integer number of ms, at most 99999999 (got 100000000)",
    ],
    ["cause.position", (c) => c.call("a.b", {}, { cause: { eventId: "e", position: -1 } }), "cause.position must be an integer from 0 to 4294967295 (got -1)"],
    [
      "document cause.position",
      (c) => c.createDocument("things", {}, { cause: { eventId: "e", position: 0.5 } }),
      "cause.position must be an integer from 0 to 4294967295 (got 0.5)",
    ],
    [
      "timer cause.position",
      (c) => c.unschedule("t", { cause: { eventId: "e", position: NaN } }),
      "cause.position must be an integer from 0 to 4294967295 (got NaN)",
    ],
    ["read afterSeq -1", (c) => drain(c.read({ afterSeq: -1 })), "afterSeq must be a non-negative integer (a number or a bigint) (got -1)"],
    ["read afterSeq 1.5", (c) => drain(c.read({ afterSeq: 1.5 })), "afterSeq must be a non-negative integer (a number or a bigint) (got 1.5)"],
    [
      "read afterSeq 2^64",
      (c) => drain(c.read({ afterSeq: 2n ** 64n })),
      "afterSeq must be a non-negative integer (a number or a bigint) (got 18446744073709551616n)",
    ],
    ["read pageSize", (c) => drain(c.read({}, NaN)), "pageSize must be an integer from 0 to 4294967295 (got NaN)"],
    ["watch afterSeq", (c) => drain(c.watch({ afterSeq: NaN })), "afterSeq must be a non-negative integer (a number or a bigint) (got NaN)"],
    ["findDocuments limit", (c) => c.findDocuments("things", { limit: -1 }), "limit must be an integer from 0 to 4294967295 (got -1)"],
    ["listTimers kind", (c) => drain(c.listTimers({ kind: "toString" as "delay" })), 'kind must be "runtime", "declared" or "delay" (got "toString")'],
    ["listTimers pageSize", (c) => drain(c.listTimers({ pageSize: 2 ** 32 })), "pageSize must be an integer from 0 to 4294967295 (got 4294967296)"],
    ["getTimer previewCount", (c) => c.getTimer("t", { previewCount: 2.5 }), "previewCount must be an integer from 0 to 4294967295 (got 2.5)"],
  ];

  for (const [name, invoke, message] of cases) {
    it(`${name}: ${message}`, async () => {
      const { client, sent } = recordingClient();
      expect((await refusal(invoke(client))).rawMessage).toBe(message);
      expect(sent).toEqual([]);
    });
  }

  it("good options are sent as given (fractional moments rounded to whole ms)", async () => {
    const { client, sent } = recordingClient();
    const at = Date.UTC(2030, 0, 1, 12);
    await client.delay("a.b", {}, { intervalMs: 0 }, { maxLatenessMs: 0 });
    await client.delay("a.b", {}, { at: at + 0.4 }, "onTimeOrNever");
    await client.schedule(
      "a.b",
      {},
      { everyMs: 60_000 },
      {
        overdue: { maxLatenessMs: 5_000 },
        policy: { jitterMs: 10, start: new Date(at), end: at + 1, maxCount: 3, overlap: "bufferOne", catchUp: "allWithinWindow", catchUpWindowMs: 2_000 },
      },
    );
    await client.schedule("a.b", {}, { cron: "0 2 * * *", zone: "Europe/Berlin", dst: { gap: "skip", repeated: "both" } });
    await client.call("a.b", {}, { timeoutMs: 99_999_999, cause: { eventId: "e", position: 0 } });
    await drain(client.read({ afterSeq: 2n ** 64n - 1n }, 0));
    await drain(client.watch({ afterSeq: 7 }));
    await drain(client.listTimers({ kind: "declared", pageSize: 10 }));
    await client.findDocuments("things", { limit: 1000 });
    await client.getTimer("t", { previewCount: 100 });
    await client.backfillTimer("t", new Date(at), at + 60_000);
    const wire = sent.map(onTheWire);
    expect(wire[0]).toMatchObject({ when: { case: "intervalMs", value: 0n }, overdue: { bound: { case: "maxLatenessMs", value: 0n } } });
    expect(wire[1]).toMatchObject({
      when: { case: "at", value: { seconds: BigInt(at / 1000), nanos: 0 } },
      overdue: { bound: { case: "onTimeOrNever", value: true } },
    });
    expect(wire[2]).toMatchObject({
      spec: { when: { case: "everyMs", value: 60_000n } },
      overdue: { bound: { case: "maxLatenessMs", value: 5_000n } },
      policy: {
        jitterMs: 10n,
        start: { seconds: BigInt(at / 1000), nanos: 0 },
        end: { seconds: BigInt(at / 1000), nanos: 1_000_000 },
        maxCount: 3n,
        overlap: OverlapPolicy.BUFFER_ONE,
        catchUp: CatchUpPolicy.ALL_WITHIN_WINDOW,
        catchUpWindowMs: 2_000n,
      },
    });
    expect(wire[3]).toMatchObject({
      spec: { when: { case: "cron", value: { expression: "0 2 * * *", zone: "Europe/Berlin", dst: { gap: DstGap.SKIP, repeated: DstRepeated.BOTH } } } },
    });
    expect(wire[4]).toMatchObject({ cause: { eventId: "e", position: 0 } });
    expect(wire[5]).toMatchObject({ afterSeq: 2n ** 64n - 1n, pageSize: 0 });
    expect(wire[6]).toMatchObject({ afterSeq: 7n });
    expect(wire[7]).toMatchObject({ kind: TimerKind.DECLARED, pageSize: 10 });
    expect(wire[8]).toMatchObject({ limit: 1000 });
    expect(wire[9]).toMatchObject({ previewCount: 100 });
    expect(wire[10]).toMatchObject({ start: { seconds: BigInt(at / 1000) }, end: { seconds: BigInt(at / 1000 + 60) } });
  });

  it("dstOf and schedulePolicyOf (also used for declared schedules) refuse the same way", () => {
    const thrown = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        expect(e).toBeInstanceOf(ConnectError);
        expect(Code[(e as ConnectError).code]).toBe(Code[Code.InvalidArgument]);
        return (e as ConnectError).rawMessage;
      }
      throw new Error("did not throw");
    };
    expect(thrown(() => dstOf({ gap: "Skip" as "skip" }))).toBe('dst.gap must be "shift" or "skip" (got "Skip")');
    expect(thrown(() => schedulePolicyOf({ maxCount: 1.5 }))).toBe("policy.maxCount must be a non-negative integer (got 1.5)");
    expect(dstOf({})).toEqual({ gap: DstGap.UNSPECIFIED, repeated: DstRepeated.UNSPECIFIED });
  });
});

describe("runExecutor refuses bad options before it connects", () => {
  it("credits that Hello cannot carry: a RangeError naming the option (it used to reconnect forever with INTERNAL serialize binary)", () => {
    for (const credits of [-3, 1.5, Number.NaN, 2 ** 32])
      expect(() => runExecutor({ url: "http://127.0.0.1:1", plugins: [], credits }), String(credits)).toThrow(
        new RangeError(`credits must be a whole number from 0 to 4294967295 (0: the owner's default, 16), got ${credits}`),
      );
  });
});
