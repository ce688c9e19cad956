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
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../server/src/clock.js";
import type { OwnerConfig } from "../server/src/config.js";
import type { RetentionPass } from "../server/src/log/retention.js";
import { createClient, type ChronologClient } from "../sdk/ts/src/client.js";
import { expectConnectError } from "./helpers/log-snapshot.js";
import { ownerRows, startTestOwner } from "./helpers/owner.js";

type TestOwner = Awaited<ReturnType<typeof startTestOwner>>;
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/** 2026-03-02T12:00:00Z. */
const T0 = Date.UTC(2026, 2, 2, 12);
const MINUTE = 60_000;
const admin = { name: "admin", token: "admin-token-0123456789", role: "admin" as const };

/** A plugin with free-form types anyone may emit: `note.added` and `note.pinned`. */
const notes = { name: "notes", events: { "note.added": { allow: ["*"] }, "note.pinned": { allow: ["*"] } } };

async function start(
  retention: NonNullable<OwnerConfig["log"]>["retention"],
): Promise<{ owner: TestOwner; client: ChronologClient; clock: ManualClock; pass: () => Promise<RetentionPass> }> {
  const clock = new ManualClock(T0);
  let passes: RetentionPass[] = [];
  const owner = await startTestOwner({ clock, timers: clock, config: { principals: [admin], log: { retention: { interval_ms: MINUTE, ...retention } } } });
  owner.logRetention.onPass((p) => passes.push(p));
  cleanups.push(() => owner.close());
  const client = createClient({ url: owner.url, token: admin.token });
  await client.registerPlugin(notes);
  const pass = async () => {
    passes = [];
    await owner.settled();
    clock.advance(MINUTE);
    const deadline = Date.now() + 10_000;
    while (passes.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    if (passes.length === 0) throw new Error("no retention pass");
    return passes[0];
  };
  return { owner, client, clock, pass };
}

async function seqsOf(client: ChronologClient, types: string[] = []): Promise<number[]> {
  const page = await client.log.readLog({ types, pageSize: 1000 });
  return page.events.map((e) => Number(e.seq));
}

describe("log retention", () => {
  it("keeps the newest max_count events of each type, and says where the log starts", async () => {
    const { client, pass } = await start({ rules: [{ types: "note.*", max_count: 3 }] });
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
  });
});
