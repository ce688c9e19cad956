// The emits whose units used to wait for a round trip on PostgreSQL (not a test):
// `npm run bench:postgres:waits`, with BENCH_STORE=postgres and BENCH_PG_LATENCY_MS=1 (bench/lib/postgres.ts)
// for a database 1 ms away through toxiproxy; SQLite by default.
//
// One owner (the bundle, `npm run serve`'s flags). Per workload, BENCH_SECONDS each (default 5):
//   - emits to streams, each caller to a stream of its own expecting the version it left
//     (optimistic concurrency: a refusal is counted), 64 (unary calls) and 1 in flight;
//   - document writes, each caller creating a document of its own, then patching it, 64 and 1 in flight;
//   - emits of a type that 1,000 pending delays' `cancel_on` names, none of them matching (the
//     common case: no timer waits on the event's key), 256 and 1 in flight;
//   - emits that match: each cancels a pending delay of its own (preloaded, BENCH_MATCHING of them,
//     default 12,000; a caller stops when its share is done), 256 and 1 in flight;
//   - pause, then resume, each caller of a timer of its own, 64 and 1 in flight;
//   - emits to a stream sent twice with the same id (a retry: answered with its position), 64 and 1;
//   - TriggerTimer and BackfillTimer (control-waits.ts);
//   - interval schedules calling a quick action, and action calls tried a second time (schedule-waits.ts);
//   - the processors' cases of processor-waits.ts (a hot key's backlog, RedeliverFailed,
//     ListProcessors, MoveCursor by time);
//   - interval schedules catching up the moments that came due while their owner was stopped,
//     restarted (catch-up-waits.ts, owners of their own).
// BENCH_ONLY=emits,controls,schedules,processors,catchup (any of them) runs those groups alone;
// BENCH_ONLY=intervals the interval schedules' cases of the group schedules alone.
// calls/s, ack p50/p99, then the owner's event-loop delay p99 and the round trips its thread
// waited for over the workload (chronolog_store_waits_total, chronolog_store_wait_seconds_total).
import os from "node:os";
import { createClient, type ChronologClient } from "../../sdk/ts/src/client.js";
import { definePlugin } from "../../sdk/ts/src/plugin.js";
import { benchLatencyMs, benchStore } from "../lib/postgres.js";
import { buildBundle, scrapeStoreWaits as scrape, startOwner, stopOwner } from "../lib/owner.js";
import { pct } from "../lib/proc.js";
import { controlCases } from "./control-waits.js";
import { processorCases, processorDeclarations } from "./processor-waits.js";
import { scheduleActions, scheduleCases } from "./schedule-waits.js";
import { catchUpActions, catchUpCases } from "./catch-up-waits.js";

const seconds = Number(process.env.BENCH_SECONDS ?? 5);

const plugin = definePlugin({
  name: "pgwaits",
  events: {
    "pgwaits.changed": { allow: ["*"] },
    "pgwaits.paid": { allow: ["*"] },
    "pgwaits.queued": { allow: ["*"] },
    "pgwaits.failing": { allow: ["*"] },
  },
  actions: { fire: { allow: ["*"], inputSchema: { type: "object" }, run: () => ({}) }, ...scheduleActions, ...catchUpActions },
  collections: { notes: { allow: ["*"] } },
  processors: processorDeclarations,
});

/**
 * Runs `inFlight` callers of `emit` (caller index, its round) for {@link seconds}, a caller until
 * its `emit` answers null (its share done); prints the line of `label`.
 */
async function load(url: string, label: string, inFlight: number, emit: (caller: number, round: number) => Promise<boolean | null>): Promise<void> {
  const before = await scrape(url);
  const acks: number[] = [];
  let refused = 0;
  const started = performance.now();
  const end = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: inFlight }, async (_, caller) => {
      for (let round = 0; performance.now() < end; round++) {
        const sent = performance.now();
        const ok = await emit(caller, round);
        if (ok === null) break;
        if (!ok) refused++;
        acks.push(performance.now() - sent);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  const after = await scrape(url);
  acks.sort((a, b) => a - b);
  console.log(
    `  ${label}, ${inFlight} in flight: ${Math.round(acks.length / elapsed)} calls/s, ack p50 ${pct(acks, 50).toFixed(2)} / p99 ${pct(acks, 99).toFixed(2)} ms` +
      `${refused > 0 ? `, ${refused} refused` : ""}; loop p99 ${after.loopP99Ms.toFixed(0)} ms, ${after.waits - before.waits} waits (${((after.waitMs - before.waitMs) / 1000).toFixed(2)} s)`,
  );
}

/** Emits to streams: caller `caller` appends to its own stream, expecting the position it left. */
function streamEmits(client: ChronologClient, tag: string): (caller: number, round: number) => Promise<boolean> {
  return async (caller, round) => {
    try {
      await client.emit("pgwaits.changed", { round }, { stream: `order-${tag}-${caller}`, expectedVersion: round === 0 ? "noStream" : round - 1 });
      return true;
    } catch {
      return false;
    }
  };
}

/** How many delays the "emits that match" workload preloads (each matched once). */
const matching = Number(process.env.BENCH_MATCHING ?? 12_000);

/** Sets `count` pending delays (an hour ahead) of inputs and `cancel_on` entries `of(k)`, 500 a DelayBatch. */
async function delays(client: ChronologClient, count: number, of: (k: number) => { input: Record<string, string>; type: string; path: string }): Promise<void> {
  const now = Date.now();
  for (let from = 0; from < count; from += 500)
    await client.delayBatch(
      Array.from({ length: Math.min(500, count - from) }, (_, i) => {
        const { input, type, path } = of(from + i);
        return {
          action: "pgwaits.fire",
          input,
          when: { at: now + 3_600_000 },
          overdue: "unbounded" as const,
          cancelOn: [{ type, match: { [path]: `input.${Object.keys(input)[0]}` } }],
        };
      }),
    );
}

/** The emits' and timers' cases, each at two numbers in flight. */
async function emitCases(url: string, client: ChronologClient): Promise<void> {
  for (const inFlight of [64, 1]) await load(url, "emit to a stream", inFlight, streamEmits(client, `f${inFlight}`));
  for (const inFlight of [64, 1])
    await load(url, "document write", inFlight, async (caller, round) => {
      const id = `note-${inFlight}-${caller}`;
      if (round === 0) await client.createDocument("notes", { _id: id, round });
      else await client.patchDocument("notes", id, { set: { round } });
      return true;
    });
  const now = Date.now();
  for (let from = 0; from < 1_000; from += 500)
    await client.delayBatch(
      Array.from({ length: 500 }, (_, k) => ({
        action: "pgwaits.fire",
        input: { order: `pending-${from + k}` },
        when: { at: now + 3_600_000 },
        overdue: "unbounded" as const,
        cancelOn: [{ type: "pgwaits.paid", match: { "data.order": "input.order" } }],
      })),
    );
  for (const inFlight of [256, 1])
    await load(url, "emit of a type a cancel_on names", inFlight, (caller, round) =>
      client.emit("pgwaits.paid", { order: `other-${caller}-${round}` }).then(() => true),
    );
  for (const inFlight of [256, 1]) {
    // Pending delays, each cancelled by the event of its own order; caller c emits orders c, c + inFlight, ...
    const tag = `m${inFlight}`;
    const count = inFlight === 1 ? Math.min(matching, 2_000) : matching;
    await delays(client, count, (k) => ({ input: { order: `${tag}-${k}` }, type: "pgwaits.paid", path: "data.order" }));
    await load(url, "emit that matches (cancels a delay)", inFlight, async (caller, round) => {
      const k = caller + round * inFlight;
      if (k >= count) return null;
      await client.emit("pgwaits.paid", { order: `${tag}-${k}` });
      return true;
    });
  }
  for (const inFlight of [64, 1]) {
    const ids = await Promise.all(
      Array.from(
        { length: inFlight },
        async (_, caller) => (await client.schedule("pgwaits.fire", { caller }, { everyMs: 3_600_000 }, { timerId: `paused-${inFlight}-${caller}` })).id,
      ),
    );
    await load(url, "pause or resume", inFlight, async (caller, round) => {
      if (round % 2 === 0) await client.pauseTimer(ids[caller], { note: "bench" });
      else await client.resumeTimer(ids[caller]);
      return true;
    });
  }
  for (const inFlight of [64, 1])
    await load(url, "emit to a stream, then again (a retry)", inFlight, async (caller, round) => {
      const id = `retry-${inFlight}-${caller}-${round >> 1}`;
      const stream = `retried-${inFlight}-${caller}`;
      try {
        await client.emit("pgwaits.changed", { round: round >> 1 }, { id, stream, expectedVersion: round >> 1 === 0 ? "noStream" : (round >> 1) - 1 });
        return true;
      } catch {
        return false;
      }
    });
}

buildBundle();
const latency = benchLatencyMs();
console.log(
  `bench/postgres/waits: ${new Date().toISOString()}, ${benchStore}${latency === undefined ? "" : ` +${latency} ms a round trip`}, load average before: ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}`,
);
const only = process.env.BENCH_ONLY?.split(",");
const runs = (group: string) => only === undefined || only.includes(group);
const owner = await startOwner({ plugins: [plugin], entry: "bundle" });
try {
  const client = createClient({ url: owner.url });
  if (runs("emits")) await emitCases(owner.url, client);
  if (runs("controls")) await controlCases(owner.url, client, plugin, load);
  if (runs("schedules") || runs("intervals")) await scheduleCases(owner.url, client, plugin, load, !runs("schedules"));
  if (runs("processors")) await processorCases(owner.url, client, plugin);
  if (runs("catchup")) await catchUpCases(plugin);
} finally {
  await stopOwner(owner);
}
console.log(
  `load average after: ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}`,
);
process.exit(0);
