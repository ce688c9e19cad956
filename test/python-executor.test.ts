// The Python SDK end to end: a real owner
// (child process, with tokens) and the Python example executor
// (examples/python/executor.py, plugin `pyshop`) as another child process,
// run from the virtual environment that .ci/run creates (.venv). A TypeScript
// client emits carts; the Python processor calls the Python action and emits
// under its delivery. The events it produced carry ids derived by the owner
// from cause + position + input, so a retried or replayed delivery writes
// nothing twice. An executor the owner refuses (unknown token, client role) stops
// at once with the owner's message. Then the Python client's errors are checked by
// sdk/python/tests/test_client_errors.py (unittest). A second owner runs the pywork
// executor (sdk/python/tests/work_executor.py): document writes, timers and delays
// under a delivery or an action run, with ids derived as in TypeScript.
//
// @module-tag serial
// @module-tag sqlite-only

import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { promisify } from "node:util";
import type { JsonObject } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { Code, createClient as createRpcClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { derivedId } from "../server/src/log/ids.js";
import { createClient, type ChronologClient } from "../sdk/ts/src/client.js";
import { runExecutor } from "../sdk/ts/src/executor.js";
import { definePlugin } from "../sdk/ts/src/plugin.js";
import { eventsOf } from "./helpers/log-snapshot.js";
import { AdminService } from "@chronolog/sdk/gen/chronolog/v1/admin_pb";
import type { Event } from "@chronolog/sdk/gen/chronolog/v1/event_pb";
import { TimerKind, type Timer } from "@chronolog/sdk/gen/chronolog/v1/time_pb";
import { spawnOwner, tempDir, type OwnerProcess } from "./helpers/owner.js";
import { pythonUnittest } from "./helpers/python-unittest.js";
import { until } from "./helpers/until.js";

const repo = new URL("../", import.meta.url).pathname;
const PYTHON = join(repo, ".venv/bin/python");
const missing = !existsSync(PYTHON);
if (missing && !process.env.CI) {
  console.warn(
    `python-executor.test.ts skipped: ${PYTHON} is missing (create it with: python3 -m venv .venv && .venv/bin/pip install -r sdk/python/requirements.txt, as .ci/run does)`,
  );
}

const tokens = { admin: "py-admin-token-0123456789", executor: "py-executor-token-0123456789", client: "py-client-token-0123456789" };
const config = {
  principals: [
    { name: "ops", token: tokens.admin, role: "admin" },
    { name: "pyworker", token: tokens.executor, role: "executor" },
    { name: "web", token: tokens.client, role: "client", actor: { id: "user:ana", in: "space:acme" } },
  ],
};

/** Starts the Python example executor; resolves once it printed "executor ready". */
function spawnPythonExecutor(url: string): Promise<{ child: ChildProcess; output: string[]; exited: Promise<number | string> }> {
  const child = spawn(PYTHON, ["examples/python/executor.py", "--url", url], {
    cwd: repo,
    env: { ...process.env, CHRONOLOG_TOKEN: tokens.executor, PYTHONPATH: join(repo, "sdk/python"), PYTHONUNBUFFERED: "1" },
    stdio: ["ignore", "ignore", "pipe"],
  });
  const output: string[] = [];
  const exited = new Promise<number | string>((resolve) => child.once("exit", (code, signal) => resolve(code ?? signal ?? -1)));
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stderr! }).on("line", (line) => {
      output.push(line);
      if (line === "executor ready") resolve({ child, output, exited });
    });
    exited.then((code) => reject(new Error(`python executor exited (${code}) before it was ready:\n${output.join("\n")}`)));
  });
}

/** Runs the Python example executor with `token` until it exits (killed after `limitMs`); its exit code, stderr lines and run time. */
async function runPythonExecutor(url: string, token: string, limitMs = 15_000): Promise<{ code: number | string; output: string[]; ms: number }> {
  const started = Date.now();
  const child = spawn(PYTHON, ["examples/python/executor.py", "--url", url], {
    cwd: repo,
    env: { ...process.env, CHRONOLOG_TOKEN: token, PYTHONPATH: join(repo, "sdk/python"), PYTHONUNBUFFERED: "1" },
    stdio: ["ignore", "ignore", "pipe"],
  });
  const output: string[] = [];
  createInterface({ input: child.stderr! }).on("line", (line) => output.push(line));
  const killer = setTimeout(() => child.kill("SIGKILL"), limitMs);
  const code = await new Promise<number | string>((resolve) => child.once("close", (c, signal) => resolve(c ?? signal ?? -1)));
  clearTimeout(killer);
  return { code, output, ms: Date.now() - started };
}

describe.skipIf(missing && !process.env.CI)("Python executor and client against a real owner", () => {
  let owner: OwnerProcess;
  let executor: Awaited<ReturnType<typeof spawnPythonExecutor>>;
  let admin: ChronologClient;
  let web: ChronologClient;
  let adminRpc: ReturnType<typeof createRpcClient<typeof AdminService>>;
  const carts: Record<string, Event> = {};

  /** Every event of `types` (admin: the whole log). */
  async function read(...types: string[]): Promise<Event[]> {
    const out: Event[] = [];
    for await (const e of admin.read({ types })) out.push(e);
    return out;
  }
  async function ackFloor(): Promise<bigint> {
    const { processors } = await adminRpc.listProcessors({});
    return processors.find((p) => p.name === "pyshop.checker")?.ackFloor ?? 0n;
  }
  const about = (cart: Event) => (e: Event) =>
    e.cause === cart.id ||
    (e.data as JsonObject | undefined)?.event_id === cart.id ||
    ((e.data as JsonObject | undefined)?.event as JsonObject | undefined)?.id === cart.id;

  beforeAll(async () => {
    if (missing) throw new Error(`${PYTHON} is missing: .ci/run creates it (python3 -m venv .venv && .venv/bin/pip install -r sdk/python/requirements.txt)`);
    const dir = tempDir("chronolog-python-");
    writeFileSync(join(dir, "owner.json"), JSON.stringify(config));
    owner = await spawnOwner(join(dir, "data"), ["--config", join(dir, "owner.json")]);
    executor = await spawnPythonExecutor(owner.url);
    admin = createClient({ url: owner.url, token: tokens.admin });
    web = createClient({ url: owner.url, token: tokens.client });
    adminRpc = createRpcClient(
      AdminService,
      createGrpcTransport({ baseUrl: owner.url, interceptors: [(next) => (req) => (req.header.set("authorization", `Bearer ${tokens.admin}`), next(req))] }),
    );
  });
  afterAll(async () => {
    if (executor) {
      executor.child.kill("SIGTERM");
      await executor.exited;
    }
    if (owner) {
      owner.child.kill("SIGTERM");
      await owner.exited;
    }
  });

  it("the executor registered pyshop from its hello and is listed with its processor and action", async () => {
    const { plugin } = await admin.plugins.getPlugin({ name: "pyshop" });
    expect(Object.keys(plugin!.manifest!.events).sort()).toEqual(["cart.checked", "cart.submitted"]);
    expect(plugin!.manifest!.processors.checker).toMatchObject({ on: ["cart.submitted"], key: "data.cart_id", retryDelaysMs: [200, 400] });
    const { executors } = await adminRpc.listExecutors({});
    expect(executors).toEqual([expect.objectContaining({ executor: "pyshop", processors: ["pyshop.checker"], actions: ["pyshop.total"], credits: 8 })]);
  });

  it("prices a cart emitted by a TypeScript client: the Python processor calls the Python action and emits under its delivery, with derived ids and the cart's actor", async () => {
    const items = [
      { sku: "tea", price: 4.5, qty: 2 },
      { sku: "cup", price: 0.1, qty: 3 },
    ];
    const cart = (await web.emit("cart.submitted", { cart_id: "c-1", items })).event!;
    carts.c1 = cart;
    expect(cart.actor).toMatchObject({ id: "user:ana", in: "space:acme" });
    await until(async () => (await read("cart.checked")).some(about(cart)), "cart.checked for c-1");

    const [checked] = (await read("cart.checked")).filter(about(cart));
    expect(checked.data).toEqual({ cart_id: "c-1", total: 9.3, items: 5 });
    // Position 1 under the delivery (the call was position 0): the owner derived the id.
    expect(checked.id).toBe(derivedId(cart.id, 1, { type: "cart.checked", data: checked.data }));
    expect(checked.cause).toBe(cart.id);
    expect(checked.actor).toEqual(cart.actor); // work under the delivery runs as the event's actor

    const [started] = (await read("action.started")).filter(about(cart));
    expect(started.data).toMatchObject({ action: "pyshop.total", call_id: derivedId(cart.id, 0, { action: "pyshop.total", input: { items } }), attempt: 1 });
    expect(started.actor).toEqual(cart.actor);
    const [completed] = (await read("action.completed")).filter((e) => e.cause === started.id);
    expect(completed.data).toMatchObject({ action: "pyshop.total", output: { total: 9.3, items: 5 } });
    await until(async () => (await ackFloor()) >= cart.seq, "the cursor past c-1");
  });

  it("a delivery that fails after its work is retried, and the retry finds that work in the log: nothing twice", async () => {
    const cart = (await web.emit("cart.submitted", { cart_id: "c-2", items: [{ sku: "pot", price: 12, qty: 1 }], flaky: true })).event!;
    carts.c2 = cart;
    await until(async () => (await ackFloor()) >= cart.seq, "the cursor past c-2 (after its retry)");
    const mine = (await read()).filter(about(cart));
    const count = (type: string) => mine.filter((e) => e.type === type).length;
    expect(count("processor.retried")).toBe(1);
    expect(mine.find((e) => e.type === "processor.retried")?.data).toMatchObject({ attempt: 1, error: "cart c-2 is flaky: failing attempt 1 after its work" });
    expect(count("processor.failed")).toBe(0);
    expect(count("cart.checked")).toBe(1);
    expect(count("action.started")).toBe(1); // the retry's call was answered from the log
    expect(mine.find((e) => e.type === "cart.checked")?.data).toEqual({ cart_id: "c-2", total: 12, items: 1 });
  });

  it("a replay (MoveCursor) delivers both carts again to the Python executor; their work is found by its derived ids, not written again", async () => {
    const before = await read("cart.checked", "action.started", "action.completed");
    const retriedBefore = (await read("processor.retried")).length;
    const failedBefore = (await read("processor.failed")).length;
    const head = (await admin.log.readLog({ pageSize: 1 })).headSeq;
    await adminRpc.moveCursor({ processor: "pyshop.checker", to: { case: "ackFloor", value: carts.c1.seq - 1n } });
    // The flaky cart fails its first attempt again (attempt 1 of the new delivery): proof the Python executor ran it again.
    await until(async () => (await read("processor.retried")).length === retriedBefore + 1, "c-2 re-delivered");
    await until(async () => (await ackFloor()) >= head, "the cursor back at the head");
    expect(await read("cart.checked", "action.started", "action.completed")).toEqual(before);
    // c-1 went through at once (its emit answered from the log), c-2 after one retry.
    expect((await read("processor.retried")).length).toBe(retriedBefore + 1);
    expect((await read("processor.failed")).length).toBe(failedBefore);
    expect((await read("processor.cursor_moved")).length).toBe(1);
  });

  it("a TerminalError fails the delivery at once: processor.failed, no retry", async () => {
    const cart = (await web.emit("cart.submitted", { cart_id: "c-3", items: [] })).event!;
    await until(async () => (await read("processor.failed")).some(about(cart)), "processor.failed for c-3");
    const mine = (await read()).filter(about(cart));
    expect(mine.map((e) => e.type)).toEqual(["processor.failed"]);
    expect(mine[0].data).toMatchObject({ processor: "pyshop.checker", error: "cart c-3 has no items" });
  });

  it("a TypeScript client calls the Python action; the same call id answers from the log", async () => {
    const input = {
      items: [
        { sku: "a", price: 0.1, qty: 1 },
        { sku: "b", price: 0.2, qty: 1 },
      ],
    };
    const first = await web.call("pyshop.total", input, { callId: "py-total-1" });
    expect(first).toMatchObject({ callId: "py-total-1", output: { total: 0.3, items: 2 }, fromLog: false });
    const again = await web.call("pyshop.total", input, { callId: "py-total-1" });
    expect(again).toMatchObject({ output: { total: 0.3, items: 2 }, fromLog: true });
  });

  it("an executor whose token is unknown, or whose principal may not subscribe, prints the owner's message once and exits instead of retrying", async () => {
    const unknown = await runPythonExecutor(owner.url, "not-a-token-0123456789");
    expect(unknown.output).toEqual(["chronolog executor: UNAUTHENTICATED: unknown bearer token (the executor stopped: not retrying)"]);
    expect(unknown.code).toBe(1);
    expect(unknown.ms).toBeLessThan(10_000); // the default max_backoff would keep retrying until killed at 15 s
    const client = await runPythonExecutor(owner.url, tokens.client);
    expect(client.output).toEqual([
      "chronolog executor: PERMISSION_DENIED: principal web (role client) may not subscribe as an executor; the executor role is needed (the executor stopped: not retrying)",
    ]);
    expect(client.code).toBe(1);
    // Neither reached the owner as an executor: only the example's own session is listed.
    const { executors } = await adminRpc.listExecutors({});
    expect(executors.map((e) => e.principal)).toEqual(["pyworker"]);
  });

  it("the Python client gets the same clear errors as grpc-js (unittest: sdk/python/tests/test_client_errors.py)", async () => {
    const env = {
      ...process.env,
      PYTHONPATH: join(repo, "sdk/python"),
      CHRONOLOG_URL: owner.url,
      CHRONOLOG_ADMIN_TOKEN: tokens.admin,
      CHRONOLOG_CLIENT_TOKEN: tokens.client,
      CHRONOLOG_EXECUTOR_TOKEN: tokens.executor,
    };
    const result = await promisify(execFile)(PYTHON, ["-m", "unittest", "-v", "sdk/python/tests/test_client_errors.py"], {
      cwd: repo,
      env,
      timeout: 60_000,
    }).catch((e: { stdout: string; stderr: string; code: number }) => e);
    const output = `${result.stdout}${result.stderr}`;
    expect("code" in result ? `exit ${result.code}:\n${output}` : "exit 0").toBe("exit 0");
    expect(result.stderr).toMatch(/^Ran 15 tests in .*\n\nOK\s*$/m);
    // The executor said it connected and which handlers failed, and reported nothing else while
    // all this ran (no reconnects, no notices).
    expect(executor.output[0]).toMatch(new RegExp(`^chronolog executor: connected to ${owner.url.replaceAll(".", "\\.")} \\(session [^)]+\\)$`));
    expect(executor.output.join("\n")).toContain(`chronolog executor: pyshop.checker failed on event ${carts.c2.id} (attempt 1): `);
    expect(executor.output.filter((l) => !/^chronolog executor: (connected to |pyshop\.\w+ failed )/.test(l))).toEqual(["executor ready"]);
  });
});

// Work under a cause from Python: the pywork executor
// (sdk/python/tests/work_executor.py) writes documents and sets timers and delays under
// deliveries and action runs, through ctx.collections, ctx.schedule, ctx.unschedule,
// ctx.delay and ctx.cancel_delay. The ids the owner derived are recomputed here from the
// cause, the position and the input, as the owner does.
describe.skipIf(missing && !process.env.CI)("Python work under a cause: collections, timers and delays against a real owner", () => {
  let owner: OwnerProcess;
  let executor: ChildProcess;
  let executorExited: Promise<number | string>;
  let admin: ChronologClient;
  let web: ChronologClient;
  let adminRpc: ReturnType<typeof createRpcClient<typeof AdminService>>;
  const action = "pywork.remind";
  const write = (cause: string, position: number, op: string, id: string, input: unknown) => derivedId(cause, position, { collection: "pyjob", op, id, input });

  async function read(...types: string[]): Promise<Event[]> {
    const out: Event[] = [];
    for await (const e of admin.read({ types })) out.push(e);
    return out;
  }
  const under = (cause: Event) => async () => (await read()).filter((e) => e.cause === cause.id || (e.data as JsonObject | undefined)?.event_id === cause.id);
  async function timersOf(job: string): Promise<Timer[]> {
    const out: Timer[] = [];
    for await (const t of admin.listTimers()) if ((t.input as JsonObject | undefined)?.job_id === job) out.push(t);
    return out;
  }
  async function settled(job: Event): Promise<void> {
    await until(async () => {
      const { processors } = await adminRpc.listProcessors({});
      const p = processors.find((x) => x.name === "pywork.worker");
      return p !== undefined && p.ackFloor >= job.seq && p.inFlight === 0;
    }, `pywork.worker past ${job.seq}`);
  }

  beforeAll(async () => {
    if (missing) throw new Error(`${PYTHON} is missing: .ci/run creates it (python3 -m venv .venv && .venv/bin/pip install -r sdk/python/requirements.txt)`);
    const dir = tempDir("chronolog-pywork-");
    writeFileSync(join(dir, "owner.json"), JSON.stringify(config));
    owner = await spawnOwner(join(dir, "data"), ["--config", join(dir, "owner.json")]);
    executor = spawn(PYTHON, ["sdk/python/tests/work_executor.py", "--url", owner.url], {
      cwd: repo,
      env: { ...process.env, CHRONOLOG_TOKEN: tokens.executor, PYTHONPATH: join(repo, "sdk/python"), PYTHONUNBUFFERED: "1" },
      stdio: ["ignore", "ignore", "pipe"],
    });
    executorExited = new Promise((resolve) => executor.once("exit", (code, signal) => resolve(code ?? signal ?? -1)));
    const output: string[] = [];
    await new Promise<void>((resolve, reject) => {
      createInterface({ input: executor.stderr! }).on("line", (line) => {
        output.push(line);
        if (line === "executor ready") resolve();
      });
      executorExited.then((code) => reject(new Error(`pywork exited (${code}) before it was ready:\n${output.join("\n")}`)));
    });
    admin = createClient({ url: owner.url, token: tokens.admin });
    web = createClient({ url: owner.url, token: tokens.client });
    adminRpc = createRpcClient(
      AdminService,
      createGrpcTransport({ baseUrl: owner.url, interceptors: [(next) => (req) => (req.header.set("authorization", `Bearer ${tokens.admin}`), next(req))] }),
    );
  });
  afterAll(async () => {
    if (executor) {
      executor.kill("SIGTERM");
      await executorExited;
    }
    if (owner) {
      owner.child.kill("SIGTERM");
      await owner.exited;
    }
  });

  it("a delivery past its ack timeout is cancelled (ctx.cancelled, ctx.cancel_reason) and its late OK ack finishes the event", async () => {
    const job = (await web.emit("job.patient", { job_id: "j-9" })).event!;
    await until(async () => {
      const { processors } = await adminRpc.listProcessors({});
      return (processors.find((x) => x.name === "pywork.patient")?.ackFloor ?? 0n) >= job.seq;
    }, "pywork.patient past the job");
    const worked = (await read("job.worked")).filter((e) => e.cause === job.id).map((e) => e.data);
    expect(worked).toEqual([{ job_id: "j-9", cancelled: true, reason: "cancelled by the owner: not acknowledged within 500 ms", attempt: 1 }]);
    expect((await read("processor.failed")).filter((e) => e.cause === job.id)).toEqual([]);
  });

  it("a delivery's document writes, timers and delays carry its event as cause, its actor, and ids derived from cause + position + input", async () => {
    const job = (await web.emit("job.submitted", { job_id: "j-1" })).event!;
    await settled(job);
    const mine = await under(job)();
    const [worked] = mine.filter((e) => e.type === "job.worked");
    const d = worked.data as JsonObject;

    // Positions 0-4: the documents.
    const created = write(job.id, 0, "create", "", { job_id: "j-1", status: "new", secret: "s3" });
    const docId = derivedId(created, 0, "_id"); // a create without _id under a cause: derived from the write id
    const patch = { set: { status: "working", "meta.by": "py" }, unset: ["secret"] };
    const changes = mine.filter((e) => e.type.startsWith("pyjob."));
    expect(changes.map((e) => [e.type, e.id])).toEqual([
      ["pyjob.created", created],
      ["pyjob.updated", write(job.id, 1, "patch", docId, patch)],
      ["pyjob.updated", write(job.id, 2, "replace", docId, { job_id: "j-1", status: "done" })],
      ["pyjob.created", write(job.id, 3, "create", "scratch-j-1", { _id: "scratch-j-1", job_id: "j-1" })],
      ["pyjob.deleted", write(job.id, 4, "delete", "scratch-j-1", null)],
    ]);
    for (const e of changes) expect(e.actor).toEqual(job.actor); // the delivery's actor
    expect(changes[0].data).toEqual({ _id: docId, doc: { _id: docId, job_id: "j-1", status: "new" } }); // the private secret is not in the event
    expect(changes[1].data).toEqual({
      _id: docId,
      doc: { _id: docId, job_id: "j-1", status: "working", meta: { by: "py" } },
      changed: ["meta", "status"],
      removed: [],
    }); // the unset secret is private: not listed
    expect(d.seqs).toEqual([changes[0], changes[1], changes[2], changes[4]].map((e) => Number(e.seq)));
    expect(await admin.getDocument("pyjob", docId)).toEqual({ _id: docId, job_id: "j-1", status: "done" });
    await expect(admin.getDocument("pyjob", "scratch-j-1")).rejects.toMatchObject({ code: Code.NotFound });
    expect(d.found).toEqual([docId]);
    expect(d.doc).toEqual({ _id: docId, job_id: "j-1", status: "done" });

    // Positions 5-8: the timers and delays.
    const weeklyId = derivedId(job.id, 5, {
      op: "schedule",
      action,
      input: { job_id: "j-1", what: "weekly" },
      spec: { cron: "0 9 * * 1", zone: "Europe/Berlin" },
    });
    const laterId = derivedId(job.id, 7, {
      op: "delay",
      action,
      input: { job_id: "j-1", what: "later" },
      when: { interval_ms: 86_400_000 },
      overdue: { on_time_or_never: true },
    });
    const atMs = Date.UTC(2099, 0, 1, 9);
    const atId = derivedId(job.id, 8, { op: "delay", action, input: { job_id: "j-1", what: "at" }, when: { at: atMs }, overdue: { max_lateness_ms: 60_000 } });
    expect([d.weekly, d.tick, d.later, d.at]).toEqual([weeklyId, "tick-j-1", laterId, atId]);
    const timers = new Map((await timersOf("j-1")).map((t) => [t.id, t]));
    expect([...timers.keys()].sort()).toEqual([weeklyId, "tick-j-1", laterId, atId].sort());
    for (const t of timers.values()) {
      expect(t.action).toBe(action);
      expect(t.actor).toEqual(job.actor); // runs as whoever set it
    }
    const weekly = await admin.getTimer(weeklyId, { previewCount: 3 });
    expect(weekly).toMatchObject({
      kind: TimerKind.RUNTIME,
      input: { job_id: "j-1", what: "weekly" },
      spec: { when: { case: "cron", value: { expression: "0 9 * * 1", zone: "Europe/Berlin" } } },
    });
    for (const p of weekly.preview) {
      const at = new Date(timestampMs(p));
      expect(at.getUTCDay()).toBe(1);
      expect(at.toLocaleTimeString("en-GB", { timeZone: "Europe/Berlin" })).toBe("09:00:00");
    }
    expect(timers.get("tick-j-1")).toMatchObject({
      kind: TimerKind.RUNTIME,
      spec: { when: { case: "everyMs", value: 3_600_000n } },
      overdue: { bound: { case: "maxLatenessMs", value: 500n } },
    });
    const later = timers.get(laterId)!;
    expect(later).toMatchObject({ kind: TimerKind.DELAY, chainDepth: 1, overdue: { bound: { case: "onTimeOrNever", value: true } } }); // one deeper than the delivery
    expect(new Date(d.later_due as string).getTime()).toBe(timestampMs(later.nextDue!));
    expect(timestampMs(later.nextDue!) - Number(worked.at!.seconds) * 1000).toBeGreaterThan(86_400_000 - 60_000);
    const at = timers.get(atId)!;
    expect(at).toMatchObject({ kind: TimerKind.DELAY, chainDepth: 0, overdue: { bound: { case: "maxLatenessMs", value: 60_000n } } }); // fresh_chain
    expect(timestampMs(at.nextDue!)).toBe(atMs);
    expect(new Date(d.at_due as string).getTime()).toBe(atMs);
    const scheduled = mine.filter((e) => e.type === "timer.scheduled");
    expect(scheduled.map((e) => (e.data as JsonObject).timer_id)).toEqual([weeklyId, "tick-j-1", laterId, atId]);
    for (const e of scheduled) expect(e.actor).toEqual(job.actor);

    // Position 9: the emit.
    expect(worked.id).toBe(derivedId(job.id, 9, { type: "job.worked", data: d }));
    expect(mine.filter((e) => e.type.startsWith("processor."))).toEqual([]);
  });

  it("a retried delivery makes the same calls and finds them done: the same ids, nothing written twice", async () => {
    const job = (await web.emit("job.submitted", { job_id: "j-2", flaky: true })).event!;
    await settled(job);
    const mine = await under(job)();
    const count = (type: string) => mine.filter((e) => e.type === type).length;
    expect(mine.find((e) => e.type === "processor.retried")?.data).toMatchObject({ attempt: 1, error: "job j-2 is flaky: failing attempt 1 after its work" });
    expect(count("processor.retried")).toBe(1);
    expect(count("processor.failed")).toBe(0);
    expect([count("pyjob.created"), count("pyjob.updated"), count("pyjob.deleted"), count("timer.scheduled"), count("job.worked")]).toEqual([2, 2, 1, 4, 1]);
    const docId = derivedId(write(job.id, 0, "create", "", { job_id: "j-2", status: "new", secret: "s3" }), 0, "_id");
    expect(await admin.findDocuments("pyjob", { filter: { job_id: "j-2" } })).toEqual([{ _id: docId, job_id: "j-2", status: "done" }]);
    const timers = await timersOf("j-2");
    expect(timers).toHaveLength(4);
    // The retry's answers were the first attempt's: its job.worked (same data, so the same derived id) was found, not written again.
    const [worked] = mine.filter((e) => e.type === "job.worked");
    expect((worked.data as JsonObject).doc_id).toBe(docId);
    expect(new Set(timers.map((t) => t.id))).toEqual(
      new Set([(worked.data as JsonObject).weekly, "tick-j-2", (worked.data as JsonObject).later, (worked.data as JsonObject).at]),
    );
  });

  it("cancel_delay and unschedule under a delivery remove what it set, recorded under its cause and actor", async () => {
    const job = (await web.emit("job.submitted", { job_id: "j-3", mode: "cancel" })).event!;
    await settled(job);
    const mine = await under(job)();
    const delayId = derivedId(job.id, 0, {
      op: "delay",
      action,
      input: { job_id: "j-3", what: "cancelled" },
      when: { interval_ms: 60_000 },
      overdue: { unbounded: true },
    });
    const timerEvents = mine.filter((e) => e.type.startsWith("timer."));
    expect(timerEvents.map((e) => `${e.type} ${(e.data as JsonObject).timer_id}`)).toEqual([
      `timer.scheduled ${delayId}`,
      `timer.unscheduled ${delayId}`,
      "timer.scheduled gone-j-3",
      "timer.unscheduled gone-j-3",
    ]);
    for (const e of timerEvents) expect(e.actor).toEqual(job.actor);
    expect(mine.find((e) => e.type === "job.worked")?.data).toEqual({ job_id: "j-3", delay: delayId, timer: "gone-j-3" });
    expect(await timersOf("j-3")).toEqual([]);
    await expect(admin.getTimer(delayId)).rejects.toMatchObject({ code: Code.NotFound });
    expect(mine.filter((e) => e.type.startsWith("processor."))).toEqual([]);
  });

  it("a retried delivery that armed and cancelled a delay, set and unscheduled a timer: each recorded once, the retry succeeds, nothing left", async () => {
    const job = (await web.emit("job.submitted", { job_id: "j-5", mode: "cancel", flaky: true })).event!;
    await settled(job);
    const mine = await under(job)();
    expect(mine.find((e) => e.type === "processor.retried")?.data).toMatchObject({ attempt: 1, error: "job j-5 is flaky: failing attempt 1 after its work" });
    expect(mine.filter((e) => e.type === "processor.failed")).toEqual([]);
    const delayId = derivedId(job.id, 0, {
      op: "delay",
      action,
      input: { job_id: "j-5", what: "cancelled" },
      when: { interval_ms: 60_000 },
      overdue: { unbounded: true },
    });
    const timerEvents = mine.filter((e) => e.type.startsWith("timer."));
    expect(timerEvents.map((e) => `${e.type} ${(e.data as JsonObject).timer_id}`)).toEqual([
      `timer.scheduled ${delayId}`,
      `timer.unscheduled ${delayId}`,
      "timer.scheduled gone-j-5",
      "timer.unscheduled gone-j-5",
    ]);
    expect(mine.filter((e) => e.type === "job.worked").map((e) => e.data)).toEqual([{ job_id: "j-5", delay: delayId, timer: "gone-j-5" }]);
    expect(await timersOf("j-5")).toEqual([]);
  });

  it("malformed time arguments fail in the Python SDK before any call (unittest: sdk/python/tests/test_time_arguments.py)", async () => {
    const result = await pythonUnittest("sdk/python/tests/test_time_arguments.py");
    expect(result.exit).toBe("exit 0");
    expect(result.stderr).toMatch(/^Ran 5 tests in .*\n\nOK\s*$/m);
  });

  it("read lists given to a Python plugin go into its manifest (unittest: sdk/python/tests/test_plugin_read.py)", async () => {
    const result = await pythonUnittest("sdk/python/tests/test_plugin_read.py");
    expect(result.exit).toBe("exit 0");
    expect(result.stderr).toMatch(/^Ran 1 test in .*\n\nOK\s*$/m);
  });

  it("numbers JSON cannot hold (NaN, infinities) fail in the Python SDK before any call, naming their path (unittest: sdk/python/tests/test_json_numbers.py)", async () => {
    const result = await pythonUnittest("sdk/python/tests/test_json_numbers.py");
    expect(result.exit).toBe("exit 0");
    expect(result.stderr).toMatch(/^Ran 2 tests in .*\n\nOK\s*$/m);
  });

  it("a call lost with its owner is made again at the next owner when making it twice does what once does, and is the caller's otherwise (unittest: sdk/python/tests/test_owners.py)", async () => {
    const result = await pythonUnittest("sdk/python/tests/test_owners.py");
    expect(result.exit).toBe("exit 0");
    expect(result.stderr).toMatch(/^Ran 3 tests in .*\n\nOK\s*$/m);
  });

  it("a held invocation counts its hold from when the owner wrote it (unittest: sdk/python/tests/test_stream_clock.py)", async () => {
    const result = await pythonUnittest("sdk/python/tests/test_stream_clock.py");
    expect(result.exit).toBe("exit 0");
    expect(result.stderr).toMatch(/^Ran 2 tests in .*\n\nOK\s*$/m);
  });

  it("an action's output too large for the owner's largest message is answered with a terminal error, a long error is cut (unittest: sdk/python/tests/test_results.py)", async () => {
    const result = await pythonUnittest("sdk/python/tests/test_results.py");
    expect(result.exit).toBe("exit 0");
    expect(result.stderr).toMatch(/^Ran 3 tests in .*\n\nOK\s*$/m);
  });

  it("acks queued together go out as one AckBatch, and action results as one ActionResultBatch to an owner that accepts them, in order, within their count and bytes (unittest: sdk/python/tests/test_ack_batches.py)", async () => {
    const result = await pythonUnittest("sdk/python/tests/test_ack_batches.py");
    expect(result.exit).toBe("exit 0");
    expect(result.stderr).toMatch(/^Ran 6 tests in .*\n\nOK\s*$/m);
  });

  it("bad credits are refused before the executor connects, naming the option; 0 is the owner's default (unittest: sdk/python/tests/test_executor_options.py)", async () => {
    const result = await pythonUnittest("sdk/python/tests/test_executor_options.py");
    expect(result.exit).toBe("exit 0");
    expect(result.stderr).toMatch(/^Ran 2 tests in .*\n\nOK\s*$/m);
  });

  it("deliveries and invocations run on worker threads, at most credits at once; stop waits for what was given, after it nothing queued runs (unittest: sdk/python/tests/test_worker_pool.py)", async () => {
    const result = await pythonUnittest("sdk/python/tests/test_worker_pool.py");
    expect(result.exit).toBe("exit 0");
    expect(result.stderr).toMatch(/^Ran 5 tests in .*\n\nOK\s*$/m);
  });

  it("an action's work is under its action.started: a document, and a delay whose call reads ctx.scheduled one chain deeper and starts at its moment (held); the same call id runs nothing again", async () => {
    const result = await web.call("pywork.file", { job_id: "j-4" }, { callId: "file-j-4" });
    const [started] = (await read("action.started")).filter((e) => (e.data as JsonObject).call_id === "file-j-4");
    const docId = derivedId(write(started.id, 0, "create", "", { job_id: "j-4", status: "filed" }), 0, "_id");
    const delayId = derivedId(started.id, 1, {
      op: "delay",
      action,
      input: { job_id: "j-4", what: "soon" },
      when: { interval_ms: 200 },
      overdue: { unbounded: true },
    });
    expect(result).toMatchObject({ fromLog: false, output: { doc_id: docId, delay_id: delayId } });
    const [created] = (await read("pyjob.created")).filter((e) => e.cause === started.id);
    expect(created).toMatchObject({ seq: BigInt(result.output.created_seq as number), actor: started.actor });
    await until(async () => (await read("job.reminded")).some((e) => (e.data as JsonObject).job_id === "j-4"), "job.reminded for j-4");
    const [reminded] = (await read("job.reminded")).filter((e) => (e.data as JsonObject).job_id === "j-4");
    expect(reminded.data).toEqual({ job_id: "j-4", what: "soon", timer_id: delayId, chain_depth: 1, early: false }); // sent up to 100 ms ahead with hold_ms (the executor holds), started at its moment
    expect(reminded.actor).toEqual(started.actor); // the delay runs as the actor it was armed under

    const again = await web.call("pywork.file", { job_id: "j-4" }, { callId: "file-j-4" });
    expect(again).toMatchObject({ fromLog: true, output: result.output });
    expect(await admin.findDocuments("pyjob", { filter: { job_id: "j-4" } })).toHaveLength(1);
    expect((await read("timer.scheduled")).filter((e) => (e.data as JsonObject).timer_id === delayId)).toHaveLength(1);
  });

  // Last here: it stops the executor.
  it("SIGTERM (stop) during a call: the call ends within the grace and its result reaches the owner before the stream closes: answered once, never retried", async () => {
    const answer = web.call("pywork.slow", { job_id: "j-6" }, { callId: "slow-j-6" });
    await until(async () => (await read("action.started")).some((e) => (e.data as JsonObject).call_id === "slow-j-6"), "the slow call started");
    executor.kill("SIGTERM");
    expect(await executorExited).toBe(0);
    expect(await answer).toMatchObject({ fromLog: false, output: { job_id: "j-6" } });
    const ofCall = (await read("action.started", "action.retried", "action.completed", "action.failed")).filter(
      (e) => (e.data as JsonObject).call_id === "slow-j-6",
    );
    expect(ofCall.map((e) => e.type)).toEqual(["action.started", "action.completed"]);
  });
});

describe.skipIf(missing && !process.env.CI)("a Python executor stopped (SIGTERM) with a backlog", () => {
  it("tells the owner it stops: no more work is sent to it, what it got is answered, nothing is tried again, and the owner logs a stop, not a disconnect", async () => {
    const dir = tempDir("chronolog-pystop-");
    const owner = await spawnOwner(join(dir, "data"), []);
    const child = spawn(PYTHON, ["sdk/python/tests/stop_with_backlog.py"], {
      cwd: repo,
      env: { ...process.env, CHRONOLOG_URL: owner.url, PYTHONPATH: join(repo, "sdk/python"), PYTHONUNBUFFERED: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    // "close": exited, and its output read to the end.
    const exited = new Promise<number | string>((resolve) => child.once("close", (code, signal) => resolve(code ?? signal ?? -1)));
    const lines: string[] = [];
    createInterface({ input: child.stdout! }).on("line", (line) => lines.push(line));
    let stderr = "";
    child.stderr!.on("data", (chunk) => (stderr += chunk));
    try {
      await until(() => lines.includes("ready"), `the Python executor ready (${stderr})`, 30_000);
      const client = createClient({ url: owner.url });
      await client.emitBatch(Array.from({ length: 300 }, (_, i) => ({ type: "pybacklog.item", data: { k: `k${i % 50}` } })));
      await until(() => lines.filter((l) => l.startsWith("handled ")).length >= 20, "the Python executor working through the backlog");
      const handledAtStop = lines.filter((l) => l.startsWith("handled ")).length;
      child.kill("SIGTERM");
      expect(await exited).toBe(0);
      expect(lines.at(-1)).toBe("stopped");
      const byPython = lines.filter((l) => l.startsWith("handled ")).map((l) => l.slice("handled ".length));
      // What it held when it stopped (its 16 credits) and what was on its way it finished; no more.
      expect(byPython.length - handledAtStop).toBeLessThanOrEqual(32);
      // The rest goes to a TypeScript executor of the same processor.
      const byTs: string[] = [];
      const ts = runExecutor({
        url: owner.url,
        credits: 64,
        onError: () => {},
        plugins: [
          definePlugin({
            name: "pybacklog",
            version: "1",
            events: { "pybacklog.item": { allow: ["*"] } },
            processors: { slow: { on: "pybacklog.item", key: "data.k", concurrency: 16, run: (ctx) => void byTs.push(ctx.event.id) } },
          }),
        ],
      });
      try {
        await until(() => byPython.length + byTs.length >= 300, "the TypeScript executor finishing the backlog", 30_000);
        await new Promise((r) => setTimeout(r, 200));
      } finally {
        await ts.stop(0);
      }
      expect(byPython.length + byTs.length).toBe(300); // each event handled once: none the Python executor finished was run again
      expect(new Set([...byPython, ...byTs]).size).toBe(300);
      expect(await eventsOf(client, ["processor.retried", "processor.failed"])).toEqual([]);
      const messages = owner.logs.map((l) => JSON.parse(l).msg as string);
      expect(messages).toContainEqual(expect.stringMatching(/^executor pybacklog is stopping: it gets no more work/));
      expect(messages).toContain("executor stopped");
    } finally {
      child.kill("SIGKILL");
      owner.child.kill("SIGTERM");
      await owner.exited;
    }
  });
});
