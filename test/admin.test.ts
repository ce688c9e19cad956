// @module-tag postgres

import { Code, ConnectError, createClient as createRpcClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { afterEach, describe, expect, it } from "vitest";
import { createClient } from "../sdk/ts/src/client.js";
import { runExecutor } from "../sdk/ts/src/executor.js";
import { AdminService } from "@chronolog/sdk/gen/chronolog/v1/admin_pb";
import { definePlugin, manifestOf } from "../sdk/ts/src/plugin.js";
import { onPostgres, startTestOwner } from "./helpers/owner.js";
import { eventsOf, expectConnectError } from "./helpers/log-snapshot.js";
import { until } from "./helpers/until.js";

const tokens = { admin: "admin-token-0123456789", client: "client-token-0123456789" };
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function setup() {
  const owner = await startTestOwner({
    shutdownGraceMs: 100,
    config: {
      principals: [
        { name: "ops", token: tokens.admin, role: "admin" },
        { name: "web", token: tokens.client, role: "client" },
      ],
    },
  });
  cleanups.push(() => owner.close());
  const transport = (token: string) =>
    createGrpcTransport({ baseUrl: owner.url, interceptors: [(next) => (req) => (req.header.set("authorization", `Bearer ${token}`), next(req))] });
  const admin = createRpcClient(AdminService, transport(tokens.admin));
  const asClient = createRpcClient(AdminService, transport(tokens.client));
  const client = createClient({ url: owner.url, token: tokens.admin });
  const handled: number[] = [];
  let healthy = false;
  const plugin = definePlugin({
    name: "jobs",
    events: { "job.queued": { allow: ["*"] } },
    processors: {
      work: {
        on: "job.queued",
        retryDelaysMs: [5, 5],
        run(ctx) {
          if (!healthy) throw new Error("not yet");
          handled.push(Number(ctx.event.seq));
        },
      },
    },
  });
  await client.registerPlugin(manifestOf(plugin));
  const executor = runExecutor({ url: owner.url, token: tokens.admin, plugins: [plugin], onError: () => {} });
  cleanups.push(() => executor.stop(50));
  await executor.ready;
  return { owner, admin, asClient, client, handled, heal: () => (healthy = true), sicken: () => (healthy = false) };
}

const types = async (client: ReturnType<typeof createClient>) => {
  const out: string[] = [];
  for await (const e of client.read()) out.push(e.type);
  return out;
};

describe("AdminService", () => {
  it("lists and redelivers failed deliveries; a finished redelivery leaves the record", async () => {
    const { admin, client, handled, heal } = await setup();
    const { event } = await client.emit("job.queued", { n: 1 });
    await until(async () => (await admin.listFailedDeliveries({ processor: "jobs.work" })).deliveries.length === 1, "a failed delivery");
    const [failed] = (await admin.listFailedDeliveries({})).deliveries;
    expect(failed).toMatchObject({ processor: "jobs.work", error: "not yet", attempts: 3 });
    expect(failed.event?.id).toBe(event!.id);
    // Past the event and its retried/failed records, once the processor read them (a busy machine may take a moment).
    await until(async () => (await admin.listProcessors({})).processors[0].ackFloor > event!.seq + 2n, "the ack floor past the failure's records");
    const [status] = (await admin.listProcessors({})).processors;
    expect(status).toMatchObject({ name: "jobs.work", failures: 1n, inFlight: 0, lag: 0n });
    heal();
    expect((await admin.redeliverFailed({ processor: "jobs.work" })).count).toBe(1);
    await until(() => handled.length === 1, "redelivered run");
    await until(async () => (await admin.listFailedDeliveries({ processor: "jobs.work" })).deliveries.length === 0, "record cleared");
    expect(await types(client)).toContain("processor.redelivered");
  });

  it("pages failed deliveries from where the last page ended, even when deliveries before it were dismissed; each names its event's seq", async () => {
    const { admin, client } = await setup();
    const seqs: bigint[] = [];
    for (let n = 0; n < 5; n++) seqs.push((await client.emit("job.queued", { n })).event!.seq);
    await until(async () => (await admin.listFailedDeliveries({ processor: "jobs.work" })).deliveries.length === 5, "five failed deliveries");
    const first = await admin.listFailedDeliveries({ processor: "jobs.work", pageSize: 2 });
    expect(first.deliveries.map((d) => d.seq)).toEqual(seqs.slice(0, 2));
    expect(first.deliveries.map((d) => d.event?.seq)).toEqual(seqs.slice(0, 2));
    // Both listed deliveries dismissed before the next page is asked for: it still starts at the third.
    expect((await admin.dismissFailed({ processor: "jobs.work", seqs: seqs.slice(0, 2) })).count).toBe(2);
    const second = await admin.listFailedDeliveries({ processor: "jobs.work", pageSize: 2, pageToken: first.nextPageToken });
    expect(second.deliveries.map((d) => d.seq)).toEqual(seqs.slice(2, 4));
    const third = await admin.listFailedDeliveries({ processor: "jobs.work", pageSize: 2, pageToken: second.nextPageToken });
    expect(third.deliveries.map((d) => d.seq)).toEqual(seqs.slice(4));
    expect(third.nextPageToken).toBe("");
    await expectConnectError(
      admin.listFailedDeliveries({ pageToken: "nonsense" }),
      Code.InvalidArgument,
      /page_token is not one returned by ListFailedDeliveries/,
    );
    const otherList = Buffer.from(JSON.stringify(["other.processor", 1])).toString("base64url");
    await expectConnectError(admin.listFailedDeliveries({ processor: "jobs.work", pageToken: otherList }), Code.InvalidArgument, /of another processor's list/);
  });

  it("moves a cursor back to replay, by seq and by time; records the move", async () => {
    const { admin, client, handled, heal } = await setup();
    heal();
    await client.emit("job.queued", { n: 1 });
    await client.emit("job.queued", { n: 2 });
    await until(() => handled.length === 2, "two deliveries");
    const moved = await admin.moveCursor({ processor: "jobs.work", to: { case: "ackFloor", value: 0n } });
    expect(moved.processor?.name).toBe("jobs.work"); // its live floor: the replay may already have moved it on
    const recorded = (await eventsOf(client, ["processor.cursor_moved"])).map((e) => e.data);
    expect(recorded).toEqual([expect.objectContaining({ processor: "jobs.work", from: 2, to: 0 })]);
    await until(() => handled.length === 4, "replay");
    expect(handled).toEqual([1, 2, 1, 2]);
    await admin.moveCursor({ processor: "jobs.work", to: { case: "at", value: timestampFromMs(Date.now() + 60_000) } });
    expect((await types(client)).filter((t) => t === "processor.cursor_moved")).toHaveLength(2);
    const past = await admin.moveCursor({ processor: "jobs.work", to: { case: "ackFloor", value: 10_000n } }).catch((e) => ConnectError.from(e));
    expect((past as ConnectError).code).toBe(Code.InvalidArgument);
    const unknown = await admin.moveCursor({ processor: "jobs.nope", to: { case: "ackFloor", value: 0n } }).catch((e) => ConnectError.from(e));
    expect((unknown as ConnectError).code).toBe(Code.NotFound);
  });

  it.runIf(onPostgres)(
    "on PostgreSQL, RedeliverFailed, MoveCursor by time, ListProcessors and DismissFailed wait for no round trip: each read goes without blocking the owner",
    async () => {
      const { owner, admin, client, handled, heal, sicken } = await setup();
      /** The round trips the owner's thread waited for so far (chronolog_store_waits_total, both connections). */
      const waits = async () => {
        const response = await fetch(`${owner.url}/metrics`, { headers: { authorization: `Bearer ${tokens.admin}` } });
        expect(response.status).toBe(200);
        const text = await response.text();
        return [...text.matchAll(/^chronolog_store_waits_total\{[^}]*\} (\d+)$/gm)].reduce((sum, [, n]) => sum + Number(n), 0);
      };
      const failures = async () => (await admin.listFailedDeliveries({ processor: "jobs.work", pageSize: 1000 })).deliveries.length;
      // A first failure redelivered and the cursor moved once, so every statement is prepared.
      await client.emit("job.queued", { n: 0 });
      await until(async () => (await failures()) === 1, "a failed delivery");
      heal();
      expect((await admin.redeliverFailed({ processor: "jobs.work" })).count).toBe(1);
      await until(async () => (await failures()) === 0, "the first redelivery finished");
      await admin.moveCursor({ processor: "jobs.work", to: { case: "at", value: timestampFromMs(Date.now() + 60_000) } });
      await admin.setProcessorPaused({ processor: "jobs.work", paused: true });
      await admin.setProcessorPaused({ processor: "jobs.work", paused: false });
      // 40 failures to redeliver: the handler fails again until healed.
      handled.length = 0;
      const seqs: number[] = [];
      sicken();
      for (let n = 1; n <= 40; n++) seqs.push(Number((await client.emit("job.queued", { n })).event!.seq));
      await until(async () => (await failures()) === 40, "40 failed deliveries", 30_000);
      heal();
      const before = await waits();
      expect((await admin.redeliverFailed({ processor: "jobs.work" })).count).toBe(40);
      expect((await admin.listProcessors({})).processors[0].name).toBe("jobs.work");
      await until(() => handled.length === 40, "40 redelivered runs");
      expect([...handled].sort((a, b) => a - b)).toEqual(seqs);
      // By time: from the first event committed at or after a moment between two emits.
      const early = (await client.emit("job.queued", { n: 41 })).event!;
      await until(() => handled.includes(Number(early.seq)), "the early event handled");
      await new Promise((r) => setTimeout(r, 20));
      const moment = Date.now();
      await new Promise((r) => setTimeout(r, 20));
      const late = (await client.emit("job.queued", { n: 42 })).event!;
      await until(() => handled.includes(Number(late.seq)), "the late event handled");
      const moved = await admin.moveCursor({ processor: "jobs.work", to: { case: "at", value: timestampFromMs(moment) } });
      expect(moved.processor?.failures).toBe(0n);
      const recorded = (await eventsOf(client, ["processor.cursor_moved"])).map((e) => e.data).at(-1);
      expect(recorded).toMatchObject({ processor: "jobs.work", to: Number(late.seq) - 1 });
      await until(() => handled.filter((seq) => seq === Number(late.seq)).length === 2, "the late event handled again");
      await until(async () => (await failures()) === 0, "every failure's record cleared");
      expect((await waits()) - before, "round trips waited for").toBeLessThan(5);
      // DismissFailed reads what is on record without a round trip waited for too.
      sicken();
      const dismissed = (await client.emit("job.queued", { n: 43 })).event!;
      await until(async () => (await failures()) === 1, "a failure to dismiss");
      const beforeDismissal = await waits();
      expect((await admin.dismissFailed({ processor: "jobs.work", all: true })).seqs).toEqual([dismissed.seq]);
      expect((await waits()) - beforeDismissal, "round trips waited for by DismissFailed").toBeLessThan(2);
    },
  );

  it("pauses and resumes a processor", async () => {
    const { admin, client, handled, heal } = await setup();
    heal();
    await admin.setProcessorPaused({ processor: "jobs.work", paused: true });
    await client.emit("job.queued", {});
    await new Promise((r) => setTimeout(r, 150));
    expect(handled).toEqual([]);
    await admin.setProcessorPaused({ processor: "jobs.work", paused: false });
    await until(() => handled.length === 1, "delivery after resume");
  });

  it("pausing a paused processor, or resuming a running one, changes and records nothing, and says so", async () => {
    const { admin, client, handled, heal } = await setup();
    heal();
    const recorded = async () => (await types(client)).filter((t) => t === "processor.paused" || t === "processor.resumed");
    const resumeRunning = await admin.setProcessorPaused({ processor: "jobs.work", paused: false });
    expect(resumeRunning).toMatchObject({ unchanged: true, processor: { name: "jobs.work", paused: false } });
    expect(await recorded()).toEqual([]);

    const pause = await admin.setProcessorPaused({ processor: "jobs.work", paused: true });
    expect(pause).toMatchObject({ unchanged: false, processor: { paused: true } });
    const head = (await client.log.readLog({})).headSeq;
    const again = await admin.setProcessorPaused({ processor: "jobs.work", paused: true });
    expect(again).toMatchObject({ unchanged: true, processor: { paused: true } });
    expect((await client.log.readLog({})).headSeq).toBe(head); // nothing written
    expect(await recorded()).toEqual(["processor.paused"]);
    // Still paused: the repeated pause did not disturb it.
    await client.emit("job.queued", {});
    await new Promise((r) => setTimeout(r, 150));
    expect(handled).toEqual([]);

    expect(await admin.setProcessorPaused({ processor: "jobs.work", paused: false })).toMatchObject({ unchanged: false, processor: { paused: false } });
    await until(() => handled.length === 1, "delivery after resume");
    expect(await admin.setProcessorPaused({ processor: "jobs.work", paused: false })).toMatchObject({ unchanged: true, processor: { paused: false } });
    expect(await recorded()).toEqual(["processor.paused", "processor.resumed"]);
    const unknown = await admin.setProcessorPaused({ processor: "jobs.nope", paused: true }).catch((e) => ConnectError.from(e));
    expect((unknown as ConnectError).code).toBe(Code.NotFound);
  });

  it("lists executors", async () => {
    const { admin } = await setup();
    const [session] = (await admin.listExecutors({})).executors;
    expect(session).toMatchObject({ executor: "jobs", principal: "ops", processors: ["jobs.work"] });
  });

  it.runIf(onPostgres)("maintenance SQL is FAILED_PRECONDITION on the PostgreSQL store, naming psql, and records nothing", async () => {
    const { admin, client } = await setup();
    const before = (await client.log.readLog({})).headSeq;
    for (const sql of ["SELECT name, revision FROM plugins", "UPDATE cursors SET updated_at = 0"]) {
      await expectConnectError(admin.executeSql({ sql }), Code.FailedPrecondition, /runs on the SQLite store only: on PostgreSQL, use psql/);
    }
    expect((await client.log.readLog({})).headSeq).toBe(before);
  });

  // Maintenance SQL runs on the SQLite store only (ExecuteSql answers FAILED_PRECONDITION on PostgreSQL, above).
  it.skipIf(onPostgres)("runs maintenance SQL, recorded as maintenance.sql", async () => {
    const { admin, client } = await setup();
    const query = await admin.executeSql({ sql: "SELECT name, revision FROM plugins" });
    expect(query.rows).toEqual([{ name: "jobs", revision: 1 }]);
    const write = await admin.executeSql({ sql: "UPDATE cursors SET updated_at = 0" });
    expect(write.changes).toBe(1n);
    const records = [];
    for await (const e of client.read({ types: ["maintenance.sql"] })) records.push(e.data);
    expect(records).toEqual([
      { sql: "SELECT name, revision FROM plugins", params: [], changes: 0, by: "ops" },
      { sql: "UPDATE cursors SET updated_at = 0", params: [], changes: 1, by: "ops" },
    ]);
    const before = (await client.log.readLog({})).headSeq;
    const bad = await admin.executeSql({ sql: "SELEC nope" }).catch((e) => ConnectError.from(e));
    expect((bad as ConnectError).code).toBe(Code.InvalidArgument);
    // The log is immutable: no rewriting events, no attaching other files.
    for (const sql of [
      "UPDATE events SET data = '{}' WHERE seq = 1",
      "delete from main.events where seq = 2",
      "INSERT OR REPLACE INTO events (seq) VALUES (1)",
      "ATTACH DATABASE '/tmp/x.db' AS x",
    ]) {
      const refused = await admin.executeSql({ sql }).catch((e) => ConnectError.from(e));
      expect((refused as ConnectError).code, sql).toBe(Code.InvalidArgument);
    }
    expect((await client.log.readLog({})).headSeq).toBe(before);
    // The owner's schema changes only through migrations: a dropped table would keep the next owner from starting.
    for (const sql of [
      "DROP TABLE timer_occurrences",
      "ALTER TABLE cursors RENAME TO cursors_old",
      "ALTER TABLE plugins ADD COLUMN note TEXT",
      "DROP INDEX timers_by_due",
      'drop index main."timers_spent"',
    ]) {
      await expectConnectError(admin.executeSql({ sql }), Code.InvalidArgument, /may not drop, rename or alter the owner's own tables/);
    }
    expect((await admin.executeSql({ sql: "SELECT count(*) AS n FROM timer_occurrences" })).rows).toEqual([{ n: 0 }]);
  });

  it.skipIf(onPostgres)(
    "a maintenance query runs off the owner's thread: an endless one is stopped (DEADLINE_EXCEEDED) while the owner keeps serving",
    async () => {
      const { admin, client } = await setup();
      const endless = admin.executeSql({ sql: "SELECT count(*) FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c)" });
      const started = Date.now();
      expect((await client.emit("job.queued", { n: 1 })).event?.seq).toBeGreaterThan(0n); // served meanwhile
      expect(Date.now() - started).toBeLessThan(2_000);
      await expectConnectError(endless, Code.DeadlineExceeded, /ran longer than 10 s and was stopped/);
      await expectConnectError(
        admin.executeSql({ sql: "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 10001) SELECT x FROM c" }),
        Code.ResourceExhausted,
        /more than 10000 rows; add a LIMIT/,
      );
      expect(
        (await admin.executeSql({ sql: "SELECT ? AS a, x'00ff' AS b", params: { values: [{ kind: { case: "stringValue", value: "p" } }] } })).rows,
      ).toEqual([{ a: "p", b: "AP8=" }]);
    },
    30_000,
  );

  it.skipIf(onPostgres)("refuses maintenance SQL that would rewrite the log or the owner's connection, whatever the spelling; records nothing", async () => {
    const { admin, client, handled, heal } = await setup();
    heal();
    const first = (await client.emit("job.queued", { n: 1 })).event!;
    await client.emit("job.queued", { n: 2 });
    await until(() => handled.length === 2, "both handled"); // the processor records nothing more
    const snapshot = async () => {
      const out: { seq: bigint; id: string; type: string; data: unknown }[] = [];
      for await (const e of client.read()) out.push({ seq: e.seq, id: e.id, type: e.type, data: e.data });
      return out;
    };
    const before = await snapshot();
    const refusedWith = async (sql: string, params: string[] = []) => {
      const e = await admin
        .executeSql({ sql, params: params.length > 0 ? { values: params.map((p) => ({ kind: { case: "stringValue" as const, value: p } })) } : undefined })
        .catch((err) => ConnectError.from(err));
      expect(e, sql).toBeInstanceOf(ConnectError);
      expect((e as ConnectError).code, `${sql}: ${(e as ConnectError).rawMessage}`).toBe(Code.InvalidArgument);
      return (e as ConnectError).rawMessage;
    };
    // Statements spelled to slip past a check on the table's name.
    expect(await refusedWith("UPDATE 'events' SET data='{}' WHERE id='x'")).toMatch(/the log is immutable/);
    expect(await refusedWith("DELETE FROM main . events WHERE id=?", [first.id])).toMatch(/the log is immutable/);
    expect(await refusedWith("PRAGMA writable_schema=ON")).toMatch(/may read PRAGMAs but not set them: PRAGMA writable_schema/);
    // Writes to the log, however spelled.
    for (const sql of [
      `UPDATE "events" SET data = '{}'`,
      "update [events] set type = 'x' where seq = 1",
      "UPDATE `main`.`events` SET data = '{}'",
      "UPDATE OR IGNORE events SET data = '{}'",
      "DELETE /* just a comment */ FROM -- and another\n events",
      "DELETE FROM events",
      "WITH x AS (SELECT seq FROM events LIMIT 1) DELETE FROM events WHERE seq IN x",
      "REPLACE INTO events (seq, id, type, data, at) SELECT seq, id, type, '{}', at FROM events",
      "INSERT INTO events (seq, id, type, data, at) VALUES (1000, 'forged', 'job.queued', '{}', 0)",
      "INSERT OR REPLACE INTO events (seq) VALUES (1)",
      "INSERT INTO events (seq, id, type, data, at) VALUES (1, 'x', 't', '{}', 0) ON CONFLICT DO UPDATE SET data = '{}'",
      "DROP TABLE events",
      'DROP TABLE IF EXISTS main."events"',
      "DROP INDEX events_by_type",
      "REINDEX events",
      "ALTER TABLE events DROP COLUMN cause",
    ]) {
      expect(await refusedWith(sql), sql).toMatch(/the log is immutable/);
    }
    // Its schema and triggers (renames and added columns run, then are undone).
    for (const sql of [
      "ALTER TABLE events RENAME TO old_events",
      "ALTER TABLE events ADD COLUMN note TEXT",
      "ALTER TABLE events RENAME COLUMN data TO body",
      "CREATE INDEX events_by_actor ON events (actor)",
    ]) {
      expect(await refusedWith(sql), sql).toMatch(/may not change the events table's schema/);
    }
    for (const sql of [
      "CREATE TRIGGER sneaky AFTER INSERT ON cursors BEGIN DELETE FROM events; END",
      "CREATE TRIGGER forge AFTER UPDATE ON plugins BEGIN INSERT INTO events (seq, id, type, data, at) VALUES (0, 'f', 't', '{}', 0); END",
      "DROP TRIGGER events_immutable_no_delete",
    ]) {
      expect(await refusedWith(sql), sql).toMatch(/create or drop triggers/);
    }
    // Temporary objects would shadow the owner's tables on its own connection.
    for (const sql of ["CREATE TEMP TABLE events (seq INTEGER)", "CREATE TEMPORARY VIEW events AS SELECT 1 AS seq", "CREATE TEMP TABLE scratch (x)"]) {
      expect(await refusedWith(sql), sql).toMatch(/temporary tables/);
    }
    expect(await refusedWith("ATTACH DATABASE '/tmp/chronolog-attach.db' AS x")).toMatch(/ATTACH or DETACH/);
    expect(await refusedWith("attach '/tmp/chronolog-attach.db' as main2")).toMatch(/ATTACH or DETACH/);
    expect(await refusedWith("DETACH x")).toMatch(/ATTACH or DETACH/);
    expect(await refusedWith("VACUUM INTO '/tmp/chronolog-vacuum-copy.db'")).toMatch(/VACUUM/);
    expect(await refusedWith("VACUUM")).toMatch(/VACUUM/);
    // Settings of the owner's connection or the database header: refused before SQLite compiles them (it applies many while compiling).
    for (const sql of [
      "PRAGMA journal_mode = DELETE",
      "PRAGMA main.synchronous = OFF",
      'pragma "locking_mode" (EXCLUSIVE)',
      "; /* empty statement first */ PRAGMA query_only = 1",
      "EXPLAIN PRAGMA synchronous = 0",
      "EXPLAIN QUERY PLAN PRAGMA writable_schema = 1",
      "PRAGMA [user_version] = 0",
      "PRAGMA 'foreign_keys' = OFF",
    ]) {
      expect(await refusedWith(sql), sql).toMatch(/may read PRAGMAs but not set them/);
    }
    // Transaction control would end the owner's group commit under the other callers' feet.
    for (const sql of ["COMMIT", "ROLLBACK", "BEGIN", "SAVEPOINT x", "RELEASE unit"]) {
      expect(await refusedWith(sql), sql).toMatch(/group commit/);
    }
    // Nothing changed, nothing recorded.
    expect(await snapshot()).toEqual(before);
    const records = [];
    for await (const e of client.read({ types: ["maintenance.sql"] })) records.push(e);
    expect(records).toEqual([]);

    // Ordinary maintenance still works, and reading the log and the settings too.
    const ok = async (sql: string) => (await admin.executeSql({ sql })).rows;
    expect(await ok("SELECT count(*) AS n FROM events")).toEqual([{ n: before.length }]);
    expect(await ok("PRAGMA synchronous")).toEqual([{ synchronous: 1 }]);
    expect(await ok("PRAGMA journal_mode")).toEqual([{ journal_mode: "wal" }]);
    expect(await ok("PRAGMA query_only")).toEqual([{ query_only: 0 }]);
    expect((await ok("PRAGMA table_info(events)")).map((r) => r.name)).toEqual(["seq", "id", "type", "data", "cause", "actor", "at", "trace"]);
    expect((await ok("EXPLAIN DELETE FROM events")).length).toBeGreaterThan(0); // a listing: runs nothing
    expect((await ok("EXPLAIN QUERY PLAN SELECT * FROM events WHERE seq = 1")).length).toBeGreaterThan(0); // read-only: the child process lists it
    await ok("CREATE TABLE scratch AS SELECT type, count(*) AS n FROM events GROUP BY type");
    await ok("CREATE INDEX scratch_by_n ON scratch (n)");
    expect((await admin.executeSql({ sql: "UPDATE scratch SET n = n + 1" })).changes).toBe(2n); // job.queued and maintenance.sql
    await ok("DROP TABLE scratch");
    expect((await admin.executeSql({ sql: "UPDATE cursors SET updated_at = 0" })).changes).toBe(1n);
    await ok("ANALYZE");
    expect(await ok("SELECT name FROM sqlite_schema WHERE type = 'trigger' ORDER BY name")).toEqual([
      { name: "events_immutable_no_delete" },
      { name: "events_immutable_no_update" },
      { name: "timer_cancels_gone" },
    ]);
    const after = await snapshot();
    expect(after.slice(0, before.length)).toEqual(before);
    expect(after.slice(before.length).map((e) => e.type)).toEqual(Array(14).fill("maintenance.sql")); // one per statement above
    expect(after.map((e) => e.seq)).toEqual(after.map((_, i) => BigInt(i + 1)));
    // The owner still commits (its connection's settings are intact).
    expect((await client.emit("job.queued", { n: 3 })).event?.seq).toBe(BigInt(after.length + 1));
  });

  it("refuses non-admins and records nothing", async () => {
    const { asClient, client } = await setup();
    const before = (await client.log.readLog({})).headSeq;
    for (const call of [
      () => asClient.listProcessors({}),
      () => asClient.executeSql({ sql: "DELETE FROM events" }),
      () => asClient.moveCursor({ processor: "jobs.work", to: { case: "ackFloor", value: 0n } }),
      () => asClient.setProcessorPaused({ processor: "jobs.work", paused: true }),
    ]) {
      const e = await call().catch((err) => ConnectError.from(err));
      expect((e as ConnectError).code).toBe(Code.PermissionDenied);
    }
    expect((await client.log.readLog({})).headSeq).toBe(before);
  });
});
