import { Code, ConnectError, createClient as createRpcClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { afterEach, describe, expect, it } from "vitest";
import { createClient } from "../sdk/ts/src/client.js";
import { runExecutor } from "../sdk/ts/src/executor.js";
import { AdminService } from "../sdk/ts/src/gen/chronolog/v1/admin_pb.js";
import { definePlugin, manifestOf } from "../sdk/ts/src/plugin.js";
import { startTestOwner } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

const tokens = { admin: "admin-token-0123456789", client: "client-token-0123456789" };
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});


async function setup() {
  const owner = await startTestOwner({
    shutdownGraceMs: 100,
    config: { principals: [{ name: "ops", token: tokens.admin, role: "admin" }, { name: "web", token: tokens.client, role: "client" }] },
  });
  cleanups.push(() => owner.close());
  const transport = (token: string) => createGrpcTransport({ baseUrl: owner.url, interceptors: [(next) => (req) => (req.header.set("authorization", `Bearer ${token}`), next(req))] });
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
  return { owner, admin, asClient, client, handled, heal: () => (healthy = true) };
}

const types = async (client: ReturnType<typeof createClient>) => {
  const out: string[] = [];
  for await (const e of client.read()) out.push(e.type);
  return out;
};

describe("AdminService (O4, P8, B3)", () => {
  it("lists and redelivers failed deliveries; a finished redelivery leaves the record", async () => {
    const { admin, client, handled, heal } = await setup();
    const { event } = await client.emit("job.queued", { n: 1 });
    await until(async () => (await admin.listFailedDeliveries({ processor: "jobs.work" })).deliveries.length === 1, "a failed delivery");
    const [failed] = (await admin.listFailedDeliveries({})).deliveries;
    expect(failed).toMatchObject({ processor: "jobs.work", error: "not yet", attempts: 3 });
    expect(failed.event?.id).toBe(event!.id);
    const [status] = (await admin.listProcessors({})).processors;
    expect(status).toMatchObject({ name: "jobs.work", failures: 1n, inFlight: 0, lag: 0n });
    expect(status.ackFloor).toBeGreaterThan(event!.seq); // past the event and its retried/failed records
    heal();
    expect((await admin.redeliverFailed({ processor: "jobs.work" })).count).toBe(1);
    await until(() => handled.length === 1, "redelivered run");
    await until(async () => (await admin.listFailedDeliveries({ processor: "jobs.work" })).deliveries.length === 0, "record cleared");
    expect(await types(client)).toContain("processor.redelivered");
  });

  it("moves a cursor back to replay, by seq and by time; records the move", async () => {
    const { admin, client, handled, heal } = await setup();
    heal();
    await client.emit("job.queued", { n: 1 });
    await client.emit("job.queued", { n: 2 });
    await until(() => handled.length === 2, "two deliveries");
    const moved = await admin.moveCursor({ processor: "jobs.work", to: { case: "ackFloor", value: 0n } });
    expect(moved.processor?.ackFloor).toBe(0n);
    await until(() => handled.length === 4, "replay");
    expect(handled).toEqual([1, 2, 1, 2]);
    await admin.moveCursor({ processor: "jobs.work", to: { case: "at", value: timestampFromMs(Date.now() + 60_000) } });
    expect((await types(client)).filter((t) => t === "processor.cursor_moved")).toHaveLength(2);
    const past = await admin.moveCursor({ processor: "jobs.work", to: { case: "ackFloor", value: 10_000n } }).catch((e) => ConnectError.from(e));
    expect((past as ConnectError).code).toBe(Code.InvalidArgument);
    const unknown = await admin.moveCursor({ processor: "jobs.nope", to: { case: "ackFloor", value: 0n } }).catch((e) => ConnectError.from(e));
    expect((unknown as ConnectError).code).toBe(Code.NotFound);
  });

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

  it("lists executors and runs maintenance SQL, recorded as maintenance.sql", async () => {
    const { admin, client } = await setup();
    const [session] = (await admin.listExecutors({})).executors;
    expect(session).toMatchObject({ executor: "jobs", principal: "ops", processors: ["jobs.work"] });
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
    // The log is immutable (E1): no rewriting events, no attaching other files.
    for (const sql of ["UPDATE events SET data = '{}' WHERE seq = 1", "delete from main.events where seq = 2", "INSERT OR REPLACE INTO events (seq) VALUES (1)", "ATTACH DATABASE '/tmp/x.db' AS x"]) {
      const refused = await admin.executeSql({ sql }).catch((e) => ConnectError.from(e));
      expect((refused as ConnectError).code, sql).toBe(Code.InvalidArgument);
    }
    expect((await client.log.readLog({})).headSeq).toBe(before);
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
