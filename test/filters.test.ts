// MongoDB filters (`where` of ReadLog, Watch and processors, FindDocuments' `filter`),
// operators that turn a small request into unbounded work are refused at request or
// registration time; everything inside `$expr` is metered, so no filter or event data can crash
// or stall the owner; an event or document a filter cannot be applied to does not match (and
// never ends a reader's stream). Through the real transport; the filters that crashed or froze
// the owner before run against an owner in a child process.
//
// @module-tag sqlite-only

import type { JsonObject } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient as createRpcClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, type ChronologClient } from "../sdk/ts/src/client.js";
import { CollectionService } from "@chronolog/sdk/gen/chronolog/v1/collection_pb";
import { LogService, type WatchResponse } from "@chronolog/sdk/gen/chronolog/v1/log_pb";
import { spawnOwner, startTestOwner, tempDir, type OwnerProcess } from "./helpers/owner.js";

/** The plugin of these tests: an event type and a collection anyone may use. */
const plugin = {
  name: "f",
  events: { "f.e": { allow: ["*"] } },
  collections: { item: { allow: ["*"] } },
};

/** The ConnectError `p` fails with; undefined when it succeeds. */
async function failure(p: Promise<unknown>): Promise<ConnectError | undefined> {
  try {
    await p;
  } catch (e) {
    return ConnectError.from(e);
  }
  return undefined;
}

/** The first message of a Watch with `where`, or how the stream failed. */
async function firstWatchMessage(client: ChronologClient, where: JsonObject): Promise<WatchResponse | ConnectError> {
  const abort = new AbortController();
  try {
    for await (const m of client.log.watch({ where }, { signal: abort.signal })) return m;
    throw new Error("watch stream ended");
  } catch (e) {
    return ConnectError.from(e);
  } finally {
    abort.abort();
  }
}

/** Pulls a watch stream's items one at a time, each with a time limit (a timed-out pull is taken over by the next). */
function puller(stream: AsyncIterable<WatchResponse>) {
  const it = stream[Symbol.asyncIterator]();
  let pending: Promise<IteratorResult<WatchResponse>> | undefined;
  const within = async (ms: number) => {
    let timer: NodeJS.Timeout | undefined;
    const r = await Promise.race([(pending ??= it.next()), new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), ms)))]);
    clearTimeout(timer);
    if (r !== "timeout") pending = undefined;
    return r;
  };
  return {
    async next(ms = 3000): Promise<WatchResponse> {
      const r = await within(ms);
      if (r === "timeout") throw new Error(`no watch message within ${ms} ms`);
      if (r.done) throw new Error("watch stream ended");
      return r.value;
    },
    /** True when nothing arrives within `ms`: the stream is open and quiet. */
    async quietFor(ms: number): Promise<boolean> {
      const r = await within(ms);
      if (r === "timeout") return true;
      throw new Error(r.done ? "watch stream ended" : `unexpected watch message ${r.value.message.case}`);
    },
  };
}

const xs = (events: { data?: JsonObject }[]) => events.map((e) => e.data?.x);

/** A string that makes `^(a+)+$` backtrack for about a second in JavaScript (each further `a` doubles it). */
const evil = `${"a".repeat(24)}!`;

/** One filter per refused operator, each where it does harm (most in a branch no document reaches: refused all the same). */
const refusedFilters: [string, JsonObject][] = [
  ["$range", { $expr: { $gt: [{ $size: { $range: [0, 10] } }, 0] } }], // 600 million elements: in the child process below
  ["$regexMatch", { $expr: { $regexMatch: { input: evil, regex: "^(a+)+$" } } }],
  ["$regexFind", { $expr: { $eq: [{ $regexFind: { input: "$s", regex: "^(a+)+$" } }, null] } }],
  ["$regexFindAll", { $expr: { $gt: [{ $size: { $regexFindAll: { input: evil, regex: "(a+)+b" } } }, 0] } }],
  ["$function", { $expr: { $function: { body: "function () { return true }", args: [], lang: "js" } } }],
  [
    "$accumulator",
    {
      $expr: {
        $and: [
          false,
          {
            $accumulator: {
              init: "function () { return 0 }",
              accumulate: "function (s) { return s }",
              accumulateArgs: [],
              merge: "function (a) { return a }",
              lang: "js",
            },
          },
        ],
      },
    },
  ],
  ["$where", { $or: [{ x: 1 }, { $where: "true" }] }],
  ["$dateFromString", { $expr: { $eq: [{ $dateFromString: { dateString: `${evil}2020-01-01`, format: "(a+)+%Y-%m-%d" } }, null] } }],
  ["$convert", { $expr: { $eq: [{ $convert: { input: "$x", to: "string" } }, "1"] } }],
  ["$firstN", { $expr: { $eq: [{ $firstN: { input: [1, 2], n: "$n" } }, [1]] } }],
  // Deep inside a query: $or, $elemMatch, $and, $not, $expr, $cond, $map.
  [
    "$range",
    {
      $or: [
        { x: 1 },
        { items: { $elemMatch: { $and: [{ q: { $not: { $gt: 1 } } }, { $expr: { $cond: [false, { $map: { input: { $range: [0, 9] }, in: 1 } }, true] } }] } } },
      ],
    },
  ],
];

describe("refused filter operators", () => {
  let owner: Awaited<ReturnType<typeof startTestOwner>>;
  let client: ChronologClient;
  beforeAll(async () => {
    owner = await startTestOwner();
    client = createClient({ url: owner.url });
    await client.registerPlugin(plugin);
    await client.emit("f.e", { x: 1, s: evil, n: 1, items: [{ q: 0 }] });
    await client.createDocument("item", { x: 1, s: evil, n: 1 });
  });
  afterAll(async () => owner?.close());

  it.each(refusedFilters)("%s: INVALID_ARGUMENT naming the field from ReadLog, Watch, FindDocuments and a processor's registration", async (op, where) => {
    const started = performance.now();
    const read = await failure(client.log.readLog({ where }));
    expect(read?.code, "ReadLog").toBe(Code.InvalidArgument);
    expect(read?.rawMessage).toContain(`where filter: ${op} is refused`);
    const watch = await firstWatchMessage(client, where);
    expect(watch instanceof ConnectError && watch.code, "Watch").toBe(Code.InvalidArgument);
    expect((watch as ConnectError).rawMessage).toContain(`${op} is refused`);
    const find = await failure(client.collections.findDocuments({ collection: "item", filter: where }));
    expect(find?.code, "FindDocuments").toBe(Code.InvalidArgument);
    expect(find?.rawMessage).toContain(`invalid filter: ${op} is refused`);
    const reg = await failure(client.registerPlugin({ name: "p", events: { "p.e": {} }, processors: { w: { on: ["p.e"], where } } }));
    expect(reg?.code, "RegisterPlugin").toBe(Code.InvalidArgument);
    expect(reg?.rawMessage).toContain("processors.w.where");
    expect(reg?.rawMessage).toContain(`${op} is refused`);
    expect(performance.now() - started).toBeLessThan(3_000); // refused before anything runs
  });

  it("points JavaScript regexes to $regex (RE2), and says where in the filter the operator is", async () => {
    const read = await failure(client.log.readLog({ where: { $expr: { $and: [{ $eq: ["$x", 1] }, { $regexMatch: { input: "$s", regex: "^a" } }] } } }));
    expect(read?.rawMessage).toMatch(/\$regexMatch is refused: .*\$regex.*RE2.*\(at \$expr\.\$and\[1\]\.\$regexMatch\)/);
    // What it points to works: same question, linear time.
    expect(xs((await client.log.readLog({ where: { x: 1, s: { $regex: "^a" } } })).events)).toEqual([1]);
  });

  it("refuses an unknown expression operator at request time, even in a branch no document reaches", async () => {
    const read = await failure(client.log.readLog({ where: { $expr: { $and: [false, { $nope: 1 }] } } }));
    expect(read?.code).toBe(Code.InvalidArgument);
    expect(read?.rawMessage).toContain("unknown expression operator $nope");
  });

  it("keeps the rest of mingo's expressions, with their MongoDB meaning", async () => {
    const data = {
      x: 2,
      s: "a-b-c",
      items: [
        { q: 1, k: "u" },
        { q: 9, k: "v" },
      ],
      o: { a: 1 },
      d: "2024-05-01T10:00:00Z",
    };
    await client.emit("f.e", data);
    const matches = async (expr: JsonObject) => xs((await client.log.readLog({ where: { x: 2, $expr: expr } })).events);
    const expressions: JsonObject[] = [
      { $gt: [{ $size: { $filter: { input: "$items", as: "it", cond: { $gt: ["$$it.q", 5] }, limit: 1 } } }, 0] },
      { $eq: [{ $map: { input: "$items", in: { $multiply: ["$$this.q", 2] } } }, [2, 18]] },
      { $eq: [{ $reduce: { input: "$items", initialValue: 0, in: { $add: ["$$value", "$$this.q"] } } }, 10] },
      { $let: { vars: { t: { $add: ["$x", 1] } }, in: { $eq: ["$$t", 3] } } },
      {
        $eq: [
          {
            $switch: {
              branches: [
                // biome-ignore lint/suspicious/noThenProperty: $switch branches name their result `then`
                { case: { $gt: ["$x", 5] }, then: "big" },
                // biome-ignore lint/suspicious/noThenProperty: as above
                { case: true, then: "small" },
              ],
              default: "?",
            },
          },
          "small",
        ],
      },
      { $eq: [{ $cond: [{ $eq: ["$x", 0] }, 0, { $divide: [4, "$x"] }] }, 2] },
      {
        $eq: [
          { $zip: { inputs: [[1, 2], "$items.q"], useLongestLength: true, defaults: [0, 0] } },
          [
            [1, 1],
            [2, 9],
          ],
        ],
      },
      { $eq: [{ $replaceAll: { input: "$s", find: "-", replacement: "" } }, "abc"] },
      { $eq: [{ $trim: { input: "--x--", chars: "-" } }, "x"] },
      { $eq: [{ $setField: { field: "b", input: "$o", value: "$x" } }, { a: 1, b: 2 }] },
      { $eq: [{ $unsetField: { field: "a", input: "$o" } }, {}] },
      { $eq: [{ $strLenCP: { $literal: "$x" } }, 2] },
      {
        $eq: [
          { $sortArray: { input: "$items", sortBy: { q: -1 } } },
          [
            { q: 9, k: "v" },
            { q: 1, k: "u" },
          ],
        ],
      },
      { $eq: [{ $firstN: { input: "$items.k", n: 1 } }, ["u"]] },
      { $eq: [{ $sum: ["$x", 1] }, 3] },
      { $in: ["v", "$items.k"] },
      { $eq: [{ $year: { $toDate: "$d" } }, 2024] },
      { $eq: [{ $mergeObjects: ["$o", { c: "$x" }] }, { a: 1, c: 2 }] },
      { $eq: [{ $concatArrays: ["$items.q", [3]] }, [1, 9, 3]] },
      { $eq: [{ $split: ["$s", "-"] }, ["a", "b", "c"]] },
    ];
    for (const expr of expressions) expect(await matches(expr), JSON.stringify(expr)).toEqual([2]);
    // And with query operators around it.
    expect(xs((await client.log.readLog({ where: { $and: [{ items: { $elemMatch: { q: { $gt: 5 } } } }, { $expr: { $eq: ["$x", 2] } }] } })).events)).toEqual([
      2,
    ]);
  });
});

describe("an event or document the filter cannot be applied to does not match", () => {
  let owner: Awaited<ReturnType<typeof startTestOwner>>;
  let client: ChronologClient;
  const where = { $expr: { $gt: [{ $divide: [1, "$x"] }, 0] } };
  beforeAll(async () => {
    owner = await startTestOwner();
    client = createClient({ url: owner.url });
    await client.registerPlugin(plugin);
    for (const x of [1, 0, 2]) await client.emit("f.e", { x });
  });
  afterAll(async () => owner?.close());

  it("ReadLog: returns the events it can be applied to ($divide by the x of {x: 0} cannot)", async () => {
    expect(xs((await client.log.readLog({ where })).events)).toEqual([1, 2]);
    for (const pageSize of [1, 2]) {
      const seen: unknown[] = [];
      for await (const e of client.read({ where }, pageSize)) seen.push(e.data?.x);
      expect(seen).toEqual([1, 2]);
    }
  });

  it("an expression that fails on the empty document only for want of its data is accepted, not refused; a malformed query operator still is", async () => {
    const byLength = { $expr: { $gt: [{ $strLenCP: "$s" }, 2] } }; // $strLenCP of a missing s fails: that event does not match
    await client.emit("f.e", { x: -3, s: "abcd" }); // negative x: the other tests' $divide filter does not match these
    await client.emit("f.e", { x: -4, s: "ab" });
    expect(xs((await client.log.readLog({ where: byLength })).events)).toEqual([-3]);
    expect(xs((await client.log.readLog({ where: { $and: [byLength, { x: { $lte: -3 } }] } })).events)).toEqual([-3]);
    const malformed = await client.log.readLog({ where: { $and: [byLength, { x: { $in: 5 } }] } }).catch((e) => ConnectError.from(e));
    expect(malformed).toBeInstanceOf(ConnectError);
    expect((malformed as ConnectError).code).toBe(Code.InvalidArgument);
    expect((malformed as ConnectError).rawMessage).toBe("invalid where filter: $in takes an array (got number) (at $and[1].x.$in)");
    for (const [where, message] of [
      [{ status: { $in: "notarray" } }, "invalid where filter: $in takes an array (got string) (at status.$in)"],
      [{ $or: { a: 1 } }, "invalid where filter: $or takes an array (got object) (at $or)"],
      [{ tags: { $all: null } }, "invalid where filter: $all takes an array (got null) (at tags.$all)"],
    ] as const) {
      const refused = await client.log.readLog({ where }).catch((e) => ConnectError.from(e));
      expect([(refused as ConnectError).code, (refused as ConnectError).rawMessage]).toEqual([Code.InvalidArgument, message]);
    }
  });

  it("Watch: catches up with x=1 and x=2, stays open through a live {x: 0} and takes the next match", async () => {
    const abort = new AbortController();
    const w = puller(client.log.watch({ where }, { signal: abort.signal }));
    try {
      const caughtUp: unknown[] = [];
      for (let m = await w.next(); m.message.case !== "caughtUp"; m = await w.next()) caughtUp.push(m.message.case === "event" && m.message.value.data?.x);
      expect(caughtUp).toEqual([1, 2]);
      await client.emit("f.e", { x: 0 });
      expect(await w.quietFor(200)).toBe(true);
      await client.emit("f.e", { x: 3 });
      const m = await w.next();
      expect(m.message.case === "event" && m.message.value.data?.x).toBe(3);
      expect(await w.quietFor(100)).toBe(true);
    } finally {
      abort.abort();
    }
  });

  it("FindDocuments: a document the filter cannot be applied to is not found, the others are", async () => {
    for (const x of [1, 0, 2]) await client.createDocument("item", { _id: `i${x}`, x });
    const found = await client.findDocuments("item", { filter: where, sort: { x: 1 } });
    expect(found.map((d) => d.x)).toEqual([1, 2]);
  });
});

describe("filters that crashed or froze the owner (an owner in a child process, over Connect JSON as curl sends it)", { tags: ["serial"] }, () => {
  let owner: OwnerProcess;
  let client: ChronologClient;
  let log: Client<typeof LogService>;
  let collections: Client<typeof CollectionService>;
  beforeAll(async () => {
    owner = await spawnOwner(tempDir());
    client = createClient({ url: owner.url });
    const json = createConnectTransport({ baseUrl: owner.url, httpVersion: "1.1", useBinaryFormat: false });
    log = createRpcClient(LogService, json);
    collections = createRpcClient(CollectionService, json);
    await client.registerPlugin(plugin);
    const arr = Array.from({ length: 20_000 }, (_, i) => i);
    await client.emit("f.e", { x: 1, arr, objs: arr.map((q) => ({ q })), t: "a".repeat(50_000) });
    await client.createDocument("item", { _id: "one", x: 1 });
  }, 60_000);
  afterAll(async () => {
    owner?.child.kill();
    await owner?.exited;
  });

  /** Asserts the owner still serves (emits and reads) and is the same process. */
  async function stillUp() {
    expect(owner.child.exitCode, owner.logs.slice(-5).join("\n")).toBeNull();
    const e = await client.emit("f.e", { x: 7 });
    expect((await log.getEvent({ id: e.event!.id })).event?.data).toEqual({ x: 7 });
  }

  it("a $range filter: FindDocuments, ReadLog, Watch and a processor's registration answer INVALID_ARGUMENT at once", async () => {
    const filter = { $expr: { $gt: [{ $size: { $range: [0, 600_000_000] } }, 0] } };
    const started = performance.now();
    expect((await failure(collections.findDocuments({ collection: "item", filter })))?.code).toBe(Code.InvalidArgument);
    expect((await failure(log.readLog({ where: filter })))?.code).toBe(Code.InvalidArgument);
    const watch = await failure(
      (async () => {
        for await (const m of log.watch({ where: filter })) return m;
      })(),
    );
    expect(watch?.code).toBe(Code.InvalidArgument);
    const reg = await failure(client.registerPlugin({ name: "p", events: { "p.e": {} }, processors: { w: { on: ["p.e"], where: filter } } }));
    expect(reg?.code).toBe(Code.InvalidArgument);
    expect(performance.now() - started).toBeLessThan(3_000);
    await stillUp();
  });

  it("values that grow at each step ($let, $reduce, $replaceAll) or nested loops are refused at request time, quickly", async () => {
    // Five levels (filters nest 32 levels at most), each 64 times the last.
    let grown: JsonObject | number[] = [1];
    for (let i = 0; i < 5; i++) grown = { $let: { vars: { a: grown }, in: { $concatArrays: Array(64).fill("$$a") } } };
    let text: JsonObject | string = "a";
    for (let i = 0; i < 5; i++) text = { $replaceAll: { input: text, find: "a", replacement: "a".repeat(64) } };
    const filters: JsonObject[] = [
      { $expr: { $gt: [{ $size: grown }, 0] } }, // 64^5: a billion elements
      { $expr: { $gt: [{ $size: { $reduce: { input: Array(40).fill(0), initialValue: [1], in: { $concatArrays: ["$$value", "$$value"] } } } }, 0] } }, // 2^40
      { $expr: { $gt: [{ $strLenCP: text }, 0] } }, // 64^5 characters
      {
        $expr: {
          $gt: [
            {
              $size: {
                $map: {
                  input: Array(200).fill(0),
                  in: { $size: { $map: { input: Array(200).fill(0), in: { $size: { $map: { input: Array(200).fill(0), in: 1 } } } } } },
                },
              },
            },
            0,
          ],
        },
      }, // 8 million steps
    ];
    for (const where of filters) {
      const started = performance.now();
      const read = await failure(log.readLog({ where }));
      expect(read?.code, read?.rawMessage).toBe(Code.InvalidArgument);
      expect(read?.rawMessage).toMatch(/needs more than \d+ steps of work/);
      expect(performance.now() - started).toBeLessThan(3_000);
    }
    await stillUp();
  });

  it("a filter that would build or compare far more than the event's data does not match that event, and the owner stays up", async () => {
    const fanOut: JsonObject[] = [
      // 20,000 copies of a 20,000-element array: 400 million elements.
      { $expr: { $gt: [{ $size: { $concatArrays: Array(20_000).fill("$arr") } }, 0] } },
      // A path through an array of objects makes a new array each time it is read: 20,000 times here, then once per element.
      { $expr: { $isArray: [Array(20_000).fill("$objs.q")] } },
      { $expr: { $gt: [{ $size: { $map: { input: "$arr", in: "$objs.q" } } }, 0] } },
      // Trimming 50,000 characters with 50,001 to trim: 2.5 billion comparisons.
      { $expr: { $gt: [{ $strLenCP: { $trim: { input: { $ifNull: ["$t", ""] }, chars: `${"b".repeat(50_000)}a` } } }, -1] } },
    ];
    for (const where of fanOut) {
      const started = performance.now();
      const found = await log.readLog({ where: { ...where, x: 1 } });
      expect(xs(found.events), JSON.stringify(where).slice(0, 80)).toEqual([]);
      expect(performance.now() - started).toBeLessThan(3_000);
    }
    // What the event's size allows does match it.
    for (const expr of [
      { $eq: [{ $size: "$arr" }, 20_000] },
      { $eq: [{ $size: { $concatArrays: ["$arr", "$arr"] } }, 40_000] },
      { $eq: [{ $strLenCP: { $trim: { input: { $ifNull: ["$t", ""] }, chars: "a" } } }, 0] },
    ]) {
      expect(xs((await log.readLog({ where: { x: 1, $expr: expr } })).events), JSON.stringify(expr)).toEqual([1]);
    }
    await stillUp();
  });
});
