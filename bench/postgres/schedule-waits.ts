// Time's calls whose ends and retries used to wait for a round trip on PostgreSQL, for
// bench/postgres/waits.ts:
//   - action calls whose first attempt fails, each called again with its call id and input (its
//     second attempt: `action.retried`), 64 and 1 in flight;
//   - action calls each cancelling a pending delay whose `cancel_on` names `action.completed` and
//     its call id (BENCH_MATCHING of them, default 12,000, preloaded), 64 and 1 in flight;
//   - BENCH_SCHEDULES interval schedules (default 1,000) every second (the shortest interval)
//     calling a quick action, for BENCH_SECONDS: the calls made a second (1,000 asked for); the same
//     with overlap policy "skip", then "bufferOne" (the claim counts the occurrences still running);
//   - BENCH_SLOW_SCHEDULES "bufferOne" schedules (default 200) every second calling an action that
//     takes 1.5 s: each moment finds one running and buffers one (or skips), each end releases the
//     buffered one; the calls made a second (about 2 / 3 of those asked for).
// Each prints the owner's event-loop delay p99 and the round trips its thread waited for.
import type { ActionContext } from "../../sdk/ts/src/executor.js";
import type { ChronologClient } from "../../sdk/ts/src/client.js";
import { runExecutor } from "../../sdk/ts/src/executor.js";
import type { PluginDefinition } from "../../sdk/ts/src/plugin.js";
import { scrapeStoreWaits as scrape } from "../lib/owner.js";
import { sleep } from "../lib/proc.js";

const schedules = Number(process.env.BENCH_SCHEDULES ?? 1_000);
const slowSchedules = Number(process.env.BENCH_SLOW_SCHEDULES ?? 200);
const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const everyMs = 1_000;
const matching = Number(process.env.BENCH_MATCHING ?? 12_000);

/** The calls of `pgwaits.tick` and `pgwaits.slowTick` made so far, and the call ids of `pgwaits.flaky` tried once. */
let ticks = 0;
const triedOnce = new Set<string>();

/** The actions of the bench's plugin: `tick` (quick, counted), `slowTick` (counted, 1.5 s) and `flaky` (its first attempt of each call id fails). */
export const scheduleActions = {
  tick: {
    allow: ["*"],
    run: () => {
      ticks++;
      return {};
    },
  },
  slowTick: {
    allow: ["*"],
    run: async () => {
      ticks++;
      await sleep(1_500);
      return {};
    },
  },
  flaky: {
    allow: ["*"],
    run: (ctx: ActionContext) => {
      if (triedOnce.has(ctx.callId)) return {};
      triedOnce.add(ctx.callId);
      throw new Error("the first attempt fails");
    },
  },
};

/** waits.ts's load: runs `inFlight` callers of `call` (caller, round) for its seconds and prints the line of `label`. */
type Load = (url: string, label: string, inFlight: number, call: (caller: number, round: number) => Promise<boolean | null>) => Promise<void>;

/** Runs the schedules' cases against the owner at `url` serving `plugin` (its actions {@link scheduleActions}). */
export async function scheduleCases(url: string, client: ChronologClient, plugin: PluginDefinition, load: Load, intervalsOnly = false): Promise<void> {
  const executor = runExecutor({ url, plugins: [plugin], credits: 256, onError: () => undefined, onLog: () => undefined });
  await executor.ready;
  try {
    if (!intervalsOnly) await callCases(url, client, load);
    await intervals(url, client, schedules, "pgwaits.tick");
    await intervals(url, client, schedules, "pgwaits.tick", "skip");
    await intervals(url, client, schedules, "pgwaits.tick", "bufferOne");
    await intervals(url, client, slowSchedules, "pgwaits.slowTick", "bufferOne");
  } finally {
    await executor.stop(100);
  }
}

/**
 * `count` interval schedules every {@link everyMs} calling `action` (overlap policy `overlap`, or
 * the default "allow"), for {@link seconds}: prints the calls made a second, the owner's loop p99
 * and the round trips it waited for; then unschedules them.
 */
async function intervals(url: string, client: ChronologClient, count: number, action: string, overlap?: "skip" | "bufferOne"): Promise<void> {
  const ids = Array.from({ length: count }, (_, k) => `${action}-${overlap ?? "allow"}-${k}`);
  const policy = overlap && { overlap };
  for (let from = 0; from < count; from += 64)
    await Promise.all(ids.slice(from, from + 64).map((timerId, k) => client.schedule(action, { k: from + k }, { everyMs }, { timerId, policy })));
  await sleep(2_000); // the statements prepared, the schedules under way
  const before = await scrape(url);
  const ticksBefore = ticks;
  const started = performance.now();
  await sleep(seconds * 1000);
  const elapsed = (performance.now() - started) / 1000;
  const made = ticks - ticksBefore;
  const after = await scrape(url);
  console.log(
    `  ${count} schedules every ${everyMs} ms${overlap ? ` (overlap ${overlap}${action.endsWith("slowTick") ? ", a 1.5 s action" : ""})` : ""} (${Math.round((count * 1000) / everyMs)} calls/s asked): ` +
      `${Math.round(made / elapsed)} calls/s made; loop p99 ${after.loopP99Ms.toFixed(0)} ms, ${after.waits - before.waits} waits (${((after.waitMs - before.waitMs) / 1000).toFixed(2)} s)`,
  );
  for (let from = 0; from < count; from += 64) await Promise.all(ids.slice(from, from + 64).map((id) => client.unschedule(id)));
}

/** The action calls' cases: a call failing, then called again; a call whose action.completed cancels a delay. */
async function callCases(url: string, client: ChronologClient, load: Load): Promise<void> {
  for (const inFlight of [64, 1])
    await load(url, "an action call failing, then called again (its second attempt)", inFlight, async (caller, round) => {
      const callId = `flaky-${inFlight}-${caller}-${round >> 1}`;
      try {
        await client.call("pgwaits.flaky", { caller }, { callId });
        return true;
      } catch {
        return round % 2 === 0; // the first attempt fails as it should
      }
    });
  for (const inFlight of [64, 1]) {
    // Pending delays, each cancelled by the action.completed of a call of its own; caller c makes calls c, c + inFlight, ...
    const count = inFlight === 1 ? Math.min(matching, 2_000) : matching;
    const now = Date.now();
    for (let from = 0; from < count; from += 500)
      await client.delayBatch(
        Array.from({ length: Math.min(500, count - from) }, (_, i) => ({
          action: "pgwaits.tick",
          input: { call: `paying-${inFlight}-${from + i}` },
          when: { at: now + 3_600_000 },
          overdue: "unbounded" as const,
          cancelOn: [{ type: "action.completed", match: { "data.call_id": "input.call" } }],
        })),
      );
    await load(url, "an action call whose action.completed cancels a delay", inFlight, async (caller, round) => {
      const k = caller + round * inFlight;
      if (k >= count) return null;
      await client.call("pgwaits.tick", {}, { callId: `paying-${inFlight}-${k}` });
      return true;
    });
  }
}
