// Crash durability and the owner lock, against real
// `chronolog serve` child processes killed with SIGKILL.
//
// 64 callers emit events with their own ids over gRPC (HTTP/2) and record
// every id the owner acknowledged. At a random moment the owner gets kill -9;
// a new owner opens the same folder and the whole log is read back: every
// acknowledged id is there exactly once, seqs are dense from 1, and each
// caller's events stand in the order it got its acknowledgements. The rounds
// continue the same log, so reopening after several crashes is checked too.
//
// The owner lock: a second owner is refused, also when owner.lock was deleted
// while the first ran; an owner whose lock another took stops.
//
// @module-tag serial
// @module-tag postgres

import Database from "better-sqlite3";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createClient, type ChronologClient } from "../sdk/ts/src/client.js";
import { chronologArgs } from "./helpers/chronolog.js";
import { onPostgres, spawnOwner, tempDir, type OwnerProcess } from "./helpers/owner.js";

const repo = new URL("../", import.meta.url).pathname;
const CALLERS = 64;
const ROUNDS = 5;
const TYPE = "crash.emitted";

const manifest = `
name: crashtest
version: "1"
events:
  ${TYPE}:
    allow: ["*"]
    description: one emit of one crash-test caller
    schema:
      type: object
      required: [caller, n]
      additionalProperties: false
      properties:
        caller: { type: integer, minimum: 0 }
        n: { type: integer, minimum: 0 }
`;

/** Folders and processes to clean up, whatever happens. */
const cleanup: { dirs: string[]; owners: OwnerProcess[] } = { dirs: [], owners: [] };

afterAll(async () => {
  for (const owner of cleanup.owners) {
    if (owner.child.exitCode === null && owner.child.signalCode === null) owner.child.kill("SIGKILL");
    await owner.exited;
  }
  for (const dir of cleanup.dirs) rmSync(dir, { recursive: true, force: true });
});

function pluginsDir(): string {
  const dir = tempDir("chronolog-plugins-");
  cleanup.dirs.push(dir);
  writeFileSync(join(dir, "crashtest.yaml"), manifest);
  return dir;
}

function dataDir(): string {
  const dir = tempDir("chronolog-durability-");
  cleanup.dirs.push(dir);
  return dir;
}

async function start(data: string, plugins: string): Promise<OwnerProcess> {
  const owner = await spawnOwner(data, ["--plugins", plugins]);
  cleanup.owners.push(owner);
  return owner;
}

/** One caller's state across rounds. */
interface Caller {
  index: number;
  next: number;
  /** Ids acknowledged (OK), in the order the acknowledgements arrived. */
  acked: string[];
  /** An id sent whose answer never came (the owner died): unknown outcome, re-sent next round. */
  pending: { id: string; n: number } | undefined;
  /** Re-sends of a pending id that found it already in the log. */
  foundExisting: number;
}

/** A caller's loop: re-sends its pending id first (idempotent), then emits new ids until an error. */
async function runCaller(client: ChronologClient, caller: Caller, stop: { stopped: boolean }): Promise<void> {
  while (!stop.stopped) {
    const item = caller.pending ?? { id: `c${caller.index}-${caller.next}`, n: caller.next++ };
    caller.pending = item;
    try {
      const response = await client.emit(TYPE, { caller: caller.index, n: item.n }, { id: item.id });
      if (response.event?.id !== item.id) throw new Error(`owner answered ${response.event?.id} for ${item.id}`);
      if (response.existing) caller.foundExisting++;
      caller.acked.push(item.id);
      caller.pending = undefined;
    } catch {
      // The owner is gone (or going): the outcome of `item` is unknown.
      return;
    }
  }
}

/** Reads the whole log through ReadLog pages. */
async function readAll(client: ChronologClient) {
  const events: { seq: bigint; id: string; type: string; data: Record<string, unknown> }[] = [];
  for await (const e of client.read({}, 1000)) events.push({ seq: e.seq, id: e.id, type: e.type, data: (e.data ?? {}) as Record<string, unknown> });
  return events;
}

/**
 * Checks the log against what the callers were told. With `exact`, every
 * event in the log must be an acknowledged one (nothing phantom).
 */
function verify(log: Awaited<ReturnType<typeof readAll>>, callers: Caller[], exact: boolean): void {
  // Seqs dense from 1 and strictly increasing.
  log.forEach((e, i) => {
    if (e.seq !== BigInt(i + 1)) expect.fail(`seq ${e.seq} at position ${i} (expected ${i + 1}): the log is not dense`);
  });
  // Ids unique.
  const seqOf = new Map<string, bigint>();
  for (const e of log) {
    if (seqOf.has(e.id)) expect.fail(`id ${e.id} appears twice (seqs ${seqOf.get(e.id)} and ${e.seq})`);
    seqOf.set(e.id, e.seq);
    expect(e.type).toBe(TYPE);
    const [c, n] = e.id.slice(1).split("-").map(Number);
    expect(e.data).toEqual({ caller: c, n });
  }
  // Every acknowledged id present, in acknowledgement order per caller.
  let acked = 0;
  for (const caller of callers) {
    let last = 0n;
    for (const id of caller.acked) {
      const seq = seqOf.get(id);
      if (seq === undefined) expect.fail(`acknowledged id ${id} is missing from the log`);
      if (seq <= last) expect.fail(`caller ${caller.index}: ${id} is at seq ${seq}, not after its previous acknowledged event (seq ${last})`);
      last = seq;
    }
    acked += caller.acked.length;
  }
  if (exact) expect(log.length).toBe(acked);
  else expect(log.length).toBeGreaterThanOrEqual(acked);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("durability under kill -9", () => {
  it(`keeps every acknowledged emit of ${CALLERS} concurrent callers across ${ROUNDS} crashes`, { timeout: 180_000 }, async () => {
    const data = dataDir();
    const plugins = pluginsDir();
    const callers: Caller[] = Array.from({ length: CALLERS }, (_, index) => ({ index, next: 0, acked: [], pending: undefined, foundExisting: 0 }));
    let owner = await start(data, plugins);
    const rounds: string[] = [];

    for (let round = 1; round <= ROUNDS; round++) {
      // Emits go on the SDK's Publish stream; once the owner is gone they fail (each caller's outcome in doubt) instead of waiting for it to come back.
      const client = createClient({ url: owner.url, publisher: { reconnectForMs: 0 } });
      // Open the HTTP/2 connection first, so the kill lands while emits are flowing.
      await client.log.readLog({ pageSize: 1 });
      const before = callers.reduce((sum, c) => sum + c.acked.length, 0);
      const stop = { stopped: false };
      const running = Promise.all(callers.map((c) => runCaller(client, c, stop)));
      // A fresh owner is cold (JIT, first connection): arm the kill once the
      // load flows, i.e. after the first CALLERS acknowledgements of the round.
      const armDeadline = Date.now() + 15_000;
      while (callers.reduce((sum, c) => sum + c.acked.length, 0) - before < CALLERS && Date.now() < armDeadline) await sleep(5);
      const warm = callers.reduce((sum, c) => sum + c.acked.length, 0) - before;
      // Spread the kill moments over 150..800 ms, with some randomness in each slot.
      const slot = 650 / ROUNDS;
      const killAt = Math.round(150 + (round - 1) * slot + Math.random() * slot);
      await sleep(killAt);
      owner.child.kill("SIGKILL");
      expect(await owner.exited).toBe("SIGKILL");
      stop.stopped = true;
      await running;
      const ackedNow = callers.reduce((sum, c) => sum + c.acked.length, 0);
      const inDoubt = callers.filter((c) => c.pending).length;

      owner = await start(data, plugins);
      const log = await readAll(createClient({ url: owner.url }));
      verify(log, callers, false);
      rounds.push(
        `round ${round}: kill -9 ${killAt} ms after ${warm} warm-up acks, ${ackedNow - before} acknowledged in the round, ${inDoubt} in doubt, log ${log.length} events`,
      );
      // Each round must really have written under load (the kill was armed
      // after CALLERS acknowledgements), or it checks nothing.
      expect(ackedNow - before).toBeGreaterThanOrEqual(CALLERS);
    }
    expect(callers.reduce((sum, c) => sum + c.acked.length, 0)).toBeGreaterThan(2 * CALLERS);

    // Re-send every id whose outcome is unknown: each lands once, so
    // now the log holds exactly the acknowledged ids and nothing else.
    const client = createClient({ url: owner.url });
    for (const caller of callers) {
      if (!caller.pending) continue;
      const { id, n } = caller.pending;
      const response = await client.emit(TYPE, { caller: caller.index, n }, { id });
      if (response.existing) caller.foundExisting++;
      caller.acked.push(id);
      caller.pending = undefined;
    }
    const log = await readAll(client);
    verify(log, callers, true);
    const existing = callers.reduce((sum, c) => sum + c.foundExisting, 0);
    console.log(`${rounds.join("\n")}\nfinal log: ${log.length} events; ${existing} re-sent ids were already in the log`);

    owner.child.kill("SIGTERM");
    expect(await owner.exited).toBe(0);
  });
});

describe("clean shutdown", () => {
  it("SIGTERM on an idle owner closes everything, logs 'owner stopped' and exits 0 (the process does not end halfway through closing)", async () => {
    const owner = await spawnOwner(tempDir());
    await new Promise((r) => setTimeout(r, 1_500)); // idle: start-up work done, only unref'd handles left besides the port
    owner.child.kill("SIGTERM");
    expect(await owner.exited).toBe(0);
    expect(owner.logs.some((line) => JSON.parse(line).msg === "owner stopped")).toBe(true);
  });
});

// owner.lock guards an SQLite data folder; a PostgreSQL store elects its leader by the lease instead.
describe.skipIf(onPostgres)("owner lock", () => {
  /** Runs `chronolog serve` on `data` and waits for it to exit. */
  function serveUntilExit(data: string): Promise<{ code: number | null; stderr: string }> {
    const child = spawn(process.execPath, [...chronologArgs, "serve", "--data", data, "--port", "0"], {
      cwd: repo,
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
    return new Promise((resolve) =>
      child.once("exit", (code) => {
        clearTimeout(timer);
        resolve({ code, stderr });
      }),
    );
  }

  it("refuses a second owner on a folder in use, and frees the folder on kill -9", { timeout: 60_000 }, async () => {
    const data = dataDir();
    mkdirSync(data, { recursive: true });
    const plugins = pluginsDir();
    const first = await start(data, plugins);

    const second = await serveUntilExit(data);
    expect(second.code).not.toBe(0);
    expect(second.code).not.toBeNull(); // it exited by itself, not by our timeout
    expect(second.stderr).toContain("in use");
    expect(second.stderr).toContain(String(first.child.pid));

    // The first owner is unharmed by the attempt.
    const client = createClient({ url: first.url });
    const emitted = await client.emit(TYPE, { caller: 0, n: 0 }, { id: "c0-0" });
    expect(emitted.event?.seq).toBe(1n);

    first.child.kill("SIGKILL");
    expect(await first.exited).toBe("SIGKILL");

    // No stale lock: a new owner starts at once on the same folder and sees the event.
    const third = await start(data, plugins);
    const log = await readAll(createClient({ url: third.url }));
    expect(log.map((e) => e.id)).toEqual(["c0-0"]);
    third.child.kill("SIGTERM");
    expect(await third.exited).toBe(0);
  });

  const running = (owner: OwnerProcess) => owner.child.exitCode === null && owner.child.signalCode === null;

  /** Emits `n` events with ids `${prefix}-i` to `url` and returns the ids acknowledged. */
  async function emitSome(url: string, prefix: string, n: number): Promise<string[]> {
    const client = createClient({ url });
    const acked: string[] = [];
    for (let i = 0; i < n; i++) {
      const { event } = await client.emit(TYPE, { caller: 0, n: i }, { id: `${prefix}-${i}` });
      acked.push(event!.id);
    }
    return acked;
  }

  /** The log has every acknowledged id once, with seqs dense from 1. */
  function expectDense(log: Awaited<ReturnType<typeof readAll>>, acked: string[]): void {
    expect(log.map((e) => e.seq)).toEqual(log.map((_, i) => BigInt(i + 1)));
    expect(new Set(log.map((e) => e.id)).size).toBe(log.length);
    expect(log.map((e) => e.id).filter((id) => acked.includes(id))).toEqual(acked);
  }

  it("owner.lock deleted while an owner runs: a second owner started on the folder leaves at most one running, and the log stays dense", {
    timeout: 60_000,
  }, async () => {
    const data = dataDir();
    const plugins = pluginsDir();
    const first = await start(data, plugins);
    const acked = await emitSome(first.url, "before", 5);

    rmSync(join(data, "owner.lock"));
    const second = await spawnOwner(data, ["--plugins", plugins]).then(
      (owner) => (cleanup.owners.push(owner), owner),
      (e: Error) => e,
    );
    await new Promise((r) => setTimeout(r, 2_000));
    const alive = [first, ...(second instanceof Error ? [] : [second])].filter(running);
    expect(alive).toHaveLength(1);
    if (second instanceof Error) expect(second.message).toMatch(/data folder .* is in use by another Chronolog owner \(pid \d+/);
    else expect(first.logs.join("\n")).toMatch(/was deleted or replaced while this owner ran and another Chronolog owner/);

    const [survivor] = alive;
    acked.push(...(await emitSome(survivor.url, "after", 20)));
    const log = await readAll(createClient({ url: survivor.url }));
    expectDense(log, acked);
    expect(existsSync(join(data, "owner.lock"))).toBe(true); // taken again (or anew by the survivor)
    survivor.child.kill("SIGTERM");
    expect(await survivor.exited).toBe(0);
  });

  it("a second owner refuses a folder whose owner.lock is missing while owner.pid names a live owner of it (the first cannot retake: stopped)", {
    timeout: 60_000,
  }, async () => {
    const data = dataDir();
    const plugins = pluginsDir();
    const first = await start(data, plugins);
    const acked = await emitSome(first.url, "before", 3);
    rmSync(join(data, "owner.lock"));
    first.child.kill("SIGSTOP"); // its watchdog cannot take the lock again meanwhile
    try {
      const second = await serveUntilExit(data);
      expect(second.code).not.toBe(0);
      expect(second.code).not.toBeNull();
      expect(second.stderr).toContain(
        `is in use by another Chronolog owner (pid ${first.child.pid}; its owner.lock is missing: never delete owner.lock while an owner runs)`,
      );
    } finally {
      first.child.kill("SIGCONT");
    }
    // Running again, the first takes the lock again within a second, and says so.
    const deadline = Date.now() + 5_000;
    while (!first.logs.some((l) => l.includes("took the lock again")) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(first.logs.join("\n")).toContain("owner.lock of data folder");
    expect(existsSync(join(data, "owner.lock"))).toBe(true);
    const third = await serveUntilExit(data);
    expect(third.stderr).toContain(`is in use by another Chronolog owner (pid ${first.child.pid})`);
    acked.push(...(await emitSome(first.url, "after", 3)));
    expectDense(await readAll(createClient({ url: first.url })), acked);
    first.child.kill("SIGTERM");
    expect(await first.exited).toBe(0);
  });

  it("an owner whose owner.lock was replaced by one another owner holds stops within about a second, naming the folder", { timeout: 60_000 }, async () => {
    const data = dataDir();
    const plugins = pluginsDir();
    const first = await start(data, plugins);
    const acked = await emitSome(first.url, "before", 3);
    // Another owner's lock, put in place atomically (as if it started while owner.lock was missing and owner.pid did not name a live owner).
    const other = new Database(join(data, "owner.lock.other"));
    other.pragma("locking_mode = EXCLUSIVE");
    other.exec("BEGIN EXCLUSIVE");
    renameSync(join(data, "owner.lock.other"), join(data, "owner.lock"));
    const replacedAt = Date.now();
    expect(await first.exited).toBe(1);
    expect(Date.now() - replacedAt).toBeLessThan(2_500);
    const fatal = first.logs.map((l) => JSON.parse(l)).find((l) => l.level === 60);
    expect(fatal.msg).toContain(`owner.lock of data folder ${data} was deleted or replaced while this owner ran and another Chronolog owner`);
    expect(fatal.dataDir).toBe(data);
    other.close();
    // The folder is whole: a new owner opens it and finds every acknowledged event.
    const next = await start(data, plugins);
    expectDense(await readAll(createClient({ url: next.url })), acked);
    next.child.kill("SIGTERM");
    expect(await next.exited).toBe(0);
  });
});
