// A standby on PostgreSQL serves reads: the log (ReadLog, GetEvent, a live Watch), documents,
// timers, processors and plugins, from a read-only connection of its own, with the leader's
// principals; every write names the leader. Clients that read from any owner (`reads: "any"`, the
// Python client's `reads="any"`, the CLI's `--reads any`) read there, and a watch on the standby
// goes on when the leader is killed with SIGKILL and the standby takes over: every acknowledged
// event seen once, in order. Real processes, a real PostgreSQL server.
//
// @module-tag serial
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { promisify } from "node:util";
import { Code, ConnectError, createClient as createRpcClient, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ChronologClient, createClient } from "../sdk/ts/src/client.js";
import type { Event } from "@chronolog/sdk/gen/chronolog/v1/event_pb";
import { Health, HealthCheckResponse_ServingStatus as ServingStatus } from "@chronolog/sdk/gen/grpc/health/v1/health_pb";
import { connectPostgres } from "../server/src/store/postgres/open.js";
import { connectNative, endNative } from "../server/src/store/postgres/pg-db.js";
import { chronologArgs } from "./helpers/chronolog.js";
import { tempDir } from "./helpers/owner.js";
import { databaseUrl, startPostgresServer, type PostgresServer } from "./helpers/postgres-server.js";
import { freePort } from "./helpers/standby.js";
import { until } from "./helpers/until.js";

const repo = new URL("../", import.meta.url).pathname;
const PYTHON = join(repo, ".venv/bin/python");
const tokens = { ops: "standby-ops-token-0123", alice: "standby-alice-token-0123", bob: "standby-bob-token-01234" };
const manifest = {
  name: "sr",
  version: "1",
  events: { "sr.e": { allow: ["*"] } },
  collections: { notes: { durable: true, allow: ["*"] }, scratch: { durable: false, allow: ["*"] } },
  actions: { ping: { allow: ["*"] } },
  processors: { count: { on: ["sr.e"] } },
};

let server: PostgresServer;
let databases = 0;
let folder: string;
/** Every owner started, stopped at the end whatever happened. */
const started: OwnerProc[] = [];

beforeAll(async () => {
  server = await startPostgresServer();
  folder = tempDir();
  mkdirSync(join(folder, "plugins"));
  writeFileSync(join(folder, "plugins", "sr.json"), JSON.stringify(manifest));
  const principals = [
    { name: "ops", token: tokens.ops, role: "admin" },
    { name: "alice", token: tokens.alice, role: "client", actor: { in: "space:a" } },
    { name: "bob", token: tokens.bob, role: "client", actor: { in: "space:b" } },
  ];
  writeFileSync(join(folder, "owner.json"), JSON.stringify({ principals }));
}, 60_000);
afterAll(async () => {
  for (const o of started) o.child.kill("SIGKILL");
  await Promise.all(started.map((o) => o.exited));
  server?.stop();
});

/** A new, empty database on the test server. */
function newDatabase(): string {
  const name = `standby_${++databases}`;
  const admin = connectNative(server.url, "chronolog tests");
  admin.querySync(`CREATE DATABASE ${name}`);
  endNative(admin);
  return databaseUrl(server.url, name);
}

/** `chronolog serve --store` with the principals and the plugin, as a child process. */
interface OwnerProc {
  child: ChildProcess;
  url: string;
  logs: Record<string, unknown>[];
  exited: Promise<unknown>;
  waitLog(pattern: RegExp, timeoutMs?: number): Promise<void>;
}

function serve(store: string, port: number): OwnerProc {
  const child = spawn(
    process.execPath,
    [...chronologArgs, "serve", "--store", store, "--port", String(port), "--plugins", join(folder, "plugins"), "--config", join(folder, "owner.json")],
    { cwd: repo, stdio: ["ignore", "ignore", "pipe"] },
  );
  const logs: Record<string, unknown>[] = [];
  const exited = new Promise((resolve) => child.once("exit", resolve));
  createInterface({ input: child.stderr! }).on("line", (line) => {
    try {
      logs.push(JSON.parse(line));
    } catch {
      logs.push({ msg: line });
    }
  });
  const owner: OwnerProc = {
    child,
    url: `http://127.0.0.1:${port}`,
    logs,
    exited,
    waitLog: (pattern, timeoutMs = 20_000) =>
      until(() => logs.some((l) => pattern.test(String(l.msg))), `a log line matching ${pattern} (logs: ${logs.map((l) => l.msg).join(" | ")})`, timeoutMs),
  };
  started.push(owner);
  return owner;
}

/** A leader and a standby on a new database. */
async function leaderAndStandby(): Promise<{ store: string; leader: OwnerProc; standby: OwnerProc }> {
  const store = newDatabase();
  const leader = serve(store, await freePort());
  await leader.waitLog(/^owner serving/);
  const standby = serve(store, await freePort());
  await standby.waitLog(/^standby/);
  return { store, leader, standby };
}

function bearer(token: string): Interceptor {
  return (next) => (req) => {
    req.header.set("authorization", `Bearer ${token}`);
    return next(req);
  };
}

/** A client of the one owner at `url` that follows nothing: what that owner answers. */
function direct(url: string, token?: string): ChronologClient {
  return new ChronologClient(createGrpcTransport({ baseUrl: url, interceptors: token ? [bearer(token)] : [] }));
}

/** `chronolog_store_waits_total{connection="reader"}` of the owner at `url`: rises with every read it serves from the store. */
/** The reads the owner at `url` made of PostgreSQL (those its thread waited for, and those it did not). */
async function storeReads(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${tokens.ops}` } })).text();
  const waited = Number(/^chronolog_store_waits_total\{connection="reader"\} (\d+)/m.exec(text)?.[1] ?? NaN);
  return waited + Number(/^chronolog_store_async_reads_total (\d+)/m.exec(text)?.[1] ?? NaN);
}

async function readAll(client: ChronologClient): Promise<Event[]> {
  const events: Event[] = [];
  for await (const e of client.read({}, 100)) events.push(e);
  return events;
}

/** The error of `call` (a failure if it succeeds). */
async function failure(call: Promise<unknown>): Promise<ConnectError> {
  const outcome = await call.then(
    () => undefined,
    (e: unknown) => ConnectError.from(e),
  );
  if (!outcome) throw new Error("the call succeeded");
  return outcome;
}

describe("a standby on PostgreSQL", () => {
  let store: string;
  let leader: OwnerProc;
  let standby: OwnerProc;

  beforeAll(async () => {
    ({ store, leader, standby } = await leaderAndStandby());
  }, 60_000);
  afterAll(async () => {
    for (const o of [leader, standby]) o?.child.kill("SIGTERM");
    await Promise.all([leader?.exited, standby?.exited]);
  });

  it("serves reads and a live watch while emits go to the leader: the leader's events, documents, timers, processors and plugins", async () => {
    const atLeader = direct(leader.url, tokens.ops);
    const atStandby = direct(standby.url, tokens.ops);
    const watched: Event[] = [];
    const heads: bigint[] = [];
    const abort = new AbortController();
    const watching = (async () => {
      for await (const e of atStandby.watch({ types: ["sr.e"] }, { signal: abort.signal, onCaughtUp: (head) => heads.push(head) })) watched.push(e);
    })().catch((e: unknown) => e);
    await until(() => heads.length === 1, "the standby's watch caught up");

    const emitting = createClient({ url: leader.url, token: tokens.ops, emitVia: "unary" });
    for (let n = 0; n < 100; n++) await emitting.emit("sr.e", { n }, { id: `e-${n}` });
    await emitting.createDocument("notes", { _id: "n1", text: "first" });
    await emitting.schedule("sr.ping", { n: 1 }, { at: Date.now() + 3_600_000 }, { timerId: "later" });
    // The watch is live: each commit's notification wakes it.
    await until(() => watched.length === 100, "the standby's watch saw the 100 events", 15_000);
    expect(watched.map((e) => e.id)).toEqual(Array.from({ length: 100 }, (_, n) => `e-${n}`));
    const fromLeader = await readAll(atLeader);
    expect(watched.map((e) => e.seq)).toEqual(fromLeader.filter((e) => e.type === "sr.e").map((e) => e.seq));

    // Its reads answer as the leader's, once its head reached the leader's.
    const head = (await atLeader.log.readLog({ pageSize: 1 })).headSeq;
    await until(async () => (await atStandby.log.readLog({ pageSize: 1 })).headSeq === head, "the standby at the leader's head");
    expect((await readAll(atStandby)).map((e) => e.id)).toEqual(fromLeader.map((e) => e.id));
    const page = await atStandby.log.readLog({ afterSeq: 10n, pageSize: 7, types: ["sr.e"], where: { n: { $gte: 50 } } });
    expect(page).toEqual(await atLeader.log.readLog({ afterSeq: 10n, pageSize: 7, types: ["sr.e"], where: { n: { $gte: 50 } } }));
    expect((await atStandby.log.getEvent({ id: "e-7" })).event).toEqual((await atLeader.log.getEvent({ id: "e-7" })).event);
    expect(await atStandby.getDocument("notes", "n1")).toEqual({ _id: "n1", text: "first" });
    expect(await atStandby.findDocuments("notes", { filter: { text: "first" } })).toEqual(await atLeader.findDocuments("notes", { filter: { text: "first" } }));
    expect(await atStandby.time.getTimer({ timerId: "later", previewCount: 2 })).toEqual(await atLeader.time.getTimer({ timerId: "later", previewCount: 2 }));
    expect((await atStandby.time.listTimers({})).timers.map((t) => t.id)).toEqual(["later"]);
    expect(await atStandby.plugins.listPlugins({})).toEqual(await atLeader.plugins.listPlugins({}));
    // Processors as the store has them (no executor runs `sr.count`: its floor is where it started);
    // what the leader read ahead of its floor is in the leader's memory.
    const stored = ({ name, ackFloor, lag, failures, paused }: { name: string; ackFloor: bigint; lag: bigint; failures: bigint; paused: boolean }) => ({
      name,
      ackFloor,
      lag,
      failures,
      paused,
    });
    const [count] = (await atStandby.admin.listProcessors({})).processors;
    expect(stored(count)).toEqual(stored((await atLeader.admin.listProcessors({})).processors[0]));
    expect(count).toMatchObject({ ackFloor: 0n, delivered: 0n, lag: head, inFlight: 0, retries: 0n });
    expect(await atStandby.admin.listFailedDeliveries({})).toEqual(await atLeader.admin.listFailedDeliveries({}));
    // A standby's answers say so.
    let role: string | null = null;
    await atStandby.log.readLog({ pageSize: 1 }, { onHeader: (h) => (role = h.get("chronolog-role")) });
    expect(role).toBe("standby");

    // A plugin the leader registers later is read by the standby too.
    await emitting.registerPlugin({ ...manifest, version: "2", collections: { ...manifest.collections, later: { durable: true, allow: ["*"] } } });
    await emitting.createDocument("later", { _id: "l1" });
    await until(async () => (await atStandby.getDocument("later", "l1").catch(() => undefined)) !== undefined, "the standby reading the new collection");

    abort.abort();
    await watching;
  });

  it("refuses every write UNAVAILABLE naming the leader, token or not, and the reads of what only the leader holds", async () => {
    const refusals = [
      (c: ChronologClient) => c.log.emit({ type: "sr.e", data: {} }),
      (c: ChronologClient) => c.log.emitBatch({ events: [{ type: "sr.e", data: {} }] }),
      (c: ChronologClient) => c.collections.createDocument({ collection: "notes", doc: {} }),
      (c: ChronologClient) => c.time.delay({ action: "sr.ping", input: {} }),
      (c: ChronologClient) => c.actions.callAction({ action: "sr.ping", input: {} }),
      (c: ChronologClient) => c.plugins.registerPlugin({ manifest }),
      (c: ChronologClient) => c.admin.moveCursor({ processor: "sr.count", to: { case: "ackFloor", value: 0n } }),
      (c: ChronologClient) => c.admin.listExecutors({}), // who is connected: the leader's to know
    ];
    // Reads the standby cannot answer: after the principal's check, as the leader's reads.
    const leaderReads = [(c: ChronologClient) => c.collections.findDocuments({ collection: "scratch" })]; // kept in the leader's memory
    for (const [client, calls] of [
      [direct(standby.url, tokens.ops), [...refusals, ...leaderReads]],
      [direct(standby.url), refusals],
    ] as const) {
      for (const call of calls) {
        const error = await failure(call(client));
        expect(error.code).toBe(Code.Unavailable);
        expect(error.rawMessage).toBe(`this owner is a standby; the leader is at ${leader.url}`);
        expect(error.metadata.get("chronolog-leader")).toBe(leader.url);
      }
    }
    // Health: not serving (it takes no writes), naming its role and the leader.
    let headers: Headers | undefined;
    const health = await createRpcClient(Health, createGrpcTransport({ baseUrl: standby.url })).check({}, { onHeader: (h) => (headers = h) });
    expect(health.status).toBe(ServingStatus.NOT_SERVING);
    expect(headers?.get("chronolog-role")).toBe("standby");
    expect(headers?.get("chronolog-leader")).toBe(leader.url);
    // The client following the leader (the default) sends those reads there: they answer.
    expect((await createClient({ url: [standby.url, leader.url], token: tokens.ops }).admin.listExecutors({})).executors).toEqual([]);
  });

  it("reads as the leader's principals allow: each principal its own spaces; admins alone may read processors; a token is needed", async () => {
    const alice = createClient({ url: leader.url, token: tokens.alice, emitVia: "unary" });
    const bob = createClient({ url: leader.url, token: tokens.bob, emitVia: "unary" });
    const a = await alice.emit("sr.e", { who: "alice" }, { id: "alice-1" });
    await bob.emit("sr.e", { who: "bob" }, { id: "bob-1" });
    await alice.createDocument("notes", { _id: "alice-note" });
    await alice.schedule("sr.ping", { errand: "alice's" }, { at: Date.now() + 3_600_000 }, { timerId: "alice-timer" });
    // The standby has read every commit the leader made (the note's and the timer's events come after bob's).
    const headAt = async (url: string) => (await direct(url, tokens.ops).log.readLog({ pageSize: 1 })).headSeq;
    const leaderHead = await headAt(leader.url);
    await until(async () => (await headAt(standby.url).catch(() => -1n)) >= leaderHead, "the standby at the leader's head");
    for (const token of [tokens.alice, tokens.bob]) {
      const [there, here] = [direct(leader.url, token), direct(standby.url, token)];
      const seen = (await readAll(here)).map((e) => e.id);
      expect(seen).toEqual((await readAll(there)).map((e) => e.id));
      expect(seen).toContain(token === tokens.alice ? "alice-1" : "bob-1");
      expect(seen).not.toContain(token === tokens.alice ? "bob-1" : "alice-1");
      expect((await failure(here.log.getEvent({ id: token === tokens.alice ? "bob-1" : "alice-1" }))).code).toBe(Code.NotFound);
      const timers = async (c: ChronologClient) => (await c.time.listTimers({})).timers.map((t) => [t.id, t.inputWithheld, t.input]);
      expect(await timers(here)).toEqual(await timers(there));
      expect((await failure(here.admin.listProcessors({}))).code).toBe(Code.PermissionDenied);
    }
    const bobAtStandby = direct(standby.url, tokens.bob);
    expect((await failure(bobAtStandby.getDocument("notes", "alice-note"))).code).toBe(Code.NotFound);
    expect((await failure(bobAtStandby.time.getTimer({ timerId: "alice-timer" }))).code).toBe(Code.NotFound);
    // A timer's input follows the read rule at a standby too: sr.ping names no reader, so only admins (and sr's executors) read it, not the client that set it.
    const aliceTimer = (await direct(standby.url, tokens.alice).time.getTimer({ timerId: "alice-timer" })).timer;
    expect([aliceTimer?.inputWithheld, aliceTimer?.input]).toEqual([true, {}]);
    const asAdmin = (await direct(standby.url, tokens.ops).time.getTimer({ timerId: "alice-timer" })).timer;
    expect([asAdmin?.inputWithheld, asAdmin?.input]).toEqual([false, { errand: "alice's" }]);
    expect(await direct(standby.url, tokens.alice).getDocument("notes", "alice-note")).toEqual({ _id: "alice-note" });
    expect((await direct(standby.url, tokens.alice).log.getEvent({ id: "alice-1" })).event?.seq).toBe(a.event?.seq);
    expect((await failure(direct(standby.url).log.readLog({}))).code).toBe(Code.Unauthenticated);
    expect((await failure(direct(standby.url, "not-a-token-of-anyone").log.getEvent({ id: "alice-1" }))).code).toBe(Code.Unauthenticated);
    expect((await fetch(`${standby.url}/metrics`)).status).toBe(401);
  });

  it("reads through a read-only connection of its own: the standby holds none that writes, and PostgreSQL refuses a write on one", async () => {
    const admin = connectNative(store, "chronolog tests");
    const connections = admin
      .querySync("SELECT application_name AS name FROM pg_stat_activity WHERE application_name LIKE 'chronolog %'")
      .map((r) => String(r.name).split(" "));
    const [holder] = admin.querySync("SELECT holder FROM chronolog_lease").map((r) => String(r.holder));
    endNative(admin);
    const owners = connections.filter(([, id, role]) => role !== undefined && id !== "tests");
    const roles = (leading: boolean) => [...new Set(owners.filter(([, id]) => (id === holder) === leading).map(([, , role]) => role))].sort();
    expect(roles(true)).toEqual(["async", "lease", "reader", "writer"]);
    expect(roles(false)).toEqual(["async", "follower", "lease", "reads"]);
    // The standby's kind of connection, opened here: a write on it fails.
    const database = connectPostgres(store, { instanceId: "test-reads", advertiseUrl: "http://127.0.0.1:1", leaseMs: 3_000 });
    const reads = database.openReads(() => undefined);
    try {
      expect(() => reads.db.prepare("INSERT INTO cursors (processor, ack_floor, updated_at) VALUES (?, ?, ?)").run("sr.other", 0, 0)).toThrow(
        /read-only transaction/,
      );
      expect((reads.db.prepare("SELECT count(*) AS n FROM events").get() as { n: number }).n).toBeGreaterThan(100);
    } finally {
      reads.close();
      database.close();
    }
  });

  it("reads on a new connection once its read connection was ended, its reads refused to the leader meanwhile", async () => {
    const atStandby = direct(standby.url, tokens.ops);
    const admin = connectNative(store, "chronolog tests");
    // Both of its read connections: the one its thread waits on, and the one it does not (`async`).
    const ended = admin.querySync(
      "SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE application_name LIKE 'chronolog % reads' OR application_name IN (SELECT replace(application_name, ' reads', ' async') FROM pg_stat_activity WHERE application_name LIKE 'chronolog % reads')",
    );
    endNative(admin);
    expect(ended.map((r) => r.ended)).toEqual([1, 1]);
    const error = await failure(atStandby.log.getEvent({ id: "e-1" }));
    expect(error.code).toBe(Code.Unavailable);
    expect(error.metadata.get("chronolog-leader")).toBe(leader.url);
    await until(async () => (await atStandby.log.getEvent({ id: "e-1" }).catch(() => undefined)) !== undefined, "the standby reading again");
    await standby.waitLog(/^standby: reading from PostgreSQL again/);
  });

  it("is read by clients that read from any owner: the TypeScript client, the Python client and the CLI, given the standby first", async () => {
    const before = await storeReads(standby.url);
    const client = createClient({ url: [standby.url, leader.url], token: tokens.ops, reads: "any" });
    const events = await readAll(client);
    expect(events.length).toBeGreaterThan(100);
    expect(await storeReads(standby.url)).toBeGreaterThan(before);
    // Its writes still go to the leader, and a read the standby refuses goes there too.
    await client.emit("sr.e", { n: "any" }, { id: "from-any" });
    expect((await client.admin.listExecutors({})).executors).toEqual([]);
    await until(
      async () =>
        (await direct(standby.url, tokens.ops)
          .log.getEvent({ id: "from-any" })
          .catch(() => undefined)) !== undefined,
      "the standby reading the last emit",
    );
    // `reads` is checked.
    expect(() => createClient({ url: standby.url, reads: "nearest" as "any" })).toThrow(/reads must be "leader" or "any"/);

    const python = await promisify(execFile)(PYTHON, ["sdk/python/tests/reads_any.py"], {
      cwd: repo,
      env: { ...process.env, PYTHONPATH: join(repo, "sdk/python"), CHRONOLOG_URL: `${standby.url},${leader.url}`, CHRONOLOG_TOKEN: tokens.ops },
      timeout: 30_000,
    });
    expect(python.stdout.trim().split("\n")).toEqual([String(events.length + 1), "standby", "0"]);

    const waits = await storeReads(standby.url);
    const cli = await promisify(execFile)(
      process.execPath,
      [...chronologArgs, "tail", "--no-follow", "--type", "sr.e", "--url", `${standby.url},${leader.url}`, "--reads", "any", "--token", tokens.ops],
      { cwd: repo, timeout: 30_000 },
    );
    expect(cli.stdout.trim().split("\n").length).toBe(events.filter((e) => e.type === "sr.e").length + 1);
    expect(await storeReads(standby.url)).toBeGreaterThan(waits);
  });
});

describe("a watch on a standby when the leader is killed", () => {
  it("goes on at the standby that took over: every acknowledged event seen once, in order, with emits going on at the new leader", async () => {
    const { leader, standby } = await leaderAndStandby();
    const watched: Event[] = [];
    const abort = new AbortController();
    // Reads from any owner, the standby first: the watch is served by the standby.
    const watcher = createClient({ url: [standby.url, leader.url], token: tokens.ops, reads: "any" });
    const watching = (async () => {
      for await (const e of watcher.watch({ types: ["sr.e"] }, { signal: abort.signal })) watched.push(e);
    })().catch((e: unknown) => e);
    const following = createClient({ url: [leader.url, standby.url], token: tokens.ops, emitVia: "unary" });
    const acknowledged: string[] = [];
    let stop = false;
    const emitters = Array.from({ length: 8 }, async (_, w) => {
      for (let i = 0; !stop; i++) {
        const id = `w${w}-${i}`;
        for (;;) {
          try {
            await following.emit("sr.e", { w, i }, { id });
            acknowledged.push(id);
            break;
          } catch {
            await new Promise((r) => setTimeout(r, 50)); // an error may come after a commit: the id makes the retry write nothing
          }
        }
      }
    });
    await until(() => acknowledged.length >= 200 && watched.length >= 100, "emits acknowledged and watched", 20_000);
    const metrics = await (await fetch(`${standby.url}/metrics`, { headers: { authorization: `Bearer ${tokens.ops}` } })).text();
    expect(metrics.split("\n").filter((l) => l.startsWith("chronolog_"))).toContain("chronolog_watchers 1"); // the standby serves the watch

    leader.child.kill("SIGKILL");
    await leader.exited;
    const atKill = acknowledged.length;
    await standby.waitLog(/^took over the lease/, 15_000);
    await until(() => acknowledged.length >= atKill + 200, "emits acknowledged by the new leader", 30_000);
    stop = true;
    await Promise.all(emitters);

    await until(() => watched.length >= acknowledged.length, "the watch at every acknowledged event", 30_000);
    const ids = watched.map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length); // once
    const seqs = watched.map((e) => Number(e.seq));
    expect(seqs).toEqual([...seqs].sort((x, y) => x - y)); // in order
    const seen = new Set(ids);
    expect(acknowledged.filter((id) => !seen.has(id))).toEqual([]);
    // Nothing missed: the watch holds the log's events of the type, as the new leader has them.
    const log = (await readAll(direct(standby.url, tokens.ops))).filter((e) => e.type === "sr.e");
    expect(ids).toEqual(log.map((e) => e.id));
    abort.abort();
    await watching;
  }, 120_000);
});
