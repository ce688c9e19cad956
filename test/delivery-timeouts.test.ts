// @module-tag serial
// @module-tag sqlite-only

import { Code, ConnectError, createClient as createRpcClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { afterEach, describe, expect, it } from "vitest";
import { createClient, type ChronologClient } from "../sdk/ts/src/client.js";
import { AdminService } from "@chronolog/sdk/gen/chronolog/v1/admin_pb";
import { definePlugin, manifestOf } from "../sdk/ts/src/plugin.js";
import { expectConnectError } from "./helpers/log-snapshot.js";
import { spawnOwner, startTestOwner, tempDir, type OwnerProcess } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

const repo = new URL("../", import.meta.url).pathname;
const children: ChildProcess[] = [];
let respawning = false;
afterEach(() => {
  respawning = false;
  for (const c of children.splice(0)) c.kill("SIGKILL");
});

/** One line of test/helpers/timing-executor.ts: a handler's start or end. */
interface Mark {
  ev: "start" | "end";
  work: string;
  key: string;
  attempt: number;
  pid: number;
  t: number;
  aborted?: string | null;
}

/** The executors' marks, and the pids of executors that died. */
interface Executors {
  marks: Mark[];
  dead: Set<number>;
  /** Executors started so far. */
  started: number;
}

/** Starts a timing executor; resolves once it is connected. When `respawn`, one that dies is replaced (while the test runs). */
function spawnExecutor(url: string, into: Executors, respawn = false): Promise<void> {
  const child = spawn(process.execPath, ["--import", "tsx", "test/helpers/timing-executor.ts", url], { cwd: repo, stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  into.started++;
  createInterface({ input: child.stdout! }).on("line", (line) => into.marks.push(JSON.parse(line)));
  child.once("exit", () => {
    into.dead.add(child.pid!);
    if (respawn && respawning) void spawnExecutor(url, into, true);
  });
  return new Promise<void>((resolve) => createInterface({ input: child.stderr! }).on("line", (l) => l.includes("executor ready") && resolve()));
}

/**
 * Asserts per-key order over every handler run: no run of a key starts while an earlier run of
 * that key (of another event only, when `acrossEvents`) has not ended, unless that run's executor
 * died. Returns the runs.
 */
function expectKeyOrder(ex: Executors, acrossEvents = false): { work: string; key: string; attempt: number; pid: number; start: number; end?: Mark }[] {
  const runs = ex.marks
    .filter((m) => m.ev === "start")
    .map((s) => ({ ...s, start: s.t, end: ex.marks.find((e) => e.ev === "end" && e.work === s.work && e.attempt === s.attempt && e.pid === s.pid) }));
  for (const run of runs) {
    for (const earlier of runs) {
      if (earlier === run || earlier.key !== run.key || earlier.start > run.start || (acrossEvents && earlier.work === run.work)) continue;
      if (earlier.start === run.start && runs.indexOf(earlier) > runs.indexOf(run)) continue;
      const ended = earlier.end !== undefined ? earlier.end.t <= run.start : ex.dead.has(earlier.pid);
      expect(
        ended,
        `${run.key}: ${run.work} try ${run.attempt} started at ${run.start} while ${earlier.work} try ${earlier.attempt} (pid ${earlier.pid}, started ${earlier.start}) still ran`,
      ).toBe(true);
    }
  }
  return runs;
}

/** The events of `type` in the log. */
async function logged(client: ChronologClient, type: string): Promise<Record<string, unknown>[]> {
  const found: Record<string, unknown>[] = [];
  for await (const e of client.read({ types: [type] })) found.push(e.data as Record<string, unknown>);
  return found;
}

async function ackFloor(url: string, processor: string): Promise<number> {
  const admin = createRpcClient(AdminService, createGrpcTransport({ baseUrl: url }));
  const { processors } = await admin.listProcessors({});
  return Number(processors.find((p) => p.name === processor)?.ackFloor ?? 0);
}

async function startOwner(): Promise<OwnerProcess> {
  const owner = await spawnOwner(tempDir());
  children.push(owner.child);
  return owner;
}

describe("poison events and timeouts (real processes)", () => {
  it("an event that kills its executor fails alone: an event in flight beside it is tried again apart from it, and its handler runs", async () => {
    const owner = await startOwner();
    const client = createClient({ url: owner.url });
    const ex: Executors = { marks: [], dead: new Set(), started: 0 };
    respawning = true;
    await spawnExecutor(owner.url, ex, true);
    // b:1 and the poison a:1 reach the executor together; a:2 waits behind a:1 in its lane.
    const emitted = await client.emitBatch([
      { type: "job.run", data: { key: "b" } },
      { type: "job.run", data: { key: "a", poison: true } },
      { type: "job.run", data: { key: "a" } },
    ]);
    const [innocentSeq, poisonSeq, nextSeq] = emitted.map((e) => String(e.event!.seq));
    await until(async () => (await ackFloor(owner.url, "timing.jobs")) >= Number(nextSeq), "every event finished or failed", 60_000);
    respawning = false;
    const failed = (await logged(client, "processor.failed")).filter((d) => d.processor === "timing.jobs");
    expect(failed.map((d) => String((d.event as { seq: number }).seq))).toEqual([poisonSeq]);
    expect(failed[0]).toMatchObject({ error: "executor disconnected while it ran this delivery alone" });
    const ended = (seq: string) => ex.marks.some((m) => m.ev === "end" && m.work === seq);
    expect(ended(innocentSeq), "the innocent event's handler ran to its end").toBe(true);
    expect(ended(nextSeq), "the event after the poison in its key ran to its end").toBe(true);
    expect(ended(poisonSeq)).toBe(false);
    expect(ex.dead.size).toBeGreaterThanOrEqual(3); // the poison was tried 3 times, each killing an executor
    const runs = expectKeyOrder(ex);
    // The poison's last try ended its executor before the next event of its key started.
    expect(Math.max(...runs.filter((r) => r.work === poisonSeq).map((r) => r.start))).toBeLessThan(
      Math.min(...runs.filter((r) => r.work === nextSeq).map((r) => r.start)),
    );
  });

  it("an ack timeout cancels the try, holds its key until the try ends, and a late ack finishes the event", async () => {
    const owner = await startOwner();
    const client = createClient({ url: owner.url });
    const ex: Executors = { marks: [], dead: new Set(), started: 0 };
    await Promise.all([spawnExecutor(owner.url, ex), spawnExecutor(owner.url, ex)]);
    const emitted = await client.emitBatch(Array.from({ length: 5 }, (_, n) => ({ type: "job.slow", data: { key: "A", n } })));
    const seqs = emitted.map((e) => String(e.event!.seq));
    await until(async () => (await ackFloor(owner.url, "timing.slow")) >= Number(seqs[4]), "A:0..A:4 finished", 60_000);
    expect((await logged(client, "processor.failed")).filter((d) => d.processor === "timing.slow")).toEqual([]);
    const runs = expectKeyOrder(ex);
    // Each event ran, in order, and every try that outlived the ack timeout was told so through its signal.
    for (const seq of seqs)
      expect(
        runs.some((r) => r.work === seq && r.end),
        `A:${seqs.indexOf(seq)} ran to its end`,
      ).toBe(true);
    const firstStarts = seqs.map((seq) => Math.min(...runs.filter((r) => r.work === seq).map((r) => r.start)));
    expect([...firstStarts].sort((a, b) => a - b)).toEqual(firstStarts);
    for (const run of runs.filter((r) => r.end && r.end.t - r.start >= 1_400)) {
      expect(run.end!.aborted, `${run.work} try ${run.attempt}`).toBe("cancelled by the owner: not acknowledged within 1000 ms");
    }
    // Each first try acked OK within the grace after its timeout: that late ack finished its event, and no second try ran.
    expect(runs.map((r) => [r.work, r.attempt])).toEqual(seqs.map((seq) => [seq, 1]));
    expect((await logged(client, "processor.retried")).filter((d) => d.processor === "timing.slow")).toEqual([]);
  });

  it("with the default grace a try that outlives it is given up on, yet its late ack still finishes the event; a later try then running is cancelled and its key waits for it", async () => {
    const owner = await startOwner();
    const client = createClient({ url: owner.url });
    const ex: Executors = { marks: [], dead: new Set(), started: 0 };
    await Promise.all([spawnExecutor(owner.url, ex), spawnExecutor(owner.url, ex)]);
    const emitted = await client.emitBatch(Array.from({ length: 3 }, (_, n) => ({ type: "job.late", data: { key: "A", n } })));
    const seqs = emitted.map((e) => String(e.event!.seq));
    await until(async () => (await ackFloor(owner.url, "timing.late")) >= Number(seqs[2]), "A:0..A:2 finished", 60_000);
    expect((await logged(client, "processor.failed")).filter((d) => d.processor === "timing.late")).toEqual([]);
    // Tries of one event may overlap past timeout plus grace (try 1 runs 2.5 s against 1 + 1 s); events of the key never do.
    const runs = expectKeyOrder(ex, true);
    for (const seq of seqs)
      expect(
        runs.some((r) => r.work === seq && r.end),
        `${seq} ran to its end`,
      ).toBe(true);
    // No third try: the first try's late ack (or the second's) finished each event; a second try cut short by it was told why.
    expect(runs.filter((r) => r.attempt > 2)).toEqual([]);
    const reasons = new Set(runs.filter((r) => r.attempt === 2).map((r) => r.end?.aborted));
    for (const reason of reasons)
      expect(["cancelled by the owner: the event was finished by another try", "cancelled by the owner: not acknowledged within 1000 ms", null]).toContain(
        reason,
      );
  });

  it("an action call past its timeout is cancelled, no other run of its call id starts meanwhile, and its late result completes the call", async () => {
    const owner = await startOwner();
    const client = createClient({ url: owner.url });
    const ex: Executors = { marks: [], dead: new Set(), started: 0 };
    await Promise.all([spawnExecutor(owner.url, ex), spawnExecutor(owner.url, ex)]);
    const first = client.call("timing.slow", {}, { callId: "slow-1" });
    first.catch(() => {});
    await until(() => ex.marks.some((m) => m.ev === "start"), "the run started");
    const startedAt = ex.marks[0].t;
    await until(() => Date.now() > startedAt + 1_500, "past the action's timeout");
    // The same call id again while the timed-out run still runs: it joins the call, it does not start a second run.
    const again = client.call("timing.slow", {}, { callId: "slow-1" });
    const [a, b] = await Promise.allSettled([first, again]);
    const describe = (r: PromiseSettledResult<unknown>) =>
      r.status === "fulfilled" ? r.value : `${Code[ConnectError.from(r.reason).code]}: ${ConnectError.from(r.reason).rawMessage}`;
    expect(describe(a)).toMatchObject({ callId: "slow-1", output: { attempt: 1 } });
    expect(describe(b)).toMatchObject({ callId: "slow-1", output: { attempt: 1 } });
    const runs = expectKeyOrder(ex);
    expect(runs.map((r) => [r.attempt, r.end?.aborted])).toEqual([[1, "cancelled by the owner: timed out after 1000 ms"]]);
    expect((await logged(client, "action.completed")).map((d) => d.call_id)).toEqual(["slow-1"]);
    expect(await logged(client, "action.failed")).toEqual([]);
  });

  it("a grace longer than a timer can wait is refused at registration, naming the field", async () => {
    const owner = await startTestOwner();
    try {
      const client = createClient({ url: owner.url });
      const tooLong = 2 ** 31;
      const processor = definePlugin({
        name: "graces",
        events: { "job.run": {} },
        processors: { work: { on: "job.run", timeoutGraceMs: tooLong, run: () => {} } },
      });
      await expectConnectError(
        client.registerPlugin(manifestOf(processor)),
        Code.InvalidArgument,
        /processors\.work\.timeout_grace_ms: timeout_grace_ms must be at most 2147483647/,
      );
      const action = definePlugin({ name: "graces", actions: { act: { timeoutGraceMs: tooLong, run: () => ({}) } } });
      await expectConnectError(
        client.registerPlugin(manifestOf(action)),
        Code.InvalidArgument,
        /actions\.act\.timeout_grace_ms: timeout_grace_ms must be at most 2147483647/,
      );
      const fine = definePlugin({ name: "graces", actions: { act: { timeoutGraceMs: 2 ** 31 - 1, run: () => ({}) } } });
      await client.registerPlugin(manifestOf(fine));
    } finally {
      await owner.close();
    }
  });
});
