// Automatic archiving (log.retention.archive, archive/retention-archive.ts): before retention
// removes events, the owner writes the log through them into an archive folder in `chronolog
// export`'s format, and removes only what is archived; `chronolog import` of the folder gives the
// removed events back with their seqs, ids and every column.
//
// @module-tag serial
// @module-tag postgres

import { mkdirSync, readdirSync, readFileSync, rmdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { Manifest } from "../server/src/archive/manifest.js";
import { ManualClock } from "../server/src/clock.js";
import type { OwnerConfig } from "../server/src/config.js";
import type { RetentionPass } from "../server/src/log/retention-pass.js";
import { createClient } from "../sdk/ts/src/client.js";
import { cli } from "./helpers/cli.js";
import { onPostgres, queryStore, startTestOwner, tempDir, testDatabase } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

const MINUTE = 60_000;
const admin = { name: "admin", token: "admin-token-0123456789", role: "admin" as const };

/** An owner on a manual clock with one rule (the newest 2 `note.added` stay) and `archive`; `pass` runs a retention pass. */
async function start(archive: NonNullable<NonNullable<OwnerConfig["log"]>["retention"]>["archive"], dataDir?: string) {
  const clock = new ManualClock(Date.UTC(2026, 2, 2, 12));
  const owner = await startTestOwner({
    ...(dataDir && { dataDir }),
    clock,
    timers: clock,
    config: { principals: [admin], log: { retention: { interval_ms: MINUTE, rules: [{ types: "note.added", max_count: 2 }], archive } } },
  });
  let closed: Promise<void> | undefined;
  const close = () => (closed ??= owner.close());
  cleanups.push(close);
  const passes: RetentionPass[] = [];
  owner.logRetention.onPass((p) => passes.push(p));
  const client = createClient({ url: owner.url, token: admin.token });
  await client.registerPlugin({ name: "notes", events: { "note.added": { allow: ["*"] }, "note.pinned": { allow: ["*"] } } });
  await owner.logRetention.idle(); // the pass at start ended: what a test emits next waits for its `pass`
  const pass = async () => {
    await owner.logRetention.idle(); // the pass at start is not the next
    const before = passes.length;
    await owner.settled();
    clock.advance(MINUTE);
    await until(() => passes.length > before, "a retention pass");
    return passes[passes.length - 1];
  };
  const metric = async (name: string) => {
    const text = await (await fetch(`${owner.url}/metrics`, { headers: { authorization: `Bearer ${admin.token}` } })).text();
    return Number(new RegExp(`^${name} (\\d+)$`, "m").exec(text)?.[1]);
  };
  return { owner, client, pass, metric, close };
}

/** Emits `count` `note.added` events of about 300 bytes each, in batches. */
async function emitNotes(client: ReturnType<typeof createClient>, count: number): Promise<void> {
  for (let at = 0; at < count; at += 500)
    await client.emitBatch(Array.from({ length: Math.min(500, count - at) }, (_, k) => ({ type: "note.added", data: { i: at + k, text: "x".repeat(300) } })));
}

const manifestOf = (dir: string) => JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8")) as Manifest;

/** Every column of every event of the store of `dataDir`, in seq order, as stored. */
const rowsOf = (dataDir: string) => queryStore(dataDir, "SELECT seq, id, type, data, cause, actor, at FROM events ORDER BY seq");

describe("automatic archiving", () => {
  it("archives the log before retention removes from it; import of the folder gives the removed events back", async () => {
    const dir = join(tempDir(), "archive");
    const { owner, client, pass, metric, close } = await start({ dir, file_events: 4 });
    for (let i = 0; i < 10; i++) {
      await client.emit("note.added", { i }, { actor: { in: i % 2 === 0 ? "space:a" : "" } });
      if (i % 3 === 0) await client.emit("note.pinned", { i });
    }
    await client.emit("note.pinned", { last: true });
    const before = rowsOf(owner.dataDir);
    const result = await pass();
    expect(result.removedEvents).toBe(8);
    expect(result.held).toEqual({});

    const manifest = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8")) as Manifest;
    const removed = before.filter((r) => !rowsOf(owner.dataDir).some((k) => k.seq === r.seq));
    expect(removed.map((r) => r.type)).toEqual(Array(8).fill("note.added"));
    const lastRemoved = Number(removed[removed.length - 1].seq);
    expect(manifest).toMatchObject({ format: "chronolog-archive", version: 1, from: 1 });
    expect(manifest.to).toBeGreaterThanOrEqual(lastRemoved);
    expect(manifest.files.every((f) => f.events <= 4)).toBe(true);
    expect(readdirSync(dir).sort()).toEqual([...manifest.files.map((f) => f.name), "manifest.json"].sort());
    expect(await metric("chronolog_log_archived_seq")).toBe(manifest.to);
    expect(await metric("chronolog_log_archive_lag_events")).toBe(0);

    // More removed later: the archive grows, in seq order, without gaps.
    for (let i = 10; i < 20; i++) await client.emit("note.added", { i });
    await client.emit("note.pinned", { last: true });
    const more = rowsOf(owner.dataDir);
    expect((await pass()).removedEvents).toBe(10);
    await close();
    const grown = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8")) as Manifest;
    expect(grown.files.slice(0, manifest.files.length)).toEqual(manifest.files);
    const all = [...before, ...more.filter((r) => Number(r.seq) > Number(before[before.length - 1].seq))];
    const archived = all.filter((r) => Number(r.seq) <= grown.to);
    expect(grown.events).toBe(archived.length);

    // Import into an empty store: every archived event, removed ones included, with every column.
    const target = tempDir();
    const run = await cli(["import", dir, ...(onPostgres ? ["--store", testDatabase(target)] : ["--data", target])]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(rowsOf(target)).toEqual(archived);
    expect(archived.filter((r) => r.type === "note.added").length).toBeGreaterThanOrEqual(18);
  });

  it("goes on after a restart from its manifest, deleting what an interrupted write left", async () => {
    const dir = join(tempDir(), "archive");
    const first = await start({ dir, file_events: 4 });
    for (let i = 0; i < 6; i++) await first.client.emit("note.added", { i });
    await first.client.emit("note.pinned", {});
    const before = rowsOf(first.owner.dataDir);
    expect((await first.pass()).removedEvents).toBe(4);
    await first.close();
    const written = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8")) as Manifest;
    // An owner killed after a file's rename, before the manifest named it; and one killed mid-file.
    const strays = ["events-0000000000000900-0000000000000901.ndjson.gz", `part-${written.files.length}.partial`];
    for (const name of strays) writeFileSync(join(dir, name), "half");
    const again = await start({ dir, file_events: 4 }, first.owner.dataDir);
    // The archive's seq is known from the start, not 0 until a pass writes.
    expect(await again.metric("chronolog_log_archived_seq")).toBe(written.to);
    for (let i = 6; i < 12; i++) await again.client.emit("note.added", { i });
    await again.client.emit("note.pinned", {});
    const all = rowsOf(again.owner.dataDir);
    expect((await again.pass()).removedEvents).toBe(6);
    await again.close();
    const grown = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8")) as Manifest;
    expect(grown.files.slice(0, written.files.length)).toEqual(written.files);
    expect(readdirSync(dir).sort()).toEqual([...grown.files.map((f) => f.name), "manifest.json"].sort());
    const target = tempDir();
    expect((await cli(["import", dir, ...(onPostgres ? ["--store", testDatabase(target)] : ["--data", target])])).code).toBe(0);
    // What the first owner archived, then what the second did after it: the removed events of both included.
    const bySeq = new Map([...before, ...all].map((r) => [Number(r.seq), r]));
    const archived = [...bySeq.values()].filter((r) => Number(r.seq) <= grown.to).sort((a, b) => Number(a.seq) - Number(b.seq));
    expect(rowsOf(target)).toEqual(archived);
    expect(archived.filter((r) => r.type === "note.added").length).toBeGreaterThanOrEqual(10);
  });

  it("removes nothing it could not archive, and says how far behind the archive is", async () => {
    const blocked = join(tempDir(), "not-a-folder");
    writeFileSync(blocked, "a file where the archive's folder should be");
    const { client, pass, metric, owner } = await start({ dir: blocked, file_events: 4 });
    for (let i = 0; i < 6; i++) await client.emit("note.added", { i });
    await client.emit("note.pinned", {});
    const before = rowsOf(owner.dataDir);
    const result = await pass();
    expect(result.removedEvents).toBe(0);
    expect(result.held).toEqual({ archive: 4 });
    expect(await metric("chronolog_log_archive_lag_events")).toBe(4);
    expect(await metric("chronolog_log_archived_seq")).toBe(0);
    expect(rowsOf(owner.dataDir)).toEqual(before);
  });

  it("holds removal back when a file cannot be written past its first chunk, and goes on once it can", async () => {
    const dir = join(tempDir(), "archive");
    const { client, pass, metric, owner } = await start({ dir, file_events: 100_000 });
    await emitNotes(client, 3);
    expect((await pass()).removedEvents).toBe(1);
    const written = manifestOf(dir);
    // The next file's temporary name is taken by a folder: opening it fails while more than one
    // chunk of lines (256 KiB) waits for gzip to drain.
    const blocker = join(dir, `part-${written.files.length}.partial`);
    mkdirSync(blocker);
    await emitNotes(client, 3000);
    const before = rowsOf(owner.dataDir);
    const failed = await pass();
    // The two kept at the last pass were archived then; none of the new ones is removed.
    expect(failed.removedEvents).toBe(2);
    expect(failed.held).toEqual({ archive: 2998 });
    expect(await metric("chronolog_log_archive_lag_events")).toBe(2998);
    expect(await metric("chronolog_log_archived_seq")).toBe(written.to);
    expect(rowsOf(owner.dataDir)).toEqual(before.filter((r) => Number(r.seq) > written.to));
    expect(manifestOf(dir)).toEqual(written);
    // The owner still serves, and the next pass, the folder fixed, archives and removes.
    await client.emit("note.pinned", {});
    rmdirSync(blocker);
    const next = await pass();
    expect(next.removedEvents).toBe(2998);
    expect(next.held).toEqual({});
    expect(await metric("chronolog_log_archive_lag_events")).toBe(0);
    expect(manifestOf(dir).to).toBeGreaterThanOrEqual(Number(before[before.length - 3].seq));
    expect(readdirSync(dir).sort()).toEqual([...manifestOf(dir).files.map((f) => f.name), "manifest.json"].sort());
  });

  it("goes on at the next pass after a write that failed and left its temporary file", async () => {
    const dir = join(tempDir(), "archive");
    const { client, pass, metric } = await start({ dir, file_events: 4 });
    await emitNotes(client, 3);
    expect((await pass()).removedEvents).toBe(1);
    const written = manifestOf(dir);
    // What a write that failed mid-file left: the next write's temporary name is taken.
    writeFileSync(join(dir, `part-${written.files.length}.partial`), "half");
    await emitNotes(client, 6);
    const failed = await pass();
    expect(failed.removedEvents).toBe(2); // archived at the last pass
    expect(failed.held).toEqual({ archive: 4 });
    expect(manifestOf(dir)).toEqual(written);
    const next = await pass();
    expect(next.removedEvents).toBe(4);
    expect(next.held).toEqual({});
    const grown = manifestOf(dir);
    expect(grown.files.slice(0, written.files.length)).toEqual(written.files);
    expect(await metric("chronolog_log_archived_seq")).toBe(grown.to);
    expect(readdirSync(dir).sort()).toEqual([...grown.files.map((f) => f.name), "manifest.json"].sort());
  });

  it("uses a folder it refused once the stray file is removed, without a restart", async () => {
    const dir = join(tempDir(), "archive");
    mkdirSync(dir);
    writeFileSync(join(dir, "notes.txt"), "not an archive's");
    const { client, pass, metric } = await start({ dir, file_events: 4 });
    await emitNotes(client, 6);
    expect((await pass()).held).toEqual({ archive: 4 });
    expect(await metric("chronolog_log_archived_seq")).toBe(0);
    rmSync(join(dir, "notes.txt"));
    const next = await pass();
    expect(next.removedEvents).toBe(4);
    expect(next.held).toEqual({});
    expect(await metric("chronolog_log_archived_seq")).toBe(manifestOf(dir).to);
  });

  it("refuses another log's archive, even one that ends before this log's head", async () => {
    const dir = join(tempDir(), "archive");
    const other = await start({ dir, file_events: 4 });
    await emitNotes(other.client, 6);
    expect((await other.pass()).removedEvents).toBe(4);
    await other.close();
    const theirs = manifestOf(dir);
    const { client, pass, metric, owner } = await start({ dir, file_events: 4 });
    // Its manifest goes past this log's head: the gauge does not take it as how far this log is archived.
    expect(await metric("chronolog_log_archived_seq")).toBe(0);
    await emitNotes(client, 20);
    const before = rowsOf(owner.dataDir);
    expect(before.length).toBeGreaterThan(theirs.to);
    const result = await pass();
    expect(result.removedEvents).toBe(0);
    expect(result.held).toEqual({ archive: 18 });
    expect(rowsOf(owner.dataDir)).toEqual(before);
    expect(manifestOf(dir)).toEqual(theirs);
    expect(readdirSync(dir).sort()).toEqual([...theirs.files.map((f) => f.name), "manifest.json"].sort());
    expect(await metric("chronolog_log_archive_lag_events")).toBe(18);
    expect(await metric("chronolog_log_archived_seq")).toBe(0); // refused: it is not this log's archive
  });

  it("takes its own archive back after a restart when the archive's last event was removed, by the id the log recorded", async () => {
    const dir = join(tempDir(), "archive");
    const first = await start({ dir, file_events: 4 });
    await emitNotes(first.client, 6);
    expect((await first.pass()).removedEvents).toBe(4);
    await first.close();
    const written = manifestOf(dir);
    const last = written.files[written.files.length - 1];
    expect(rowsOf(first.owner.dataDir).some((r) => Number(r.seq) === last.lastSeq)).toBe(false);
    const again = await start({ dir, file_events: 4 }, first.owner.dataDir);
    await emitNotes(again.client, 4);
    const next = await again.pass();
    expect(next.removedEvents).toBe(4);
    expect(next.held).toEqual({});
    expect(manifestOf(dir).files.slice(0, written.files.length)).toEqual(written.files);
  });

  it("refuses another log's archive whose last event's seq this log removed, by the id it recorded", async () => {
    const theirsDir = join(tempDir(), "archive");
    const other = await start({ dir: theirsDir, file_events: 4 });
    await emitNotes(other.client, 6);
    expect((await other.pass()).removedEvents).toBe(4);
    await other.close();
    const theirs = manifestOf(theirsDir);
    const lastSeq = theirs.files[theirs.files.length - 1].lastSeq;
    // This log removes past that seq into an archive of its own, then is given the other's folder.
    const first = await start({ dir: join(tempDir(), "archive"), file_events: 4 });
    await emitNotes(first.client, 8);
    expect((await first.pass()).removedEvents).toBe(6);
    await first.close();
    expect(rowsOf(first.owner.dataDir).some((r) => Number(r.seq) <= lastSeq)).toBe(false);
    const again = await start({ dir: theirsDir, file_events: 4 }, first.owner.dataDir);
    await emitNotes(again.client, 4);
    const result = await again.pass();
    expect(result.removedEvents).toBe(0);
    expect(result.held).toEqual({ archive: 4 });
    expect(manifestOf(theirsDir)).toEqual(theirs);
  });
});
