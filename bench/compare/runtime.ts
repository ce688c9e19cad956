// What one measurement of bench/compare runs on: a fresh instance of a system (its server or
// owner, in a temp folder), the consumer processes, and the load generator process.
import { fork, spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { benchPlugin } from "../deliver/plugin.js";
import { startOwner, stopOwner, type Owner } from "../lib/owner.js";
import { timersPlugin } from "../timers/plugin.js";
import type { LoadRequest, LoadResult } from "./load.js";
import { comparePlugin } from "./plugin.js";
import { setUpNats, setUpRedis, startNats, startRedis, stopServer, type Server } from "./servers.js";
import type { ChronologPath, Endpoint, System } from "./targets.js";

const repo = new URL("../../", import.meta.url).pathname;
/** Every child process started, killed at exit whichever way the bench ends. */
export const children = new Set<ChildProcess>();
process.on("exit", () => children.forEach((c) => c.kill("SIGKILL")));

export interface Instance {
  system: System;
  /** The process doing the system's work: nats-server, redis-server (also for BullMQ) or the owner. */
  pid: number;
  /** Chronolog's owner (its URL, for /metrics and health checks; its warnings); undefined for the peers. */
  owner?: Owner;
  endpoint(path?: ChronologPath): Endpoint;
  /** Starts a consumer process: deliveries (mode "deliver") or delayed calls ("delays"). */
  consumer(mode: "deliver" | "delays"): Worker;
  stop(): Promise<void>;
}

/** BENCH_OWNER_ARGS: arguments of the owner's `serve`, e.g. "--synchronous NORMAL" (named in the results' header). */
export function ownerServeArgs(): string[] {
  return process.env.BENCH_OWNER_ARGS?.split(" ").filter(Boolean) ?? [];
}

export async function startInstance(system: System, ownerEntry: "bundle" | "tsx"): Promise<Instance> {
  if (system === "chronolog") {
    // BENCH_OWNER_NODE_ARGS: node flags for the owner, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof" to profile it (a profile per owner, written when it stops).
    const nodeArgs = process.env.BENCH_OWNER_NODE_ARGS?.split(" ").filter(Boolean) ?? [];
    const owner: Owner = await startOwner({
      plugins: [comparePlugin(), benchPlugin(), timersPlugin()],
      entry: ownerEntry,
      nodeArgs,
      serveArgs: ownerServeArgs(),
    });
    children.add(owner.child);
    return {
      system,
      pid: owner.child.pid!,
      owner,
      endpoint: (path) => ({ system, address: owner.url, path }),
      consumer: (mode) => startWorker(mode === "deliver" ? ["bench/deliver/executor.ts", owner.url] : ["bench/timers/executor.ts", owner.url]),
      stop: () => stopOwner(owner),
    };
  }
  // BullMQ runs on a Redis of its own.
  const server: Server = system === "nats" ? await startNats() : await startRedis();
  children.add(server.child);
  if (system === "nats") await setUpNats(server);
  if (system === "redis") await setUpRedis(server);
  return {
    system,
    pid: server.child.pid!,
    endpoint: () => ({ system, address: server.address }),
    consumer: (mode) => startWorker(["bench/compare/consumer.ts", system, server.address, mode]),
    stop: () => stopServer(server),
  };
}

export interface WorkerReport {
  handled: number;
  latencies: number[];
  firstAt: number;
  lastAt: number;
  /** bench/timers/executor.ts: [timerId, occurrenceId, latenessMs] per call, in call order. */
  calls?: [string, string, number][];
}

export interface Worker {
  handled: number;
  ready: Promise<void>;
  /** SIGTERM, then its last report. */
  stop(): Promise<WorkerReport>;
}

function startWorker(args: string[]): Worker {
  const child = spawn(process.execPath, ["--conditions=chronolog-source", "--import", "tsx", ...args], { cwd: repo, stdio: ["ignore", "pipe", "inherit"] });
  children.add(child);
  let markReady!: () => void;
  let final!: (r: WorkerReport) => void;
  const report = new Promise<WorkerReport>((r) => (final = r));
  const worker: Worker = {
    handled: 0,
    ready: new Promise((r) => (markReady = r)),
    stop: () => {
      child.kill("SIGTERM");
      return report;
    },
  };
  createInterface({ input: child.stdout! }).on("line", (line) => {
    if (!line.startsWith("{")) return;
    const m = JSON.parse(line);
    if (m.ready) markReady();
    if (m.handled !== undefined) worker.handled = m.handled;
    if (m.latencies || m.calls)
      final({ handled: m.handled ?? m.calls.length, latencies: m.latencies ?? [], firstAt: m.firstAt ?? NaN, lastAt: m.lastAt ?? NaN, calls: m.calls });
  });
  // "close": after its stdout ended, so its last line was read.
  child.once("close", (code) => {
    children.delete(child);
    final({ handled: worker.handled, latencies: [], firstAt: NaN, lastAt: NaN });
    if (code) console.error(`worker ${args.join(" ")} exited ${code}`);
  });
  return worker;
}

/** The load generator child (load.ts) and a function to run one request in it. */
export async function startGenerator(): Promise<{ run(req: LoadRequest): Promise<LoadResult>; close(): void }> {
  const child = fork(new URL("./load.ts", import.meta.url).pathname, [], {
    cwd: repo,
    execArgv: ["--conditions=chronolog-source", "--import", "tsx"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  children.add(child);
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

/** Starts a trivial gRPC server (trivial-server.ts) on `port`. */
export async function startTrivial(kind: string, port: number): Promise<{ pid: number; stop(): Promise<void> }> {
  const child = spawn(process.execPath, ["--conditions=chronolog-source", "--import", "tsx", "bench/compare/trivial-server.ts", kind, String(port)], {
    cwd: repo,
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.add(child);
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once("line", () => resolve());
    child.once("exit", (code) => reject(new Error(`trivial server ${kind} exited ${code}`)));
  });
  return {
    pid: child.pid!,
    stop: async () => {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
      children.delete(child);
    },
  };
}
