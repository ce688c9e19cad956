// Retention of the log (log/retention.ts) through the real transport: rules from the owner's
// config and a plugin's manifest remove old events in batches, never one still needed (a
// processor behind, a failed delivery, a pending timer, a document, a cause of a kept event);
// ReadLog, Watch and GetEvent say where the log starts and what was removed.
//
// A ManualClock is the owner's clock and its TimerHost: a pass runs at start and then each time
// the clock passes the interval (`pass` advances it and waits for the pass).
//
// @module-tag postgres

import { Code } from "@connectrpc/connect";
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { existsSync } from "node:fs";
import { fromJson, type MessageInitShape } from "@bufbuild/protobuf";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../server/src/clock.js";
import type { OwnerConfig } from "../server/src/config.js";
import type { RetentionPass } from "../server/src/log/retention-pass.js";
import { createClient, type ChronologClient } from "../sdk/ts/src/client.js";
import { PluginManifestSchema, RetentionKeep } from "@chronolog/sdk/gen/chronolog/v1/plugin_pb";
import { runExecutor, TerminalError } from "../sdk/ts/src/executor.js";
import { definePlugin, manifestOf, type PluginDefinition } from "../sdk/ts/src/plugin.js";
import { expectConnectError } from "./helpers/log-snapshot.js";
import { startTestOwner } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

type TestOwner = Awaited<ReturnType<typeof startTestOwner>>;
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

const repo = new URL("../", import.meta.url).pathname;
const python = join(repo, ".venv/bin/python");
/** 2026-03-02T12:00:00Z. */
const T0 = Date.UTC(2026, 2, 2, 12);
const MINUTE = 60_000;
const admin = { name: "admin", token: "admin-token-0123456789", role: "admin" as const };

/** A plugin with free-form types anyone may emit: `note.added` and `note.pinned`. */
const notes = { name: "notes", events: { "note.added": { allow: ["*"] }, "note.pinned": { allow: ["*"] } } };

async function start(
  retention: NonNullable<OwnerConfig["log"]>["retention"],
  plugin: object = notes,
  principals: OwnerConfig["principals"] = [admin],
): Promise<{ owner: TestOwner; client: ChronologClient; clock: ManualClock; pass: () => Promise<RetentionPass>; warnings: () => string[] }> {
  const clock = new ManualClock(T0);
  let passes: RetentionPass[] = [];
  const lines: string[] = [];
  const logger = pino({ level: "warn" }, { write: (line: string) => void lines.push(line) });
  const owner = await startTestOwner({ clock, timers: clock, logger, config: { principals, log: { retention: { interval_ms: MINUTE, ...retention } } } });
  owner.logRetention.onPass((p) => passes.push(p));
  cleanups.push(() => owner.close());
  const client = createClient({ url: owner.url, token: admin.token });
  await client.registerPlugin(plugin);
  await owner.logRetention.idle(); // the pass at start ended: what a test emits next waits for its `pass`
  const pass = async () => {
    await owner.logRetention.idle(); // the pass at start, or one the last test's advance began, is not the next
    passes = [];
    await owner.settled();
    clock.advance(MINUTE);
    const deadline = Date.now() + 10_000;
    while (passes.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    if (passes.length === 0) throw new Error("no retention pass");
    return passes[0];
  };
  const warnings = () =>
    lines
      .map((line) => JSON.parse(line) as { level: number; msg: string })
      .filter((l) => l.level === 40)
      .map((l) => l.msg);
  return { owner, client, clock, pass, warnings };
}

async function seqsOf(client: ChronologClient, types: string[] = []): Promise<number[]> {
  const page = await client.log.readLog({ types, pageSize: 1000 });
  return page.events.map((e) => Number(e.seq));
}

/** The rules both SDKs' test plugins declare (the newest 2 `note.added`; the last `note.pinned` of each `data.k`) remove what they let go. */
async function expectDeclaredRulesApplied(manifest: MessageInitShape<typeof PluginManifestSchema>): Promise<void> {
  const { client, pass } = await start({}, manifest);
  const added = [];
  for (let i = 0; i < 5; i++) added.push(Number((await client.emit("note.added", { i })).event!.seq));
  const pinned = [];
  for (let i = 0; i < 3; i++) pinned.push(Number((await client.emit("note.pinned", { k: "a", i })).event!.seq));
  const other = Number((await client.emit("note.pinned", { k: "b" })).event!.seq);
  expect((await pass()).removedEvents).toBe(5);
  expect(await seqsOf(client, ["note.added"])).toEqual(added.slice(3));
  expect(await seqsOf(client, ["note.pinned"])).toEqual([pinned[2], other]);
}

describe("log retention", () => {
  it("keeps the newest max_count events of each type, and says where the log starts", async () => {
    const { owner, client, pass } = await start({ rules: [{ types: "note.*", max_count: 3 }] });
    const emitted = [];
    for (let i = 0; i < 8; i++) emitted.push(await client.emit("note.added", { i }));
    const pinned = await client.emit("note.pinned", { i: 0 });
    const result = await pass();
    expect(result.removedEvents).toBe(5);
    const added = await seqsOf(client, ["note.added"]);
    expect(added).toEqual(emitted.slice(5).map((e) => Number(e.event!.seq)));
    expect(await seqsOf(client, ["note.pinned"])).toEqual([Number(pinned.event!.seq)]);
    const page = await client.log.readLog({});
    expect(Number(page.firstSeq)).toBe(Number(page.events[0].seq));
    // GetEvent of a removed event says so.
    const err = await expectConnectError(client.log.getEvent({ id: emitted[0].event!.id }), Code.NotFound, /removed from the log by retention/);
    expect(err.message).toMatch(new RegExp(`seq ${emitted[0].event!.seq}`));
    await expectConnectError(client.log.getEvent({ id: "never-was" }), Code.NotFound, /no event with id/);
    // A read from below the log's start is OUT_OF_RANGE, unless it asks to start there; from 0 reads from the start.
    const first = Number(page.firstSeq);
    expect(first).toBe(6);
    await expectConnectError(client.log.readLog({ afterSeq: 1n }), Code.OutOfRange, /before the log's start/, /the log starts at seq 6/);
    expect((await client.log.readLog({ afterSeq: 1n, fromFirstSeq: true })).events[0].seq).toBe(6n);
    expect((await client.log.readLog({ afterSeq: 5n })).events[0].seq).toBe(6n);
    const watch = client.log.watch({ afterSeq: 2n })[Symbol.asyncIterator]();
    await expectConnectError(watch.next(), Code.OutOfRange, /before the log's start/);
    const fromFirst = client.log.watch({ afterSeq: 2n, fromFirstSeq: true })[Symbol.asyncIterator]();
    expect(((await fromFirst.next()).value as { message: { value: { seq: bigint } } }).message.value.seq).toBe(6n);
    await fromFirst.return?.(undefined);
    // The metrics say where the log starts, what it holds by type and what was removed.
    const metrics = await (await fetch(`${owner.url}/metrics`, { headers: { authorization: `Bearer ${admin.token}` } })).text();
    expect(metrics).toMatch(/^chronolog_log_first_seq 6$/m);
    expect(metrics).toMatch(/^chronolog_log_events\{type="note.added"\} 3$/m);
    expect(metrics).toMatch(/^chronolog_log_removed_events_total 5$/m);
  });

  it("tells only a principal that reaches a removed event's space that it was removed", async () => {
    const inA = { name: "a", token: "client-a-token-0123456789", role: "client" as const, actor: { in: "space:a" } };
    const inB = { name: "b", token: "client-b-token-0123456789", role: "client" as const, actor: { in: "space:b" } };
    const { owner, client, pass } = await start({ rules: [{ types: "note.added", max_count: 1 }] }, notes, [admin, inA, inB]);
    const a = createClient({ url: owner.url, token: inA.token });
    const b = createClient({ url: owner.url, token: inB.token });
    const first = await a.emit("note.added", { i: 0 });
    await a.emit("note.added", { i: 1 });
    await client.emit("note.pinned", {});
    expect((await pass()).removedEvents).toBe(1);
    await expectConnectError(a.log.getEvent({ id: first.event!.id }), Code.NotFound, /removed from the log by retention/);
    await expectConnectError(client.log.getEvent({ id: first.event!.id }), Code.NotFound, /removed from the log by retention/);
    await expectConnectError(b.log.getEvent({ id: first.event!.id }), Code.NotFound, /no event with id/);
  });

  it("an id reused after its event was removed is removed again in its turn: the newest removal is the one GetEvent names", async () => {
    const { client, pass } = await start({ rules: [{ types: "note.added", max_count: 1 }] });
    const first = await client.emit("note.added", { i: 0 }, { id: "reused" });
    await client.emit("note.added", { i: 1 });
    await client.emit("note.pinned", {});
    expect((await pass()).removedEvents).toBe(1);
    const again = await client.emit("note.added", { i: 2 }, { id: "reused" });
    expect(again.event!.seq).toBeGreaterThan(first.event!.seq);
    await client.emit("note.added", { i: 3 });
    await client.emit("note.pinned", {});
    const result = await pass();
    expect(result).toMatchObject({ complete: true, removedEvents: 2 });
    await expectConnectError(
      client.log.getEvent({ id: "reused" }),
      Code.NotFound,
      new RegExp(`\\(seq ${again.event!.seq}\\) was removed from the log by retention`),
    );
  });

  it("counts each event held back once a pass, though its rule and the log-wide limit both weigh it", async () => {
    const plugin = definePlugin({ ...notes, processors: { tally: { on: "note.added", run: () => {} } } }); // no executor hosts it: it finishes nothing
    const { client, pass } = await start({ rules: [{ types: "note.added", max_count: 1 }], max_bytes: 100 }, manifestOf(plugin));
    for (let i = 0; i < 5; i++) await client.emit("note.added", { i });
    await client.emit("note.pinned", {});
    const result = await pass();
    expect(result.removedEvents).toBe(0);
    expect(result.held).toEqual({ "processor:notes.tally": 5 });
  });

  it("keeps the ids of the newest removed events only, as many as removed_ids_kept", async () => {
    const { client, pass } = await start({ rules: [{ types: "note.*", max_count: 3 }], removed_ids_kept: 2 });
    const emitted = [];
    for (let i = 0; i < 8; i++) emitted.push(await client.emit("note.added", { i }));
    await client.emit("note.pinned", {});
    expect((await pass()).removedEvents).toBe(5);
    for (const e of emitted.slice(3, 5)) await expectConnectError(client.log.getEvent({ id: e.event!.id }), Code.NotFound, /removed from the log by retention/);
    for (const e of emitted.slice(0, 3)) await expectConnectError(client.log.getEvent({ id: e.event!.id }), Code.NotFound, /no event with id/);
  });

  it("forgets the oldest kept ids pass after pass, an id removed after newer ones by its seq", async () => {
    const plugin: PluginDefinition = { ...notes, processors: { tally: { on: "note.added", run: () => {} } } };
    const rules = [
      { types: "note.pinned", max_count: 1 },
      { types: "note.added", max_count: 1 },
    ];
    const { client, owner, pass } = await start({ rules, removed_ids_kept: 2 }, manifestOf(plugin));
    const executor = runExecutor({ url: owner.url, token: admin.token, plugins: [plugin], onError: () => {} });
    cleanups.push(() => executor.stop(50));
    await executor.ready;
    await client.admin.setProcessorPaused({ processor: "notes.tally", paused: true });
    const old = (await client.emit("note.added", { i: 0 })).event!; // held while the processor is paused
    const pinned: string[] = [];
    const emit = async (n: number) => {
      for (let i = 0; i < n; i++) pinned.push((await client.emit("note.pinned", { i })).event!.id);
    };
    const state = (id: string) =>
      client.log.getEvent({ id }).then(
        () => "kept",
        (e: { message: string }) => (/removed from the log by retention/.test(e.message) ? "removed" : "unknown"),
      );
    await emit(4);
    await pass(); // the first three pinned go: the ids of the last two kept
    expect(await Promise.all(pinned.map(state))).toEqual(["unknown", "removed", "removed", "kept"]);
    await emit(2);
    await pass(); // two more go: the ids kept move on past them
    expect(await Promise.all(pinned.map(state))).toEqual(["unknown", "unknown", "unknown", "removed", "removed", "kept"]);
    await client.admin.setProcessorPaused({ processor: "notes.tally", paused: false });
    await client.emit("note.added", { i: 1 });
    await until(async () => (await client.admin.listProcessors({})).processors[0].lag === 0n, "the processor caught up");
    await pass(); // the old note goes now, older than every id kept: it is the oldest, so the one forgotten
    expect(await state(old.id)).toBe("unknown");
    expect(await Promise.all(pinned.map(state))).toEqual(["unknown", "unknown", "unknown", "removed", "removed", "kept"]);
    await emit(1);
    await pass();
    expect((await Promise.all(pinned.map(state))).slice(3)).toEqual(["unknown", "removed", "removed", "kept"]);
  });

  it("ends a watch that retention overtook with OUT_OF_RANGE, or goes on from the log's start when asked", async () => {
    const { client, pass } = await start({ rules: [{ types: "note.added", max_count: 10 }] });
    for (let from = 0; from < 600; from += 100)
      await client.emitBatch(Array.from({ length: 100 }, (_, i) => ({ type: "note.added", data: { i: from + i, text: "x".repeat(2_000) } })));
    // Both watches hold the first of their pages (256 events) while the transport's window holds them back.
    const overtaken = client.log.watch({})[Symbol.asyncIterator]();
    const skipping = client.log.watch({ fromFirstSeq: true })[Symbol.asyncIterator]();
    expect(((await overtaken.next()).value as { message: { value: { seq: bigint } } }).message.value.seq).toBe(1n);
    expect(((await skipping.next()).value as { message: { value: { seq: bigint } } }).message.value.seq).toBe(1n);
    expect((await pass()).removedEvents).toBe(590);
    const seqsUntilEnd = async (watch: AsyncIterator<{ message: { case?: string; value?: unknown } }>) => {
      const seqs: bigint[] = [];
      for (;;) {
        const { value } = await watch.next();
        if (value.message.case === "caughtUp") return seqs;
        seqs.push((value.message.value as { seq: bigint }).seq);
      }
    };
    await expectConnectError(seqsUntilEnd(overtaken), Code.OutOfRange, /before the log's start/);
    const after = await seqsUntilEnd(skipping);
    expect(after.slice(-10)).toEqual(Array.from({ length: 10 }, (_, i) => BigInt(591 + i)));
    expect(after.some((seq) => seq > 256n && seq < 591n)).toBe(false); // nothing removed was sent after the removal
    await skipping.return?.(undefined);
  });

  it("keeps an event whose delivery failed, and lets it go once the failure is dismissed", async () => {
    const plugin: PluginDefinition = {
      name: "notes",
      events: { "note.added": { allow: ["*"] }, "note.pinned": { allow: ["*"] } },
      processors: {
        tally: {
          on: "note.added",
          run(ctx) {
            if ((ctx.event.data as { i: number }).i === 1) throw new TerminalError("note 1 is bad");
          },
        },
      },
    };
    // processor.* too: the delivery's processor.retried and processor.failed name the event as their cause.
    const rules = [
      { types: "note.added", max_age_ms: 1 },
      { types: "processor.*", max_age_ms: 1 },
    ];
    const { owner, client, pass } = await start({ rules }, manifestOf(plugin));
    const ex = runExecutor({ url: owner.url, token: admin.token, plugins: [plugin], onError: () => {} });
    cleanups.push(() => ex.stop());
    const added = [];
    for (let i = 0; i < 4; i++) added.push(await client.emit("note.added", { i }));
    await until(async () => (await client.log.readLog({ types: ["processor.failed"] })).events.length === 1, "note 1 failed");
    await client.emit("note.pinned", {}); // the log's last event (never weighed) is not a note
    let result: RetentionPass;
    do result = await pass();
    while (result.held["processor:notes.tally"] !== undefined);
    expect(result.held).toEqual({ "failed_delivery:notes.tally": 1 });
    const kept = (await client.log.readLog({ types: ["note.added"] })).events.map((e) => e.id);
    expect(kept).toEqual([added[1].event!.id]);
    // Dismissed, the failure no longer holds it: the next pass removes it.
    const seq = added[1].event!.seq;
    await expectConnectError(client.admin.dismissFailed({ processor: "notes.tally" }), Code.InvalidArgument, /give the seqs/);
    await expectConnectError(client.admin.dismissFailed({ processor: "notes.nobody", all: true }), Code.NotFound, /no processor named/);
    expect(await client.admin.dismissFailed({ processor: "notes.tally", seqs: [seq + 100n] })).toMatchObject({ count: 0 });
    expect(await client.admin.dismissFailed({ processor: "notes.tally", seqs: [seq] })).toMatchObject({ count: 1, seqs: [seq] });
    expect((await client.admin.listFailedDeliveries({ processor: "notes.tally" })).deliveries).toEqual([]);
    const recorded = (await client.log.readLog({ types: ["processor.dismissed"] })).events.map((e) => e.data);
    expect(recorded).toEqual([{ processor: "notes.tally", seqs: [Number(seq)], by: "admin" }]);
    // A pass weighs note.added before processor.*: the first may still find the failure's records naming it.
    for (let i = 0; i < 3 && (await client.log.readLog({ types: ["note.added"] })).events.length > 0; i++) result = await pass();
    expect(result.held).toEqual({});
    expect((await client.log.readLog({ types: ["note.added"] })).events).toEqual([]);
    await expectConnectError(client.log.getEvent({ id: added[1].event!.id }), Code.NotFound, /removed from the log by retention/);
  });

  it("keeps every event whose delivery fails while passes run, under a log-wide max_bytes too", async () => {
    const plugin: PluginDefinition = {
      ...definePlugin({ ...notes, processors: { tally: { on: "note.added", run: () => Promise.reject(new TerminalError("every note is bad")) } } }),
    };
    const { owner, client, clock } = await start({ rules: [{ types: "processor.*", max_count: 1 }], max_bytes: 3_000, interval_ms: 1 }, manifestOf(plugin));
    const ex = runExecutor({ url: owner.url, token: admin.token, plugins: [plugin], onError: () => {} });
    cleanups.push(() => ex.stop());
    // Batches of notes whose deliveries fail while the clock starts pass after pass.
    let emitting = true;
    const ticking = (async () => {
      while (emitting) {
        clock.advance(1);
        await new Promise((r) => setTimeout(r, 2));
      }
    })();
    for (let round = 0; round < 20; round++)
      await client.log.emitBatch({ events: Array.from({ length: 50 }, (_, i) => ({ type: "note.added", data: { round, i } })) });
    await until(async () => (await client.admin.listProcessors({})).processors[0].failures >= 1_000n, "every delivery failed", 60_000);
    emitting = false;
    await ticking;
    await owner.logRetention.idle();
    const failed = [];
    let pageToken = "";
    do {
      const page = await client.admin.listFailedDeliveries({ processor: "notes.tally", pageSize: 1000, pageToken });
      failed.push(...page.deliveries);
      pageToken = page.nextPageToken;
    } while (pageToken !== "");
    expect(failed).toHaveLength(1_000);
    expect(failed.filter((d) => d.event?.seq !== d.seq).map((d) => d.seq)).toEqual([]);
  });

  it("keeps a pending timer's timer.scheduled, and lets it go once the timer is gone", async () => {
    const plugin: PluginDefinition = { name: "notes", events: { "note.added": { allow: ["*"] } }, actions: { send: { allow: ["*"], run: () => ({}) } } };
    const { client, pass } = await start({ rules: [{ types: "timer.*", max_age_ms: 1 }] }, manifestOf(plugin));
    const timer = await client.schedule("notes.send", {}, { at: T0 + 3_600_000 });
    await client.emit("note.added", {});
    const scheduled = (await client.log.readLog({ types: ["timer.scheduled"] })).events[0];
    let result = await pass();
    expect(result.held).toEqual({ timer: 1 });
    await client.unschedule(timer.id);
    await client.emit("note.added", {});
    result = await pass();
    expect(result.removedEvents).toBe(2); // timer.scheduled and timer.unscheduled
    await expectConnectError(client.log.getEvent({ id: scheduled.id }), Code.NotFound, /removed from the log by retention/);
  });

  it("keeps the latest change of each document", async () => {
    const plugin: PluginDefinition = { name: "notes", events: { "note.added": { allow: ["*"] } }, collections: { rooms: { allow: ["*"] } } };
    const { client, pass } = await start({ rules: [{ types: "rooms.*", max_age_ms: 1 }] }, manifestOf(plugin));
    await client.createDocument("rooms", { _id: "r1", beds: 1 });
    await client.replaceDocument("rooms", "r1", { _id: "r1", beds: 2 });
    await client.createDocument("rooms", { _id: "r2", beds: 1 });
    await client.deleteDocument("rooms", "r2");
    await client.emit("note.added", {});
    const result = await pass();
    expect(result.removedEvents).toBe(3);
    expect(result.held).toEqual({ document: 1 });
    const kept = (await client.log.readLog({ types: ["rooms.created", "rooms.updated", "rooms.deleted"] })).events;
    expect(kept.map((e) => [e.type, (e.data as { _id: string })._id])).toEqual([["rooms.updated", "r1"]]);
  });

  it("compacts by key as a plugin's rule says: the last event of each key stays", async () => {
    const manifest = { ...notes, retention: [{ types: "note.added", keep: RetentionKeep.LATEST_PER_KEY, key: "data.room.id" }] };
    const { client, pass } = await start({}, manifest);
    for (const id of ["a", "b", "a", "c", "a"]) await client.emit("note.added", { room: { id }, at: id });
    await client.emit("note.pinned", {});
    const result = await pass();
    expect(result.removedEvents).toBe(2);
    const kept = (await client.log.readLog({ types: ["note.added"] })).events.map((e) => (e.data as { room: { id: string } }).room.id);
    expect(kept).toEqual(["b", "c", "a"]);
  });

  it("keeps the log under its log-wide max_bytes, oldest first, whatever the rules", async () => {
    const plugin = { ...notes, processors: { pins: { on: ["note.pinned"] } } };
    const { client, pass } = await start({ max_bytes: 2_000 }, plugin);
    for (let i = 0; i < 30; i++) await client.emit("note.added", { text: "x".repeat(100), i });
    const result = await pass();
    expect(result.removedEvents).toBeGreaterThan(10);
    const page = await client.log.readLog({ pageSize: 1000 });
    const bytes = page.events.reduce((sum, e) => sum + JSON.stringify(e.data).length + e.id.length + e.type.length, 0);
    expect(bytes).toBeLessThanOrEqual(2_000);
    expect(page.events.at(-1)?.data).toMatchObject({ i: 29 });
    expect(Number(page.firstSeq)).toBe(Number(page.events[0].seq));
    // A processor's cursor cannot be moved before the log's start (0 replays from it): the message says what it can do.
    const refused = await expectConnectError(
      client.admin.moveCursor({ processor: "notes.pins", to: { case: "ackFloor", value: 1n } }),
      Code.OutOfRange,
      /^ack_floor 1 is before the log's start: the log starts at seq \d+ /,
      /move the cursor to 0 to deliver the log from its start, or to \d+ or later$/,
    );
    expect(refused.rawMessage).not.toMatch(/from_first_seq/);
    await client.admin.moveCursor({ processor: "notes.pins", to: { case: "ackFloor", value: 0n } });
  });

  it("applies the retention rules of a plugin declared in TypeScript code, as a manifest's", async () => {
    const declared = definePlugin({
      ...notes,
      retention: [
        { types: "note.added", maxCount: 2 },
        { types: "note.pinned", keep: "latest_per_key", key: "data.k" },
      ],
    });
    await expectDeclaredRulesApplied(manifestOf(declared));
  });

  it.skipIf(!existsSync(python) && !process.env.CI)(
    "applies the retention rules of a plugin declared in Python code (sdk/python/tests/retention_manifest.py), as a manifest's",
    { tags: ["serial"] },
    async () => {
      const printed = await promisify(execFile)(python, ["sdk/python/tests/retention_manifest.py"], {
        cwd: repo,
        env: { ...process.env, PYTHONPATH: join(repo, "sdk/python") },
      });
      await expectDeclaredRulesApplied(fromJson(PluginManifestSchema, JSON.parse(printed.stdout)));
    },
  );

  it("weighs for the log-wide max_bytes only the oldest events that make its excess: what a processor keeps is not scanned past", async () => {
    const plugin = definePlugin({ ...notes, processors: { reader: { on: "note.added", run: () => {} } } }); // no executor hosts it: it finishes nothing
    const { client, pass, warnings } = await start({ max_bytes: 30_000, warn_bytes: 20_000 }, manifestOf(plugin));
    // 40 notes of 1,000 to 1,200 stored bytes: 40,000 to 48,000, 10,000 to 18,000 past the limit.
    for (let i = 0; i < 40; i++) await client.emit("note.added", { text: "x".repeat(1_000), i });
    const held = await pass();
    expect(held.removedEvents).toBe(0);
    // The warning says the log is past its limit, and what holds it there.
    expect(warnings()).toHaveLength(1);
    expect(warnings()[0]).toMatch(/^the log takes \d+ bytes, past its limit of 30000 \(max_bytes\): /);
    expect(warnings()[0]).toContain(`processor:notes.reader holds ${held.held["processor:notes.reader"]} (processor notes.reader has not finished it`);
    // The oldest notes that make the excess are held, not every note the processor has not finished.
    const holding = held.held["processor:notes.reader"];
    expect(holding).toBeGreaterThanOrEqual(8);
    expect(holding).toBeLessThanOrEqual(19);
    expect((await pass()).held).toEqual(held.held);
    // Finished: they go, and the log is under its limit.
    await client.admin.moveCursor({ processor: "notes.reader", to: { case: "ackFloor", value: BigInt((await seqsOf(client)).at(-1)!) } });
    const removed = await pass();
    expect(removed.removedEvents).toBeGreaterThanOrEqual(8);
    expect(removed.held).toEqual({});
    const page = await client.log.readLog({ pageSize: 1000 });
    const bytes = page.events.reduce((sum, e) => sum + JSON.stringify(e.data).length + e.id.length + e.type.length, 0);
    expect(bytes).toBeLessThanOrEqual(30_000);
    expect(warnings()).toHaveLength(1); // under the limit, past the warning threshold: nothing new to warn of
  });

  it("keeps what a processor behind has not finished and the causes of kept events; lets them go once finished", async () => {
    const seen: number[] = [];
    const plugin: PluginDefinition = {
      name: "notes",
      events: { "note.added": { allow: ["*"] }, "note.pinned": {} },
      processors: {
        tally: {
          on: "note.added",
          async run(ctx) {
            const i = (ctx.event.data as { i: number }).i;
            seen.push(i);
            if (i % 2 === 0) await ctx.emit("note.pinned", { i }); // under the cause: keeps note.added i
          },
        },
      },
    };
    const { owner, client, pass } = await start({ rules: [{ types: "note.added", max_age_ms: 1 }] }, manifestOf(plugin));
    const added = [];
    for (let i = 0; i < 6; i++) added.push(await client.emit("note.added", { i }));
    let result = await pass();
    expect(result.removedEvents).toBe(0);
    expect(result.held["processor:notes.tally"]).toBe(5); // the sixth is the log's last event: never weighed
    const ex = runExecutor({ url: owner.url, token: admin.token, plugins: [definePlugin(plugin)], onError: () => {} });
    cleanups.push(() => ex.stop());
    await until(async () => (await seqsOf(client, ["note.pinned"])).length === 3, "the processor pinned the even notes");
    await until(async () => {
      result = await pass();
      return result.held["processor:notes.tally"] === undefined;
    }, "the processor's cursor past the notes");
    // The odd notes went; the even ones stay: the kept note.pinned events name them as their cause.
    const kept = new Set((await client.log.readLog({ types: ["note.added"] })).events.map((e) => e.id));
    expect(added.filter((e) => kept.has(e.event!.id)).map((e) => (e.event!.data as { i: number }).i)).toEqual([0, 2, 4]);
    expect(result.held.cause).toBe(3);
  });
});
