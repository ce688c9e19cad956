// Catch-up claims, for bench/postgres/waits.ts (BENCH_ONLY=catchup): BENCH_SCHEDULES interval
// schedules (default 1,000) every second calling a quick action, catching up every moment within a
// minute ("allWithinWindow"), with overlap policy "allow", then "skip", then "bufferOne"; once under
// way, the owner's process is stopped (SIGSTOP) for BENCH_STOPPED_MS (default 2,000), then continued:
// every schedule then owes the moments that came due meanwhile besides the next ones, claimed
// together. Prints, over the stop and the BENCH_SECONDS (default 5) after it: the calls made of those
// asked for (with "allow", every moment owed is made; with "skip" and "bufferOne" the moments owed
// behind a running one are skipped), how long after the stop the moments due during it were all
// called ("allow" only), the owner's event-loop delay p99, and the round trips its thread waited
// for. The owner's lease is made long enough (--lease-ms, waits.ts) for it to lead on after the stop.
import type { Owner } from "../lib/owner.js";
import type { ChronologClient } from "../../sdk/ts/src/client.js";
import { runExecutor } from "../../sdk/ts/src/executor.js";
import type { PluginDefinition } from "../../sdk/ts/src/plugin.js";
import { scrapeStoreWaits as scrape } from "../lib/owner.js";
import { sleep } from "../lib/proc.js";

const schedules = Number(process.env.BENCH_SCHEDULES ?? 1_000);
const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const stoppedMs = Number(process.env.BENCH_STOPPED_MS ?? 2_000);
const everyMs = 1_000;

/** The calls of `pgwaits.catchUpTick` made so far. */
let calls = 0;

/** The action of the catch-up schedules: quick, counted. */
export const catchUpActions = {
  catchUpTick: {
    allow: ["*"],
    run: () => {
      calls++;
      return {};
    },
  },
};

/** Runs the catch-up cases against `owner` serving `plugin` (its actions include {@link catchUpActions}). */
export async function catchUpCases(owner: Owner, client: ChronologClient, plugin: PluginDefinition): Promise<void> {
  const executor = runExecutor({ url: owner.url, plugins: [plugin], credits: 256, onError: () => undefined, onLog: () => undefined });
  await executor.ready;
  try {
    for (const overlap of ["allow", "skip", "bufferOne"] as const) await stoppedWhileDue(owner, client, overlap);
  } finally {
    await executor.stop(100);
  }
}

/** {@link schedules} schedules of overlap `overlap`, the owner stopped for {@link stoppedMs} while they come due; prints the case's line, then unschedules them. */
async function stoppedWhileDue(owner: Owner, client: ChronologClient, overlap: "allow" | "skip" | "bufferOne"): Promise<void> {
  const ids = Array.from({ length: schedules }, (_, k) => `catch-up-${overlap}-${k}`);
  const policy = { overlap, catchUp: "allWithinWindow" as const, catchUpWindowMs: 60_000 };
  for (let from = 0; from < schedules; from += 64)
    await Promise.all(
      ids.slice(from, from + 64).map((timerId, k) => client.schedule("pgwaits.catchUpTick", { k: from + k }, { everyMs }, { timerId, policy })),
    );
  await sleep(2_000); // the statements prepared, the schedules under way
  const before = await scrape(owner.url);
  const callsBefore = calls;
  const started = performance.now();
  owner.child.kill("SIGSTOP");
  await sleep(stoppedMs);
  owner.child.kill("SIGCONT");
  const continued = performance.now();
  // Every moment due by the time the owner continued, since the scrape before: about this many calls (each schedule due once a second).
  const dueByContinue = Math.floor((schedules * (continued - started)) / everyMs);
  let caughtUpMs: number | undefined;
  while (performance.now() < continued + seconds * 1000) {
    if (caughtUpMs === undefined && calls - callsBefore >= dueByContinue) caughtUpMs = performance.now() - continued;
    await sleep(10);
  }
  const elapsed = (performance.now() - started) / 1000;
  const made = calls - callsBefore;
  const after = await scrape(owner.url);
  console.log(
    `  ${schedules} schedules every ${everyMs} ms (catch-up allWithinWindow, overlap ${overlap}), the owner stopped ${stoppedMs} ms: ` +
      `${made} calls made of ${Math.round((schedules * elapsed * 1000) / everyMs)} asked in ${elapsed.toFixed(1)} s` +
      `${overlap === "allow" ? `, the ${dueByContinue} due by the stop's end called ${caughtUpMs === undefined ? "not within the run" : `${Math.round(caughtUpMs)} ms after it`}` : ""}; ` +
      `loop p99 ${after.loopP99Ms.toFixed(0)} ms, ${after.waits - before.waits} waits (${((after.waitMs - before.waitMs) / 1000).toFixed(2)} s)`,
  );
  for (let from = 0; from < schedules; from += 64) await Promise.all(ids.slice(from, from + 64).map((id) => client.unschedule(id)));
}
