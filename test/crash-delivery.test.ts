// @module-tag serial
// @module-tag postgres

import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterEach, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { createClient } from "../sdk/ts/src/client.js";
import { crashPluginManifest } from "./helpers/crash-plugin.js";
import { queryStore, spawnOwner, tempDir, type OwnerProcess } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

const repo = new URL("../", import.meta.url).pathname;
const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill("SIGKILL");
});

/** A port that was free a moment ago. */
function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** Starts the crash executor process; `handled` collects its finished runs. */
function spawnExecutor(url: string, delayMs: number, hangOnSeq = 0) {
  const child = spawn(
    process.execPath,
    ["--conditions=chronolog-source", "--import", "tsx", "test/helpers/executor-process.ts", url, String(delayMs), String(hangOnSeq)],
    { cwd: repo, stdio: ["ignore", "pipe", "pipe"] },
  );
  children.push(child);
  const handled: { seq: number; attempt: number; pid: number }[] = [];
  createInterface({ input: child.stdout! }).on("line", (line) => handled.push(JSON.parse(line)));
  const ready = new Promise<void>((resolve) => createInterface({ input: child.stderr! }).on("line", (l) => l.includes("executor ready") && resolve()));
  return { child, handled, ready };
}

function pluginsDir(): string {
  const dir = tempDir("chronolog-plugins-");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "crash.yaml"), stringify(crashPluginManifest()));
  return dir;
}

describe("crashes during delivery (real processes)", () => {
  it("kill -9 of the owner mid-delivery: every event handled at least once, the saved cursor never past an unfinished event", async () => {
    const dataDir = tempDir();
    const port = await freePort();
    const args = ["--plugins", pluginsDir()];
    let owner: OwnerProcess = await spawnOwner(dataDir, args, port);
    children.push(owner.child);
    const client = createClient({ url: owner.url });
    const total = 400;
    const batch = Array.from({ length: total }, (_, i) => ({ type: "job.queued", data: { key: `k${i % 20}`, i } }));
    await client.emitBatch(batch.slice(0, 200));
    await client.emitBatch(batch.slice(200));
    const ex = spawnExecutor(owner.url, 3);
    await ex.ready;
    await until(() => ex.handled.length > 60, "some deliveries", 20_000);
    owner.child.kill("SIGKILL");
    await owner.exited;
    const handledBeforeKill = new Set(ex.handled.map((h) => h.seq));
    const floor = (queryStore(dataDir, "SELECT ack_floor FROM cursors WHERE processor = 'crash.track'")[0]?.ack_floor as number | undefined) ?? 0;
    for (let seq = 1; seq <= floor; seq++) expect(handledBeforeKill.has(seq), `seq ${seq} at or below the saved floor ${floor} was never handled`).toBe(true);
    expect(floor).toBeLessThan(total);
    owner = await spawnOwner(dataDir, args, port);
    children.push(owner.child);
    await until(() => new Set(ex.handled.map((h) => h.seq)).size === total, "every event handled after the restart", 20_000);
    expect(new Set(ex.handled.map((h) => h.seq))).toEqual(new Set(Array.from({ length: total }, (_, i) => i + 1)));
  });

  it("kill -9 of an executor mid-delivery: its delivery goes to the other executor as a retry", async () => {
    const owner = await spawnOwner(tempDir(), ["--plugins", pluginsDir()]);
    children.push(owner.child);
    const client = createClient({ url: owner.url });
    const hanging = spawnExecutor(owner.url, 0, 1);
    await hanging.ready;
    await client.emit("job.queued", { key: "a" });
    await new Promise((r) => setTimeout(r, 200));
    const healthy = spawnExecutor(owner.url, 0);
    await healthy.ready;
    hanging.child.kill("SIGKILL");
    await until(() => healthy.handled.length === 1, "redelivery", 20_000);
    expect(healthy.handled[0]).toMatchObject({ seq: 1, attempt: 2 });
    expect(hanging.handled).toEqual([]);
  });
});
