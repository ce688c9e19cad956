// The bundled owner (scripts/build.mjs → dist/main.js, what `npm run serve` runs), as a real
// process on a temporary folder: it serves (health, Emit, ReadLog), runs maintenance SQL through
// its reader child process and against the owner's schema names (dist/migrations/), checkpoints
// the WAL in its worker thread, and starts again on the same folder. Its CLI is the bundle too.
//
// @module-tag serial

import { execFile, spawn } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient as createRpcClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { createClient } from "../sdk/ts/src/client.js";
import { Health, HealthCheckResponse_ServingStatus as ServingStatus } from "@chronolog/sdk/gen/grpc/health/v1/health_pb";
import { bundleCurrent } from "../scripts/build.mjs";
import { tempDir } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

const repo = new URL("../", import.meta.url).pathname;
const dir = tempDir("chronolog-bundle-");
const data = join(dir, "data");
const manifest = `name: bundled\nversion: "1"\nevents:\n  bundle.checked:\n    allow: ["*"]\n    schema: { type: object, required: [n], properties: { n: { type: integer } } }\n`;

interface Running {
  url: string;
  logs: string[];
  stop(): Promise<void>;
}

/** Runs `node dist/main.js serve` on the test folder; resolves at "owner serving". */
function serveBundle(): Promise<Running> {
  const child = spawn(process.execPath, ["dist/main.js", "serve", "--data", data, "--port", "0", "--plugins", join(dir, "plugins")], {
    cwd: repo,
    stdio: ["ignore", "ignore", "pipe"],
  });
  const logs: string[] = [];
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    await exited;
  };
  running.add(stop);
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stderr! }).on("line", (line) => {
      logs.push(line);
      if (line.includes('"owner serving')) resolve({ url: `http://127.0.0.1:${JSON.parse(line).port}`, logs, stop });
    });
    void exited.then(() => reject(new Error(`the bundled owner exited before serving:\n${logs.join("\n")}`)));
  });
}

/** SQLite's WAL index (chronolog.db-shm, little-endian here): frames in the WAL and frames checkpointed. */
function walIndex(): { mxFrame: number; nBackfill: number } {
  const shm = readFileSync(join(data, "chronolog.db-shm"));
  return { mxFrame: shm.readUInt32LE(16), nBackfill: shm.readUInt32LE(96) };
}

/** The bundled CLI: `node dist/main.js ...args`. */
function bundledCli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) =>
    execFile(process.execPath, ["dist/main.js", ...args], { cwd: repo }, (error, stdout, stderr) =>
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    ),
  );
}

const running = new Set<() => Promise<void>>();

beforeAll(() => {
  // The run's global setup built dist/main.js from the sources as they are (test/helpers/bundle-global.ts).
  expect(bundleCurrent()).toBe(true);
  mkdirSync(join(dir, "plugins"));
  writeFileSync(join(dir, "plugins", "bundled.yaml"), manifest);
});

afterAll(async () => {
  for (const stop of running) await stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("the bundled owner (dist/main.js)", () => {
  it("serves, reads and writes maintenance SQL, checkpoints in its worker, and restarts on its folder", async () => {
    const owner = await serveBundle();
    const health = createRpcClient(Health, createGrpcTransport({ baseUrl: owner.url }));
    expect((await health.check({})).status).toBe(ServingStatus.SERVING);

    // `serve` logs the console's address, and the bundle serves it from dist/console/.
    await until(() => owner.logs.some((l) => l.includes(`"console at ${owner.url}/console/"`)), "the console's address in the log");
    const consolePage = await fetch(`${owner.url}/console/`);
    expect([consolePage.status, consolePage.headers.get("content-type")]).toEqual([200, "text/html; charset=utf-8"]);

    const client = createClient({ url: owner.url });
    const emitted = await client.emit("bundle.checked", { n: 1 });
    const page = await client.log.readLog({ types: ["bundle.checked"] });
    expect(page.events.map((e) => [e.seq, e.type, e.data])).toEqual([[emitted.event!.seq, "bundle.checked", { n: 1 }]]);

    // The checkpoint worker (store/sqlite/checkpointer.ts, an eval'd worker that loads better-sqlite3)
    // copies the WAL into the database within a second or so of a commit: the last frame written
    // (mxFrame) gets backfilled. The owner's own connection does not checkpoint (wal_autocheckpoint=0).
    const written = walIndex().mxFrame;
    expect(written).toBeGreaterThan(0);
    await until(() => walIndex().nBackfill >= written, "a WAL checkpoint by the worker thread");

    // A read runs in the maintenance reader child process (store/sqlite/maintenance-read.ts).
    const read = await bundledCli(["--url", owner.url, "sql", "SELECT type FROM events WHERE seq = ?", String(emitted.event!.seq)]);
    expect([read.code, read.stdout.trim().split("\n")[0]]).toEqual([0, JSON.stringify({ type: "bundle.checked" })]);
    // A write is checked against the owner's schema names, read from dist/migrations/.
    const drop = await bundledCli(["--url", owner.url, "sql", "DROP TABLE timer_occurrences"]);
    expect(drop.code).toBe(1);
    expect(drop.stderr).toContain("may not drop, rename or alter the owner's own tables");
    expect(owner.logs.join("\n")).not.toMatch(/checkpoint failed|"level":[56]0/);

    await owner.stop();
    const again = await serveBundle();
    const reopened = await createClient({ url: again.url }).log.readLog({ types: ["bundle.checked", "maintenance.sql"] });
    expect(reopened.events.map((e) => e.type)).toEqual(["bundle.checked", "maintenance.sql"]);
    await again.stop();
  });
});
