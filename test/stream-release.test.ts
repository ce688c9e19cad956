// Server streams a client cancels, abandons or loses are released by the owner
//: the owner runs as a child process; other child processes open
// Watch and Subscribe streams over raw HTTP/2 and drop them at random moments
// (RST_STREAM CANCEL, the whole connection closed, the client process killed),
// in every phase: before the first event, stalled mid catch-up, at caught_up,
// live, waiting on the head; Subscribe before and right after its hello and
// mid-delivery. Afterwards no stream is left open on the owner (its gauges read
// 0 within seconds) and its memory is back where it was.
//
// @module-tag serial
// @module-tag sqlite-only

import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, type ChronologClient } from "../sdk/ts/src/client.js";
import { manifestOf } from "../sdk/ts/src/plugin.js";
import { crashPlugin } from "./helpers/crash-plugin.js";
import { spawnOwner, tempDir, type OwnerProcess } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

const repo = new URL("../", import.meta.url).pathname;
const MiB = 1024 * 1024;
const PAD = "x".repeat(4000); // ~4 KiB per event
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Resident set size of a process, in bytes (Linux /proc). */
function rss(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  if (!m) throw new Error("no VmRSS");
  return Number(m[1]) * 1024;
}

/** One series of the owner's GET /metrics, as written there (`name` or `name{label="value"}`); NaN when absent. */
async function gauge(url: string, series: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? NaN : Number(line.slice(series.length + 1));
}

const openStreams = (method: string) => `chronolog_streams_open{method="${method}"}`;

/** Polls the series until they all read 0 (5 s at most); returns what they read last. */
async function allZero(url: string, series: string[]): Promise<Record<string, number>> {
  const read = async () => Object.fromEntries(await Promise.all(series.map(async (s) => [s, await gauge(url, s)] as const)));
  let last = await read();
  for (let i = 0; i < 50 && Object.values(last).some((v) => v !== 0); i++) {
    await sleep(100);
    last = await read();
  }
  return last;
}

/** Runs test/helpers/stream-churn.ts; resolves with its output once it exits. */
function churn(url: string, mode: string, count: number, seed: number, head: number) {
  const child = spawn(
    process.execPath,
    ["--conditions=chronolog-source", "--import", "tsx", "test/helpers/stream-churn.ts", url, mode, String(count), String(seed), String(head)],
    { cwd: repo, stdio: ["ignore", "pipe", "pipe"] },
  );
  const out = { stdout: "", stderr: "" };
  child.stdout.on("data", (b: Buffer) => (out.stdout += b.toString()));
  child.stderr.on("data", (b: Buffer) => (out.stderr += b.toString()));
  const exited = new Promise<number | string>((resolve) => child.once("exit", (code, signal) => resolve(code ?? signal ?? -1)));
  return { child, out, exited };
}

async function churnToEnd(url: string, mode: string, count: number, seed: number, head: number): Promise<Record<string, number>> {
  const run = churn(url, mode, count, seed, head);
  const code = await run.exited;
  expect(code, run.out.stderr).toBe(0);
  return JSON.parse(run.out.stdout.trim()) as Record<string, number>;
}

describe("streams the client drops are released", () => {
  let owner: OwnerProcess;
  let client: ChronologClient;
  let head = 0;

  beforeAll(async () => {
    // Collected every half second, so RSS measures what the owner retains, not when V8 collects.
    owner = await spawnOwner(tempDir(), ["--synchronous", "NORMAL", "--log-level", "info"], 0, [
      "--expose-gc",
      "--import",
      "./test/helpers/collect-garbage.mjs",
    ]);
    client = createClient({ url: owner.url });
    await client.registerPlugin({ name: "blobs", events: { "blob.stored": { allow: ["*"] } } });
    for (let b = 0; b < 10; b++) {
      await client.emitBatch(Array.from({ length: 100 }, (_, i) => ({ type: "blob.stored", data: { i: b * 100 + i, pad: PAD } })));
    }
    head = Number((await client.log.readLog({ pageSize: 1 })).headSeq);
    expect(head).toBe(1000);
  });
  afterAll(async () => {
    if (owner && owner.child.exitCode === null) {
      owner.child.kill("SIGTERM");
      await owner.exited;
    }
  });

  it("Watch: 1,050 streams cancelled, cut off or lost in every phase leave no watcher and no memory behind", { timeout: 480_000 }, async () => {
    const pid = owner.child.pid!;
    /** `count` streams churned while `held` more are held by a client process that is killed -9; live events arrive all along. */
    const round = async (count: number, held: number, seed: number) => {
      let emitting = true;
      const emitter = (async () => {
        while (emitting) {
          await client.emit("blob.stored", { live: true });
          await sleep(10);
        }
      })();
      const holder = churn(owner.url, "hold", held, seed + 1, head);
      const counts = await churnToEnd(owner.url, "watch", count, seed, head);
      await until(() => holder.out.stdout.includes("holding"), "the held streams to reach their phases", 60_000);
      holder.child.kill("SIGKILL");
      await holder.exited;
      emitting = false;
      await emitter;
      return counts;
    };
    const released = async (what: string) => {
      const left = await allZero(owner.url, ["chronolog_watchers", openStreams("chronolog.v1.LogService/Watch")]);
      expect(left, `Watch streams still open on the owner after their clients went (${what})`).toEqual({
        chronolog_watchers: 0,
        [openStreams("chronolog.v1.LogService/Watch")]: 0,
      });
    };
    // Warm-up: the same kind of run, so the heap reaches its working size before the baseline.
    await released(`warm-up ${JSON.stringify(await round(150, 100, 7))}`);
    await sleep(1000);
    const baseline = rss(pid);

    const counts = await round(900, 150, 42);
    // Each phase is cut often enough to matter; how the 900 spread over them moves with the machine's load
    // (a stream meant to be cut in catch-up whose catch-up has not begun yet counts as timed-out-catch-up).
    for (const phase of ["before-first", "catch-up", "caught-up", "live", "head"])
      expect(counts[phase], `${phase} in ${JSON.stringify(counts)}`).toBeGreaterThan(30);
    expect(counts["connection-closed"]).toBeGreaterThan(10);

    // Every stream is released within seconds (a second each, generously bounded here).
    await released(JSON.stringify(counts));

    // And their memory: RSS back within 20 MiB of the baseline (given a few collections).
    let now = rss(pid);
    for (let i = 0; i < 50 && now > baseline + 20 * MiB; i++) {
      await sleep(200);
      now = rss(pid);
    }
    console.info(`stream-release: ${JSON.stringify(counts)}; owner RSS ${(baseline / MiB).toFixed(1)} MiB before, ${(now / MiB).toFixed(1)} MiB after`);
    expect(now - baseline, `owner RSS ${(now / MiB).toFixed(1)} MiB, baseline ${(baseline / MiB).toFixed(1)} MiB`).toBeLessThan(20 * MiB);

    // The owner still serves watchers.
    const seen: bigint[] = [];
    for await (const e of client.watch({ afterSeq: BigInt(head - 3) })) {
      seen.push(e.seq);
      if (seen.length === 3) break;
    }
    expect(seen).toEqual([BigInt(head - 2), BigInt(head - 1), BigInt(head)]);
  });

  it("Subscribe: streams cancelled before or right after their hello, or mid-delivery, close their sessions", { timeout: 120_000 }, async () => {
    await client.registerPlugin(manifestOf(crashPlugin()));
    for (let b = 0; b < 20; b++) {
      await client.emitBatch(Array.from({ length: 100 }, (_, i) => ({ type: "job.queued", data: { key: `k${(b * 100 + i) % 50}`, pad: PAD } })));
    }
    const counts = await churnToEnd(owner.url, "subscribe", 90, 5, head);
    for (const phase of ["before-hello", "at-hello", "mid-delivery"]) expect(counts[phase], `${phase} in ${JSON.stringify(counts)}`).toBeGreaterThan(10);
    const series = ["chronolog_executors_connected", openStreams("chronolog.v1.ExecutorService/Subscribe")];
    const left = await allZero(owner.url, series);
    expect(left, `executor streams still open after their clients went (${JSON.stringify(counts)})`).toEqual(Object.fromEntries(series.map((s) => [s, 0])));
  });
});
