// Clients given several owners follow the leader: a real owner next to a standby (a fake one
// that refuses every Chronolog call with UNAVAILABLE and `chronolog-leader: <the owner's url>`,
// see helpers/standby.ts) and a port where nothing listens. The TypeScript client (emits on the
// Publish stream and unary, action calls, reads, a watch) and executor given the standby first
// reach the leader and write every event once; a Publish stream and a watch survive the owner
// killed with SIGKILL and started again on another port of the list, without an event twice.
//
// @module-tag sqlite-only

import { spawn } from "node:child_process";
import { createServer as createHttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { createInterface } from "node:readline";
import type { JsonObject } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, type ChronologClient } from "../sdk/ts/src/client.js";
import { runExecutor, type Executor } from "../sdk/ts/src/executor.js";
import type { Event } from "@chronolog/sdk/gen/chronolog/v1/event_pb";
import { definePlugin } from "../sdk/ts/src/plugin.js";
import { cli } from "./helpers/cli.js";
import { spawnOwner, startTestOwner, tempDir, type OwnerProcess } from "./helpers/owner.js";
import { deadPort, startSilentOwner, startStandby, type Standby } from "./helpers/standby.js";
import { until } from "./helpers/until.js";

const shop = definePlugin({
  name: "fl",
  events: { "fl.order": { allow: ["*"] }, "fl.priced": {} },
  actions: { price: { allow: ["*"], run: (_ctx, input) => ({ total: (input.qty as number) * 2 }) } },
  processors: {
    pricer: {
      on: "fl.order",
      run: async (ctx) => {
        const { output } = await ctx.call("fl.price", { qty: ctx.data.qty });
        await ctx.emit("fl.priced", { order: ctx.data.n, total: output.total });
      },
    },
  },
});

async function all(client: ChronologClient, type: string): Promise<Event[]> {
  const out: Event[] = [];
  for await (const e of client.read({ types: [type] })) out.push(e);
  return out;
}

describe("a client and an executor given a standby first", () => {
  let owner: Awaited<ReturnType<typeof startTestOwner>>;
  let standby: Standby;
  let client: ChronologClient;
  let executor: Executor;
  const reported: unknown[] = [];

  beforeAll(async () => {
    owner = await startTestOwner();
    standby = await startStandby(owner.url);
    client = createClient({ url: [standby.url, owner.url] });
    await client.registerPlugin({ name: "fl", version: "1", events: { "fl.order": { allow: ["*"] } } });
    executor = runExecutor({ url: `${standby.url},${owner.url}`, plugins: [shop], onError: (e) => reported.push(e) });
    await executor.ready;
  });
  afterAll(async () => {
    await executor?.stop(0);
    await standby?.close();
    await owner?.close();
  });

  it("emits (stream and unary), calls, reads and watches at the leader; each event once; the executor gets its deliveries", async () => {
    expect(standby.refused()).toBeGreaterThan(0); // the first calls and the executor's first stream went to the standby
    expect(reported).toEqual([]); // a standby's pointer is followed, not reported
    const watched: Event[] = [];
    const abort = new AbortController();
    const watching = (async () => {
      for await (const e of createClient({ url: `${standby.url}, ${owner.url}` }).watch({ types: ["fl.order", "fl.priced"] }, { signal: abort.signal }))
        watched.push(e);
    })().catch((e) => e);

    const unary = createClient({ url: [standby.url, owner.url], emitVia: "unary" });
    const results = await Promise.all([
      ...Array.from({ length: 20 }, (_, n) => client.emit("fl.order", { n, qty: n }, { id: `order-${n}` })),
      ...Array.from({ length: 5 }, (_, n) => unary.emit("fl.order", { n: 20 + n, qty: 1 }, { id: `order-${20 + n}` })),
    ]);
    expect(results.every((r) => !r.existing)).toBe(true);
    expect(await client.call("fl.price", { qty: 21 })).toMatchObject({ output: { total: 42 } });

    await until(async () => (await all(client, "fl.priced")).length === 25, "25 orders priced by the executor");
    const orders = await all(client, "fl.order");
    expect(orders.map((e) => e.id).sort()).toEqual(Array.from({ length: 25 }, (_, n) => `order-${n}`).sort());
    const priced = await all(client, "fl.priced");
    expect(new Set(priced.map((e) => (e.data as JsonObject).order)).size).toBe(25);

    await until(() => watched.length === 50, "the watch to see 25 orders and 25 prices");
    abort.abort();
    await watching;
    expect(new Set(watched.map((e) => e.seq)).size).toBe(50);
  });

  it("the CLI with --url standby,leader (or CHRONOLOG_URL) emits and reads at the leader; health shows each owner's role", { tags: ["serial"] }, async () => {
    const emitted = await cli(["--url", `${standby.url},${owner.url}`, "emit", "fl.order", '{"n":100,"qty":1}', "--id", "cli-1"]);
    expect(emitted).toMatchObject({ code: 0, stderr: "" });
    expect(JSON.parse(emitted.stdout)).toMatchObject({ id: "cli-1", type: "fl.order", existing: false });
    process.env.CHRONOLOG_URL = `${standby.url},${owner.url}`;
    try {
      const tail = await cli(["tail", "--no-follow", "--type", "fl.order"]);
      expect(tail.code).toBe(0);
      expect(
        tail.stdout
          .trim()
          .split("\n")
          .map((line) => JSON.parse(line).id),
      ).toContain("cli-1");
    } finally {
      delete process.env.CHRONOLOG_URL;
    }

    const dead = `http://127.0.0.1:${await deadPort()}`;
    const [health, table, bad] = await Promise.all([
      cli(["--url", `${standby.url},${owner.url},${dead}`, "health", "--json"]),
      cli(["--url", `${standby.url},${dead}`, "health"]),
      cli(["--url", `${owner.url},nope`, "health"]),
    ]);
    expect(health.code).toBe(0);
    expect(
      health.stdout
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line)),
    ).toEqual([
      { url: standby.url, role: "standby", status: "NOT_SERVING", leader: owner.url, error: "" },
      { url: owner.url, role: "leader", status: "SERVING", leader: owner.url, error: "" },
      { url: dead, role: "-", status: "UNREACHABLE", leader: "", error: expect.stringMatching(/^Unavailable: connect ECONNREFUSED/) },
    ]);
    expect(table.code).toBe(75); // no owner leads
    expect(table.stdout.split("\n")[0]).toMatch(/^URL +ROLE +STATUS +LEADER +ERROR$/);
    expect(table.stdout).toMatch(new RegExp(`${standby.url} +standby +NOT_SERVING +${owner.url}`));
    expect(bad).toMatchObject({
      code: 1,
      stderr: `chronolog: --url "${owner.url},nope": "nope" is not an http:// or https:// URL (e.g. http://127.0.0.1:50051, or several separated by commas)\n`,
    });
  });

  it("a standby that knows no leader yet: the call waits for one within failoverTimeoutMs, else UNAVAILABLE naming the standby's state", async () => {
    const lost = await startStandby(undefined);
    try {
      const lonely = createClient({ url: lost.url, failoverTimeoutMs: 300, emitVia: "unary" });
      await expect(lonely.emit("fl.order", { n: -1 })).rejects.toMatchObject({
        code: Code.Unavailable,
        rawMessage: "this owner is a standby; no leader is known yet",
      });
      expect(lost.refused()).toBeGreaterThan(1); // asked again meanwhile

      const later = createClient({ url: lost.url, emitVia: "unary" });
      const emitted = later.emit("fl.order", { n: -2, qty: 1 }, { id: "order-late" });
      await until(() => lost.refused() > 3, "a few refusals");
      lost.setLeader(owner.url);
      expect((await emitted).event!.id).toBe("order-late");
    } finally {
      await lost.close();
    }
  });
});

describe("an executor whose first owner accepts its stream and never answers", () => {
  it("gives up on it 10 s without a welcome, says so, and is welcomed at the next owner", { tags: ["serial"], timeout: 40_000 }, async () => {
    const owner = await startTestOwner();
    const silent = await startSilentOwner();
    const reported: unknown[] = [];
    const executor = runExecutor({ url: `${silent.url},${owner.url}`, plugins: [shop], onError: (e) => reported.push(e) });
    try {
      await executor.ready;
      expect(silent.streams()).toBeGreaterThan(0);
      expect(reported.map(String)).toContainEqual(expect.stringMatching(new RegExp(`no welcome from ${silent.url} within 10 s: reconnecting`)));
    } finally {
      await executor.stop(0);
      await silent.close();
      await owner.close();
    }
  });
});

describe("a client given a dead port first", () => {
  it("emits, calls and reads at the owner behind it; one URL alone fails at once as before", async () => {
    const owner = await startTestOwner();
    const dead = `http://127.0.0.1:${await deadPort()}`;
    try {
      const client = createClient({ url: [dead, owner.url] });
      await client.registerPlugin({ name: "dp", version: "1", events: { "dp.x": { allow: ["*"] } } });
      const results = await Promise.all(Array.from({ length: 10 }, (_, n) => client.emit("dp.x", { n })));
      expect(results.map((r) => Number(r.event!.seq))).toEqual(results.map((_, n) => Number(results[0].event!.seq) + n));
      expect(await all(createClient({ url: `${dead},${owner.url}`, emitVia: "unary" }), "dp.x")).toHaveLength(10);
      // A web server (HTTP/1.1, no gRPC) first in the list is passed over too.
      const web = createHttpServer((_req, res) => res.end("not an owner"));
      await new Promise<void>((resolve) => web.listen(0, "127.0.0.1", resolve));
      try {
        const viaWeb = createClient({ url: [`http://127.0.0.1:${(web.address() as AddressInfo).port}`, owner.url], emitVia: "unary" });
        expect(Number((await viaWeb.emit("dp.x", { n: 10 })).event!.seq)).toBe(Number(results[0].event!.seq) + 10);
      } finally {
        web.close();
      }

      const started = Date.now();
      await expect(createClient({ url: dead, emitVia: "unary" }).emit("dp.x", {})).rejects.toMatchObject({
        code: Code.Unavailable,
        rawMessage: expect.stringContaining("ECONNREFUSED"),
      });
      await expect(
        createClient({ url: [dead, `http://127.0.0.1:${await deadPort()}`], failoverTimeoutMs: 200, emitVia: "unary" }).emit("dp.x", {}),
      ).rejects.toMatchObject({ code: Code.Unavailable });
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      await owner.close();
    }
  });

  it("refuses a bad list before sending anything, naming the entry; one bad URL as before", () => {
    for (const url of [undefined, "", "127.0.0.1:50051", "ftp://host", 42, ["ftp://host"]]) {
      expect(() => createClient({ url } as never)).toThrow(
        /^\[invalid_argument\] url must be an http:\/\/ or https:\/\/ URL, e\.g\. http:\/\/127\.0\.0\.1:50051 \(got /,
      );
    }
    expect(() => createClient({ url: ["http://127.0.0.1:1", "ftp://x"] })).toThrow(
      /^\[invalid_argument\] url\[1\] must be an http:\/\/ or https:\/\/ URL, e\.g\. http:\/\/127\.0\.0\.1:50051 \(got "ftp:\/\/x"\)$/,
    );
    expect(() => createClient({ url: "http://127.0.0.1:1," })).toThrow(/url\[1\] must be .* \(got ""\)$/);
    expect(() => createClient({ url: [] })).toThrow(/url must be an http:\/\/ or https:\/\/ URL, .*\(got an empty array\)$/);
    expect(() => createClient({ url: "http://127.0.0.1:1", failoverTimeoutMs: -1 })).toThrow(
      /failoverTimeoutMs must be a non-negative integer number of ms \(got -1\)$/,
    );
  });
});

describe("a watch in its own process given two owners, the first frozen (SIGSTOP)", { tags: ["serial"] }, () => {
  it("survives the frozen owner's pings failing and goes on there once it answers again, each event once", async () => {
    const owner = await spawnOwner(join(tempDir("chronolog-frozen-watch-"), "data"));
    const watcher = spawn(
      process.execPath,
      ["--conditions=chronolog-source", "--import", "tsx", "test/helpers/watch-process.ts", `${owner.url},http://127.0.0.1:${await deadPort()}`, "fw.tick"],
      {
        cwd: new URL("../", import.meta.url).pathname,
        stdio: ["ignore", "pipe", "inherit"],
      },
    );
    const lines: string[] = [];
    createInterface({ input: watcher.stdout! }).on("line", (line) => lines.push(line));
    const exited = new Promise<number | null>((resolve) => watcher.once("exit", (code) => resolve(code)));
    try {
      const client = createClient({ url: owner.url });
      await client.registerPlugin({ name: "fw", version: "1", events: { "fw.tick": { allow: ["*"] } } });
      await client.emit("fw.tick", {});
      await until(() => lines.length === 1, "the watch to see the first tick", 20_000);
      owner.child.kill("SIGSTOP"); // its connections stay open and silent: the watcher's pings time out
      await new Promise((r) => setTimeout(r, 6_000));
      owner.child.kill("SIGCONT");
      await client.emit("fw.tick", {});
      await until(() => lines.length >= 2 || watcher.exitCode !== null, "the watch to see the second tick", 30_000);
      expect(watcher.exitCode).toBe(null);
      expect(lines).toEqual(["1", "2"]);
    } finally {
      watcher.kill("SIGKILL");
      await exited;
      owner.child.kill("SIGKILL");
      await owner.exited;
    }
  }, 60_000);
});

describe("the owner killed (SIGKILL) and started again on another port of the list", { tags: ["serial"] }, () => {
  let dir: string;
  let owner: OwnerProcess;
  let standby: Standby;

  beforeAll(async () => {
    dir = tempDir("chronolog-follow-");
    owner = await spawnOwner(join(dir, "data"));
    standby = await startStandby(owner.url);
  });
  afterAll(async () => {
    owner?.child.kill("SIGKILL");
    await owner?.exited;
    await standby?.close();
  });

  it("the Publish stream re-sends its pending emits at the new leader under their ids (each once), and a watch goes on after its last event", async () => {
    const nextPort = await deadPort();
    const urls = [standby.url, owner.url, `http://127.0.0.1:${nextPort}`];
    const client = createClient({ url: urls });
    await client.registerPlugin({ name: "ko", version: "1", events: { "ko.tick": { allow: ["*"] } } });

    const watched: Event[] = [];
    const abort = new AbortController();
    const watching = (async () => {
      for await (const e of createClient({ url: urls }).watch({ types: ["ko.tick"] }, { signal: abort.signal })) watched.push(e);
    })().catch((e) => e);

    const n = 3000;
    let resolved = 0;
    const emits = Promise.all(Array.from({ length: n }, (_, i) => client.emit("ko.tick", { i }).then((r) => (resolved++, r))));
    await until(() => resolved >= 200, "200 emits acknowledged", 20_000);
    owner.child.kill("SIGKILL");
    await owner.exited;
    expect(resolved).toBeLessThan(n);
    owner = await spawnOwner(join(dir, "data"), [], nextPort);
    standby.setLeader(owner.url);

    const results = await emits;
    const stored = await all(client, "ko.tick");
    expect(stored).toHaveLength(n);
    expect(new Set(stored.map((e) => e.id)).size).toBe(n);
    expect(results.map((r) => (r.event!.data as JsonObject).i)).toEqual(Array.from({ length: n }, (_, i) => i));
    const byId = new Map(stored.map((e) => [e.id, e]));
    expect(results.every((r) => byId.get(r.event!.id)?.seq === r.event!.seq)).toBe(true);

    let ended: unknown;
    void watching.then((e) => (ended = e));
    await until(() => watched.length >= n || ended !== undefined, "the watch to see every tick", 20_000);
    expect(ended).toBeUndefined();
    abort.abort();
    expect(await watching).toMatchObject({ code: Code.Canceled });
    expect(watched.map((e) => e.seq)).toEqual(stored.map((e) => e.seq));
  }, 60_000);
});
