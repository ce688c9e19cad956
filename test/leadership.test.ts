// Two owners on one PostgreSQL database: one leads, the other waits as a standby and takes over
// when the leader dies (kill -9) or stops renewing its lease (SIGSTOP); real processes, a real
// PostgreSQL server.
//
// @module-tag serial
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { create, toJson } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, type ChronologClient } from "../sdk/ts/src/client.js";
import { PluginManifestSchema } from "@chronolog/sdk/gen/chronolog/v1/plugin_pb";
import { definePlugin, manifestOf } from "../sdk/ts/src/plugin.js";
import { connectNative, endNative } from "../server/src/store/postgres/pg-db.js";
import { chronologArgs } from "./helpers/chronolog.js";
import { tempDir } from "./helpers/owner.js";
import { startPostgresServer, type PostgresServer } from "./helpers/postgres-server.js";
import { takeoverPlugin } from "./helpers/takeover-plugin.js";
import { startToxiproxy, toxiproxyBinary } from "./helpers/toxiproxy.js";
import { until } from "./helpers/until.js";

const repo = new URL("../", import.meta.url).pathname;
let server: PostgresServer;
let databases = 0;

beforeAll(async () => {
  server = await startPostgresServer();
}, 60_000);
afterAll(() => server?.stop());

/** A new, empty database on the test server. */
function newDatabase(): string {
  const name = `takeover_${++databases}`;
  const admin = connectNative(server.url, "chronolog tests");
  admin.querySync(`CREATE DATABASE ${name}`);
  endNative(admin);
  const url = new URL(server.url);
  url.pathname = `/${name}`;
  return url.toString();
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

function pluginsDir(): string {
  const dir = tempDir();
  mkdirSync(join(dir, "plugins"));
  writeFileSync(join(dir, "plugins", "takeover.json"), JSON.stringify(toJson(PluginManifestSchema, create(PluginManifestSchema, manifestOf(takeoverPlugin)))));
  return join(dir, "plugins");
}

/** `chronolog serve --store` as a child process: its JSON log lines, and a wait for one. */
interface OwnerProc {
  child: ChildProcess;
  url: string;
  logs: Record<string, unknown>[];
  exited: Promise<number | string>;
  waitLog(pattern: RegExp, timeoutMs?: number): Promise<Record<string, unknown>>;
}

function serve(store: string, port: number, plugins: string, extra: string[] = []): OwnerProc {
  const child = spawn(process.execPath, [...chronologArgs, "serve", "--store", store, "--port", String(port), "--plugins", plugins, ...extra], {
    cwd: repo,
    stdio: ["ignore", "ignore", "pipe"],
  });
  const logs: Record<string, unknown>[] = [];
  const exited = new Promise<number | string>((resolve) => child.once("exit", (code, signal) => resolve(code ?? signal ?? -1)));
  createInterface({ input: child.stderr! }).on("line", (line) => {
    try {
      logs.push(JSON.parse(line));
    } catch {
      logs.push({ msg: line });
    }
  });
  return {
    child,
    url: `http://127.0.0.1:${port}`,
    logs,
    exited,
    async waitLog(pattern, timeoutMs = 20_000) {
      await until(
        () => logs.some((l) => pattern.test(String(l.msg))),
        `a log line matching ${pattern} (logs: ${logs.map((l) => l.msg).join(" | ")})`,
        timeoutMs,
      );
      return logs.find((l) => pattern.test(String(l.msg)))!;
    },
  };
}

/** A takeover executor process on `url`; the JSON lines it prints, each with when it was read (`readAt`, performance.now()). */
function executor(url: string): { child: ChildProcess; lines: Record<string, unknown>[] } {
  const child = spawn(process.execPath, ["--import", "tsx", "test/helpers/takeover-executor.ts", url], { cwd: repo, stdio: ["ignore", "pipe", "ignore"] });
  const lines: Record<string, unknown>[] = [];
  createInterface({ input: child.stdout! }).on("line", (line) => lines.push({ ...JSON.parse(line), readAt: performance.now() }));
  return { child, lines };
}

async function readWholeLog(client: ChronologClient) {
  const events = [];
  let afterSeq = 0n;
  for (;;) {
    const page = await client.log.readLog({ afterSeq, pageSize: 1000 });
    events.push(...page.events);
    if (page.events.length === 0) return events;
    afterSeq = page.events[page.events.length - 1].seq;
  }
}

/** A leader and a standby on a new database, with a lease of `leaseMs`. */
async function leaderAndStandby(leaseMs: number): Promise<[OwnerProc, OwnerProc]> {
  const store = newDatabase();
  const plugins = pluginsDir();
  const ports = [await freePort(), await freePort()];
  const a = serve(store, ports[0], plugins, ["--lease-ms", String(leaseMs)]);
  await a.waitLog(/^owner serving/);
  const b = serve(store, ports[1], plugins, ["--lease-ms", String(leaseMs)]);
  await b.waitLog(/^standby/);
  return [a, b];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("two owners on one PostgreSQL database", () => {
  it("a kill -9 of the leader under load hands over to the standby, 10 rounds: every acknowledged emit in the log once with dense seqs, cursors never back, every delay completed once", async () => {
    const store = newDatabase();
    const plugins = pluginsDir();
    const ports = [await freePort(), await freePort()];
    const owners: OwnerProc[] = [serve(store, ports[0], plugins)];
    await owners[0].waitLog(/^owner serving/);
    owners.push(serve(store, ports[1], plugins));
    await owners[1].waitLog(/^standby/);
    const urls = ports.map((p) => `http://127.0.0.1:${p}`);
    const clients = urls.map((url) => createClient({ url, emitVia: "unary" }));
    let leader = 0;
    // One executor and one client given both owners' URLs: they follow the leader.
    const executors = [executor(urls.join(","))];
    const following = createClient({ url: urls, emitVia: "unary" });
    const standbyRefusal = await createClient({ url: urls[1], emitVia: "unary", failoverTimeoutMs: 0 })
      .emit("job.queued", { key: "k0" })
      .catch((e) => e);
    expect(String(standbyRefusal)).toMatch(new RegExp(`standby; the leader is at ${urls[0]}`));

    // 200 delays, due while the rounds run.
    const firstDueMs = Date.now() + 2_000;
    for (let i = 0; i < 200; i += 50) {
      await clients[0].delayBatch(
        Array.from({ length: 50 }, (_, j) => ({
          action: "takeover.ping",
          input: { n: i + j },
          when: { at: firstDueMs + (i + j) * 150 },
          overdue: "unbounded" as const,
        })),
      );
    }

    // 32 emitters, each id retried until it is answered OK (an error may come after a commit: the id makes the retry write nothing).
    const acknowledged = new Set<string>();
    let stop = false;
    const emitters = Array.from({ length: 32 }, async (_, w) => {
      for (let i = 0; !stop; i++) {
        const id = `w${w}-${i}`;
        for (;;) {
          try {
            await following.emit("job.queued", { key: `k${(w + i) % 50}` }, { id });
            acknowledged.add(id);
            break;
          } catch {
            await sleep(50);
          }
        }
      }
    });

    // The processor's saved cursor, read from the database: it never goes back. (ListProcessors shows
    // the leader's floor in memory, which may run ahead of the saved one: a new leader starts from the saved.)
    const floors: number[] = [];
    const cursorDb = connectNative(store, "chronolog tests");
    const sampler = (async () => {
      while (!stop) {
        const [row] = cursorDb.querySync("SELECT ack_floor FROM cursors WHERE processor = 'takeover.track'");
        if (row) floors.push(Number(row.ack_floor));
        await sleep(100);
      }
      endNative(cursorDb);
    })();

    const handovers: number[] = [];
    const rounds = Number(process.env.TAKEOVER_ROUNDS ?? 10);
    for (let round = 1; round <= rounds; round++) {
      await sleep(500 + Math.random() * 1_000);
      const dying = owners[leader];
      const next = 1 - leader;
      const before = acknowledged.size;
      dying.child.kill("SIGKILL");
      await dying.exited;
      const killedAt = performance.now();
      await owners[next].waitLog(/^took over the lease/, 15_000);
      leader = next;
      await until(() => acknowledged.size > before, "an emit acknowledged by the new leader", 15_000);
      handovers.push(performance.now() - killedAt);
      console.log(`round ${round}: handover ${Math.round(handovers[handovers.length - 1])} ms`);
      owners[1 - next] = serve(store, ports[1 - next], plugins);
      await owners[1 - next].waitLog(/^standby/);
    }
    stop = true;
    await Promise.all([...emitters, sampler]);

    const client = clients[leader];
    // Every delay made one occurrence, completed (time's calls are recorded in timer_occurrences).
    const db = connectNative(store, "chronolog tests");
    const occurrences = () =>
      db.querySync("SELECT timer_id, status, call_id FROM timer_occurrences") as { timer_id: string; status: string; call_id: string }[];
    await until(() => occurrences().filter((o) => o.status === "completed").length >= 200, "200 delays completed", 40_000).catch((e) => {
      throw new Error(`${(e as Error).message}: occurrences ${JSON.stringify(occurrences().map((o) => o.status))}`);
    });
    const head = (await client.log.readLog({ afterSeq: 0n, pageSize: 1 })).headSeq;
    await until(
      async () => (await client.admin.listProcessors({})).processors.find((p) => p.name === "takeover.track")?.ackFloor === head,
      "the processor caught up",
      30_000,
    ).catch(() => undefined);
    const events = await readWholeLog(client);

    // Dense seqs from 1; every acknowledged id exactly once.
    expect(events.map((e) => Number(e.seq))).toEqual(events.map((_, i) => i + 1));
    const ids = events.map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length);
    const inLog = new Set(ids);
    expect([...acknowledged].filter((id) => !inLog.has(id))).toEqual([]);
    // One occurrence per delay, each called (at least once: a call running at a kill is made again, under the same call id).
    const made = occurrences();
    endNative(db);
    expect(made).toHaveLength(200);
    expect(new Set(made.map((o) => o.timer_id)).size).toBe(200);
    const called = new Set(executors.flatMap((e) => e.lines.filter((l) => "call" in l).map((l) => l.call as string)));
    expect(made.filter((o) => !called.has(o.call_id))).toEqual([]);
    // The cursor never went back, and every job was handled.
    for (let i = 1; i < floors.length; i++) expect(floors[i]).toBeGreaterThanOrEqual(floors[i - 1]);
    const handled = new Set(executors.flatMap((e) => e.lines.filter((l) => "seq" in l).map((l) => l.seq as number)));
    const jobs = events.filter((e) => e.type === "job.queued").map((e) => Number(e.seq));
    const finalFloor = floors[floors.length - 1] ?? 0;
    expect(jobs.filter((seq) => seq <= finalFloor && !handled.has(seq))).toEqual([]);
    handovers.sort((a, b) => a - b);
    const max = handovers[handovers.length - 1];
    console.log(
      `handover over ${rounds} kills: p50 ${Math.round(handovers[Math.floor(rounds / 2)])} ms, max ${Math.round(max)} ms; ${acknowledged.size} emits acknowledged`,
    );
    expect(max).toBeLessThan(10_000);

    for (const e of executors) e.child.kill("SIGKILL");
    for (const o of owners) o.child.kill("SIGTERM");
    await Promise.all(owners.map((o) => o.exited));
  }, 240_000);

  it("a standby that takes over checks streams' expected versions and cancels timers on events as the leader did, with what the leader wrote after the standby started", async () => {
    const [a, b] = await leaderAndStandby(1_500);
    const clientA = createClient({ url: a.url, emitVia: "unary" });
    // Written by the leader once the standby waits: a stream, and the first timer that cancels on job.queued.
    await clientA.emit("job.queued", { key: "s0" }, { stream: "account-1", expectedVersion: "noStream" });
    await clientA.emit("job.queued", { key: "s1" }, { stream: "account-1", expectedVersion: 0 });
    const cancelOn = [{ type: "job.queued", match: { "data.key": "input.key" } }];
    const { delayId } = await clientA.delay("takeover.ping", { key: "k-cancel" }, { intervalMs: 3_600_000 }, "unbounded", { cancelOn });
    const kept = await clientA.delay("takeover.ping", { key: "k-kept" }, { intervalMs: 3_600_000 }, "unbounded", { cancelOn });
    a.child.kill("SIGKILL");
    await a.exited;
    await b.waitLog(/^took over the lease/, 15_000);
    await b.waitLog(/^owner serving/);
    const clientB = createClient({ url: b.url, emitVia: "unary" });
    // Two expecting the version the leader left: exactly one is appended; then the next version.
    const racing = await Promise.allSettled([0, 1].map((i) => clientB.emit("job.queued", { key: `t${i}` }, { stream: "account-1", expectedVersion: 1 })));
    expect(racing.map((o) => (o.status === "fulfilled" ? Number(o.value.streamPosition) : "refused")).sort()).toEqual([2, "refused"]);
    expect(Number((await clientB.emit("job.queued", { key: "t2" }, { stream: "account-1", expectedVersion: 2 })).streamPosition)).toBe(3);
    await clientB.emit("job.queued", { key: "k-cancel" });
    await expect(clientB.getTimer(delayId)).rejects.toMatchObject({ code: 5 }); // NOT_FOUND: cancelled by the event
    expect((await clientB.getTimer(kept.delayId)).id).toBe(kept.delayId); // another key: still pending
    b.child.kill("SIGTERM");
    await b.exited;
  }, 60_000);

  it("a leader paused (SIGSTOP) past its lease loses it to the standby, and a client of both owners goes on there; resumed (SIGCONT), it commits nothing and steps down", async () => {
    const [a, b] = await leaderAndStandby(1_000);
    const clientA = createClient({ url: a.url, emitVia: "unary" });
    const clientB = createClient({ url: b.url, emitVia: "unary" });
    await clientA.emit("job.queued", { key: "before" }, { id: "before" });
    const following = createClient({ url: [a.url, b.url] });
    await following.emit("job.queued", { key: "before" }, { id: "following-before" });
    const metrics = async (url: string) => (await fetch(`${url}/metrics`)).text();
    expect(await metrics(a.url)).toMatch(/^chronolog_leader 1$[\s\S]*^chronolog_lease_term 1$[\s\S]*^chronolog_takeovers_total 0$/m);
    expect(await metrics(b.url)).toMatch(/^chronolog_leader 0$[\s\S]*^chronolog_lease_term 1$/m);

    // Paused with emits on their way to it: they wait in its socket buffers meanwhile.
    a.child.kill("SIGSTOP");
    const pausedAt = performance.now();
    const stalled = Array.from({ length: 5 }, (_, i) =>
      clientA.emit("job.queued", { key: "stalled" }, { id: `stalled-${i}` }).then(
        () => "ok",
        (e) => String(e),
      ),
    );
    await b.waitLog(/^took over the lease/, 15_000);
    await b.waitLog(/^owner serving/);
    expect(await metrics(b.url)).toMatch(/^chronolog_leader 1$[\s\S]*^chronolog_lease_term 2$[\s\S]*^chronolog_takeovers_total 1$/m);
    await clientB.emit("job.queued", { key: "after" }, { id: "after" });
    // A client of both owners, connected to the paused one: its unanswered ping (1.5 s after 1.5 s
    // without data) closes that connection, and the emit goes to the new leader while the old one
    // is still paused, a few seconds after the pause (with pings of 5 s + 5 s, 10 s after it).
    const followed = await following.emit("job.queued", { key: "after" }, { id: "followed" });
    expect(performance.now() - pausedAt).toBeLessThan(9_000);
    // A new client making a unary emit with an id (as the CLI does) starts at the paused owner: lost
    // there by its unanswered ping, the emit is made again at the new leader (its id makes that safe).
    const fresh = await createClient({ url: [a.url, b.url], emitVia: "unary" }).emit("job.queued", { key: "after" }, { id: "fresh-unary" });
    // So is an EmitBatch every event of which names its id.
    const batch = await createClient({ url: [a.url, b.url] }).emitBatch(
      ["fresh-batch-1", "fresh-batch-2"].map((id) => ({ type: "job.queued", data: { key: "after" }, id })),
    );
    expect(a.child.exitCode).toBe(null);
    a.child.kill("SIGCONT");

    expect(await a.exited).toBe(1);
    const stepDown = a.logs.find((l) => /^stepping down/.test(String(l.msg)));
    // Whichever it finds first: the row names another holder, a write finds another term, or the connection the takeover ended.
    expect(stepDown?.msg).toMatch(/another owner (took the lease|leads now)|the lease could not be renewed for \d+ ms|the connection to PostgreSQL broke/);
    // Said by the renewal thread when the owner's thread did not step down itself in time: the pause is named, not a database.
    if (/has not answered/.test(String(stepDown?.msg))) expect(stepDown?.msg).toMatch(/the process was paused for \d+ ms .*: the process ends$/);
    for (const outcome of await Promise.all(stalled)) expect(outcome).not.toBe("ok");
    const events = await readWholeLog(clientB);
    expect(events.map((e) => e.id).filter((id) => id.startsWith("stalled"))).toEqual([]);
    expect(events.filter((e) => e.id === "followed").map((e) => e.seq)).toEqual([followed.event!.seq]);
    expect(events.filter((e) => e.id === "fresh-unary").map((e) => e.seq)).toEqual([fresh.event!.seq]);
    expect(events.filter((e) => e.id.startsWith("fresh-batch")).map((e) => e.seq)).toEqual(batch.map((r) => r.event!.seq));
    expect(events.map((e) => Number(e.seq))).toEqual(events.map((_, i) => i + 1));
    b.child.kill("SIGTERM");
    await b.exited;
  }, 60_000);

  it("a leader resumed (SIGCONT) after its lease expired sends its executor no delivery and no invocation before it steps down", async () => {
    const [a, b] = await leaderAndStandby(1_000);
    const worker = executor(a.url); // the paused owner's only: it does not follow the leader
    const client = createClient({ url: a.url, emitVia: "unary" });
    await client.emit("job.queued", { key: "warm" });
    await until(() => worker.lines.length > 0, "the executor's first delivery");
    // Work on its way when the leader is paused: deliveries flowing, and calls coming due while it is paused.
    const dueAt = Date.now() + 1_000;
    await client.delayBatch(
      Array.from({ length: 40 }, (_, i) => ({ action: "takeover.ping", input: { n: i }, when: { at: dueAt + i * 50 }, overdue: "unbounded" as const })),
    );
    const emits = Array.from({ length: 20 }, (_, i) =>
      client.emitBatch(Array.from({ length: 100 }, (_, j) => ({ type: "job.queued", data: { key: `k${(i * 100 + j) % 7}` } }))).catch(() => undefined),
    );
    await until(() => worker.lines.length > 50, "deliveries flowing");
    a.child.kill("SIGSTOP");
    await b.waitLog(/^took over the lease/, 15_000);
    await b.waitLog(/^owner serving/);
    await sleep(Math.max(0, dueAt + 40 * 50 - Date.now())); // every call came due while it was paused
    // What the executor got before the pause it has handled (a busy machine may have held it up):
    // from here on, a line it prints is something the resumed leader sent.
    let heard = -1;
    await until(
      async () => {
        const quiet = worker.lines.length === heard;
        heard = worker.lines.length;
        if (!quiet) await sleep(500);
        return quiet;
      },
      "the executor quiet",
      30_000,
    );
    const heardBefore = worker.lines.length;
    const resumedAt = performance.now();
    a.child.kill("SIGCONT");
    expect(await a.exited).toBe(1);
    await Promise.all(emits);
    await sleep(300); // what it might have sent before it exited has been read
    expect(worker.lines.filter((l) => (l.readAt as number) >= resumedAt)).toEqual([]);
    expect(worker.lines.length).toBe(heardBefore);
    expect(a.logs.filter((l) => l.level === 50).map((l) => l.msg)).toEqual([]); // no errors logged before the one line that says why it steps down
    worker.child.kill("SIGKILL");
    b.child.kill("SIGTERM");
    await b.exited;
  }, 60_000);

  it("refuses to start with a clear error, writing nothing: an unreachable database, a wrong password, a newer schema, a data folder given as the store", async () => {
    const plugins = pluginsDir();
    const port = await freePort();
    const dead = await freePort();
    const start = (store: string) => start2(store, plugins);
    const start2 = async (store: string, folder: string) => {
      const o = serve(store, port, folder);
      expect(await o.exited).not.toBe(0);
      return o.logs.map((l) => String(l.msg ?? l.err ?? "")).join("\n") + o.logs.map((l) => JSON.stringify(l)).join("\n");
    };
    expect(await start(`postgres://chronolog@127.0.0.1:${dead}/nope`)).toMatch(/cannot connect to PostgreSQL at postgres:\/\/chronolog@127\.0\.0\.1:\d+\/nope/);
    const store = newDatabase();
    const wrong = new URL(store);
    wrong.password = "wrong";
    expect(await start(wrong.toString())).toMatch(
      /cannot connect to PostgreSQL at postgres:\/\/chronolog:\*\*\*@127\.0\.0\.1:\d+\/takeover_\d+: .*password authentication failed/,
    );
    const newer = connectNative(store, "chronolog tests");
    newer.querySync("CREATE TABLE chronolog_schema (version INTEGER NOT NULL); INSERT INTO chronolog_schema VALUES (999)");
    endNative(newer);
    expect(await start(store)).toMatch(/schema is version 999, newer than this owner's/);
    const check = connectNative(store, "chronolog tests");
    expect(check.querySync("SELECT count(*) AS n FROM pg_tables WHERE tablename = 'events'")[0].n).toBe(0);
    endNative(check);
    expect(await start(tempDir())).toMatch(/--store takes a PostgreSQL URL/);
    // A plugin folder that cannot register on this database (a second plugin declaring an event
    // type the first declares) is refused before the owner waits or leads, as on SQLite.
    const clashing = pluginsDir();
    const other = definePlugin({ name: "other", events: { "job.queued": { allow: ["*"] } } });
    writeFileSync(join(clashing, "other.json"), JSON.stringify(toJson(PluginManifestSchema, create(PluginManifestSchema, manifestOf(other)))));
    const fresh = newDatabase();
    expect(await start2(fresh, clashing)).toMatch(/event type job\.queued is already declared by plugin (takeover|other)/);
    const none = connectNative(fresh, "chronolog tests");
    expect(none.querySync("SELECT term, holder FROM chronolog_lease")).toEqual([{ term: 0, holder: "" }]); // never taken
    endNative(none);
  }, 60_000);
});

// Outside CI this needs .tools/toxiproxy-server (.ci/run builds it); in CI it always runs.
describe.runIf(process.env.CI === "true" || toxiproxyBinary() !== undefined)("a leader whose PostgreSQL goes silent (packets dropped, no reset)", () => {
  it("ends itself about a lease after its last renewal that held (its thread steps down, or its renewal thread ends it if the thread waits on PostgreSQL), and the standby takes over", async () => {
    const toxiproxy = await startToxiproxy();
    try {
      const proxy = await toxiproxy.proxy("silent", new URL(server.url).host);
      const store = newDatabase();
      const viaProxy = new URL(store);
      viaProxy.host = proxy.listen;
      const plugins = pluginsDir();
      const ports = [await freePort(), await freePort()];
      const leaseMs = 1_000;
      const a = serve(viaProxy.toString(), ports[0], plugins, ["--lease-ms", String(leaseMs)]);
      await a.waitLog(/^owner serving/);
      const b = serve(store, ports[1], plugins, ["--lease-ms", String(leaseMs)]);
      await b.waitLog(/^standby/);
      await createClient({ url: a.url, emitVia: "unary" }).emit("job.queued", { key: "before" });

      await proxy.blackHole();
      const silentAt = performance.now();
      let exitedAfterMs = -1;
      void a.exited.then(() => (exitedAfterMs = performance.now() - silentAt));
      // Its checks of the database do not block its thread, so it steps down itself once the lease
      // is a lease old (exit 1); were its thread waiting on a statement, its renewal thread would end it (SIGKILL).
      await until(() => exitedAfterMs >= 0, "the silent leader's exit", leaseMs + 10_000);
      expect([1, "SIGKILL"]).toContain(await a.exited);
      expect(exitedAfterMs).toBeLessThan(leaseMs + 5_000); // about a lease and a second; the bound only catches a leader that stays
      const stepDown = a.logs.filter((l) => /^stepping down/.test(String(l.msg)));
      expect(stepDown).toHaveLength(1);
      expect(stepDown[0]).toMatchObject({ level: 60, msg: expect.stringMatching(/the lease could not be renewed for \d+ ms/) });

      await b.waitLog(/^took over the lease/, 15_000);
      await b.waitLog(/^owner serving/);
      const after = await createClient({ url: b.url, emitVia: "unary" }).emit("job.queued", { key: "after" }, { id: "after" });
      expect(after.event?.id).toBe("after");
      b.child.kill("SIGTERM");
      await b.exited;
    } finally {
      toxiproxy.stop();
    }
  }, 60_000);
});
