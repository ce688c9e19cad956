// The Python SDK given several owners follows the leader: a real owner next to a standby (a fake
// one, see helpers/standby.ts), a standby that knows no leader and a port where nothing listens.
// The Python client (sdk/python/tests/test_follow_leader.py) and the pyshop executor
// (examples/python/executor.py), both given the standby first, reach the leader; the Python
// publish stream survives the owner killed (SIGKILL) and started again on another port of the
// list, writing each event once (sdk/python/tests/publish_through_restart.py), and a watch goes on
// there after the last event it gave (sdk/python/tests/watch_through_restart.py).
//
// @module-tag serial
// @module-tag sqlite-only

import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { promisify } from "node:util";
import type { JsonObject } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "../sdk/ts/src/client.js";
import type { Event } from "@chronolog/sdk/gen/chronolog/v1/event_pb";
import { spawnOwner, startTestOwner, tempDir, type OwnerProcess } from "./helpers/owner.js";
import { deadPort, startSilentOwner, startStandby, type Standby } from "./helpers/standby.js";
import { until } from "./helpers/until.js";

const repo = new URL("../", import.meta.url).pathname;
const PYTHON = join(repo, ".venv/bin/python");
const env = { ...process.env, PYTHONPATH: join(repo, "sdk/python"), PYTHONUNBUFFERED: "1" };

/** Starts the pyshop example executor with `--url urls`; resolves once it printed "executor ready". */
function spawnPythonExecutor(urls: string): Promise<{ child: ChildProcess; output: string[]; exited: Promise<number | string> }> {
  const child = spawn(PYTHON, ["examples/python/executor.py", "--url", urls], { cwd: repo, env, stdio: ["ignore", "ignore", "pipe"] });
  const output: string[] = [];
  const exited = new Promise<number | string>((resolve) => child.once("exit", (code, signal) => resolve(code ?? signal ?? -1)));
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stderr! }).on("line", (line) => {
      output.push(line);
      if (line === "executor ready") resolve({ child, output, exited });
    });
    exited.then((code) => reject(new Error(`python executor exited (${code}) before it was ready:\n${output.join("\n")}`)));
  });
}

describe.skipIf(!existsSync(PYTHON))("the Python client and executor given several owners", () => {
  let owner: Awaited<ReturnType<typeof startTestOwner>>;
  let standby: Standby;
  let lonely: Standby;
  let executor: Awaited<ReturnType<typeof spawnPythonExecutor>> | undefined;

  beforeAll(async () => {
    owner = await startTestOwner();
    [standby, lonely] = await Promise.all([startStandby(owner.url), startStandby(undefined)]);
  });
  afterAll(async () => {
    executor?.child.kill("SIGTERM");
    await executor?.exited;
    await Promise.all([standby?.close(), lonely?.close()]);
    await owner?.close();
  });

  it("the executor given the standby first gets deliveries; the client emits, calls, reads and watches at the leader, each event once (unittest: sdk/python/tests/test_follow_leader.py)", async () => {
    const urls = `${standby.url},${owner.url}`;
    executor = await spawnPythonExecutor(urls);
    expect(standby.refused()).toBeGreaterThan(0);
    expect(executor.output.filter((line) => line.includes("standby"))).toEqual([]); // a standby's pointer is followed, not reported

    const testEnv = { ...env, CHRONOLOG_URLS: urls, CHRONOLOG_DEAD_URL: `http://127.0.0.1:${await deadPort()}`, CHRONOLOG_LONELY_URL: lonely.url };
    const result = await promisify(execFile)(PYTHON, ["-m", "unittest", "-v", "sdk/python/tests/test_follow_leader.py"], {
      cwd: repo,
      env: testEnv,
      timeout: 60_000,
    }).catch((e: { stdout: string; stderr: string }) => e);
    const output = `${result.stdout}${result.stderr}`;
    expect(output, output).toMatch(/Ran 4 tests[\s\S]*\nOK\s*$/);
  }, 90_000);
});

describe.skipIf(!existsSync(PYTHON))("the Python executor whose first owner accepts its stream and never answers", () => {
  it("gives up on it 10 s without a welcome, says so, and is welcomed at the next owner", async () => {
    const owner = await startTestOwner();
    const silent = await startSilentOwner();
    const executor = await spawnPythonExecutor(`${silent.url},${owner.url}`).catch((e: Error) => e);
    try {
      expect(executor).not.toBeInstanceOf(Error);
      const { output } = executor as Awaited<ReturnType<typeof spawnPythonExecutor>>;
      expect(silent.streams()).toBeGreaterThan(0);
      expect(output.join("\n")).toContain(`no welcome from ${silent.url} within 10 s: reconnecting`);
    } finally {
      if (!(executor instanceof Error)) {
        executor.child.kill("SIGTERM");
        await executor.exited;
      }
      await silent.close();
      await owner.close();
    }
  }, 60_000);
});

describe.skipIf(!existsSync(PYTHON))("the Python publish stream across the owner killed (SIGKILL) and started again on another port of the list", () => {
  let dir: string;
  let owner: OwnerProcess;
  let standby: Standby;

  beforeAll(async () => {
    dir = tempDir("chronolog-pyfollow-");
    owner = await spawnOwner(join(dir, "data"));
    standby = await startStandby(owner.url);
  });
  afterAll(async () => {
    owner?.child.kill("SIGKILL");
    await owner?.exited;
    await standby?.close();
  });

  it("re-sends its pending emits at the new leader under their ids, each event once (sdk/python/tests/publish_through_restart.py); a watch goes on after its last event (watch_through_restart.py)", async () => {
    const client = createClient({ url: owner.url });
    await client.registerPlugin({ name: "pub", version: "1", events: { "pub.any": { allow: ["*"] } } });
    const nextPort = await deadPort();
    const n = 2000;
    const urls = [standby.url, owner.url, `http://127.0.0.1:${nextPort}`].join(",");
    const watcher = spawn(PYTHON, ["sdk/python/tests/watch_through_restart.py"], {
      cwd: repo,
      env: { ...env, CHRONOLOG_URL: urls, CHRONOLOG_COUNT: String(n) },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const watched: string[] = [];
    let watchErr = "";
    watcher.stderr!.on("data", (chunk) => (watchErr += chunk));
    createInterface({ input: watcher.stdout! }).on("line", (line) => watched.push(line));
    const watcherExited = new Promise<number | null>((resolve) => watcher.once("exit", resolve));
    await until(() => watched.some((line) => line.startsWith("watching")), "the Python watch to start", 30_000);
    const child = spawn(PYTHON, ["sdk/python/tests/publish_through_restart.py"], {
      cwd: repo,
      env: { ...env, CHRONOLOG_URL: urls, CHRONOLOG_ADMIN_TOKEN: "", CHRONOLOG_COUNT: String(n), CHRONOLOG_KILL_AFTER: "100" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const lines: string[] = [];
    let stderr = "";
    child.stderr!.on("data", (chunk) => (stderr += chunk));
    createInterface({ input: child.stdout! }).on("line", (line) => lines.push(line));
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    await until(() => lines.includes("acked 100"), "100 Python emits acknowledged", 30_000);
    owner.child.kill("SIGKILL");
    await owner.exited;
    owner = await spawnOwner(join(dir, "data"), [], nextPort);
    standby.setLeader(owner.url);

    expect(await exited, stderr).toBe(0);
    const result = JSON.parse(lines.at(-1)!) as { ids: string[]; seqs: number[] };
    const stored: Event[] = [];
    for await (const e of createClient({ url: owner.url }).read({ types: ["pub.any"] })) stored.push(e);
    expect(stored).toHaveLength(n);
    expect(new Set(stored.map((e) => e.id)).size).toBe(n);
    expect(stored.map((e) => (e.data as JsonObject).py)).toEqual(Array.from({ length: n }, (_, i) => i));
    expect(stored.map((e) => [e.id, Number(e.seq)])).toEqual(result.ids.map((id, i) => [id, result.seqs[i]]));
    expect(await watcherExited, `${watched.at(-1)}\n${watchErr}`).toBe(0);
    expect(watched.slice(1)).toEqual(stored.map((e) => String(e.seq)));
  }, 90_000);
});

describe.skipIf(!existsSync(PYTHON))("the Python client given two owners, the first frozen (SIGSTOP) during a call", () => {
  let first: OwnerProcess;
  let second: OwnerProcess;

  beforeAll(async () => {
    [first, second] = await Promise.all([spawnOwner(join(tempDir("chronolog-pylost-"), "data")), spawnOwner(join(tempDir("chronolog-pylost-"), "data"))]);
    for (const owner of [first, second])
      await createClient({ url: owner.url }).registerPlugin({ name: "lost", version: "1", events: { "lost.any": { allow: ["*"] } } });
  });
  afterAll(async () => {
    first?.child.kill("SIGCONT");
    for (const owner of [first, second]) owner?.child.kill("SIGKILL");
    await Promise.all([first?.exited, second?.exited]);
  });

  it("makes an emit naming its id again at the second owner; an emit without an id is the caller's (sdk/python/tests/lost_owner.py)", async () => {
    const child = spawn(PYTHON, ["sdk/python/tests/lost_owner.py"], {
      cwd: repo,
      env: { ...env, CHRONOLOG_URL: `${first.url},${second.url}` },
      stdio: ["pipe", "pipe", "pipe"],
    });
    const lines: string[] = [];
    let stderr = "";
    child.stderr!.on("data", (chunk) => (stderr += chunk));
    createInterface({ input: child.stdout! }).on("line", (line) => lines.push(line));
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    await until(() => lines.includes("ready"), "the Python clients to reach the first owner", 30_000);
    first.child.kill("SIGSTOP");
    child.stdin!.write("go\n");
    expect(await exited, stderr).toBe(0);
    first.child.kill("SIGCONT"); // it may then run the calls it got frozen: on one database a second is answered from the log
    const result = JSON.parse(lines.at(-1)!) as { without_id: string; named: string; existing: boolean; took_s: number };
    expect(result).toMatchObject({ without_id: "UNAVAILABLE", named: "lost-named", existing: false });
    const atSecond = await createClient({ url: second.url }).log.getEvent({ id: "lost-named" });
    expect(atSecond.event?.data).toEqual({ n: 3 });
  }, 60_000);
});
