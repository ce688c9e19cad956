// Catch-up claims, for bench/postgres/waits.ts (BENCH_ONLY=catchup): BENCH_SCHEDULES interval
// schedules (default 1,000) every second calling a quick action, catching up every moment within a
// minute ("allWithinWindow"), with overlap policy "allow", then "skip", then "bufferOne", each on an
// owner of its own; once under way the owner stops (SIGTERM) and, BENCH_STOPPED_MS later (default
// 2,000), starts again on the same store: every schedule then owes the moments that came due
// meanwhile besides the next ones, claimed together at the start. Prints, over the
// BENCH_SECONDS (default 5) after the restarted owner serves: the calls made (with "allow" every
// moment owed is made; with "skip" and "bufferOne" those owed behind a running one are skipped),
// how long after it served the moments due by then were all called ("allow" only), the owner's
// event-loop delay p99, and the round trips its thread waited for since its start (its start's own
// reads included). BENCH_CATCHUP_OVERLAPS=allow,skip (say) runs those policies alone.
import { type Owner, scrapeStoreWaits as scrape, startOwner, stopOwner } from "../lib/owner.js";
import { createClient } from "../../sdk/ts/src/client.js";
import { runExecutor } from "../../sdk/ts/src/executor.js";
import type { PluginDefinition } from "../../sdk/ts/src/plugin.js";
import { sleep } from "../lib/proc.js";

const schedules = Number(process.env.BENCH_SCHEDULES ?? 1_000);
const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const stoppedMs = Number(process.env.BENCH_STOPPED_MS ?? 2_000);
const everyMs = 1_000;
/** The overlap policies run (BENCH_CATCHUP_OVERLAPS, default all three). */
const overlaps = (process.env.BENCH_CATCHUP_OVERLAPS ?? "allow,skip,bufferOne").split(",") as ("allow" | "skip" | "bufferOne")[];

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

/** Runs the catch-up cases, each on owners of its own serving `plugin` (its actions include {@link catchUpActions}). */
export async function catchUpCases(plugin: PluginDefinition): Promise<void> {
  for (const overlap of overlaps) await stoppedWhileDue(plugin, overlap);
}

/** An executor of `plugin` on the owner at `url`, ready. */
async function executorOn(url: string, plugin: PluginDefinition) {
  const executor = runExecutor({ url, plugins: [plugin], credits: 256, onError: () => undefined, onLog: () => undefined });
  await executor.ready;
  return executor;
}

/** {@link schedules} schedules of overlap `overlap`, their owner stopped for {@link stoppedMs} while they come due; prints the case's line. */
async function stoppedWhileDue(plugin: PluginDefinition, overlap: "allow" | "skip" | "bufferOne"): Promise<void> {
  let owner: Owner | undefined = await startOwner({ plugins: [plugin], entry: "bundle" });
  let executor = await executorOn(owner.url, plugin);
  try {
    const client = createClient({ url: owner.url });
    const policy = { overlap, catchUp: "allWithinWindow" as const, catchUpWindowMs: 60_000 };
    for (let from = 0; from < schedules; from += 64)
      await Promise.all(
        Array.from({ length: Math.min(64, schedules - from) }, (_, k) =>
          client.schedule("pgwaits.catchUpTick", { k: from + k }, { everyMs }, { timerId: `catch-up-${from + k}`, policy }),
        ),
      );
    await sleep(2_000); // the schedules under way
    await executor.stop(100);
    const stopping = performance.now();
    await stopOwner(owner, "SIGTERM", true);
    const first = owner;
    owner = undefined;
    await sleep(Math.max(0, stoppedMs - (performance.now() - stopping)));
    const restarting = performance.now();
    owner = await startOwner({ plugins: [plugin], entry: "bundle", restarts: first });
    const callsBefore = calls;
    executor = await executorOn(owner.url, plugin);
    const served = performance.now();
    // The moments due since the stop, by the time the restarted owner served (each schedule once a second).
    const dueByServed = Math.floor((schedules * (served - stopping)) / everyMs);
    let caughtUpMs: number | undefined;
    while (performance.now() < served + seconds * 1000) {
      if (caughtUpMs === undefined && calls - callsBefore >= dueByServed) caughtUpMs = performance.now() - served;
      await sleep(10);
    }
    const made = calls - callsBefore;
    const after = await scrape(owner.url);
    console.log(
      `  ${schedules} schedules every ${everyMs} ms (catch-up allWithinWindow, overlap ${overlap}), the owner away ${Math.round(served - stopping)} ms ` +
        `(restarted in ${Math.round(served - restarting)} ms): ${made} calls made in the ${seconds} s after` +
        `${overlap === "allow" ? `, the ${dueByServed} due by then all called ${caughtUpMs === undefined ? "not within them" : `${Math.round(caughtUpMs)} ms after it served`}` : ""}; ` +
        `loop p99 ${after.loopP99Ms.toFixed(0)} ms, ${after.waits} waits since its start (${(after.waitMs / 1000).toFixed(2)} s)`,
    );
  } finally {
    await executor.stop(100);
    if (owner) await stopOwner(owner);
  }
}
