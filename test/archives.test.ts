// chronolog export and import: a log written to an archive (gzip NDJSON files and a manifest)
// through a running owner's ReadLog, and read back into the empty log of another store, offline,
// with the same rows: seqs (gaps included), ids, types, data, causes, actors and commit times.
//
// @module-tag serial
// @module-tag postgres
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync, gzipSync } from "node:zlib";
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { createClient } from "../sdk/ts/src/client.js";
import { runExecutor } from "../sdk/ts/src/executor.js";
import { definePlugin, manifestOf } from "../sdk/ts/src/plugin.js";
import { openStore } from "../server/src/store/sqlite/open.js";
import { connectNative, endNative } from "../server/src/store/postgres/pg-db.js";
import type { Manifest } from "../server/src/archive/manifest.js";
import { archivedLine, parseArchivedLine } from "../server/src/archive/lines.js";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { EventSchema } from "@chronolog/sdk/gen/chronolog/v1/event_pb";
import { chronologArgs, startingProcess } from "./helpers/chronolog.js";
import { cli } from "./helpers/cli.js";
import { onPostgres, queryStore, startTestOwner, tempDir, testDatabase } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

const shop = definePlugin({
  name: "shop",
  events: { "order.placed": { allow: ["*"] }, "order.confirmed": { allow: ["*"] }, "order.reminded": { allow: ["*"] } },
  processors: {
    confirm: { on: "order.placed", start: "beginning", run: async (ctx) => void (await ctx.emit("order.confirmed", { order: ctx.data.n ?? null })) },
  },
  actions: { remind: { allow: ["*"], run: async (ctx, input) => void (await ctx.emit("order.reminded", input)) } },
});

/** An owner for this test, closed at its end unless the test closed it. */
async function owner(options: Parameters<typeof startTestOwner>[0] = {}) {
  const o = await startTestOwner({ shutdownGraceMs: 200, ...options });
  const stop = o.close.bind(o);
  let closed: Promise<void> | undefined;
  const close = () => (closed ??= stop());
  cleanups.push(close);
  return Object.assign(o, { close });
}

/** The store arguments of import for the store of data folder `dataDir`: its SQLite folder, or its PostgreSQL test database. */
const storeArgs = (dataDir: string) => (onPostgres ? ["--store", testDatabase(dataDir)] : ["--data", dataDir]);

/** Every column of every event of the store of `dataDir`, in seq order, as stored. */
const rowsOf = (dataDir: string) => queryStore(dataDir, "SELECT seq, id, type, data, cause, actor, at FROM events ORDER BY seq");

/** Events written straight into the store of a data folder no owner runs on (a log with gaps, which the API cannot make). */
async function seedEvents(dataDir: string, seqs: number[]): Promise<void> {
  const rows = seqs.map((seq) => [seq, `seeded-${seq}`, "order.placed", JSON.stringify({ n: seq }), "", null, 1_700_000_000_000 + seq]);
  if (onPostgres) {
    const pg = connectNative(testDatabase(dataDir), "chronolog tests");
    try {
      for (const row of rows) pg.querySync("INSERT INTO events (seq, id, type, data, cause, actor, at) VALUES ($1, $2, $3, $4, $5, $6, $7)", row);
    } finally {
      endNative(pg);
    }
    return;
  }
  const store = openStore({ dataDir });
  const insert = store.db.prepare("INSERT INTO events (seq, id, type, data, cause, actor, at) VALUES (?, ?, ?, ?, ?, ?, ?)");
  for (const row of rows) insert.run(...row);
  await store.close();
}

/** Exports the log of the owner at `url` into a new folder; returns the folder and its manifest. */
async function exportLog(url: string, args: string[] = []): Promise<{ folder: string; manifest: Manifest }> {
  const folder = join(tempDir(), "archive");
  const run = await cli(["export", folder, "--url", url, ...args]);
  expect(run.stderr).toBe("");
  expect(run.code).toBe(0);
  return { folder, manifest: JSON.parse(readFileSync(join(folder, "manifest.json"), "utf8")) };
}

/** Nothing was written for `dataDir`: its folder is as tempDir() made it (SQLite), its test database holds no event (PostgreSQL). */
function expectNothingCreated(dataDir: string): void {
  if (onPostgres) expect(rowsOf(dataDir)).toEqual([]);
  else expect(readdirSync(dataDir)).toEqual([]);
}

/** Rewrites file `index` of the archive in `folder` with `lines` and records its new size and checksum, so only its content is wrong. */
function replaceFile(folder: string, index: number, lines: string): () => void {
  const path = join(folder, "manifest.json");
  const manifestText = readFileSync(path, "utf8");
  const manifest = JSON.parse(manifestText) as Manifest;
  const file = join(folder, manifest.files[index].name);
  const original = readFileSync(file);
  const bytes = gzipSync(lines);
  writeFileSync(file, bytes);
  manifest.files[index] = { ...manifest.files[index], bytes: bytes.length, sha256: createHash("sha256").update(bytes).digest("hex") };
  writeFileSync(path, JSON.stringify(manifest));
  return () => {
    writeFileSync(file, original);
    writeFileSync(path, manifestText);
  };
}

describe("an archive's line", () => {
  it("carries the event's trace context, and gives it back as the owner stores it; a tracestate without a traceparent is refused", () => {
    const base = { seq: 3n, id: "e-3", type: "order.placed", cause: "", at: timestampFromMs(Date.UTC(2026, 2, 1, 9)) };
    const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const line = archivedLine(create(EventSchema, { ...base, traceparent, tracestate: "vendor=1" }));
    expect(JSON.parse(line)).toMatchObject({ traceparent, tracestate: "vendor=1" });
    expect(parseArchivedLine(line, "f:1").trace).toBe(`${traceparent} vendor=1`);
    const plain = archivedLine(create(EventSchema, base));
    expect(Object.keys(JSON.parse(plain))).toEqual(["seq", "id", "type", "data", "cause", "actor", "at"]);
    expect(parseArchivedLine(plain, "f:1").trace).toBeNull();
    const stray = JSON.stringify({ ...JSON.parse(plain), tracestate: "vendor=1" });
    expect(() => parseArchivedLine(stray, "f:2")).toThrow("f:2: tracestate is not a header value that goes with a traceparent");
  });
});

describe("chronolog export and import", () => {
  it("reproduce the log exactly: seqs, ids, data, causes from processors and time, actors with spaces, commit times", async () => {
    const source = await owner();
    const client = createClient({ url: source.url, emitVia: "unary" });
    await client.registerPlugin(manifestOf(shop));
    const executor = runExecutor({ url: source.url, plugins: [shop], onError: () => {} });
    cleanups.push(() => executor.stop(100));
    await executor.ready;
    await client.emit("order.placed", { n: 1, "10": "integer-like keys first", f: 0.1, big: 1e21, text: 'é ✓ \u2028 "q"', nested: { a: [1, { b: null }] } });
    await client.emit("order.placed", { n: 2 }, { id: "order-2", actor: { id: "user:ana", for: "user:bo", in: "space:acme", via: "app:web" } });
    await client.emit("order.placed", { n: 3 }, { actor: { in: "space:beta" } });
    await client.delay("shop.remind", { order: 2 }, { intervalMs: 50 }, "unbounded");
    const typesIn = async () => (await client.log.readLog({ afterSeq: 0n, pageSize: 1000 })).events.map((e) => e.type);
    await until(async () => {
      const types = await typesIn();
      return types.filter((t) => t === "order.confirmed").length === 3 && types.includes("order.reminded") && types.includes("action.completed");
    }, "the processor's and the delay's events");

    const { folder, manifest } = await exportLog(source.url, ["--file-events", "4"]);
    await executor.stop(100);
    await source.close();
    const expected = rowsOf(source.dataDir).filter((r) => Number(r.seq) <= manifest.to);
    expect(manifest).toMatchObject({ format: "chronolog-archive", version: 1, from: 1, events: expected.length });
    expect(manifest.files.length).toBe(Math.ceil(expected.length / 4));
    // What the archive holds of what matters: causes of the processor's and the action's events, spaces.
    const byType = (t: string) => expected.filter((r) => r.type === t);
    expect(byType("order.confirmed").every((r) => r.cause !== "")).toBe(true);
    expect(byType("order.reminded")[0].cause).toBe(byType("action.started")[0].id);
    expect(expected.some((r) => String(r.actor).includes('"in":"space:acme"'))).toBe(true);

    const target = tempDir();
    const run = await cli(["import", folder, ...storeArgs(target)]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`imported ${expected.length} events in ${manifest.files.length} files`);
    expect(rowsOf(target)).toEqual(expected);

    // An owner on the imported log reads what the source's read, and goes on after it.
    const after = await owner({ dataDir: target });
    const moved = createClient({ url: after.url, emitVia: "unary" });
    const page = await moved.log.readLog({ afterSeq: 0n, pageSize: 1000 });
    expect(page.events.map((e) => [Number(e.seq), e.id, e.cause, e.actor?.in ?? null])).toEqual(
      expected.map((r) => [Number(r.seq), r.id, r.cause, r.actor === null ? null : JSON.parse(String(r.actor)).in]),
    );
    await moved.registerPlugin(manifestOf(definePlugin({ name: "shop", events: { "order.placed": { allow: ["*"] } } })));
    expect(
      (await moved.emit("order.placed", { n: 2 }, { id: "order-2", actor: { id: "user:ana", for: "user:bo", in: "space:acme", via: "app:web" } })).existing,
    ).toBe(true);
    expect((await moved.emit("order.placed", { n: 4 })).event?.seq).toBe(BigInt(manifest.to + 1));
  }, 120_000);

  it("keep the gaps of a log and a range that starts past its first seq", async () => {
    const seeded = tempDir();
    await seedEvents(seeded, [1, 2, 3, 5, 6, 9, 10]);
    const source = await owner({ dataDir: seeded });
    const { folder, manifest } = await exportLog(source.url, ["--from", "3", "--to", "9", "--file-events", "2"]);
    expect(manifest).toMatchObject({ from: 3, to: 9, events: 4 });
    expect(manifest.files.map((f) => f.name)).toEqual([
      "events-0000000000000003-0000000000000005.ndjson.gz",
      "events-0000000000000006-0000000000000009.ndjson.gz",
    ]);
    const target = tempDir();
    expect((await cli(["import", folder, ...storeArgs(target)])).code).toBe(0);
    expect(rowsOf(target)).toEqual(rowsOf(seeded).filter((r) => [3, 5, 6, 9].includes(Number(r.seq))));
    const after = await owner({ dataDir: target });
    const moved = createClient({ url: after.url, emitVia: "unary" });
    expect((await moved.log.readLog({ afterSeq: 0n })).events.map((e) => Number(e.seq))).toEqual([3, 5, 6, 9]);
    await moved.registerPlugin(manifestOf(definePlugin({ name: "shop", events: { "order.placed": { allow: ["*"] } } })));
    expect((await moved.emit("order.placed", { n: 11 })).event?.seq).toBe(10n);
  }, 60_000);

  it("import refuses a log that is not empty, and a store an owner runs on", async () => {
    const source = await owner();
    const client = createClient({ url: source.url, emitVia: "unary" });
    await client.registerPlugin(manifestOf(shop));
    for (let n = 1; n <= 3; n++) await client.emit("order.placed", { n });
    const { folder } = await exportLog(source.url);

    const target = await owner();
    const busy = await cli(["import", folder, ...storeArgs(target.dataDir)]);
    expect(busy.code).toBe(1);
    expect(busy.stderr).toMatch(onPostgres ? /an owner leads this database/ : /owner/);
    const other = createClient({ url: target.url, emitVia: "unary" });
    await other.registerPlugin(manifestOf(shop));
    await other.emit("order.placed", { n: 100 }, { id: "already-here" });
    await target.close();
    const before = rowsOf(target.dataDir);
    const refused = await cli(["import", folder, ...storeArgs(target.dataDir)]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/the log is not empty \(1 event, seqs 1 to 1\) and is not an earlier import of this archive/);
    expect(rowsOf(target.dataDir)).toEqual(before);
  }, 60_000);

  it("import refuses a damaged file before writing anything, and an unfinished archive", async () => {
    const source = await owner();
    const client = createClient({ url: source.url, emitVia: "unary" });
    await client.registerPlugin(manifestOf(shop));
    for (let n = 1; n <= 6; n++) await client.emit("order.placed", { n });
    const { folder, manifest } = await exportLog(source.url, ["--file-events", "2"]);
    const damaged = join(folder, manifest.files[2].name);
    const bytes = readFileSync(damaged);
    bytes[bytes.length - 5] ^= 0xff;
    writeFileSync(damaged, bytes);
    const target = tempDir();
    const refused = await cli(["import", folder, ...storeArgs(target)]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`${manifest.files[2].name} is damaged`);
    expect(refused.stderr).toMatch(/nothing was imported/);
    expectNothingCreated(target);
    // A data folder that did not exist is not created.
    const missing = join(tempDir(), "restored");
    expect((await cli(["import", folder, "--data", missing])).stderr).toContain(`${manifest.files[2].name} is damaged`);
    expect(existsSync(missing)).toBe(false);

    expect((await cli(["export", folder, "--url", source.url])).stderr).toMatch(/archive folder .* is not empty/);
    const noManifest = await cli(["import", tempDir(), ...storeArgs(tempDir())]);
    expect(noManifest.code).toBe(1);
    expect(noManifest.stderr).toMatch(/holds no manifest\.json: it is not an archive, or its export did not finish/);
  }, 60_000);

  it("import refuses a folder holding a file that is no part of the archive, naming it, as the owner's archive does", async () => {
    const source = await owner();
    const client = createClient({ url: source.url, emitVia: "unary" });
    await client.registerPlugin(manifestOf(shop));
    for (let n = 1; n <= 3; n++) await client.emit("order.placed", { n });
    const { folder } = await exportLog(source.url);
    writeFileSync(join(folder, "notes.txt"), "not an archive's");
    // What an interrupted write leaves (a file the manifest does not list yet) is part of an archive: the owner deletes it, import passes over it.
    writeFileSync(join(folder, "part-7.partial"), "half a file");
    const target = tempDir();
    const refused = await cli(["import", folder, ...storeArgs(target)]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`the archive folder ${folder} holds notes.txt, which is not part of an archive`);
    expect(refused.stderr).toMatch(/nothing was imported/);
    expectNothingCreated(target);
    rmSync(join(folder, "notes.txt"));
    const imported = await cli(["import", folder, ...storeArgs(target)]);
    expect(imported.stderr).toBe("");
    expect(imported.stdout).toMatch(/imported \d+ events in 1 files/);
  }, 60_000);

  // A database is not a folder: on PostgreSQL the refusals before it is opened are the tests above.
  it.skipIf(onPostgres)(
    "an import that fails before writing an event removes what it created in the data folder",
    async () => {
      const source = await owner();
      const client = createClient({ url: source.url, emitVia: "unary" });
      await client.registerPlugin(manifestOf(shop));
      for (let n = 1; n <= 3; n++) await client.emit("order.placed", { n });
      const { folder, manifest } = await exportLog(source.url);
      const lines = gunzipSync(readFileSync(join(folder, manifest.files[0].name)))
        .toString()
        .split("\n");
      replaceFile(folder, 0, `${lines[0]}\n{"seq":"two"}\n`); // its checksum matches: it fails as it is read for writing
      const missing = join(tempDir(), "restored");
      const stopped = await cli(["import", folder, "--data", missing]);
      expect(stopped.code).toBe(1);
      expect(stopped.stderr).toContain(`nothing of ${manifest.files[0].name} was imported`);
      expect(existsSync(missing)).toBe(false);
      const existing = tempDir();
      writeFileSync(join(existing, "keep.txt"), "mine");
      expect((await cli(["import", folder, "--data", existing])).code).toBe(1);
      expect(readdirSync(existing)).toEqual(["keep.txt"]);
    },
    60_000,
  );

  it("an import stopped by a bad file leaves whole files only and goes on from there when run again", async () => {
    const source = await owner();
    const client = createClient({ url: source.url, emitVia: "unary" });
    await client.registerPlugin(manifestOf(shop));
    for (let n = 1; n <= 7; n++) await client.emit("order.placed", { n });
    const { folder, manifest } = await exportLog(source.url, ["--file-events", "2"]);
    await source.close();
    const expected = rowsOf(source.dataDir);

    // The third file's checksum matches, but its second line is not an event: files 1 and 2 are written, nothing of the third.
    const lines = readFileSync(join(folder, manifest.files[2].name));
    const first = gunzipSync(lines).toString().split("\n")[0];
    const restore = replaceFile(folder, 2, `${first}\n{"seq":"six"}\n`);
    const target = tempDir();
    const stopped = await cli(["import", folder, ...storeArgs(target)]);
    expect(stopped.code).toBe(1);
    expect(stopped.stderr).toContain(`${manifest.files[2].name}, line 2: its fields are seq`);
    expect(stopped.stderr).toContain(`nothing of ${manifest.files[2].name} was imported (the 2 before it are`);
    expect(rowsOf(target)).toEqual(expected.slice(0, 4));

    restore();
    const resumed = await cli(["import", folder, ...storeArgs(target)]);
    expect(resumed.stderr).toBe("");
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toContain("imported 3 events in 2 files (after the 2 files an earlier import wrote)");
    expect(rowsOf(target)).toEqual(expected);
    const again = await cli(["import", folder, ...storeArgs(target)]);
    expect(again.stdout).toMatch(/holds all of this archive already/);
  }, 60_000);

  it("an import killed with SIGKILL leaves whole files only, and run again goes on to the end", async () => {
    const source = await owner();
    const client = createClient({ url: source.url, emitVia: "unary" });
    await client.registerPlugin(manifestOf(shop));
    for (let batch = 0; batch < 3; batch++)
      await client.emitBatch(Array.from({ length: 1000 }, (_, i) => ({ type: "order.placed", data: { n: batch * 1000 + i } })));
    const { folder, manifest } = await exportLog(source.url, ["--file-events", "10"]);
    await source.close();
    const expected = rowsOf(source.dataDir);
    expect(manifest.files.length).toBe(300);

    const target = tempDir();
    startingProcess("a CLI process");
    const child = spawn(process.execPath, [...chronologArgs, "import", folder, ...storeArgs(target)], { stdio: "ignore" });
    const exited = new Promise((resolve) => child.once("exit", resolve));
    const count = () => {
      try {
        return Number(queryStore(target, "SELECT COUNT(*) AS n FROM events")[0].n);
      } catch {
        return 0; // the import has not made the store yet
      }
    };
    await until(() => count() > 0, "the import's first files");
    child.kill("SIGKILL");
    await exited;
    const written = rowsOf(target);
    // Whole files: the rows are the first N files' events exactly (all of them if the import ended first).
    expect(written.length % 10).toBe(0);
    expect(written).toEqual(expected.slice(0, written.length));

    const resumed = await cli(["import", folder, ...storeArgs(target)]);
    expect(resumed.stderr).toBe("");
    expect(resumed.code).toBe(0);
    expect(rowsOf(target)).toEqual(expected);
  }, 120_000);

  it("export needs an admin: another principal would miss the events of spaces it cannot read", async () => {
    const source = await owner({
      config: {
        principals: [
          { name: "ops", token: "admin-token", role: "admin" },
          { name: "web", token: "client-token", role: "client" },
        ],
      },
    });
    const folder = join(tempDir(), "archive");
    const refused = await cli(["export", folder, "--url", source.url, "--token", "client-token"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/export needs an admin's token/);
    const done = await cli(["export", folder, "--url", source.url, "--token", "admin-token"]);
    expect(done.code).toBe(0);
    expect(done.stdout).toMatch(/exported 0 events in 0 files/);
  }, 60_000);
});
