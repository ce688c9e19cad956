// Emit benchmark (not a test): `npm run bench:emit`.
//
// Starts the owner as a child process (synchronous=FULL, temp data folder,
// log level warn) and a load generator in another child process
// (bench/emit/load.ts), then measures unary Emit at 1, 16 and 256 concurrent
// callers, EmitBatch with 1000 events per call, and the SDK's default emit (the
// Publish stream, one per connection) with 1 and 256 emits in flight, all gRPC
// over HTTP/2.
// Afterwards it measures the raw SQLite limit (better-sqlite3, WAL,
// synchronous=FULL, the owner's events table) for 1, 256 and 1000 rows per
// transaction, and prints the owner's RSS.
//
// Environment knobs:
//   BENCH_SECONDS=5        measured seconds per run (after BENCH_WARMUP_MS=1000 of warm-up)
//   BENCH_CLIENT=grpc-js   load generator client: grpc-js | connect
//   BENCH_CONNECTIONS=4    HTTP/2 connections for runs with more than one caller
//   BENCH_PROFILE=1        run the owner with --cpu-prof and print where its time went
//   BENCH_SYNCHRONOUS=FULL the owner's --synchronous (NORMAL: no fsync per commit, to compare
//                          the request paths' CPU where a slow or busy disk would hide it)
//   BENCH_ONLY=unary:256   run only the listed runs (comma separated mode:callers; modes unary, batch, publish)

import Database from "better-sqlite3";
import { fork, spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import * as net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { createClient } from "../../sdk/ts/src/client.js";
import { EVENT_TYPE, eventData, manifest, type ClientKind, type LoadRequest, type LoadResult } from "./load.js";
import { report as profileReport } from "./profile.js";
import { benchStore, storeArgs } from "../lib/postgres.js";

const repo = new URL("../../", import.meta.url).pathname;
const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const warmupMs = Number(process.env.BENCH_WARMUP_MS ?? 1000);
const clientKind = (process.env.BENCH_CLIENT ?? "grpc-js") as ClientKind;
const manyConnections = Number(process.env.BENCH_CONNECTIONS ?? 4);
const profile = process.env.BENCH_PROFILE === "1";
const synchronous = process.env.BENCH_SYNCHRONOUS ?? "FULL";
const only = process.env.BENCH_ONLY?.split(",").map((s) => s.trim());

interface Run {
  mode: "unary" | "batch" | "publish";
  callers: number;
  batchSize: number;
}

const allRuns: Run[] = [
  { mode: "unary", callers: 1, batchSize: 1 },
  { mode: "unary", callers: 16, batchSize: 1 },
  { mode: "unary", callers: 256, batchSize: 1 },
  { mode: "batch", callers: 1, batchSize: 1000 },
  { mode: "batch", callers: 4, batchSize: 1000 },
  { mode: "publish", callers: 1, batchSize: 1 },
  { mode: "publish", callers: 256, batchSize: 1 },
];
const runs = allRuns.filter((r) => !only || only.includes(`${r.mode}:${r.callers}`));

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** HTTP/2 connections of a run: one for a single caller and for the SDK's Publish stream (one stream per client), else up to BENCH_CONNECTIONS. */
const connectionsOf = (run: Run) => (run.callers === 1 || run.mode === "publish" ? 1 : Math.min(run.callers, manyConnections));

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The owner child: stderr lines collected, probe reports parsed. */
interface OwnerChild {
  child: ChildProcess;
  /** Time from spawn until the owner answered its first call. */
  readyAfterMs: number;
  url: string;
  warnings: string[];
  probe(): Promise<ProbeCounters>;
  exited: Promise<number | string>;
}

interface ProbeCounters {
  commits: number;
  units: number;
  maxBatch: number;
  commitMs: number;
  maxCommitMs: number;
  buckets: number[];
}

async function startOwner(dataDir: string, pluginsDir: string, profileDir: string): Promise<OwnerChild> {
  const port = await freePort();
  const nodeArgs = [
    ...(profile ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] : []),
    "--conditions=chronolog-source",
    "--import",
    "tsx",
    "--import",
    "./bench/emit/probe.ts",
  ];
  const args = [
    "server/src/main.ts",
    "serve",
    ...(await storeArgs(dataDir)),
    "--port",
    String(port),
    "--plugins",
    pluginsDir,
    "--synchronous",
    synchronous,
    "--log-level",
    "warn",
  ];
  const spawnedAt = performance.now();
  const child = spawn(process.execPath, [...nodeArgs, ...args], { cwd: repo, stdio: ["ignore", "ignore", "pipe"] });
  const exited = new Promise<number | string>((resolve) => child.once("exit", (code, signal) => resolve(code ?? signal ?? -1)));
  const warnings: string[] = [];
  const probes: ((c: ProbeCounters) => void)[] = [];
  createInterface({ input: child.stderr! }).on("line", (line) => {
    try {
      const entry = JSON.parse(line);
      if (entry.probe) return probes.shift()?.(entry.probe);
    } catch {
      /* not JSON */
    }
    warnings.push(line);
  });
  const url = `http://127.0.0.1:${port}`;
  const client = createClient({ url });
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`owner exited (${child.exitCode}):\n${warnings.join("\n")}`);
    try {
      await client.log.readLog({ pageSize: 1 });
      break;
    } catch (e) {
      if (Date.now() > deadline) throw e;
      await sleep(100);
    }
  }
  return {
    child,
    readyAfterMs: Math.round(performance.now() - spawnedAt),
    url,
    warnings,
    exited,
    probe: () =>
      new Promise((resolve) => {
        probes.push(resolve);
        child.kill("SIGUSR2");
      }),
  };
}

/** The load generator child and a function to run one load in it. */
async function startGenerator(): Promise<{ run(req: LoadRequest): Promise<LoadResult>; close(): void }> {
  const child = fork(join(repo, "bench/emit/load.ts"), [], {
    execArgv: ["--conditions=chronolog-source", "--import", "tsx"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  await new Promise<void>((resolve, reject) => {
    child.once("message", () => resolve());
    child.once("exit", (code) => reject(new Error(`load generator exited (${code})`)));
  });
  return {
    run: (req) =>
      new Promise((resolve, reject) => {
        child.once("message", (m: { ok: boolean; result?: LoadResult; error?: string }) => (m.ok ? resolve(m.result!) : reject(new Error(m.error))));
        child.send(req);
      }),
    close: () => child.kill(),
  };
}

/** Percentage of one core used by `pid` between two calls of the returned function. */
function cpuMeter(pid: number): () => number {
  const ticks = () => {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    return Number(fields[11]) + Number(fields[12]); // utime + stime, in clock ticks (100/s)
  };
  let t0 = ticks();
  let at = performance.now();
  return () => {
    const t = ticks();
    const now = performance.now();
    const percent = ((t - t0) * 10 * 100) / (now - at);
    t0 = t;
    at = now;
    return percent;
  };
}

function memory(pid: number): { rssMb: number; peakMb: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN);
  return { rssMb: kb("VmRSS") / 1024, peakMb: kb("VmHWM") / 1024 };
}

/**
 * Raw better-sqlite3 inserts of the owner's row shape, WAL + synchronous=FULL,
 * `perTx` rows per BEGIN IMMEDIATE transaction, for `ms`, into a fresh
 * database built by the owner's migrations. Ids are random UUIDv4 like the
 * owner's own (`randomUUID`), or time-ordered (UUIDv7-like) for comparison.
 */
function rawSqlite(dir: string, perTx: number, ms: number, ids: "uuid4" | "time-ordered"): number {
  const db = new Database(join(dir, `raw-${perTx}-${ids}.db`));
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = FULL");
  const migrations = new URL("../../server/src/store/sqlite/migrations/", import.meta.url);
  for (const file of readdirSync(migrations)
    .filter((f) => /^\d{4}_.+\.sql$/.test(f))
    .sort())
    db.exec(readFileSync(new URL(file, migrations), "utf8"));
  const insert = db.prepare("INSERT INTO events (seq, id, type, data, cause, actor, at) VALUES (?, ?, ?, ?, ?, ?, ?)");
  const rows = Array.from({ length: 256 }, (_, i) => ({
    data: JSON.stringify(eventData(i)),
    actor: JSON.stringify({ id: `user:${i % 64}`, for: "", in: "", via: "bench" }),
  }));
  const newId =
    ids === "uuid4"
      ? () => randomUUID()
      : (seq: number) => `${Date.now().toString(16).padStart(12, "0")}-${seq.toString(16).padStart(10, "0")}-${randomUUID().slice(24)}`;
  let seq = 0;
  const tx = db.transaction((n: number) => {
    const now = Date.now();
    for (let i = 0; i < n; i++) {
      const row = rows[seq % rows.length];
      seq++;
      insert.run(seq, newId(seq), EVENT_TYPE, row.data, "", row.actor, now);
    }
  });
  for (let i = 0; i < 20; i++) tx.immediate(perTx); // warm-up
  const before = seq;
  const start = performance.now();
  while (performance.now() - start < ms) tx.immediate(perTx);
  const rate = (seq - before) / ((performance.now() - start) / 1000);
  db.close();
  return rate;
}

const fmt = (n: number, digits = 0) => (Number.isFinite(n) ? n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits }) : "-");

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), "chronolog-bench-"));
  const dataDir = join(work, "data");
  const pluginsDir = join(work, "plugins");
  const profileDir = join(work, "profile");
  mkdirSync(pluginsDir, { recursive: true });
  writeFileSync(join(pluginsDir, "bench.yaml"), manifest);

  console.log(
    `chronolog emit benchmark: owner child on ${benchStore} (synchronous=${synchronous}, log level warn), load generator child (${clientKind}), ${seconds} s per run after ${warmupMs} ms warm-up`,
  );
  console.log(`event data ${JSON.stringify(eventData(1)).length} bytes of JSON; ${manyConnections} HTTP/2 connections when callers > 1`);
  const owner = await startOwner(dataDir, pluginsDir, profileDir);
  const generator = await startGenerator();
  const ownerCpu = cpuMeter(owner.child.pid!);
  const results: { run: Run; result: LoadResult; ownerCpu: number; probe: ProbeCounters }[] = [];
  try {
    for (const run of runs) {
      const connections = connectionsOf(run);
      await owner.probe(); // reset
      // The warm-up is part of the generator's run: count the owner's CPU and commits over it too, then scale.
      ownerCpu();
      const result = await generator.run({
        url: owner.url,
        client: clientKind,
        connections,
        callers: run.callers,
        mode: run.mode,
        batchSize: run.batchSize,
        eventType: EVENT_TYPE,
        warmupMs,
        durationMs: seconds * 1000,
      });
      const cpu = ownerCpu();
      const probe = await owner.probe();
      results.push({ run, result, ownerCpu: cpu, probe });
      if (result.errors > 0) console.log(`  ${run.mode} x${run.callers}: ${result.errors} errors, first: ${result.firstError}`);
    }
  } finally {
    generator.close();
  }
  const mem = memory(owner.child.pid!);

  const header = [
    "mode",
    "callers",
    "conns",
    "events/s",
    "p50 ms",
    "p99 ms",
    "max ms",
    "owner CPU",
    "µs/event",
    "gen CPU",
    "commits/s",
    "units/commit",
    "max units",
    "ms/commit",
  ];
  const table = results.map(({ run, result, ownerCpu: cpu, probe }) => {
    const window = (warmupMs + seconds * 1000) / 1000;
    return [
      run.mode === "unary" ? "Emit" : run.mode === "publish" ? "Publish (SDK emit)" : `EmitBatch(${run.batchSize})`,
      String(run.callers),
      String(connectionsOf(run)),
      fmt(result.eventsPerSec),
      fmt(result.p50, 2),
      fmt(result.p99, 2),
      fmt(result.max, 1),
      `${fmt(cpu)}%`,
      // Owner CPU per event: its CPU over warm-up + window, at the measured rate over both.
      fmt(((cpu / 100) * 1e6) / result.eventsPerSec, 1),
      `${fmt(result.cpuPercent)}%`,
      fmt(probe.commits / window),
      fmt(probe.units / Math.max(1, probe.commits), 1),
      String(probe.maxBatch),
      fmt(probe.commitMs / Math.max(1, probe.commits), 2),
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...table.map((r) => r[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => (i < 1 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("  ");
  console.log();
  console.log(line(header));
  for (const row of table) console.log(line(row));
  console.log(
    "(owner CPU, µs/event, commits and units/commit cover warm-up + measured window; a unit is one Emit or one EmitBatch call, or one emit of a Publish stream)",
  );

  const stopAt = Date.now();
  owner.child.kill("SIGTERM");
  const code = await owner.exited;
  console.log(`owner RSS at the end: ${fmt(mem.rssMb, 1)} MB (peak ${fmt(mem.peakMb, 1)} MB); stopped with ${code} in ${Date.now() - stopAt} ms`);
  const warnings = owner.warnings.filter((w) => w.trim() !== "");
  if (warnings.length > 0) console.log(`owner stderr (${warnings.length} lines):\n  ${warnings.slice(0, 8).join("\n  ")}`);

  const rawDir = join(work, "raw");
  mkdirSync(rawDir, { recursive: true });
  const raw = [1, 256, 1000].map((perTx) => `${perTx} row${perTx > 1 ? "s" : ""}/tx ${fmt(rawSqlite(rawDir, perTx, 3000, "uuid4"))} rows/s`);
  console.log(`raw SQLite limit (better-sqlite3, WAL, synchronous=FULL, events table, same rows, random UUIDv4 ids, 3 s each): ${raw.join(" | ")}`);
  const ordered = [256, 1000].map((perTx) => `${perTx} rows/tx ${fmt(rawSqlite(rawDir, perTx, 3000, "time-ordered"))} rows/s`);
  console.log(`  same with time-ordered ids: ${ordered.join(" | ")}`);

  if (profile) {
    const files = readdirSync(profileDir).filter((f) => f.endsWith(".cpuprofile"));
    // The main thread's profile is the biggest; the others are loader threads.
    const main = files.map((f) => join(profileDir, f)).sort((a, b) => readFileSync(b).length - readFileSync(a).length)[0];
    // Leave out the owner's start-up (module loading, plugin compile) and the first warm-up.
    if (main) console.log(`\n${profileReport(main, 30, owner.readyAfterMs + warmupMs)}`);
    console.log(`profiles kept in ${profileDir}`);
  } else {
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
