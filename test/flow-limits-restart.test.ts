// @module-tag serial
// @module-tag postgres

import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterEach, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { createClient } from "../sdk/ts/src/client.js";
import { limitsPluginManifest, peaks, type RunLine } from "./helpers/limits-plugin.js";
import { onPostgres, spawnOwner, tempDir, type OwnerProcess } from "./helpers/owner.js";
import { freePort } from "./helpers/standby.js";
import { until } from "./helpers/until.js";

const repo = new URL("../", import.meta.url).pathname;
const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill("SIGKILL");
});

/** Starts an executor process hosting the limits plugin, each run taking `runMs`; its run lines go to `lines`. */
function spawnExecutor(url: string, lines: RunLine[], runMs: number) {
  const child = spawn(process.execPath, ["--conditions=chronolog-source", "--import", "tsx", "test/helpers/limits-executor.ts", url, String(runMs)], {
    cwd: repo,
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  createInterface({ input: child.stdout! }).on("line", (line) => lines.push(JSON.parse(line)));
  const ready = new Promise<void>((resolve) => createInterface({ input: child.stderr! }).on("line", (l) => l.includes("executor ready") && resolve()));
  return { child, ready };
}

/** An owner on `dataDir` at `port` with the limits plugin (a new folder of plugins each time, the same manifest) and `args`. */
async function ownerAt(dataDir: string, port: number, args: string[] = []): Promise<OwnerProcess> {
  const plugins = tempDir("chronolog-plugins-");
  mkdirSync(plugins, { recursive: true });
  writeFileSync(join(plugins, "limits.yaml"), stringify(limitsPluginManifest()));
  const owner = await spawnOwner(dataDir, ["--plugins", plugins, ...args], port);
  children.push(owner.child);
  return owner;
}

const lined = (lines: RunLine[], what: RunLine["what"], ev: RunLine["ev"]) => lines.filter((l) => l.what === what && l.ev === ev);

describe("actions' limits across an owner's kill -9 (real processes)", () => {
  it("concurrency: the calls the killed owner left running on executors keep their slots, so calls made after the restart never pass `limit` per key or `total`", async () => {
    const dataDir = tempDir();
    const port = await freePort();
    // On PostgreSQL a short lease: the restarted owner takes over from the killed one while the runs it left go on.
    const lease = onPostgres ? ["--lease-ms", "1500"] : [];
    let owner = await ownerAt(dataDir, port, lease);
    const lines: RunLine[] = [];
    // Runs of 4 s (limits.charge: 1 per customer, 3 in all, timeout 5 s, no grace), which go on
    // on the executors while the owner is dead and restarts.
    const executors = [spawnExecutor(owner.url, lines, 4_000), spawnExecutor(owner.url, lines, 4_000)];
    await Promise.all(executors.map((e) => e.ready));
    const before = createClient({ url: owner.url });
    const first = Array.from({ length: 4 }, (_, n) => before.call("limits.charge", { customer: `c${n}`, n }).catch((e: unknown) => e));
    await until(() => lined(lines, "charge", "start").length === 3, "three calls running (the total)", 30_000);
    owner.child.kill("SIGKILL");
    await owner.exited;
    await Promise.all(first);
    owner = await ownerAt(dataDir, port, lease);
    const restartedAt = Date.now();
    const after = createClient({ url: owner.url });
    // The restarted owner holds the 3 slots of the calls still running on the executors.
    const charge = (await after.admin.listActions({})).actions.find((a) => a.name === "limits.charge");
    expect([charge?.running, charge?.waiting, charge?.limits]).toEqual([3, 0, "1 per input.customer, 3 in all"]);
    // The customers of the runs going on, 3 calls (the total: each waits at most its timeout, 5 s, for a slot).
    const outputs = await Promise.all(Array.from({ length: 3 }, (_, n) => after.call("limits.charge", { customer: `c${n}`, n: 10 + n })));
    expect(outputs.map((o) => o.output.n)).toEqual([10, 11, 12]);
    await until(() => lined(lines, "charge", "end").length === lined(lines, "charge", "start").length, "every run ended");
    const firstEnd = Math.min(...lined(lines, "charge", "end").map((l) => l.at));
    // The case this test is about happened: the owner was back while the first runs still went on.
    expect(restartedAt).toBeLessThan(firstEnd);
    const peak = peaks(lines, "charge", new Map());
    expect(peak.perCustomer).toBe(1);
    expect(peak.total).toBe(3);
  });

  it("rate: the starts before the kill are taken from the bucket again, so the calls after the restart do not pass the rate over its period", async () => {
    const dataDir = tempDir();
    const port = await freePort();
    let owner = await ownerAt(dataDir, port);
    const lines: RunLine[] = [];
    const executor = spawnExecutor(owner.url, lines, 10);
    await executor.ready;
    // limits.ping: 3 calls per 10 s, a burst of 3: the first 3 start at once and empty the bucket.
    const before = createClient({ url: owner.url });
    await Promise.all([0, 1, 2].map((n) => before.call("limits.ping", { n })));
    owner.child.kill("SIGKILL");
    await owner.exited;
    owner = await ownerAt(dataDir, port);
    const after = createClient({ url: owner.url });
    const outputs = await Promise.all([3, 4, 5].map((n) => after.call("limits.ping", { n })));
    expect(outputs.map((o) => o.output.n)).toEqual([3, 4, 5]);
    const starts = lined(lines, "ping", "start")
      .map((l) => l.at)
      .sort((a, b) => a - b);
    expect(starts).toHaveLength(6);
    // A token bucket lets at most burst + limit × t / period starts into any t ms (one more for the
    // ms the starts are printed late or early).
    for (let i = 0; i < starts.length; i++)
      for (let j = i + 1; j < starts.length; j++) expect(j - i + 1).toBeLessThanOrEqual(3 + (3 * (starts[j] - starts[i])) / 10_000 + 1);
  });
});
