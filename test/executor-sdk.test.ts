// @module-tag postgres

import { createServer } from "node:http2";
import { pino } from "pino";
import { createServer as createNetServer } from "node:net";
import { Code, ConnectError, createClient as createRpcClient } from "@connectrpc/connect";
import { connectNodeAdapter, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { createClient } from "../sdk/ts/src/client.js";
import { runExecutor, TerminalError, type Executor } from "../sdk/ts/src/executor.js";
import { AdminService } from "@chronolog/sdk/gen/chronolog/v1/admin_pb";
import { ExecutorService } from "@chronolog/sdk/gen/chronolog/v1/executor_pb";
import { definePlugin, type PluginDefinition } from "../sdk/ts/src/plugin.js";
import { eventsOf } from "./helpers/log-snapshot.js";
import { startTestOwner, tempDir } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

describe("TypeScript executor SDK", () => {
  it("treats an owner silent for 3 heartbeat intervals as gone and reconnects", async () => {
    let subscribes = 0;
    // A fake owner: welcomes with a 100 ms heartbeat interval, then says nothing more.
    const server = createServer(
      connectNodeAdapter({
        routes(router) {
          router.service(ExecutorService, {
            async *subscribe(requests, ctx) {
              subscribes++;
              yield { message: { case: "welcome", value: { sessionId: `s${subscribes}`, heartbeatIntervalMs: 100 } } };
              for await (const _ of requests) if (ctx.signal.aborted) return;
            },
          });
        },
      }),
    );
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    const logged: string[] = [];
    const executor = runExecutor({ url, plugins: [definePlugin({ name: "quiet" })], maxBackoffMs: 50, onError: () => {}, onLog: (line) => logged.push(line) });
    await executor.ready;
    const started = Date.now();
    while (subscribes < 2 && Date.now() - started < 3_000) await new Promise((r) => setTimeout(r, 20));
    const waitedMs = Date.now() - started;
    await until(() => logged.length >= 2, "the reconnect said");
    await executor.stop(0);
    server.close();
    expect(subscribes).toBeGreaterThanOrEqual(2);
    expect(waitedMs).toBeGreaterThanOrEqual(250); // not before 3 silent intervals (300 ms, timer granularity aside)
    // It says when it connected, and when it connected again after how long.
    expect(logged[0]).toBe(`connected to ${url} (session s1)`);
    expect(logged[1]).toMatch(new RegExp(`^reconnected to ${url.replaceAll(".", "\\.")} after \\d+\\.\\d s \\(session s2\\)$`));
  });
});

// Refusals for good: an owner that refuses the Subscribe stream with
// UNAUTHENTICATED, PERMISSION_DENIED, or INVALID_ARGUMENT at hello would refuse
// every retry the same way. The executor reports the owner's message once, stops,
// and `ready` / `done` reject with the owner's ConnectError. Transient failures
// (connection refused, an owner restarting) still reconnect with backoff.
const tokens = { admin: "sdk-admin-token-0123456789", executor: "sdk-executor-token-0123456789", client: "sdk-client-token-0123456789" };
const config = {
  principals: [
    { name: "ops", token: tokens.admin, role: "admin" as const },
    { name: "worker", token: tokens.executor, role: "executor" as const },
    { name: "web", token: tokens.client, role: "client" as const },
  ],
};

/** A plugin with one processor that records the seqs it handled. */
function trackingPlugin(name: string, handled: number[]): PluginDefinition {
  return definePlugin({
    name,
    events: { [`${name}.ping`]: { allow: ["*"] } },
    processors: { track: { on: `${name}.ping`, run: (ctx) => void handled.push(Number(ctx.event.seq)) } },
  });
}

/** A port that was free a moment ago. */
function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createNetServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** Settles `promise` within `ms`: its outcome, or "pending". */
async function outcomeWithin(promise: Promise<unknown>, ms: number): Promise<"resolved" | "pending" | { rejected: unknown }> {
  let timer: NodeJS.Timeout | undefined;
  const pending = new Promise<"pending">((resolve) => (timer = setTimeout(() => resolve("pending"), ms)));
  try {
    return await Promise.race([
      promise.then(
        () => "resolved" as const,
        (e: unknown) => ({ rejected: e }),
      ),
      pending,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

describe("TypeScript executor SDK: a stream the owner refuses for good is not retried", () => {
  let owner: Awaited<ReturnType<typeof startTestOwner>>;
  let admin: ReturnType<typeof createRpcClient<typeof AdminService>>;
  let healthy: Executor;
  const started: Executor[] = [];

  beforeAll(async () => {
    owner = await startTestOwner({ config, shutdownGraceMs: 100 });
    admin = createRpcClient(
      AdminService,
      createGrpcTransport({ baseUrl: owner.url, interceptors: [(next) => (req) => (req.header.set("authorization", `Bearer ${tokens.admin}`), next(req))] }),
    );
    // One executor the owner accepts, so "no connected executor" below means "none but this one".
    healthy = runExecutor({ url: owner.url, token: tokens.executor, plugins: [trackingPlugin("fine", [])], onError: () => {} });
    await healthy.ready;
  });
  afterEach(async () => {
    vi.restoreAllMocks();
    for (const ex of started.splice(0)) await ex.stop(0);
  });
  afterAll(async () => {
    await healthy?.stop(0);
    await owner?.close();
  });

  /**
   * Runs an executor that the owner refuses with `code` and `message`: `ready` and `done`
   * reject quickly with the owner's ConnectError, `onError` hears it once (no retries,
   * although the backoff would retry every 50 ms), and no session of it is listed.
   */
  async function expectRefusedForGood(token: string | undefined, plugin: PluginDefinition, code: Code, message: string): Promise<void> {
    const errors: unknown[] = [];
    const startedAt = Date.now();
    const executor = runExecutor({ url: owner.url, token, plugins: [plugin], maxBackoffMs: 50, onError: (e) => errors.push(e) });
    started.push(executor);
    const outcome = await outcomeWithin(executor.ready, 3_000);
    if (outcome === "pending" || outcome === "resolved")
      expect.fail(`ready ${outcome} after 3 s for an executor the owner refuses (errors reported: ${errors.length})`);
    const error = outcome.rejected;
    expect(Date.now() - startedAt).toBeLessThan(3_000);
    expect(error).toBeInstanceOf(ConnectError);
    expect({ code: Code[(error as ConnectError).code], message: (error as ConnectError).rawMessage }).toEqual({ code: Code[code], message });
    await expect(executor.done).rejects.toBe(error);
    await new Promise((r) => setTimeout(r, 500)); // ten backoffs' worth: a retrying executor would report again
    expect(errors).toEqual([error]);
    const { executors } = await admin.listExecutors({});
    expect(executors.map((e) => e.executor)).toEqual(["fine"]);
    await executor.stop(0); // stopping a stopped executor is fine
  }

  it("an unknown token: UNAUTHENTICATED, reported once, ready and done reject", async () => {
    await expectRefusedForGood("not-a-token-0123456789", trackingPlugin("stranger", []), Code.Unauthenticated, "unknown bearer token");
  });

  it("no token at all: UNAUTHENTICATED", async () => {
    await expectRefusedForGood(
      undefined,
      trackingPlugin("anonymous", []),
      Code.Unauthenticated,
      "missing bearer token: send the header `authorization: Bearer <token>`",
    );
  });

  it("a client principal's token: PERMISSION_DENIED (the executor role is needed)", async () => {
    await expectRefusedForGood(
      tokens.client,
      trackingPlugin("webby", []),
      Code.PermissionDenied,
      "principal web (role client) may not subscribe as an executor; the executor role is needed",
    );
  });

  it("a hello larger than the owner reads (limits.max_message_bytes, 4 MiB by default): RESOURCE_EXHAUSTED, not retried", async () => {
    const huge = definePlugin({ name: "huge", events: { "huge.ping": { allow: ["*"], schema: { type: "object", description: "x".repeat(4_200_000) } } } });
    await expectRefusedForGood(
      tokens.executor,
      huge,
      Code.ResourceExhausted,
      expect.stringMatching(/^message size 42\d{5} is larger than configured readMaxBytes 4194304$/),
    ); // the hello: the description and the rest
  });

  it("a hello the owner rejects (its plugin's manifest does not register): INVALID_ARGUMENT, and the plugin is not registered", async () => {
    const bad = definePlugin({
      name: "badwhere",
      events: { "badwhere.ping": { allow: ["*"] } },
      processors: { track: { on: "badwhere.ping", where: { $bogus: 1 }, run: () => {} } },
    });
    await expectRefusedForGood(
      tokens.executor,
      bad,
      Code.InvalidArgument,
      "invalid plugin manifest badwhere: processors.track.where: unknown top level operator: $bogus",
    );
    const plugins = await createClient({ url: owner.url, token: tokens.admin }).plugins.listPlugins({});
    expect(plugins.plugins.map((p) => p.manifest?.name)).not.toContain("badwhere");
    expect(plugins.plugins.map((p) => p.manifest?.name)).toContain("fine");
  });

  it("the default report is one line with the owner's message, saying the executor stopped", async () => {
    const lines: string[] = [];
    vi.spyOn(console, "error").mockImplementation((line: unknown) => void lines.push(String(line)));
    const executor = runExecutor({ url: owner.url, token: "not-a-token-0123456789", plugins: [trackingPlugin("printed", [])], maxBackoffMs: 50 });
    started.push(executor);
    const outcome = await outcomeWithin(executor.ready, 3_000);
    expect(outcome).toEqual({ rejected: expect.objectContaining({ code: Code.Unauthenticated, rawMessage: "unknown bearer token" }) });
    await new Promise((r) => setTimeout(r, 300));
    expect(lines).toEqual(["chronolog executor: UNAUTHENTICATED: unknown bearer token (the executor stopped: not retrying)"]);
  });
});

describe("executors of one plugin with different manifests", () => {
  it("the owner warns, naming what the other connected executor hosts that is no longer declared (the last hello wins)", async () => {
    const lines: string[] = [];
    const logger = pino({ level: "warn" }, { write: (line: string) => void lines.push(line) });
    const owner = await startTestOwner({ logger });
    const v1 = definePlugin({ name: "split", actions: { hit: { run: () => ({}) }, fail: { run: () => ({}) } } });
    const v2 = definePlugin({ name: "split", actions: { hit: { run: () => ({}) } } });
    const first = runExecutor({ url: owner.url, executor: "split-v1", plugins: [v1], onError: () => {} });
    await first.ready;
    const second = runExecutor({ url: owner.url, executor: "split-v2", plugins: [v2], onError: () => {} });
    await second.ready;
    try {
      const warned = lines.map((l) => JSON.parse(l)).filter((e) => e.level === 40);
      expect(warned).toEqual([expect.objectContaining({ executor: "split-v2", hostedBy: "split-v1", undeclared: ["split.fail"] })]);
      expect(warned[0].msg).toContain("the last hello wins");
    } finally {
      await Promise.all([first.stop(100), second.stop(100)]);
      await owner.close();
    }
  });
});

describe("TypeScript executor SDK: transient failures keep reconnecting", () => {
  it("connection refused: reports and retries with backoff until an owner listens, then is ready", async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const errors: unknown[] = [];
    const executor = runExecutor({ url, token: tokens.executor, plugins: [trackingPlugin("patient", [])], maxBackoffMs: 100, onError: (e) => errors.push(e) });
    try {
      await until(() => errors.length >= 3, "three failed connection attempts");
      expect(errors.every((e) => e instanceof ConnectError && e.code === Code.Unavailable)).toBe(true);
      expect(await outcomeWithin(executor.ready, 0)).toBe("pending");
      const owner = await startTestOwner({ config, port, shutdownGraceMs: 100 });
      try {
        await executor.ready;
        expect(await outcomeWithin(executor.done, 0)).toBe("pending");
      } finally {
        await executor.stop(0);
        await owner.close();
      }
      await expect(executor.done).resolves.toBeUndefined();
    } finally {
      await executor.stop(0);
    }
  });

  it("an owner restarted on the same port and data is reconnected to, and delivers again", async () => {
    const port = await freePort();
    const dataDir = tempDir();
    let owner = await startTestOwner({ config, port, dataDir, shutdownGraceMs: 100 });
    const handled: number[] = [];
    const errors: unknown[] = [];
    const executor = runExecutor({
      url: owner.url,
      token: tokens.executor,
      plugins: [trackingPlugin("restarts", handled)],
      maxBackoffMs: 100,
      onError: (e) => errors.push(e),
    });
    try {
      await executor.ready;
      const admin = () =>
        createRpcClient(
          AdminService,
          createGrpcTransport({
            baseUrl: owner.url,
            interceptors: [(next) => (req) => (req.header.set("authorization", `Bearer ${tokens.admin}`), next(req))],
          }),
        );
      const first = (await createClient({ url: owner.url, token: tokens.admin }).emit("restarts.ping", {})).event!;
      await until(() => handled.includes(Number(first.seq)), "the first ping handled");
      await owner.close();
      await until(() => errors.length >= 1, "the broken stream reported");
      owner = await startTestOwner({ config, port, dataDir, shutdownGraceMs: 100 });
      await until(async () => (await admin().listExecutors({})).executors.some((e) => e.executor === "restarts"), "the executor reconnected", 15_000);
      const second = (await createClient({ url: owner.url, token: tokens.admin }).emit("restarts.ping", {})).event!;
      await until(() => handled.includes(Number(second.seq)), "the second ping handled after the restart");
      expect(await outcomeWithin(executor.done, 0)).toBe("pending");
    } finally {
      await executor.stop(0);
      await owner.close();
    }
  });
});

describe("stop() hands in what finished", () => {
  it("a call that ends during the grace is answered from this executor and run once: its result is read before the stream closes", async () => {
    const owner = await startTestOwner();
    const runs: string[] = [];
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const plugin = (name: string) =>
      definePlugin({
        name: "slow",
        actions: {
          work: {
            allow: ["*"],
            run: async () => {
              runs.push(name);
              if (name === "first") await released;
              return { by: name };
            },
          },
        },
      });
    const first = runExecutor({ url: owner.url, plugins: [plugin("first")], onError: () => {} });
    let second: Executor | undefined;
    try {
      await first.ready;
      const client = createClient({ url: owner.url });
      const answer = client.call("slow.work", {}, { callId: "stop-during-call" });
      await until(() => runs.length === 1, "the call running on the first executor");
      second = runExecutor({ url: owner.url, plugins: [plugin("second")], onError: () => {} }); // where a lost result would be run again
      await second.ready;
      const stopAt = performance.now();
      const stopped = first.stop(5_000);
      setTimeout(release, 100); // ends inside the grace
      await stopped;
      expect(performance.now() - stopAt).toBeLessThan(1_500); // the owner ended the half-closed stream at once (not cut after 2 s)
      expect((await answer).output).toEqual({ by: "first" });
      await new Promise((r) => setTimeout(r, 200));
      expect(runs).toEqual(["first"]);
      expect((await eventsOf(client, ["action.started", "action.retried", "action.completed", "action.failed"])).map((e) => e.type)).toEqual([
        "action.started",
        "action.completed",
      ]);
    } finally {
      await first.stop(0);
      await second?.stop(0);
      await owner.close();
    }
  });
});

describe("stop() with a backlog", () => {
  it("tells the owner it stops: no more work is sent to it, what it got is answered, nothing is tried again, and the owner logs a stop, not a disconnect", async () => {
    const lines: string[] = [];
    const owner = await startTestOwner({ logger: pino({ level: "info" }, { write: (line: string) => void lines.push(line) }) });
    const handled: { by: string; id: string; at: number }[] = [];
    const plugin = (by: string) =>
      definePlugin({
        name: "backlog",
        events: { "backlog.item": { allow: ["*"] } },
        processors: {
          slow: {
            on: "backlog.item",
            key: "data.k",
            concurrency: 64,
            async run(ctx) {
              await new Promise((r) => setTimeout(r, 20));
              handled.push({ by, id: ctx.event.id, at: performance.now() });
            },
          },
        },
      });
    const first = runExecutor({ url: owner.url, plugins: [plugin("first")], credits: 8, onError: () => {} });
    let second: Executor | undefined;
    try {
      await first.ready;
      const client = createClient({ url: owner.url });
      await client.emitBatch(Array.from({ length: 300 }, (_, i) => ({ type: "backlog.item", data: { k: `k${i % 50}` } })));
      await until(() => handled.length >= 20, "the first executor working through the backlog");
      const stopAt = performance.now();
      await first.stop(5_000);
      const stoppedAt = performance.now();
      // What it had when it stopped (at most its 8 credits, and what was on its way) it finished; nothing after.
      const byFirstAfterStop = handled.filter((h) => h.by === "first" && h.at > stopAt).length;
      expect(byFirstAfterStop).toBeLessThanOrEqual(16);
      expect(handled.filter((h) => h.by === "first" && h.at > stoppedAt)).toEqual([]);
      second = runExecutor({ url: owner.url, plugins: [plugin("second")], credits: 64, onError: () => {} });
      await until(() => handled.length >= 300, "the second executor finishing the backlog", 30_000);
      await new Promise((r) => setTimeout(r, 200));
      expect(handled.length).toBe(300); // each event handled once: none the first finished was run again
      expect(new Set(handled.map((h) => h.id)).size).toBe(300);
      expect(await eventsOf(client, ["processor.retried", "processor.failed"])).toEqual([]);
      const messages = lines.map((l) => JSON.parse(l).msg as string);
      expect(messages).toContainEqual(
        expect.stringMatching(/^executor backlog is stopping: it gets no more work, and finishes the \d+ deliveries and calls it holds$/),
      );
      expect(messages).toContain("executor stopped");
      expect(messages.filter((m) => m === "executor disconnected")).toEqual([]);
    } finally {
      await first.stop(0);
      await second?.stop(0);
      await owner.close();
    }
  });
});

describe("what an executor says it does (onLog)", () => {
  it("each handler that failed: the processor, the event and the try; the action, the call and the attempt", async () => {
    const owner = await startTestOwner();
    const logged: string[] = [];
    const plugin = definePlugin({
      name: "loud",
      events: { "loud.thing": { allow: ["*"] } },
      processors: {
        p: {
          on: "loud.thing",
          retryDelaysMs: [10],
          run(ctx) {
            if (ctx.attempt === 1) throw new Error("not yet");
          },
        },
      },
      actions: {
        a: {
          allow: ["*"],
          run() {
            throw new TerminalError("never");
          },
        },
      },
    });
    const executor = runExecutor({ url: owner.url, plugins: [plugin], onError: () => {}, onLog: (line) => logged.push(line) });
    try {
      await executor.ready;
      const client = createClient({ url: owner.url });
      const { event } = await client.emit("loud.thing", {});
      await client.call("loud.a", {}, { callId: "c-loud" }).catch(() => undefined);
      await until(() => logged.length >= 3, "the failures said");
      expect(logged).toEqual([
        `connected to ${owner.url} (session ${logged[0].split("(session ")[1].slice(0, -1)})`,
        expect.stringMatching(/^loud\.(p failed on event |a failed \(call c-loud)/),
        expect.stringMatching(/^loud\.(p failed on event |a failed \(call c-loud)/),
      ]);
      expect(logged).toContain(`loud.p failed on event ${event!.id} (attempt 1): not yet`);
      expect(logged).toContain("loud.a failed (call c-loud, attempt 1, terminal): never");
    } finally {
      await executor.stop(0);
      await owner.close();
    }
  });
});
