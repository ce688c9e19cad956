// The Go SDK end to end: the Go example executor (examples/go-executor, plugin `goshop`), built with
// `go build` into a temporary folder, runs as a child process against a real owner (a child
// process, with tokens), next to a TypeScript executor in this process (plugin `tsdesk`). A
// TypeScript client emits orders; the Go processor calls the Go action and emits under its
// delivery; the TypeScript processor reacts to that and calls the Go action in turn. Acks move both
// cursors; a handler's error is retried per the processor's retry_delays_ms and the retry finds its
// work in the log; a TerminalError fails at once. A second Go executor given a standby first
// subscribes at the leader it names; one whose token is unknown stops at once with the owner's
// message; SIGTERM during a call lets it finish and answer before the stream closes.
//
// Without `go` on the PATH the suite skips itself (outside CI; .ci/run has Go, it builds grpcurl).
//
// @module-tag serial
// @module-tag postgres

import { execFile, spawn, spawnSync, type ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { promisify } from "node:util";
import type { JsonObject } from "@bufbuild/protobuf";
import { createClient as createRpcClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { derivedId } from "../server/src/log/ids.js";
import { createClient, type ChronologClient } from "../sdk/ts/src/client.js";
import { runExecutor, type Executor } from "../sdk/ts/src/executor.js";
import { definePlugin } from "../sdk/ts/src/plugin.js";
import { AdminService } from "@chronolog/sdk/gen/chronolog/v1/admin_pb";
import type { Event } from "@chronolog/sdk/gen/chronolog/v1/event_pb";
import { spawnOwner, tempDir, type OwnerProcess } from "./helpers/owner.js";
import { startStandby, type Standby } from "./helpers/standby.js";
import { until } from "./helpers/until.js";

const repo = new URL("../", import.meta.url).pathname;
const missing = spawnSync("go", ["version"]).status !== 0;
if (missing && !process.env.CI) console.warn("go-executor.test.ts skipped: `go` is missing (Go 1.26 or later builds the Go SDK, as .ci/run's machines have)");

const tokens = {
  admin: "go-admin-token-0123456789",
  goworker: "go-executor-token-0123456789",
  tsworker: "ts-executor-token-0123456789",
  client: "go-client-token-0123456789",
};
const config = {
  principals: [
    { name: "ops", token: tokens.admin, role: "admin" },
    { name: "goworker", token: tokens.goworker, role: "executor", plugins: ["goshop"] },
    { name: "tsworker", token: tokens.tsworker, role: "executor", plugins: ["tsdesk"] },
    { name: "web", token: tokens.client, role: "client", actor: { id: "user:ana", in: "space:acme" } },
  ],
};

/** The TypeScript executor's plugin: confirms each order the Go processor priced, through the Go action goshop.pack. */
const tsdesk = definePlugin({
  name: "tsdesk",
  events: { "order.confirmed": { description: "tsdesk.confirmer confirmed a priced order (under its delivery)." } },
  processors: {
    confirmer: {
      on: "order.priced",
      key: "data.order_id",
      async run(ctx) {
        const { output } = await ctx.call("goshop.pack", { order_id: ctx.data.order_id, ms: 0 });
        await ctx.emit("order.confirmed", { order_id: ctx.data.order_id, total: ctx.data.total, packed: output.packed });
      },
    },
  },
});

interface GoExecutor {
  child: ChildProcess;
  /** Its stderr lines. */
  output: string[];
  exited: Promise<number | string>;
}

/** Starts the built Go executor with `--url url`; resolves once it printed "executor ready". */
function spawnGoExecutor(binary: string, url: string, token = tokens.goworker): Promise<GoExecutor> {
  const child = spawn(binary, ["--url", url], { env: { ...process.env, CHRONOLOG_TOKEN: token }, stdio: ["ignore", "ignore", "pipe"] });
  const output: string[] = [];
  const exited = new Promise<number | string>((resolve) => child.once("exit", (code, signal) => resolve(code ?? signal ?? -1)));
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stderr! }).on("line", (line) => {
      output.push(line);
      if (line === "executor ready") resolve({ child, output, exited });
    });
    exited.then((code) => reject(new Error(`go executor exited (${code}) before it was ready:\n${output.join("\n")}`)));
  });
}

describe.skipIf(missing && !process.env.CI)("a Go executor next to a TypeScript one against a real owner", () => {
  let binary: string;
  let owner: OwnerProcess;
  let goExecutor: GoExecutor;
  let tsExecutor: Executor;
  let admin: ChronologClient;
  let web: ChronologClient;
  let adminRpc: ReturnType<typeof createRpcClient<typeof AdminService>>;
  const orders: Record<string, Event> = {};

  /** Every event of `types` (admin: the whole log). */
  async function read(...types: string[]): Promise<Event[]> {
    const out: Event[] = [];
    for await (const e of admin.read({ types })) out.push(e);
    return out;
  }
  async function ackFloor(processor: string): Promise<bigint> {
    const { processors } = await adminRpc.listProcessors({});
    return processors.find((p) => p.name === processor)?.ackFloor ?? 0n;
  }
  const data = (e: Event) => (e.data ?? {}) as JsonObject;
  /** Events about `order`: under its delivery, or processor events naming it. */
  const about = (order: Event) => (e: Event) =>
    e.cause === order.id || data(e).event_id === order.id || (data(e).event as JsonObject | undefined)?.id === order.id;

  beforeAll(async () => {
    if (missing) throw new Error("`go` is missing: the Go SDK needs Go 1.26 or later on the PATH");
    const dir = tempDir("chronolog-go-");
    // A cold build downloads the modules go.sum pins and compiles grpc-go: a few minutes on 2 cores, seconds once cached.
    binary = join(dir, "goshop");
    await promisify(execFile)("go", ["build", "-o", binary, "."], { cwd: join(repo, "examples/go-executor"), timeout: 280_000 });
    writeFileSync(join(dir, "owner.json"), JSON.stringify(config));
    owner = await spawnOwner(join(dir, "data"), ["--config", join(dir, "owner.json")]);
    goExecutor = await spawnGoExecutor(binary, owner.url);
    tsExecutor = runExecutor({ url: owner.url, token: tokens.tsworker, plugins: [tsdesk], credits: 8, onError: () => {} });
    await tsExecutor.ready;
    admin = createClient({ url: owner.url, token: tokens.admin });
    web = createClient({ url: owner.url, token: tokens.client });
    adminRpc = createRpcClient(
      AdminService,
      createGrpcTransport({ baseUrl: owner.url, interceptors: [(next) => (req) => (req.header.set("authorization", `Bearer ${tokens.admin}`), next(req))] }),
    );
  }, 300_000);
  afterAll(async () => {
    await tsExecutor?.stop();
    if (goExecutor) {
      goExecutor.child.kill("SIGTERM");
      await goExecutor.exited;
    }
    if (owner) {
      owner.child.kill("SIGTERM");
      await owner.exited;
    }
  });

  it("the Go executor registered goshop from its hello and is listed with its SDK, next to the TypeScript executor", async () => {
    const { plugin } = await admin.plugins.getPlugin({ name: "goshop" });
    expect(Object.keys(plugin!.manifest!.events).sort()).toEqual(["order.placed", "order.priced"]);
    expect(plugin!.manifest!.processors.pricer).toMatchObject({ on: ["order.placed"], key: "data.order_id", retryDelaysMs: [200, 400] });
    expect(plugin!.manifest!.actions.price).toMatchObject({ allow: ["*"] });
    const { executors } = await adminRpc.listExecutors({});
    expect(
      executors
        .map((e) => ({
          executor: e.executor,
          principal: e.principal,
          processors: e.processors,
          actions: e.actions,
          credits: e.credits,
          sdk: e.sdk,
          sdkVersion: e.sdkVersion,
        }))
        .sort((a, b) => a.executor.localeCompare(b.executor)),
    ).toEqual([
      {
        executor: "goshop",
        principal: "goworker",
        processors: ["goshop.pricer"],
        actions: ["goshop.pack", "goshop.price"],
        credits: 8,
        sdk: "go",
        sdkVersion: "0.1.0",
      },
      { executor: "tsdesk", principal: "tsworker", processors: ["tsdesk.confirmer"], actions: [], credits: 8, sdk: "typescript", sdkVersion: "0.1.0" },
    ]);
  });

  it("handles every delivery: the Go processor calls the Go action and emits under its delivery (derived ids, the order's actor), the TypeScript processor follows; acks move both cursors", async () => {
    const n = 40;
    const placed = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        web
          .emit("order.placed", {
            order_id: `o-${i}`,
            items: [
              { sku: "tea", price: 4.5, qty: 2 },
              { sku: "cup", price: 0.1, qty: i + 1 },
            ],
          })
          .then((r) => r.event!),
      ),
    );
    orders.first = placed[0];
    await until(async () => (await read("order.confirmed")).length === n, `${n} orders confirmed`);

    const priced = await read("order.priced");
    const completed = await read("action.completed");
    const started = await read("action.started");
    for (const [i, order] of placed.entries()) {
      const [p] = priced.filter(about(order));
      const total = Math.round(900 + 10 * (i + 1)) / 100;
      expect(p.data).toEqual({ order_id: `o-${i}`, total, items: i + 3 });
      expect(p.id).toBe(derivedId(order.id, 1, { type: "order.priced", data: p.data })); // position 1: the call was position 0
      expect(p.actor).toEqual(order.actor); // work under the delivery runs as the event's actor
      const [call] = started.filter(about(order));
      expect(call.data).toMatchObject({
        action: "goshop.price",
        call_id: derivedId(order.id, 0, { action: "goshop.price", input: { items: data(order).items } }),
        attempt: 1,
      });
      expect(completed.find((e) => e.cause === call.id)?.data).toMatchObject({ action: "goshop.price", output: { total, items: i + 3 } });
    }
    const confirmed = await read("order.confirmed");
    expect(confirmed.map((e) => data(e).order_id).sort()).toEqual(placed.map((_, i) => `o-${i}`).sort());
    for (const c of confirmed) expect(data(c)).toMatchObject({ packed: true, total: expect.any(Number) });

    const lastPlaced = placed.reduce((a, b) => (a.seq > b.seq ? a : b)).seq;
    const lastPriced = priced.reduce((a, b) => (a.seq > b.seq ? a : b)).seq;
    await until(
      async () => (await ackFloor("goshop.pricer")) >= lastPlaced && (await ackFloor("tsdesk.confirmer")) >= lastPriced,
      "both cursors past their last event",
    );
    expect((await read("processor.retried", "processor.failed")).length).toBe(0);
  });

  it("a delivery whose handler fails after its work is retried per retry_delays_ms, and the retry finds that work in the log: nothing twice", async () => {
    const order = (await web.emit("order.placed", { order_id: "o-flaky", items: [{ sku: "pot", price: 12, qty: 1 }], flaky: true })).event!;
    await until(async () => (await ackFloor("goshop.pricer")) >= order.seq, "the cursor past the flaky order (after its retry)");
    const mine = (await read()).filter(about(order));
    const count = (type: string) => mine.filter((e) => e.type === type).length;
    expect(mine.filter((e) => e.type === "processor.retried").map((e) => e.data)).toEqual([
      expect.objectContaining({ processor: "goshop.pricer", attempt: 1, error: "order o-flaky is flaky: failing attempt 1 after its work" }),
    ]);
    expect(count("processor.failed")).toBe(0);
    expect(count("order.priced")).toBe(1);
    expect(count("action.started")).toBe(1); // the retry's call was answered from the log
    expect(mine.find((e) => e.type === "order.priced")?.data).toEqual({ order_id: "o-flaky", total: 12, items: 1 });
  });

  it("a TerminalError fails the delivery at once: processor.failed, no retry, and the cursor moves on", async () => {
    const order = (await web.emit("order.placed", { order_id: "o-empty", items: [] })).event!;
    await until(async () => (await read("processor.failed")).some(about(order)), "processor.failed for the empty order");
    const mine = (await read()).filter(about(order));
    expect(mine.map((e) => e.type)).toEqual(["processor.failed"]);
    expect(mine[0].data).toMatchObject({ processor: "goshop.pricer", error: "order o-empty has no items" });
    await until(async () => (await ackFloor("goshop.pricer")) >= order.seq, "the cursor past the empty order");
  });

  it("a TypeScript client calls the Go action: its result is recorded, and the same call id answers from the log", async () => {
    const input = {
      items: [
        { sku: "a", price: 0.1, qty: 1 },
        { sku: "b", price: 0.2, qty: 1 },
      ],
    };
    expect(await web.call("goshop.price", input, { callId: "go-price-1" })).toMatchObject({
      callId: "go-price-1",
      output: { total: 0.3, items: 2 },
      fromLog: false,
    });
    const [completed] = (await read("action.completed")).filter((e) => data(e).call_id === "go-price-1");
    expect(completed.data).toMatchObject({ action: "goshop.price", attempt: 1, output: { total: 0.3, items: 2 } });
    expect(await web.call("goshop.price", input, { callId: "go-price-1" })).toMatchObject({ output: { total: 0.3, items: 2 }, fromLog: true });
  });

  it("a Go executor given a standby first subscribes at the leader the standby names, without reporting the refusal, and takes deliveries", async () => {
    let standby: Standby | undefined;
    let second: GoExecutor | undefined;
    try {
      standby = await startStandby(owner.url);
      second = await spawnGoExecutor(binary, `${standby.url},${owner.url}`);
      expect(standby.refused()).toBeGreaterThanOrEqual(1);
      const instances = async () => (await adminRpc.listExecutors({})).executors.filter((e) => e.executor === "goshop");
      expect(await instances()).toHaveLength(2);
      // Deliveries spread over both instances (the owner picks the one with the most free credits): all are handled.
      const placed = await Promise.all(
        Array.from({ length: 20 }, (_, i) => web.emit("order.placed", { order_id: `s-${i}`, items: [{ sku: "x", price: 1, qty: 1 }] }).then((r) => r.event!)),
      );
      await until(async () => (await ackFloor("goshop.pricer")) >= placed.reduce((a, b) => (a.seq > b.seq ? a : b)).seq, "the cursor past the orders");
      expect((await read("order.priced")).filter((e) => String(data(e).order_id).startsWith("s-"))).toHaveLength(20);
      second.child.kill("SIGTERM");
      expect(await second.exited).toBe(0);
      expect(second.output).toEqual(["executor ready"]);
      await until(async () => (await instances()).length === 1, "the second instance gone");
    } finally {
      if (second && second.child.exitCode === null) second.child.kill("SIGKILL");
      await standby?.close();
    }
  });

  it("a Go executor whose token is unknown prints the owner's message once and exits with status 1 instead of retrying", async () => {
    const child = spawn(binary, ["--url", owner.url], {
      env: { ...process.env, CHRONOLOG_TOKEN: "not-a-token-0123456789" },
      stdio: ["ignore", "ignore", "pipe"],
    });
    const output: string[] = [];
    createInterface({ input: child.stderr! }).on("line", (line) => output.push(line));
    const killer = setTimeout(() => child.kill("SIGKILL"), 15_000); // the default backoff would keep retrying until then
    const code = await new Promise<number | string>((resolve) => child.once("close", (c, signal) => resolve(c ?? signal ?? -1)));
    clearTimeout(killer);
    expect(output).toEqual(["chronolog executor: UNAUTHENTICATED: unknown bearer token (the executor stopped: not retrying)"]);
    expect(code).toBe(1);
  });

  it("the Go SDK's own tests pass: batches of acks and results, cut errors, the stream clock, leader following, refusals, a read from the log's start (go test in sdk/go)", async () => {
    const result = await promisify(execFile)("go", ["test", "-count=1", "./..."], { cwd: join(repo, "sdk/go"), timeout: 280_000 }).catch(
      (e: { stdout: string; stderr: string; code: number }) => e,
    );
    expect("code" in result ? `exit ${result.code}:\n${result.stdout}${result.stderr}` : "exit 0").toBe("exit 0");
    expect(result.stdout).toMatch(/^ok\s+github\.com\/chronolog\/chronolog\/sdk\/go\/chronolog\s/m);
  }, 300_000);

  // Last here: it stops the Go executor.
  it("SIGTERM during a call: the call finishes within the grace and its result reaches the owner before the stream closes: answered once, never retried", async () => {
    const answer = web.call("goshop.pack", { order_id: "o-slow", ms: 1_000 }, { callId: "pack-slow" });
    await until(async () => (await read("action.started")).some((e) => data(e).call_id === "pack-slow"), "the slow call started");
    goExecutor.child.kill("SIGTERM");
    expect(await goExecutor.exited).toBe(0);
    expect(await answer).toMatchObject({ fromLog: false, output: { order_id: "o-slow", packed: true } });
    const ofCall = (await read("action.started", "action.retried", "action.completed", "action.failed")).filter((e) => data(e).call_id === "pack-slow");
    expect(ofCall.map((e) => e.type)).toEqual(["action.started", "action.completed"]);
    expect(goExecutor.output).toEqual(["executor ready"]); // nothing reported the whole time: no reconnects, no notices
  });
});
