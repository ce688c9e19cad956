// The workloads of bench/compare. Each runs once per system on fresh instances and adds its
// figures to `Figures`; main.ts repeats them for the median.
import { cpuMs, freePort, pct, rssMiB, sleep } from "../lib/proc.js";
import { loopDuring, openWindow, type LoopDelay, type OwnerWindow } from "./event-loop.js";
import type { LoadRequest, LoadResult } from "./load.js";
import type { Column, Figures } from "./report.js";
import { startInstance, startTrivial, type Instance, type Worker, type WorkerReport } from "./runtime.js";
import { stagesBetween, type StageTable } from "./stages.js";
import type { ChronologPath, System } from "./targets.js";

export interface Config {
  quick: boolean;
  /** Measured window of the closed loops, ms, after warmupMs. */
  durationMs: number;
  warmupMs: number;
  /** Events of the delivery workloads. */
  deliverEvents: number;
  /** Open-loop rate and window of the latency workload. */
  latencyRate: number;
  latencyMs: number;
  /** Delays of the pending workload (due 1-24 h out) and of the lateness workloads. */
  pending: number;
  lateness: number;
  latenessSpreadMs: number;
  /** Delays of the burst workload (due within 1 s). */
  burst: number;
  /** Pending cancellable delays of the cancellable workload (Chronolog only). */
  cancellable: number;
  /** Chronolog's ingest paths (W1, W2) and the paths of the live delivery workloads' producers (W5, W6): a row each. */
  paths: ChronologPath[];
  deliverPaths: ChronologPath[];
  /** The systems measured (the peers left out are shown empty). */
  systems: System[];
  ownerEntry: "bundle" | "tsx";
}

export interface Context {
  cfg: Config;
  figures: Figures;
  /** The owner's stage figures of the live delivery workloads' windows. */
  stages: StageTable;
  run(req: import("./load.js").LoadRequest): Promise<LoadResult>;
  /** A warning, printed and listed under the table. */
  log(line: string): void;
  /** An outcome in words (the burst's), printed and listed under the table. */
  note(line: string): void;
}

const pathNames: Record<ChronologPath, string> = { unary: "unary Emit, grpc-js", batch: "EmitBatch, grpc-js", sdk: "the TS SDK's emit, Publish stream" };
const ingestSystems: System[] = ["nats", "redis", "bullmq", "chronolog"];

/** Those of `systems` measured in this run (--systems). */
export const measured = (ctx: Context, systems: System[]) => systems.filter((s) => ctx.cfg.systems.includes(s));

/** Runs `body` on a fresh instance of `system`, stopped afterwards. */
export async function withInstance<T>(ctx: Context, system: System, body: (i: Instance) => Promise<T>): Promise<T> {
  const instance = await startInstance(system, ctx.cfg.ownerEntry);
  try {
    return await body(instance);
  } finally {
    await instance.stop();
  }
}

function check(ctx: Context, what: string, r: LoadResult): void {
  if (r.errors > 0) ctx.log(`  ${what}: ${r.errors} errors, first: ${r.firstError}`);
}

/** Two rows beside a Chronolog figure: the owner's event-loop delay p99 and max in its measured window (`window` names it: row labels are unique). */
export function loopRows(ctx: Context, window: string, loop: LoopDelay): void {
  ctx.figures.add(`  owner's event-loop delay in that window: p99 (ms) [${window}]`, "lower", "chronolog", loop.p99Ms);
  ctx.figures.add(`  owner's event-loop delay in that window: max (ms) [${window}]`, "lower", "chronolog", loop.maxMs);
}

/** A closed loop's request, with the owner's event-loop delay over its measured window when `instance` is Chronolog's. */
async function closedRun(ctx: Context, instance: Instance, req: Extract<LoadRequest, { op: "closed" }>): Promise<{ result: LoadResult; loop?: LoopDelay }> {
  if (!instance.owner) return { result: await ctx.run(req) };
  return loopDuring(instance.owner.url, () => ctx.run(req), req.warmupMs, req.warmupMs + req.durationMs);
}

/** Chronolog's columns for a path: rows are labelled by path, the peers' values repeat in each. */
function ingestTargets(ctx: Context): { system: System; path?: ChronologPath }[] {
  return withPaths(ctx, ingestSystems, ctx.cfg.paths);
}

/** The peers of `systems` once, then Chronolog once per path in `paths` (those measured in this run). */
function withPaths(ctx: Context, systems: System[], paths: ChronologPath[]): { system: System; path?: ChronologPath }[] {
  const peers = measured(ctx, systems)
    .filter((s) => s !== "chronolog")
    .map((system) => ({ system }));
  return measured(ctx, systems).includes("chronolog") ? [...peers, ...paths.map((path) => ({ system: "chronolog" as System, path }))] : peers;
}

/** W1 and W2: ingest with 256 and 1 in flight; W3: EmitBatch of 1,000 (4 in flight). */
export async function ingest(ctx: Context): Promise<void> {
  const { cfg, figures } = ctx;
  // The peers' figures are measured once and shown under every Chronolog path's row.
  const peerValues: { label: (path: string) => string; better: "higher" | "lower"; column: Column; value: number }[] = [];
  const add = (label: (path: string) => string, better: "higher" | "lower", system: System, path: ChronologPath | undefined, value: number) => {
    if (system === "chronolog") figures.add(label(pathNames[path!]), better, "chronolog", value);
    else peerValues.push({ label, better, column: system as Column, value });
  };
  for (const { system, path } of ingestTargets(ctx)) {
    await withInstance(ctx, system, async (instance) => {
      const endpoint = instance.endpoint(path);
      const cpu0 = cpuMs(instance.pid);
      const { result: many, loop: manyLoop } = await closedRun(ctx, instance, {
        op: "closed",
        endpoint,
        topic: "ingest",
        callers: 256,
        perCall: 1,
        warmupMs: cfg.warmupMs,
        durationMs: cfg.durationMs,
      });
      const cpu = cpuMs(instance.pid) - cpu0;
      check(ctx, `${system} ${path ?? ""} 256`, many);
      add((p) => `ingest, 256 in flight (events/s) [Chronolog: ${p}]`, "higher", system, path, many.events / (many.ms / 1000));
      if (manyLoop) loopRows(ctx, `ingest, 256 in flight, ${pathNames[path!]}`, manyLoop);
      add((p) => `server CPU per event at 256 in flight (µs) [Chronolog: ${p}]`, "lower", system, path, (cpu * 1000) / many.totalEvents);
      const { result: one, loop: oneLoop } = await closedRun(ctx, instance, {
        op: "closed",
        endpoint,
        topic: "ingest",
        callers: 1,
        perCall: 1,
        warmupMs: cfg.warmupMs,
        durationMs: cfg.durationMs,
      });
      check(ctx, `${system} ${path ?? ""} 1`, one);
      add((p) => `ingest, 1 in flight: ack p50 (ms) [Chronolog: ${p}]`, "lower", system, path, one.p50);
      add((p) => `ingest, 1 in flight: ack p99 (ms) [Chronolog: ${p}]`, "lower", system, path, one.p99);
      if (oneLoop) loopRows(ctx, `ingest, 1 in flight, ${pathNames[path!]}`, oneLoop);
      if (system === "chronolog" && path === cfg.paths[0]) {
        const cpuB0 = cpuMs(instance.pid);
        const { result: batch, loop: batchLoop } = await closedRun(ctx, instance, {
          op: "closed",
          endpoint: instance.endpoint("batch"),
          topic: "ingest",
          callers: 4,
          perCall: 1000,
          warmupMs: cfg.warmupMs,
          durationMs: cfg.durationMs,
        });
        const cpuB = cpuMs(instance.pid) - cpuB0;
        check(ctx, "chronolog batch", batch);
        figures.add(
          "EmitBatch, 1,000 a call, 4 in flight (events/s) [vs the peers' 256 in flight]",
          "higher",
          "chronolog",
          batch.events / (batch.ms / 1000),
          `ingest, 256 in flight (events/s) [Chronolog: ${pathNames[cfg.paths[0]]}]`,
        );
        if (batchLoop) loopRows(ctx, "EmitBatch", batchLoop);
        figures.add(
          "server CPU per event, EmitBatch (µs)",
          "lower",
          "chronolog",
          (cpuB * 1000) / batch.totalEvents,
          `server CPU per event at 256 in flight (µs) [Chronolog: ${pathNames[cfg.paths[0]]}]`,
        );
      }
    });
  }
  for (const path of cfg.paths) for (const v of peerValues) figures.add(v.label(pathNames[path]), v.better, v.column, v.value);
}

export async function consumers(instance: Instance, mode: "deliver" | "delays", n: number): Promise<Worker[]> {
  const workers = Array.from({ length: n }, () => instance.consumer(mode));
  await Promise.all(workers.map((w) => w.ready));
  return workers;
}

export async function waitHandled(workers: Worker[], total: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (workers.reduce((n, w) => n + w.handled, 0) < total) {
    if (Date.now() > deadline) return false;
    await sleep(50);
  }
  return true;
}

const deliverSystems: System[] = ["nats", "redis", "bullmq", "chronolog"];

/** W4: deliver a preloaded backlog (handled/s from the first delivery to the last). */
export async function preloaded(ctx: Context): Promise<void> {
  const { cfg, figures } = ctx;
  const n = cfg.deliverEvents;
  const timeout = 60_000 + n; // generous: 1 ms an event
  for (const system of measured(ctx, deliverSystems)) {
    await withInstance(ctx, system, async (instance) => {
      await ctx.run({ op: "produce", endpoint: instance.endpoint("batch"), topic: "deliver", callers: 4, perCall: 1000, count: n });
      const cpu0 = cpuMs(instance.pid);
      const workers = await consumers(instance, "deliver", 2);
      const done = await waitHandled(workers, n, timeout);
      const cpu = cpuMs(instance.pid) - cpu0;
      const reports = await Promise.all(workers.map((w) => w.stop()));
      if (!done) ctx.log(`  ${system} preloaded: only ${handled(reports)} of ${n} handled in time`);
      const span = lastAt(reports) - firstAt(reports);
      figures.add(`deliver, preloaded ${n.toLocaleString("en-US")} over 1,000 keys (handled/s)`, "higher", system as Column, (handled(reports) / span) * 1000);
      // The server's CPU from the consumers' start until the last event is handled (the preload done before).
      figures.add("  server CPU per event delivered (µs) [the owner, nats-server, redis-server]", "lower", system as Column, (cpu * 1000) / n);
    });
  }
}

/**
 * The live delivery workloads, Chronolog once per producer path (its rows labelled by path, the
 * peers' values repeated in each): W5, deliver while the producer sends flat out (deliveries
 * handled in the measured window / window); W6, send-to-handler latency at a fixed rate. Under
 * Chronolog's figures, the owner's event-loop delay in the window; the owner's stage figures of
 * the window go to the stage table.
 */
export async function live(ctx: Context): Promise<void> {
  const { cfg } = ctx;
  const peerValues: { label: (path: string) => string; better: "higher" | "lower"; column: Column; value: number }[] = [];
  for (const { system, path } of withPaths(ctx, deliverSystems, cfg.deliverPaths)) {
    const add = (label: (path: string) => string, better: "higher" | "lower", value: number) => {
      if (system === "chronolog") ctx.figures.add(label(pathNames[path!]), better, "chronolog", value);
      else peerValues.push({ label, better, column: system as Column, value });
    };
    /** The owner's figures of a window of Chronolog's: event-loop rows, and its stages (with the handler latency when measured). */
    const chronologWindow = (name: string, window: OwnerWindow | undefined, handler?: { p50: number; p99: number }) => {
      if (!window) return;
      loopRows(ctx, `${name}, ${pathNames[path!]}`, window);
      ctx.stages.add(`${name}, ${pathNames[path!]}`, stagesBetween(window.pages.start, window.pages.end), handler);
    };
    // W5
    await withInstance(ctx, system, async (instance) => {
      const workers = await consumers(instance, "deliver", 2);
      const count = () => workers.reduce((n, w) => n + w.handled, 0);
      const producing = ctx.run({
        op: "closed",
        endpoint: instance.endpoint(path),
        topic: "deliver",
        callers: 256,
        perCall: 1,
        warmupMs: cfg.warmupMs,
        durationMs: cfg.durationMs,
      });
      await sleep(cfg.warmupMs);
      const window = instance.owner ? await openWindow(instance.owner.url) : undefined;
      const [h0, t0] = [count(), performance.now()];
      await sleep(cfg.durationMs);
      const [h1, t1] = [count(), performance.now()];
      const owner = await window?.close();
      const produced = await producing;
      check(ctx, `${system} flat out`, produced);
      await Promise.all(workers.map((w) => w.stop()));
      add((p) => `deliver, producer flat out at 256 in flight (handled/s) [Chronolog: ${p}]`, "higher", ((h1 - h0) / (t1 - t0)) * 1000);
      add((p) => `  the producer meanwhile (events/s) [Chronolog: ${p}]`, "higher", produced.events / (produced.ms / 1000));
      chronologWindow("deliver, producer flat out", owner);
    });
    // W6
    await withInstance(ctx, system, async (instance) => {
      const workers = await consumers(instance, "deliver", 2);
      const rate = {
        op: "rate",
        endpoint: instance.endpoint(path),
        topic: "deliver",
        rate: cfg.latencyRate,
        warmupMs: cfg.warmupMs,
        durationMs: cfg.latencyMs,
      } as const;
      // The server's CPU (the owner's, nats-server's, redis-server's) from the first send, warm-up included, until the last event is handled.
      const sendAndDrain = async () => {
        const cpu0 = cpuMs(instance.pid);
        const sent = await ctx.run(rate);
        const done = await waitHandled(workers, sent.totalEvents, 30_000);
        return { sent, done, cpuMs: cpuMs(instance.pid) - cpu0 };
      };
      // The owner's window: from the warm-up's end until the last event is handled.
      const { result, loop: owner } = instance.owner
        ? await loopDuring(instance.owner.url, sendAndDrain, cfg.warmupMs)
        : { result: await sendAndDrain(), loop: undefined };
      const { sent, done, cpuMs: serverCpuMs } = result;
      check(ctx, `${system} rate`, sent);
      const reports = await Promise.all(workers.map((w) => w.stop()));
      if (!done)
        ctx.log(
          `  ${system} latency: only ${handled(reports)} of ${sent.totalEvents} handled within 30 s of the last send (the rest count as late without bound)`,
        );
      // Events not handled in time count as late without bound.
      const latencies = reports.flatMap((r) => r.latencies);
      while (latencies.length < sent.events) latencies.push(Infinity);
      latencies.sort((a, b) => a - b);
      const [p50, p99] = [pct(latencies, 50), pct(latencies, 99)];
      const label = `emit → handler at ${cfg.latencyRate.toLocaleString("en-US")} events/s`;
      add((p) => `${label}: p50 (ms) [Chronolog: ${p}]`, "lower", p50);
      add((p) => `${label}: p99 (ms) [Chronolog: ${p}]`, "lower", p99);
      add(
        (p) => `  server CPU per event at ${cfg.latencyRate.toLocaleString("en-US")} events/s (µs) [the owner, nats-server, redis-server; Chronolog: ${p}]`,
        "lower",
        (serverCpuMs * 1000) / sent.totalEvents,
      );
      chronologWindow(label, owner, { p50, p99 });
    });
  }
  for (const path of cfg.deliverPaths) for (const v of peerValues) ctx.figures.add(v.label(pathNames[path]), v.better, v.column, v.value);
}

const handled = (reports: WorkerReport[]) => reports.reduce((n, r) => n + r.handled, 0);
/** From the first delivery any consumer handled to the last, ms (consumers that handled none left out). */
const firstAt = (reports: WorkerReport[]) => Math.min(...reports.filter((r) => r.handled > 0).map((r) => r.firstAt));
const lastAt = (reports: WorkerReport[]) => Math.max(...reports.filter((r) => r.handled > 0).map((r) => r.lastAt));

/** W7a: set `cfg.pending` delays due 1-24 h out; the rate, and the server's RSS after. */
export async function pendingDelays(ctx: Context): Promise<void> {
  for (const system of measured(ctx, ["bullmq", "chronolog"])) {
    await withInstance(ctx, system, async (instance) => {
      const r = await ctx.run({
        op: "delays",
        endpoint: instance.endpoint(),
        count: ctx.cfg.pending,
        dueOf: { base: "now+3600000", spreadMs: 23 * 3_600_000 },
      });
      await sleep(1_000);
      const label = `set ${ctx.cfg.pending.toLocaleString("en-US")} delays due in 1-24 h`;
      figures(ctx).add(
        `${label} (delays/s) [BullMQ: addBulk of 1,000, 4 in flight; Chronolog: DelayBatch of 1,000, 4 in flight]`,
        "higher",
        system as Column,
        (r.events / r.ms) * 1000,
      );
      figures(ctx).add(`  server RSS after setting them (MiB) [redis-server; the owner]`, "lower", system as Column, rssMiB(instance.pid));
    });
  }
}
const figures = (ctx: Context) => ctx.figures;

/**
 * W7b: `cfg.lateness` delays due evenly over `cfg.latenessSpreadMs`, lateness = call time − due,
 * measured by the consumer: (a) set flat out starting 2 s before the first is due; (b) every
 * one set before the first is due. A warm-up of 500 delays due 1-2 s out runs first (not
 * counted) and sizes (b)'s lead: 2 s + 1.5× the projected setting time.
 */
export async function lateness(ctx: Context): Promise<void> {
  const { cfg } = ctx;
  const warm = 500;
  for (const variant of ["a", "b"] as const) {
    for (const system of measured(ctx, ["bullmq", "chronolog"])) {
      await withInstance(ctx, system, async (instance) => {
        const [worker] = await consumers(instance, "delays", 1);
        const w = await ctx.run({ op: "delays", endpoint: instance.endpoint(), count: warm, dueOf: { base: "now+1000", spreadMs: 1000 }, warm: true });
        await waitHandled([worker], warm, 30_000);
        const lead = variant === "a" ? 2_000 : Math.round(2_000 + 1.5 * cfg.lateness * (w.ms / warm));
        // The owner's event-loop delay from the setting's start to the last call.
        const window = instance.owner ? await openWindow(instance.owner.url) : undefined;
        const set = await ctx.run({
          op: "delays",
          endpoint: instance.endpoint(),
          count: cfg.lateness,
          dueOf: { base: `now+${lead}`, spreadMs: cfg.latenessSpreadMs },
        });
        if (variant === "b" && set.ms > lead)
          ctx.log(`  ${system} lateness (b): setting took ${Math.round(set.ms)} ms, past the first due moment (lead ${lead} ms)`);
        await waitHandled([worker], warm + cfg.lateness, lead + cfg.latenessSpreadMs + 30_000);
        const loop = await window?.close();
        const report = await worker.stop();
        const late = (report.calls ? report.calls.slice(warm).map((c) => c[2]) : report.latencies).sort((a, b) => a - b);
        if (late.length < cfg.lateness)
          ctx.log(`  ${system} lateness (${variant}): ${cfg.lateness - late.length} delays not called within 30 s of their moment`);
        const label = `(${variant}) ${cfg.lateness.toLocaleString("en-US")} delays due over ${cfg.latenessSpreadMs / 1000} s, ${variant === "a" ? "set from 2 s before the first is due" : "all set before the first is due"}: lateness`;
        ctx.figures.add(`${label} p50 (ms)`, "lower", system as Column, pct(late, 50));
        ctx.figures.add(`${label} p99 (ms)`, "lower", system as Column, pct(late, 99));
        if (loop) loopRows(ctx, `lateness (${variant}), from the setting's start to the last call`, loop);
        ctx.figures.add(`  setting rate in (${variant}) (delays/s)`, "higher", system as Column, (set.events / set.ms) * 1000);
      });
    }
  }
}

/** W8: trivial unary handlers on the three Node servers, a grpc-js client at 256 in flight. */
export async function ceilings(ctx: Context): Promise<Map<string, { rate: number[]; cpu: number[] }>> {
  const out = new Map<string, { rate: number[]; cpu: number[] }>();
  for (const kind of ["connect", "grpc-js", "http2"]) {
    const port = await freePort();
    const server = await startTrivial(kind, port);
    try {
      const cpu0 = cpuMs(server.pid);
      const r = await ctx.run({ op: "trivial", address: `127.0.0.1:${port}`, callers: 256, warmupMs: ctx.cfg.warmupMs, durationMs: ctx.cfg.durationMs });
      const cpu = cpuMs(server.pid) - cpu0;
      check(ctx, `trivial ${kind}`, r);
      const entry = out.get(kind) ?? { rate: [], cpu: [] };
      entry.rate.push((r.events / r.ms) * 1000);
      entry.cpu.push((cpu * 1000) / r.totalEvents);
      out.set(kind, entry);
    } finally {
      await server.stop();
    }
  }
  return out;
}
