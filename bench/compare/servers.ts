// The peers' servers for bench/compare: Debian's nats-server and redis-server (installed with
// apt-get when missing), each started on 127.0.0.1 on a free port in a temp folder of its own.
// - nats-server: JetStream with file storage. nats-server 2.9 (Debian 12's) has no
//   `sync_interval` (added in 2.10): it acknowledges a publish once the message is written to
//   the stream's block file through the page cache and fsyncs blocks every 2 minutes, so its
//   acks survive a crash of the server process but not of the machine. Where a 2.10+ server is
//   installed, `sync_interval: always` is set (fsync before every ack).
// - redis-server: appendonly yes, appendfsync always (the reply to a write follows the AOF's
//   fsync), no RDB snapshots.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import * as net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AckPolicy, connect, StorageType } from "nats";
import { Redis } from "ioredis";
import { freePort, sleep } from "../lib/proc.js";
import { names, type Topic } from "./targets.js";

export interface Server {
  child: ChildProcess;
  /** host:port */
  address: string;
  dir: string;
}

function has(binary: string): boolean {
  try {
    execFileSync("sh", ["-c", `command -v ${binary}`], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** Installs Debian's nats-server and redis-server when missing (as root, apt-get). */
export function ensureInstalled(): void {
  const missing = ["nats-server", "redis-server"].filter((b) => !has(b));
  if (missing.length === 0) return;
  console.log(`installing ${missing.join(", ")} (apt-get)`);
  execFileSync("apt-get", ["update"], { stdio: "inherit" });
  execFileSync("apt-get", ["install", "-y", "--no-install-recommends", ...missing], {
    stdio: "inherit",
    env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
  });
}

export function versions(): { nats: string; redis: string } {
  const nats = execFileSync("nats-server", ["--version"], { encoding: "utf8" })
    .trim()
    .replace(/^nats-server: v?/, "");
  const redis = /v=(\S+)/.exec(execFileSync("redis-server", ["--version"], { encoding: "utf8" }))?.[1] ?? "?";
  return { nats, redis };
}

/** Whether this nats-server knows `sync_interval` (2.10 and later). */
export function natsSyncAlways(): boolean {
  const [major, minor] = versions().nats.split(".").map(Number);
  return major > 2 || (major === 2 && minor >= 10);
}

async function waitForPort(port: number, child: ChildProcess, name: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited (${child.exitCode})`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, "127.0.0.1", () => (socket.end(), resolve(true)));
      socket.once("error", () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`${name} did not listen on ${port}`);
    await sleep(50);
  }
}

function spawnServer(name: string, command: string, args: string[], dir: string): ChildProcess {
  const child = spawn(command, args, { cwd: dir, stdio: ["ignore", "ignore", "pipe"] });
  let err = "";
  child.stderr!.on("data", (c: Buffer) => void (err = (err + c.toString()).slice(-2000)));
  child.once("exit", (code, signal) => console.error(`${name} exited (${code ?? signal}): ${err}`)); // removed by stopServer
  return child;
}

export async function startNats(): Promise<Server> {
  const dir = mkdtempSync(join(tmpdir(), "compare-nats-"));
  const port = await freePort();
  const sync = natsSyncAlways() ? ", sync_interval: always" : "";
  writeFileSync(join(dir, "nats.conf"), `listen: "127.0.0.1:${port}"\njetstream { store_dir: "${join(dir, "js")}"${sync} }\n`);
  const child = spawnServer("nats-server", "nats-server", ["-c", join(dir, "nats.conf")], dir);
  await waitForPort(port, child, "nats-server");
  return { child, address: `127.0.0.1:${port}`, dir };
}

export async function startRedis(): Promise<Server> {
  const dir = mkdtempSync(join(tmpdir(), "compare-redis-"));
  const port = await freePort();
  const args = [
    "--port",
    String(port),
    "--bind",
    "127.0.0.1",
    "--dir",
    dir,
    "--appendonly",
    "yes",
    "--appendfsync",
    "always",
    "--save",
    "",
    "--daemonize",
    "no",
    "--protected-mode",
    "no",
    "--maxmemory-policy",
    "noeviction",
  ];
  const child = spawnServer("redis-server", "redis-server", args, dir);
  await waitForPort(port, child, "redis-server");
  return { child, address: `127.0.0.1:${port}`, dir };
}

/** A JetStream file stream per topic (subjects `topic.>`) and, for deliver, the durable pull consumer "workers" (explicit acks). */
export async function setUpNats(server: Server): Promise<void> {
  const nc = await connect({ servers: server.address });
  const jsm = await nc.jetstreamManager();
  for (const topic of ["ingest", "deliver"] as Topic[])
    await jsm.streams.add({ name: names.natsStream(topic), subjects: [`${topic}.>`], storage: StorageType.File });
  await jsm.consumers.add(names.natsStream("deliver"), { durable_name: names.natsDurable, ack_policy: AckPolicy.Explicit, max_ack_pending: 20_000 });
  await nc.close();
}

/** The consumer group "workers" of the deliver stream, reading from its start. */
export async function setUpRedis(server: Server): Promise<void> {
  const [host, port] = server.address.split(":");
  const redis = new Redis({ host, port: Number(port) });
  await redis.xgroup("CREATE", names.redisStream("deliver"), names.redisGroup, "0", "MKSTREAM");
  redis.disconnect();
}

export async function stopServer(server: Server): Promise<void> {
  if (server.child.exitCode === null && server.child.signalCode === null) {
    server.child.removeAllListeners("exit");
    const exited = new Promise((r) => server.child.once("exit", r));
    server.child.kill("SIGTERM");
    const force = setTimeout(() => server.child.kill("SIGKILL"), 5_000);
    await exited;
    clearTimeout(force);
  }
  rmSync(server.dir, { recursive: true, force: true });
}
