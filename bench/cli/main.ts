// How long a client command of the CLI takes from start to exit, against a local owner:
// `chronolog emit` and `chronolog timers` run from the bundle (dist/main.js, what bin/chronolog
// runs after `npm run build`) and from the sources under tsx, alternating, N times each
// (BENCH_RUNS, default 10). Prints the median and the best in ms.
//
//   npm run bench:cli
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startOwner } from "../../server/src/owner.js";
import { pino } from "pino";

const repo = new URL("../../", import.meta.url).pathname;
const runs = Number(process.env.BENCH_RUNS ?? 10);
execFileSync(process.execPath, ["scripts/build.mjs"], { cwd: repo });

const dataDir = mkdtempSync(join(tmpdir(), "chronolog-bench-cli-"));
const owner = await startOwner({
  dataDir,
  host: "127.0.0.1",
  port: 0,
  logger: pino({ level: "silent" }),
  pluginsDir: join(repo, "examples/quickstart/plugins"),
});
const url = `http://127.0.0.1:${owner.port}`;

const ways = {
  bundle: [join(repo, "dist/main.js")],
  tsx: ["--conditions=chronolog-source", "--import", "tsx", join(repo, "server/src/main.ts")],
};
const commands = {
  emit: ["emit", "order.placed", '{"order_id":"o-1","amount":1,"email":"a@example.com"}', "--url", url],
  timers: ["timers", "--url", url],
};

const times: Record<string, number[]> = {};
for (let i = 0; i < runs; i++) {
  for (const [way, prefix] of Object.entries(ways)) {
    for (const [name, args] of Object.entries(commands)) {
      const started = process.hrtime.bigint();
      // Not spawnSync: it would block this process, and the owner in it could not answer.
      await new Promise<void>((resolve, reject) => {
        const child = spawn(process.execPath, [...prefix, ...args], { cwd: repo, stdio: "ignore" });
        child.once("exit", (code) => (code === 0 ? resolve() : reject(new Error(`${way} ${name} exited ${code}`))));
      });
      (times[`${name} (${way})`] ??= []).push(Number(process.hrtime.bigint() - started) / 1e6);
    }
  }
}
await owner.close();
rmSync(dataDir, { recursive: true, force: true });

console.log(`chronolog client commands, ${runs} runs each (${new Date().toISOString()}):`);
for (const [name, list] of Object.entries(times)) {
  const sorted = [...list].sort((a, b) => a - b);
  console.log(`  ${name.padEnd(18)} median ${sorted[Math.floor(sorted.length / 2)].toFixed(0).padStart(5)} ms   best ${sorted[0].toFixed(0).padStart(5)} ms`);
}
