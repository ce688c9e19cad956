// Unary call cost benchmark (not a test): `npm run bench:unary`.
//
// One grpc-js load generator (its own process, BENCH_CALLERS=256 calls in
// flight over BENCH_CONNECTIONS=4 HTTP/2 connections) against, in one run:
// - the owner (child process, synchronous=FULL) as `npm run serve` runs it: the
//   bundle (dist/main.js, built at start by scripts/build.mjs) with the node flags of
//   bin/chronolog; grpc.health.v1.Health/Check (a trivial method) and
//   chronolog.v1.LogService/Emit (~200 bytes of JSON);
// - trivial servers answering Health/Check (bench/unary/servers.ts):
//   @grpc/grpc-js, bare node:http2 with gRPC framing, @connectrpc/connect-node
//   (under tsx, with the same node flags).
// For each it prints calls/s, the server's CPU (utime + stime from /proc/<pid>/stat
// over the measured window) and its CPU per call, and Emit's calls/s against
// grpc-js's trivial handler.
//
// Environment knobs:
//   BENCH_SECONDS=5, BENCH_WARMUP_MS=1500, BENCH_CALLERS=256, BENCH_CONNECTIONS=4
//   BENCH_ONLY=owner:Check,owner:Emit,grpc-js,http2,connect-node   runs to do
//   BENCH_PROFILE=1   run the owner (under tsx, for file names) with --cpu-prof and print where its time went

import { execFileSync, fork, spawn, type ChildProcess } from "node:child_process";
import { create, toBinary } from "@bufbuild/protobuf";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import * as net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { EmitRequestSchema } from "@chronolog/sdk/gen/chronolog/v1/log_pb";
import { HealthCheckRequestSchema } from "@chronolog/sdk/gen/grpc/health/v1/health_pb";
import { EVENT_TYPE, eventData, manifest } from "../emit/load.js";
import { report as profileReport } from "../emit/profile.js";
import type { UnaryLoad, UnaryResult } from "./load.js";
import type { TrivialKind } from "./servers.js";

const repo = new URL("../../", import.meta.url).pathname;
const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const warmupMs = Number(process.env.BENCH_WARMUP_MS ?? 1500);
const callers = Number(process.env.BENCH_CALLERS ?? 256);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 4);
const profile = process.env.BENCH_PROFILE === "1";
const only = process.env.BENCH_ONLY?.split(",").map((s) => s.trim());

/** bin/chronolog's node flags (young generation, bytecode, GC threads), for every server measured. */
const nodeFlags = ["--min-semi-space-size=16", "--no-flush-bytecode", "--single-threaded-gc"];
const CHECK = "/grpc.health.v1.Health/Check";
const EMIT = "/chronolog.v1.LogService/Emit";
const checkPayloads = [Buffer.from(toBinary(HealthCheckRequestSchema, create(HealthCheckRequestSchema, { service: "" }))).toString("base64")];
const emitPayloads = Array.from({ length: 256 }, (_, i) =>
  Buffer.from(
    toBinary(EmitRequestSchema, create(EmitRequestSchema, { type: EVENT_TYPE, data: eventData(i), actor: { id: `user:${i % 64}`, via: "bench" } })),
  ).toString("base64"),
);

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

/** CPU seconds (utime + stime) used so far by `pid`. */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100; // clock ticks, 100/s
}

/** Waits for a line on the child's stdout or stderr matching `ready`. */
function waitForLine(child: ChildProcess, ready: RegExp, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const lines: string[] = [];
    const onLine = (line: string) => {
      lines.push(line);
      if (ready.test(line)) resolve();
    };
    createInterface({ input: child.stdout! }).on("line", onLine);
    createInterface({ input: child.stderr! }).on("line", onLine);
    child.once("exit", (code) => reject(new Error(`${what} exited (${code}):\n${lines.join("\n")}`)));
  });
}

interface Server {
  child: ChildProcess;
  port: number;
  /** Time from spawn until the server was ready. */
  readyAfterMs: number;
}

async function startOwner(work: string): Promise<Server> {
  const pluginsDir = join(work, "plugins");
  mkdirSync(pluginsDir, { recursive: true });
  writeFileSync(join(pluginsDir, "bench.yaml"), manifest);
  const port = await freePort();
  const nodeArgs = [...nodeFlags, ...(profile ? ["--cpu-prof", `--cpu-prof-dir=${join(work, "profile")}`] : [])];
  // A profile attributes time to source files only without the bundle: then the owner runs under tsx.
  const args = [
    ...(profile ? ["--conditions=chronolog-source", "--import", "tsx", "server/src/main.ts"] : ["dist/main.js"]),
    "serve",
    "--data",
    join(work, "data"),
    "--port",
    String(port),
    "--plugins",
    pluginsDir,
    "--synchronous",
    "FULL",
    "--log-level",
    "info",
  ];
  const startedAt = performance.now();
  const child = spawn(process.execPath, [...nodeArgs, ...args], { cwd: repo, stdio: ["ignore", "pipe", "pipe"] });
  await waitForLine(child, /owner serving/, "owner");
  return { child, port, readyAfterMs: performance.now() - startedAt };
}

async function startTrivial(kind: TrivialKind): Promise<Server> {
  const port = await freePort();
  const startedAt = performance.now();
  const child = spawn(process.execPath, [...nodeFlags, "--conditions=chronolog-source", "--import", "tsx", "bench/unary/servers.ts", kind, String(port)], {
    cwd: repo,
    stdio: ["ignore", "pipe", "pipe"],
  });
  await waitForLine(child, /^ready$/, kind);
  return { child, port, readyAfterMs: performance.now() - startedAt };
}

async function startGenerator(): Promise<{
  run(load: UnaryLoad, server: Server): Promise<UnaryResult & { cpuUsPerCall: number; serverCpu: number }>;
  close(): void;
}> {
  const child = fork(join(repo, "bench/unary/load.ts"), [], {
    execArgv: ["--conditions=chronolog-source", "--import", "tsx"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  await new Promise<void>((resolve, reject) => {
    child.once("message", () => resolve());
    child.once("exit", (code) => reject(new Error(`load generator exited (${code})`)));
  });
  return {
    run: (load, server) =>
      new Promise((resolve, reject) => {
        let cpuStart = 0;
        let cpuEnd = 0;
        const onMessage = (m: { phase?: string; ok?: boolean; result?: UnaryResult; error?: string }) => {
          if (m.phase === "start") cpuStart = cpuSeconds(server.child.pid!);
          else if (m.phase === "end") cpuEnd = cpuSeconds(server.child.pid!);
          else {
            child.off("message", onMessage);
            if (!m.ok) return reject(new Error(m.error));
            const used = cpuEnd - cpuStart;
            resolve({ ...m.result!, serverCpu: (used / seconds) * 100, cpuUsPerCall: (used * 1e6) / Math.max(1, m.result!.calls) });
          }
        };
        child.on("message", onMessage);
        child.send(load);
      }),
    close: () => child.kill(),
  };
}

function stop(server: Server): Promise<void> {
  return new Promise((resolve) => {
    if (server.child.exitCode !== null) return resolve();
    server.child.once("exit", () => resolve());
    server.child.kill("SIGTERM");
  });
}

const fmt = (n: number, digits = 0) => (Number.isFinite(n) ? n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits }) : "-");

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), "chronolog-unary-"));
  execFileSync(process.execPath, ["scripts/build.mjs"], { cwd: repo, stdio: "inherit" });
  console.log(
    `unary call cost: grpc-js load generator (own process), ${callers} in flight over ${connections} connections, ${seconds} s after ${warmupMs} ms warm-up`,
  );
  const generator = await startGenerator();
  const rows: string[][] = [];
  const rate: Record<string, number> = {};
  const load = (port: number, method: string, payloads: string[]): UnaryLoad => ({
    target: `127.0.0.1:${port}`,
    method,
    payloads,
    callers,
    connections,
    warmupMs,
    durationMs: seconds * 1000,
  });
  const measure = async (name: string, server: Server, method: string, payloads: string[]) => {
    const r = await generator.run(load(server.port, method, payloads), server);
    rate[name] = r.callsPerSec;
    rows.push([
      name,
      fmt(r.callsPerSec),
      `${fmt(r.serverCpu)}%`,
      fmt(r.cpuUsPerCall, 1),
      `${fmt(r.cpuPercent)}%`,
      r.errors ? `${r.errors} (${r.firstError})` : "0",
    ]);
  };
  const want = (name: string) => !only || only.includes(name);
  try {
    if (want("owner:Check") || want("owner:Emit")) {
      const owner = await startOwner(work);
      try {
        if (want("owner:Check")) await measure("owner: Health/Check", owner, CHECK, checkPayloads);
        if (want("owner:Emit")) await measure("owner: LogService/Emit", owner, EMIT, emitPayloads);
      } finally {
        await stop(owner);
      }
      if (profile) {
        const dir = join(work, "profile");
        const files = readdirSync(dir).filter((f) => f.endsWith(".cpuprofile"));
        const mainProfile = files.map((f) => join(dir, f)).sort((a, b) => readFileSync(b).length - readFileSync(a).length)[0];
        if (mainProfile) console.log(`\n${profileReport(mainProfile, 40, owner.readyAfterMs + warmupMs)}`);
        console.log(`owner profile kept in ${dir}`);
      }
    }
    for (const kind of ["grpc-js", "http2", "connect-node"] as const) {
      if (!want(kind)) continue;
      const server = await startTrivial(kind);
      try {
        await measure(`trivial ${kind}: Health/Check`, server, CHECK, checkPayloads);
      } finally {
        await stop(server);
      }
    }
  } finally {
    generator.close();
  }
  const header = ["server: method", "calls/s", "server CPU", "µs CPU/call", "gen CPU", "errors"];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("  ");
  console.log();
  console.log(line(header));
  for (const row of rows) console.log(line(row));
  const emit = rate["owner: LogService/Emit"];
  const trivial = rate["trivial grpc-js: Health/Check"];
  if (emit && trivial) console.log(`Emit calls/s / grpc-js trivial calls/s: ${fmt(emit / trivial, 2)}`);
  if (!profile) rmSync(work, { recursive: true, force: true });
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
