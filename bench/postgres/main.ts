// PostgreSQL at network distance (not a test): `npm run bench:postgres [-- --latency 0,1,5]`.
//
// One owner per setting, the bundle with `npm run serve`'s flags: SQLite (its data folder, FULL
// sync), then PostgreSQL (a server started for the run, fsync and synchronous_commit on) reached
// directly and through toxiproxy adding each --latency's ms to every answer (test/helpers/toxiproxy.ts;
// .ci/run builds it). Per setting it prints:
//   - the SDK's emit (the Publish stream) with 256 and with 1 in flight, 5 s each: events/s, ack p50/p99;
//   - 20,000 delays due over 10 s (2,000 calls/s), set 8 s ahead: the setting rate, lateness p50/p99/max
//     (call time at the executor minus due);
//   - a burst of 10,000 delays due within 1 s: every call made, lateness p99, and the longest an
//     emit sent every 50 ms meanwhile waited for its answer; whether the owner kept its lease;
// beside each the owner's event-loop delay p99 (prom-client's monitor, over the workload) and the
// round trips its thread waited for (chronolog_store_waits_total, chronolog_store_wait_seconds_total).
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { createClient } from "../../sdk/ts/src/client.js";
import { runExecutor } from "../../sdk/ts/src/executor.js";
import { definePlugin } from "../../sdk/ts/src/plugin.js";
import { connectNative, endNative } from "../../server/src/store/postgres/pg-db.js";
import { startPostgresServer } from "../../test/helpers/postgres-server.js";
import { startToxiproxy } from "../../test/helpers/toxiproxy.js";
import { buildBundle, scrapeStoreWaits as scrape, serveFlags, writePlugins } from "../lib/owner.js";
import { pct } from "../lib/proc.js";

const repo = new URL("../../", import.meta.url).pathname;
const argv = process.argv.slice(2);
const latencies = (argv.includes("--latency") ? argv[argv.indexOf("--latency") + 1] : "0,1,5").split(",").map(Number);

const late: number[] = [];
const plugin = definePlugin({
  name: "pgbench",
  events: { "pgbench.happened": { allow: ["*"] } },
  actions: { fire: { allow: ["*"], inputSchema: { type: "object" }, run: (ctx) => (late.push(Date.now() - (ctx.input as { due: number }).due), {}) } },
});

interface Started {
  child: ChildProcess;
  url: string;
  logs: string[];
}

async function startOwner(storeArgs: string[]): Promise<Started> {
  const dir = mkdtempSync(join(tmpdir(), "chronolog-pgbench-"));
  writePlugins(join(dir, "plugins"), [plugin]);
  const child = spawn(process.execPath, [...serveFlags, "dist/main.js", "serve", ...storeArgs, "--port", "0", "--plugins", join(dir, "plugins")], {
    cwd: repo,
    stdio: ["ignore", "ignore", "pipe"],
  });
  const logs: string[] = [];
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stderr! }).on("line", (line) => {
      logs.push(line);
      const entry = JSON.parse(line) as { msg?: string; port?: number };
      if (entry.msg?.startsWith("owner serving")) resolve(`http://127.0.0.1:${entry.port}`);
    });
    child.once("exit", (code) => reject(new Error(`the owner exited ${code}: ${logs.slice(-3).join(" | ")}`)));
  });
  return { child, url, logs };
}

/** Runs `body` between two scrapes; returns its result with the loop's p99 and the waits over it. */
async function measured<T>(url: string, body: () => Promise<T>): Promise<T & { loop: string }> {
  const before = await scrape(url);
  const result = await body();
  const after = await scrape(url);
  return {
    ...result,
    loop: `loop p99 ${after.loopP99Ms.toFixed(0)} ms, ${after.waits - before.waits} waits (${((after.waitMs - before.waitMs) / 1000).toFixed(2)} s)`,
  };
}

async function emits(url: string, inFlight: number): Promise<{ line: string }> {
  const client = createClient({ url, emitVia: "stream" });
  const acks: number[] = [];
  const end = performance.now() + 5_000;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (performance.now() < end) {
        const sent = performance.now();
        await client.emit("pgbench.happened", { n: acks.length });
        acks.push(performance.now() - sent);
      }
    }),
  );
  acks.sort((a, b) => a - b);
  return { line: `${Math.round(acks.length / 5)} events/s, ack p50 ${pct(acks, 50).toFixed(2)} / p99 ${pct(acks, 99).toFixed(2)} ms` };
}

async function delays(url: string, count: number, spreadMs: number, aheadMs: number): Promise<{ line: string }> {
  late.length = 0;
  const client = createClient({ url });
  const due = Date.now() + aheadMs;
  const set = performance.now();
  for (let i = 0; i < count; i += 1_000) {
    await client.delayBatch(
      Array.from({ length: Math.min(1_000, count - i) }, (_, j) => {
        const at = due + Math.floor(((i + j) / count) * spreadMs);
        return { action: "pgbench.fire", input: { due: at }, when: { at }, overdue: "unbounded" as const };
      }),
    );
  }
  const setRate = count / ((performance.now() - set) / 1000);
  const waited: number[] = [];
  const deadline = Date.now() + aheadMs + spreadMs + 60_000;
  for (let n = 0; late.length < count && Date.now() < deadline; n++) {
    const sent = performance.now();
    if (Date.now() >= due - 500) {
      await client.emit("pgbench.happened", { probe: n });
      waited.push(performance.now() - sent);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const sorted = [...late].sort((a, b) => a - b);
  waited.sort((a, b) => a - b);
  return {
    line: `set ${Math.round(setRate)}/s; ${late.length}/${count} called, lateness p50 ${pct(sorted, 50)} / p99 ${pct(sorted, 99)} / max ${sorted[sorted.length - 1]} ms; an emit meanwhile waited at most ${waited[waited.length - 1]?.toFixed(0)} ms`,
  };
}

async function run(label: string, storeArgs: string[]): Promise<void> {
  const owner = await startOwner(storeArgs);
  const executor = runExecutor({ url: owner.url, plugins: [plugin], credits: 512, onError: () => undefined });
  await executor.ready;
  try {
    console.log(`\n${label}`);
    for (const inFlight of [256, 1]) {
      const r = await measured(owner.url, () => emits(owner.url, inFlight));
      console.log(`  emit, ${inFlight} in flight: ${r.line}; ${r.loop}`);
    }
    const spread = await measured(owner.url, () => delays(owner.url, 20_000, 10_000, 8_000));
    console.log(`  20,000 delays due over 10 s: ${spread.line}; ${spread.loop}`);
    const burst = await measured(owner.url, () => delays(owner.url, 10_000, 1_000, 8_000));
    console.log(`  10,000 delays due within 1 s: ${burst.line}; ${burst.loop}`);
    const steppedDown = owner.logs.some((l) => /stepping down/.test(l));
    console.log(`  ${owner.child.exitCode === null && !steppedDown ? "kept its lease (still leading)" : "STEPPED DOWN"}`);
  } finally {
    await executor.stop(0);
    owner.child.kill("SIGTERM");
    await new Promise((r) => owner.child.once("exit", r));
  }
}

buildBundle();
console.log(
  `bench/postgres: ${new Date().toISOString()}, load average before: ${(await import("node:os"))
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}`,
);
await run("SQLite (FULL)", ["--data", join(mkdtempSync(join(tmpdir(), "chronolog-pgbench-")), "data")]);
const server = await startPostgresServer({ durable: true });
const toxiproxy = await startToxiproxy();
try {
  const proxy = await toxiproxy.proxy("postgres", new URL(server.url).host);
  let n = 0;
  for (const ms of latencies) {
    const admin = connectNative(server.url, "chronolog bench");
    admin.querySync(`CREATE DATABASE pgbench_${++n}`);
    endNative(admin);
    const url = new URL(server.url);
    url.pathname = `/pgbench_${n}`;
    if (ms > 0) url.host = proxy.listen;
    await proxy.latency(ms);
    await run(ms === 0 ? "PostgreSQL, loopback" : `PostgreSQL, +${ms} ms a round trip (toxiproxy)`, ["--store", url.toString()]);
  }
} finally {
  toxiproxy.stop();
  server.stop();
}
process.exit(0);
