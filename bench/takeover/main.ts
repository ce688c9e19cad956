// Handover benchmark (not a test): `npm run bench:takeover`.
//
// Two owners on one PostgreSQL database (a server started for the run, fsync on), 8 emitters
// with client ids through one client given both URLs. The leader is killed (kill -9) at a random
// moment, BENCH_KILLS times (default 20); after each kill the killed owner is started again as
// the standby. Prints each handover (the kill to the first emit the new leader acknowledges) and
// their p50 and max. Knobs: BENCH_KILLS=20, BENCH_LEASE_MS (default: the owner's, 3000).
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { createClient } from "../../sdk/ts/src/client.js";
import { benchPlugin } from "../deliver/plugin.js";
import { storeArgs } from "../lib/postgres.js";
import { freePort, pct, sleep } from "../lib/proc.js";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildBundle, serveFlags, writePlugins } from "../lib/owner.js";

const repo = new URL("../../", import.meta.url).pathname;
const kills = Number(process.env.BENCH_KILLS ?? 20);
const leaseArgs = process.env.BENCH_LEASE_MS ? ["--lease-ms", process.env.BENCH_LEASE_MS] : [];

interface Proc {
  child: ChildProcess;
  exited: Promise<unknown>;
  saw(pattern: RegExp): Promise<void>;
}

function serve(store: string[], port: number, plugins: string): Proc {
  const child = spawn(process.execPath, [...serveFlags, "dist/main.js", "serve", ...store, "--port", String(port), "--plugins", plugins, ...leaseArgs], {
    cwd: repo,
    stdio: ["ignore", "ignore", "pipe"],
  });
  const lines: string[] = [];
  const waiters: (() => void)[] = [];
  createInterface({ input: child.stderr! }).on("line", (line) => {
    lines.push(line);
    for (const wake of waiters.splice(0)) wake();
  });
  const exited = new Promise((resolve) => child.once("exit", resolve));
  return {
    child,
    exited,
    async saw(pattern) {
      while (!lines.some((l) => pattern.test(l))) await new Promise<void>((resolve) => waiters.push(resolve));
    },
  };
}

process.env.BENCH_STORE = "postgres";
buildBundle();
const store = await storeArgs(""); // BENCH_STORE is postgres: a new database
const plugins = join(mkdtempSync(join(tmpdir(), "chronolog-bench-")), "plugins");
writePlugins(plugins, [benchPlugin()]);
const ports = [await freePort(), await freePort()];
const owners = [serve(store, ports[0], plugins)];
await owners[0].saw(/"msg":"owner serving/);
owners.push(serve(store, ports[1], plugins));
await owners[1].saw(/"msg":"standby/);
let leader = 0;
const client = createClient({ url: ports.map((p) => `http://127.0.0.1:${p}`), emitVia: "unary" });
let acknowledged = 0;
let stop = false;
const emitters = Array.from({ length: 8 }, async (_, w) => {
  for (let i = 0; !stop; i++) {
    for (;;) {
      try {
        await client.emit("bench.placed", { key: `k${i % 100}` }, { id: `w${w}-${i}` });
        acknowledged++;
        break;
      } catch {
        await sleep(20);
      }
    }
  }
});

const handovers: number[] = [];
console.log(`chronolog handover benchmark: 2 owners on PostgreSQL, 8 emitters, ${kills} kills of the leader (kill -9)`);
for (let kill = 1; kill <= kills; kill++) {
  await sleep(1_000 + Math.random() * 1_000);
  const dying = owners[leader];
  dying.child.kill("SIGKILL");
  await dying.exited;
  const killedAt = performance.now();
  const before = acknowledged;
  while (acknowledged === before) await sleep(5);
  handovers.push(performance.now() - killedAt);
  console.log(`kill ${kill}: handover ${Math.round(handovers[handovers.length - 1])} ms`);
  owners[leader] = serve(store, ports[leader], plugins);
  await owners[leader].saw(/"msg":"standby/);
  leader = 1 - leader;
}
stop = true;
await Promise.all(emitters);
handovers.sort((a, b) => a - b);
console.log(
  `handover over ${kills} kills: p50 ${Math.round(pct(handovers, 50))} ms, max ${Math.round(Math.max(...handovers))} ms; ${acknowledged} emits acknowledged`,
);
for (const o of owners) o.child.kill("SIGTERM");
await Promise.all(owners.map((o) => o.exited));
process.exit(0);
