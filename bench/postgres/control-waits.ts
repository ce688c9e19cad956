// TriggerTimer and BackfillTimer, whose units used to wait for a round trip on PostgreSQL, for
// bench/postgres/waits.ts: each caller triggers a schedule of its own (an occurrence due now), or
// backfills 10 hours of an hourly schedule of its own (10 occurrences a call, each range new),
// 64 and 1 in flight; an executor makes the calls the occurrences queue meanwhile.
import type { ChronologClient } from "../../sdk/ts/src/client.js";
import { runExecutor } from "../../sdk/ts/src/executor.js";
import type { PluginDefinition } from "../../sdk/ts/src/plugin.js";

/** waits.ts's load: runs `inFlight` callers of `call` (caller, round) for its seconds and prints the line of `label`. */
type Load = (url: string, label: string, inFlight: number, call: (caller: number, round: number) => Promise<boolean | null>) => Promise<void>;

const hour = 3_600_000;

/** Runs the timer controls' cases against the owner at `url` serving `plugin` (its action `pgwaits.fire`). */
export async function controlCases(url: string, client: ChronologClient, plugin: PluginDefinition, load: Load): Promise<void> {
  const executor = runExecutor({ url, plugins: [plugin], credits: 256, onError: () => undefined, onLog: () => undefined });
  await executor.ready;
  try {
    const schedules = (tag: string, inFlight: number) =>
      Promise.all(
        Array.from(
          { length: inFlight },
          async (_, caller) => (await client.schedule("pgwaits.fire", { caller }, { everyMs: hour }, { timerId: `${tag}-${inFlight}-${caller}` })).id,
        ),
      );
    for (const inFlight of [64, 1]) {
      const ids = await schedules("triggered", inFlight);
      await load(url, "trigger a timer", inFlight, async (caller) => {
        await client.triggerTimer(ids[caller]);
        return true;
      });
    }
    const end = Math.floor(Date.now() / hour) * hour;
    for (const inFlight of [64, 1]) {
      const ids = await schedules("backfilled", inFlight);
      await load(url, "backfill 10 hours of a timer", inFlight, async (caller, round) => {
        const to = end - round * 10 * hour;
        const made = await client.backfillTimer(ids[caller], to - 10 * hour, to);
        return made.every((o) => !o.existing);
      });
    }
  } finally {
    await executor.stop(100);
  }
}
