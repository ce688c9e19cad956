// W9 (Chronolog only): what pending cancellable timers cost an emit. The ingest loops (unary
// Emit over grpc-js, 256 and 1 in flight) on an owner with no timer; on one with `pending` delays
// due in 1-24 h without cancel_on (the same table, no index); and on one with as many delays each
// cancelled by a `compare.order` whose `data.order` matches its input: every emit of that type
// then looks its key up in the cancel index (time/cancel-on.ts) and finds no timer (the ingest's
// orders are not the delays'). The last two rows differ by the lookup alone.
import { createClient } from "../../sdk/ts/src/client.js";
import type { DelaySpec } from "../../sdk/ts/src/time-requests.js";
import { cpuMs, sleep } from "../lib/proc.js";
import { loopDuring } from "./event-loop.js";
import { INGEST_TYPE } from "./plugin.js";
import { loopRows, withInstance, type Context } from "./workloads.js";

/** Delays per DelayBatch while arming. */
const batch = 1_000;

/** Arms `count` delays due in 1-24 h on the owner at `url`, cancellable or not; resolves with the ms it took. */
async function armDelays(url: string, count: number, cancellable: boolean): Promise<number> {
  const client = createClient({ url });
  const t0 = performance.now();
  const now = Date.now();
  for (let from = 0; from < count; from += batch) {
    const delays: DelaySpec[] = Array.from({ length: Math.min(batch, count - from) }, (_, k) => ({
      action: "timers.fire",
      input: { order: `pending-${from + k}` },
      when: { at: now + 3_600_000 + Math.floor(((from + k) / count) * 23 * 3_600_000) },
      overdue: "unbounded",
      cancelOn: cancellable ? [{ type: INGEST_TYPE, match: { "data.order": "input.order" } }] : [],
    }));
    await client.delayBatch(delays);
  }
  return performance.now() - t0;
}

/** The ingest loops with no timer, then with `ctx.cfg.cancellable` pending delays, then as many cancellable ones. */
export async function cancellable(ctx: Context): Promise<void> {
  const { cfg, figures } = ctx;
  if (!cfg.systems.includes("chronolog")) return;
  const n = cfg.cancellable.toLocaleString("en-US");
  const variants = [
    { timers: 0, cancel: false, what: "no pending timer" },
    { timers: cfg.cancellable, cancel: false, what: `${n} pending delays without cancel_on` },
    { timers: cfg.cancellable, cancel: true, what: `${n} pending cancellable delays` },
  ];
  for (const { timers, cancel, what } of variants) {
    await withInstance(ctx, "chronolog", async (instance) => {
      const owner = instance.owner!;
      if (timers > 0) {
        const ms = await armDelays(owner.url, timers, cancel);
        ctx.note(`cancellable: ${what} armed in ${(ms / 1000).toFixed(1)} s`);
        await sleep(10_000); // the arming's WAL checkpointed before the window (the owner's CPU counts its checkpoints)
      }
      const endpoint = instance.endpoint("unary");
      const cpu0 = cpuMs(instance.pid);
      const req = { op: "closed" as const, endpoint, topic: "ingest" as const, callers: 256, perCall: 1, warmupMs: cfg.warmupMs, durationMs: cfg.durationMs };
      const many = await loopDuring(owner.url, () => ctx.run(req), req.warmupMs, req.warmupMs + req.durationMs);
      const cpu = cpuMs(instance.pid) - cpu0;
      figures.add(`emit with ${what}, 256 in flight (events/s) [unary Emit]`, "higher", "chronolog", many.result.events / (many.result.ms / 1000));
      loopRows(ctx, `emit with ${what}, 256 in flight`, many.loop);
      figures.add(`  server CPU per event at 256 in flight (µs) [${what}]`, "lower", "chronolog", (cpu * 1000) / many.result.totalEvents);
      const one = await loopDuring(owner.url, () => ctx.run({ ...req, callers: 1 }), req.warmupMs, req.warmupMs + req.durationMs);
      figures.add(`emit with ${what}, 1 in flight: ack p50 (ms)`, "lower", "chronolog", one.result.p50);
      figures.add(`emit with ${what}, 1 in flight: ack p99 (ms)`, "lower", "chronolog", one.result.p99);
      loopRows(ctx, `emit with ${what}, 1 in flight`, one.loop);
      if (many.result.errors + one.result.errors > 0)
        ctx.log(`  cancellable (${what}): ${many.result.errors + one.result.errors} errors, first: ${many.result.firstError ?? one.result.firstError}`);
    });
  }
}
