// chronolog copy-store: an SQLite data folder's log, documents, cursors and timers move to an
// empty PostgreSQL database, and an owner on PostgreSQL goes on from where the folder's stopped.
//
// @module-tag serial
// @module-tag sqlite-only
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "../sdk/ts/src/client.js";
import { definePlugin, manifestOf } from "../sdk/ts/src/plugin.js";
import { connectNative, endNative } from "../server/src/store/postgres/pg-db.js";
import { Code } from "@connectrpc/connect";
import { cli } from "./helpers/cli.js";
import { expectConnectError } from "./helpers/log-snapshot.js";
import { until } from "./helpers/until.js";
import { startTestOwner, tempDir } from "./helpers/owner.js";
import { startPostgresServer, type PostgresServer } from "./helpers/postgres-server.js";

let server: PostgresServer;
beforeAll(async () => {
  server = await startPostgresServer();
}, 60_000);
afterAll(() => server?.stop());

const notes = definePlugin({
  name: "notes",
  events: { "note.added": { allow: ["*"] }, "note.draft": { allow: ["*"] } },
  collections: { note: { allow: ["*"] } },
  actions: { remind: { allow: ["*"], inputSchema: { type: "object" }, async run() {} } },
});

describe("copy-store", () => {
  it("copies a folder into an empty database, all or nothing; an owner on it goes on from the folder's head, documents and timers", async () => {
    const dataDir = tempDir();
    // Retention keeps the last draft: the first is removed before the copy.
    const retention = { rules: [{ types: "note.draft", max_count: 1 }], interval_ms: 100 };
    const config = { principals: [{ name: "ops", token: "an-admin-token-0123", role: "admin" as const }], log: { retention } };
    const before = await startTestOwner({ dataDir, store: undefined, config });
    const client = createClient({ url: before.url, emitVia: "unary", token: "an-admin-token-0123" });
    await client.registerPlugin(manifestOf(notes));
    for (let i = 1; i <= 3; i++) await client.emit("note.added", { i }, { id: `note-${i}` });
    await client.createDocument("note", { _id: "a", text: "first" });
    const draft = await client.emit("note.draft", { v: 1 });
    await client.emit("note.draft", { v: 2 });
    await client.emit("note.added", { i: 0 }, { id: "note-0" }); // the log's last event is never removed
    await until(async () => (await client.log.readLog({ types: ["note.draft"] })).events.length === 1, "the first draft removed");
    const delay = await client.delay("notes.remind", { about: "a" }, { intervalMs: 86_400_000 }, "unbounded");
    const head = (await client.log.readLog({ afterSeq: 0n, pageSize: 1 })).headSeq;
    await before.close();

    const admin = connectNative(server.url, "chronolog tests");
    admin.querySync("CREATE DATABASE copied");
    endNative(admin);
    const store = new URL(server.url);
    store.pathname = "/copied";
    const copy = await cli(["copy-store", "--data", dataDir, "--store", store.toString()]);
    expect(copy.stderr).toBe("");
    expect(copy.code).toBe(0);
    expect(copy.stdout).toMatch(new RegExp(`^events: ${head - 1n} rows$`, "m"));
    expect(copy.stdout).toMatch(/^removed_events: 1 rows$/m);
    expect(copy.stdout).toMatch(/^documents: 1 rows$/m);
    expect(copy.stdout).toMatch(/^timers: 1 rows$/m);

    const again = await cli(["copy-store", "--data", dataDir, "--store", store.toString()]);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toMatch(/holds events already/);
    const notAFolder = await cli(["copy-store", "--data", tempDir(), "--store", store.toString()]);
    expect(notAFolder.stderr).toMatch(/is not a Chronolog data folder/);

    const after = await startTestOwner({ dataDir: tempDir(), store: store.toString() });
    try {
      const moved = createClient({ url: after.url, emitVia: "unary" });
      const page = await moved.log.readLog({ afterSeq: 0n, pageSize: 1000 });
      expect(page.events.map((e) => e.id).slice(0, 3)).toEqual(["note-1", "note-2", "note-3"]);
      expect(page.headSeq).toBe(head);
      expect((await moved.emit("note.added", { i: 4 }, { id: "note-4" })).event?.seq).toBe(head + 1n);
      expect((await moved.emit("note.added", { i: 1 }, { id: "note-1" })).event?.seq).toBe(1n); // ids carried over
      expect(await moved.getDocument("note", "a")).toMatchObject({ text: "first" });
      await expectConnectError(moved.log.getEvent({ id: draft.event!.id }), Code.NotFound, /removed from the log by retention/);
      expect(await (await fetch(`${after.url}/metrics`)).text()).toMatch(/^chronolog_log_removed_events_total 1$/m);
      const timers = [];
      for await (const t of moved.listTimers()) timers.push(t.id);
      expect(timers).toEqual([delay.delayId]);
    } finally {
      await after.close();
    }
  }, 120_000);
});

describe("migrate --store", () => {
  it("creates the schema of an empty database, then finds it up to date", async () => {
    const admin = connectNative(server.url, "chronolog tests");
    admin.querySync("CREATE DATABASE migrated");
    endNative(admin);
    const store = new URL(server.url);
    store.pathname = "/migrated";
    const first = await cli(["migrate", "--store", store.toString()]);
    expect(first.stdout).toMatch(/: created the schema \(version \d+\)$/m);
    const again = await cli(["migrate", "--store", store.toString()]);
    expect(again.stdout).toMatch(/: schema up to date \(version \d+\)$/m);
    expect(again.stdout).toContain("postgres://chronolog:***@"); // the password masked
  }, 60_000);
});
