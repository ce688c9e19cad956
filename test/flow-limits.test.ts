// @module-tag serial
// @module-tag postgres

import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterEach, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { createClient } from "../sdk/ts/src/client.js";
import { limitsPluginManifest, peaks, type RunLine } from "./helpers/limits-plugin.js";
import { queryStore, spawnOwner, tempDir, type OwnerProcess } from "./helpers/owner.js";
import { freePort } from "./helpers/standby.js";
import { pythonUnittest } from "./helpers/python-unittest.js";
import { until } from "./helpers/until.js";

const repo = new URL("../", import.meta.url).pathname;
const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill("SIGKILL");
});

/** Starts an executor process hosting the limits plugin; its run lines go to `lines`. */
function spawnExecutor(url: string, lines: RunLine[]) {
  const child = spawn(process.execPath, ["--conditions=chronolog-source", "--import", "tsx", "test/helpers/limits-executor.ts", url], {
    cwd: repo,
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  createInterface({ input: child.stdout! }).on("line", (line) => lines.push(JSON.parse(line)));
  const ready = new Promise<void>((resolve) => createInterface({ input: child.stderr! }).on("line", (l) => l.includes("executor ready") && resolve()));
  return { child, ready };
}

function pluginsDir(): string {
  const dir = tempDir("chronolog-plugins-");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "limits.yaml"), stringify(limitsPluginManifest()));
  return dir;
}

/** The ids of `what` whose run ended at least once. */
function ended(lines: RunLine[], what: RunLine["what"]): Set<number> {
  return new Set(lines.filter((l) => l.what === what && l.ev === "end").map((l) => l.id));
}

describe("concurrency limits by key (real processes)", () => {
  it("a processor's deliveries: at most `limit` per key and `total` in all, through an executor's kill -9 and an owner's", async () => {
    const dataDir = tempDir();
    const port = await freePort();
    const args = ["--plugins", pluginsDir()];
    let owner: OwnerProcess = await spawnOwner(dataDir, args, port);
    children.push(owner.child);
    const client = createClient({ url: owner.url });
    const total = 96;
    await client.emitBatch(Array.from({ length: total }, (_, i) => ({ type: "work.queued", data: { customer: i % 2 === 0 ? "c0" : `c${1 + (i % 3)}`, i } })));
    const lines: RunLine[] = [];
    const killedAt = new Map<number, number>();
    const a = spawnExecutor(owner.url, lines);
    const b = spawnExecutor(owner.url, lines);
    await Promise.all([a.ready, b.ready]);
    await until(() => ended(lines, "work").size >= 20, "some deliveries", 30_000);
    killedAt.set(a.child.pid!, Date.now());
    a.child.kill("SIGKILL");
    await until(() => ended(lines, "work").size >= 50, "deliveries after the executor's kill", 30_000);
    owner.child.kill("SIGKILL");
    await owner.exited;
    owner = await spawnOwner(dataDir, args, port);
    children.push(owner.child);
    await until(() => ended(lines, "work").size === total, "every event handled", 60_000);
    const peak = peaks(lines, "work", killedAt);
    expect(peak.perCustomer).toBe(2); // the limit, reached and never passed
    expect(peak.total).toBeLessThanOrEqual(6);
    expect(peak.total).toBeGreaterThan(2); // customers ran side by side
  });

  it("an action's calls: at most `limit` per key and `total` in all across executors, through an executor's kill -9", async () => {
    const owner = await spawnOwner(tempDir(), ["--plugins", pluginsDir()]);
    children.push(owner.child);
    const client = createClient({ url: owner.url });
    const lines: RunLine[] = [];
    const killedAt = new Map<number, number>();
    const a = spawnExecutor(owner.url, lines);
    const b = spawnExecutor(owner.url, lines);
    await Promise.all([a.ready, b.ready]);
    const count = 24;
    const calls = Array.from({ length: count }, (_, n) => client.call("limits.charge", { customer: `c${n % 4}`, n }));
    await until(() => ended(lines, "charge").size >= 6, "some calls", 30_000);
    killedAt.set(a.child.pid!, Date.now());
    a.child.kill("SIGKILL");
    const outputs = await Promise.all(calls);
    expect(outputs.map((o) => o.output.n)).toEqual(Array.from({ length: count }, (_, n) => n));
    const peak = peaks(lines, "charge", killedAt);
    expect(peak.perCustomer).toBe(1);
    expect(peak.total).toBe(3); // reached: 4 customers wanted 4 at once
  });

  it("debounce: a burst of a key's events makes one delivery with their count, after quiet or at the longest wait, and a burst pending across an owner's kill -9 is delivered after the restart", async () => {
    const dataDir = tempDir();
    const port = await freePort();
    const args = ["--plugins", pluginsDir()];
    let owner: OwnerProcess = await spawnOwner(dataDir, args, port);
    children.push(owner.child);
    let client = createClient({ url: owner.url });
    const lines: RunLine[] = [];
    const ex = spawnExecutor(owner.url, lines);
    await ex.ready;
    const settled = (doc: string) => lines.filter((l) => l.what === "settle" && l.customer === doc);
    const changes = (doc: string, n: number) => Array.from({ length: n }, (_, i) => ({ type: "doc.changed", data: { doc, i } }));
    const burst = await client.emitBatch([...changes("a", 5), ...changes("b", 2)]);
    await until(() => settled("a").length > 0 && settled("b").length > 0, "the bursts' deliveries");
    expect(settled("a")).toMatchObject([{ count: 5, id: Number(burst[4].event!.seq) }]); // the last event, standing for 5
    expect(settled("b")).toMatchObject([{ count: 2, id: Number(burst[6].event!.seq) }]);
    // Changes every 200 ms for 5 s never leave 2 s of quiet: the longest wait (3 s) delivers meanwhile.
    for (let i = 0; i < 25; i++) {
      await client.emit("doc.changed", { doc: "busy", i });
      await new Promise((r) => setTimeout(r, 200));
    }
    await until(() => settled("busy").reduce((n, l) => n + (l.count ?? 0), 0) === 25, "every busy change delivered");
    expect(settled("busy").length).toBeGreaterThanOrEqual(2);
    // A burst the owner dies with, before its quiet ends, is delivered by the next owner: the saved
    // cursor stays below it meanwhile (the floor is saved within 20 ms of moving).
    const pending = await client.emitBatch(changes("c", 3));
    await new Promise((r) => setTimeout(r, 400));
    const saved = queryStore(dataDir, "SELECT ack_floor FROM cursors WHERE processor = 'limits.settle'")[0]?.ack_floor as number;
    expect(saved).toBeLessThan(Number(pending[0].event!.seq));
    owner.child.kill("SIGKILL");
    await owner.exited;
    expect(settled("c")).toEqual([]);
    owner = await spawnOwner(dataDir, args, port);
    children.push(owner.child);
    client = createClient({ url: owner.url });
    await until(() => settled("c").length > 0, "the pending burst's delivery after the restart", 20_000);
    expect(settled("c")).toMatchObject([{ count: 3 }]);
    expect(settled("a")).toHaveLength(1); // finished bursts are not delivered again
  });
});

const python = join(repo, ".venv/bin/python");
describe.skipIf(!existsSync(python) && !process.env.CI)("the Python SDK's declarations", () => {
  it("carry concurrency by key, rate, debounce and priority into the manifest (unittest: sdk/python/tests/test_flow_limits.py)", async () => {
    const result = await pythonUnittest("sdk/python/tests/test_flow_limits.py");
    expect(result.exit).toBe("exit 0");
    expect(result.stderr).toMatch(/^Ran 2 tests in .*\n\nOK\s*$/m);
  });
});
