// The burst workload of bench/compare (Chronolog only): `cfg.burst` delays due within 1 s, all
// set (DelayBatch of 1,000, 4 in flight) before the first is due, called by one executor. Meanwhile
// a probe in this process sends a gRPC health Check (grpc.health.v1.Health, the owner's port)
// every 50 ms without waiting for the one before, and records how long each waited for its answer.
// Per run: every call made (distinct delays called, any called twice), lateness, the time from the
// first due moment to the last call, the slowest health answer and those over 100 ms, the owner's
// event-loop delay, each for the setting and for the burst (first due moment to last call), and
// whether the owner kept its lease: it logged no "stepping down" and is still running.
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Health, HealthCheckResponse_ServingStatus } from "@chronolog/sdk/gen/grpc/health/v1/health_pb";
import { fmt } from "./report.js";
import { pct, sleep } from "../lib/proc.js";
import { openWindow } from "./event-loop.js";
import { consumers, loopRows, waitHandled, withInstance, type Context } from "./workloads.js";

/** One health Check: when it was sent (performance.now()), how long its answer took, and whether it answered SERVING. */
interface Check {
  sentAt: number;
  ms: number;
  ok: boolean;
}

/** Sends a health Check to `url` every `everyMs` until stopped; `stop()` waits for the answers still due. */
function healthProbe(url: string, everyMs = 50): { stop(): Promise<Check[]> } {
  const client = createClient(Health, createGrpcTransport({ baseUrl: url }));
  const checks: Check[] = [];
  const pending = new Set<Promise<void>>();
  const timer = setInterval(() => {
    const sentAt = performance.now();
    const answered: Promise<void> = client
      .check({ service: "" }, { timeoutMs: 60_000 })
      .then(
        (r) => r.status === HealthCheckResponse_ServingStatus.SERVING,
        () => false,
      )
      .then((ok) => void (checks.push({ sentAt, ms: performance.now() - sentAt, ok }), pending.delete(answered)));
    pending.add(answered);
  }, everyMs);
  return {
    async stop() {
      clearInterval(timer);
      await Promise.all(pending);
      return checks.sort((a, b) => a.sentAt - b.sentAt);
    },
  };
}

/** The checks sent in [from, to) (performance.now() times): how many, the slowest answer, and those slower than 100 ms or not SERVING. */
function summary(checks: Check[], from: number, to: number): { sent: number; maxMs: number; bad: number } {
  const inside = checks.filter((c) => c.sentAt >= from && c.sentAt < to);
  return { sent: inside.length, maxMs: Math.max(...inside.map((c) => c.ms)), bad: inside.filter((c) => !c.ok || c.ms > 100).length };
}

export async function burst(ctx: Context): Promise<void> {
  const { cfg } = ctx;
  const n = cfg.burst;
  const spreadMs = 1_000;
  const warm = 500;
  const label = `burst: ${n.toLocaleString("en-US")} delays due within 1 s, all set before the first is due`;
  await withInstance(ctx, "chronolog", async (instance) => {
    const owner = instance.owner!;
    const [worker] = await consumers(instance, "delays", 1);
    const w = await ctx.run({ op: "delays", endpoint: instance.endpoint(), count: warm, dueOf: { base: "now+1000", spreadMs: 1000 }, warm: true });
    await waitHandled([worker], warm, 30_000);
    const lead = Math.round(2_000 + 1.5 * n * (w.ms / warm));
    const probe = healthProbe(owner.url);
    const setting = await openWindow(owner.url);
    const setFrom = performance.now();
    const set = await ctx.run({ op: "delays", endpoint: instance.endpoint(), count: n, dueOf: { base: `now+${lead}`, spreadMs } });
    const setTo = performance.now();
    const settingLoop = await setting.close();
    const firstDue = Math.round(set.startedAt + lead);
    if (Date.now() > firstDue) ctx.log(`  burst: setting took ${Math.round(set.ms)} ms, past the first due moment (lead ${lead} ms)`);
    await sleep(firstDue - Date.now());
    const burstWindow = await openWindow(owner.url);
    const burstFrom = performance.now();
    const done = await waitHandled([worker], warm + n, spreadMs + 120_000);
    const burstTo = performance.now();
    const burstLoop = await burstWindow.close();
    const checks = await probe.stop();
    const report = await worker.stop();
    const calls = (report.calls ?? []).slice(warm);
    const distinct = new Set(calls.map((c) => c[0])).size;
    const late = calls.map((c) => c[2]).sort((a, b) => a - b);
    const steppedDown = owner.warnings.find((l) => /stepping down/.test(l.msg));
    const running = owner.child.exitCode === null && owner.child.signalCode === null;
    const kept = !steppedDown && running;
    const renewalsFailed = owner.warnings.filter((l) => /renewing the lease failed/.test(l.msg)).length;
    const inSetting = summary(checks, setFrom, setTo);
    const inBurst = summary(checks, burstFrom, burstTo);

    const add = (what: string, better: "higher" | "lower", value: number) => ctx.figures.add(what, better, "chronolog", value);
    add(`${label}: delays called (distinct, of ${n.toLocaleString("en-US")})`, "higher", distinct);
    add("  delays called more than once", "lower", calls.length - distinct);
    add("  the owner kept its lease and ran on (1 yes, 0 no)", "higher", kept ? 1 : 0);
    add("  lateness p50 (ms)", "lower", pct(late, 50));
    add("  lateness p99 (ms)", "lower", pct(late, 99));
    add("  lateness max (ms)", "lower", late.length ? late[late.length - 1] : NaN);
    add("  from the first due moment to the last call (ms)", "lower", done ? burstTo - burstFrom : Infinity);
    add("  health Check every 50 ms, first due moment to last call: slowest answer (ms)", "lower", inBurst.maxMs);
    add("  health Checks answered after 100 ms or not SERVING, first due moment to last call", "lower", inBurst.bad);
    loopRows(ctx, "burst, first due moment to last call", burstLoop);
    add("  setting the delays before the burst (delays/s)", "higher", (set.events / set.ms) * 1000);
    add("  health Check every 50 ms while setting: slowest answer (ms)", "lower", inSetting.maxMs);
    add("  health Checks answered after 100 ms or not SERVING, while setting", "lower", inSetting.bad);
    loopRows(ctx, "burst, while setting", settingLoop);
    ctx.note(
      `burst of ${n.toLocaleString("en-US")}: ${kept ? "the owner kept its lease and ran on" : `**the owner lost its lease**${steppedDown ? `: "${steppedDown.msg}"` : ""}${running ? "" : ` (it exited: ${owner.child.exitCode ?? owner.child.signalCode})`}`}` +
        `${renewalsFailed ? ` (${renewalsFailed} "renewing the lease failed" warnings)` : ""}; ` +
        `${distinct.toLocaleString("en-US")} of ${n.toLocaleString("en-US")} delays called${calls.length > distinct ? `, ${calls.length - distinct} calls more than once` : ""}${done ? "" : " (**not all within 2 min of the burst**)"}; ` +
        `${fmt(set.ms / 1000)} s to set them (lead ${fmt(lead / 1000)} s); last call ${fmt((burstTo - burstFrom) / 1000)} s after the first due moment; ` +
        `health Checks: ${inBurst.sent} sent in the burst, slowest ${fmt(inBurst.maxMs)} ms, ${inBurst.bad} over 100 ms or failed; ${inSetting.sent} sent while setting, slowest ${fmt(inSetting.maxMs)} ms, ${inSetting.bad} over 100 ms or failed; ` +
        `event-loop delay p99 / max: ${fmt(burstLoop.p99Ms)} / ${fmt(burstLoop.maxMs)} ms in the burst, ${fmt(settingLoop.p99Ms)} / ${fmt(settingLoop.maxMs)} ms while setting`,
    );
  });
}
