// Side-by-side benchmark (not a test): `npm run bench:compare [-- --quick] [-- --runs N]`.
//
// Runs the same workloads against NATS JetStream, Redis Streams, BullMQ and Chronolog in one
// run on this machine, each system on fresh instances (temp folders, 127.0.0.1, free ports),
// the load generator in a process of its own (load.ts) and consumers in processes of their own
// (2 per system), and prints the median of each figure over the runs with the ratio of
// Chronolog's to the best peer's. Writes the table to bench/compare/results/<date>-<time>-<commit>.md
// after every run (a run stopped early leaves the medians so far).
// What each workload measures: see README.md beside this file.
//
// Flags:
//   --quick            small counts and windows (a few minutes): to check that it works
//   --runs N           runs to take the median of (default 3; 1 with --quick)
//   --only LIST        workloads: ingest,deliver,pending,lateness,burst,cancellable,ceilings (default all);
//                      live: only deliver's live workloads (producer flat out, emit → handler)
//   --systems LIST     systems measured: nats,redis,bullmq,chronolog (default all)
//   --paths LIST       Chronolog's ingest paths (unary, batch, sdk; default unary,sdk)
//   --deliver-paths L  Chronolog's producer paths in the live delivery workloads, a row each
//                      (default sdk,unary: the SDK's default emit on the Publish stream, then unary Emit)
//   --pending N        delays of the pending workload (default 1,000,000; 5,000 with --quick)
//   --pending-runs N   runs of the pending workload (default 1: 1,000,000 delays take a minute or more)
//   --rate N           events/s of the emit → handler workload (default 2,000)
//   --burst N          delays of the burst workload, due within 1 s (default 10,000; 2,000 with --quick)
//   --cancellable N    pending cancellable delays of the cancellable workload (default 100,000; 10,000 with --quick)
//   --owner tsx        run the owner under tsx instead of the bundle (dist/main.js, npm run serve's flags)
//   --no-write         print only
// BENCH_OWNER_ARGS: arguments of the owner's serve, e.g. "--synchronous NORMAL".
// Chronolog's store: BENCH_STORE=postgres runs its owners on PostgreSQL, BENCH_PG_LATENCY_MS=N
// through toxiproxy adding N ms to every answer (bench/lib/postgres.ts); SQLite by default.
import { readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { buildBundle } from "../lib/owner.js";
import { storeDescription, storeSetting } from "../lib/postgres.js";
import { burst } from "./burst.js";
import { cancellable } from "./cancellable.js";
import { ceilings, ingest, lateness, live, pendingDelays, preloaded, type Config, type Context } from "./workloads.js";
import { commitOf, Figures, fmt, resultsFile } from "./report.js";
import { ownerServeArgs, startGenerator } from "./runtime.js";
import { ensureInstalled, natsSyncAlways, versions } from "./servers.js";
import { StageTable } from "./stages.js";
import { chronologPaths, type ChronologPath, type System } from "./targets.js";

const repo = new URL("../../", import.meta.url).pathname;
const argv = process.argv.slice(2);
const flag = (name: string) => argv.includes(`--${name}`);
const option = (name: string) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : undefined;
};
const quick = flag("quick");
const runs = Number(option("runs") ?? (quick ? 1 : 3));
const workloads = (option("only") ?? "ingest,deliver,pending,lateness,burst,cancellable,ceilings").split(",");
for (const w of workloads)
  if (!["ingest", "deliver", "live", "pending", "lateness", "burst", "cancellable", "ceilings"].includes(w)) throw new Error(`unknown workload ${w}`);
const paths = (option("paths") ?? "unary,sdk").split(",") as ChronologPath[];
const deliverPaths = (option("deliver-paths") ?? "sdk,unary").split(",") as ChronologPath[];
for (const p of [...paths, ...deliverPaths]) if (!chronologPaths.includes(p)) throw new Error(`unknown Chronolog path ${p}: ${chronologPaths.join(", ")}`);
const allSystems: System[] = ["nats", "redis", "bullmq", "chronolog"];
const systems = (option("systems") ?? allSystems.join(",")).split(",") as System[];
for (const s of systems) if (!allSystems.includes(s)) throw new Error(`unknown system ${s}: ${allSystems.join(", ")}`);
const pendingRuns = Number(option("pending-runs") ?? 1);
const cfg: Config = {
  quick,
  durationMs: quick ? 2_000 : 10_000,
  warmupMs: quick ? 500 : 2_000,
  deliverEvents: quick ? 5_000 : 50_000,
  latencyRate: Number(option("rate") ?? 2_000),
  latencyMs: quick ? 2_000 : 10_000,
  pending: Number(option("pending") ?? (quick ? 5_000 : 1_000_000)),
  lateness: quick ? 1_000 : 20_000,
  latenessSpreadMs: quick ? 3_000 : 10_000,
  burst: Number(option("burst") ?? (quick ? 2_000 : 10_000)),
  cancellable: Number(option("cancellable") ?? (quick ? 10_000 : 100_000)),
  paths,
  deliverPaths,
  systems,
  ownerEntry: option("owner") === "tsx" ? "tsx" : "bundle",
};

const started = new Date();
const load0 = loadavg();
ensureInstalled();
if (cfg.ownerEntry === "bundle") buildBundle();
const { sha, dirty } = commitOf(repo);
const v = versions();
const lines: string[] = [];
const log = (line: string) => {
  console.log(line);
  lines.push(line);
};
const outcomes: string[] = [];
const note = (line: string) => {
  console.log(line);
  outcomes.push(line);
};
const store = storeDescription();
console.log(
  `bench/compare${quick ? " --quick" : ""}: ${runs} run(s), commit ${sha.slice(0, 10)}${dirty ? " (with uncommitted changes)" : ""}; Chronolog on ${store}; load average before: ${load0.map((l) => l.toFixed(2)).join(" ")}`,
);

const file = flag("no-write") ? undefined : resultsFile(repo, sha, started, storeSetting());
const bullmqVersion = (JSON.parse(readFileSync(join(repo, "node_modules/bullmq/package.json"), "utf8")) as { version: string }).version;
const figures = new Figures();
const stages = new StageTable();
const trivial = new Map<string, { rate: number[]; cpu: number[] }>();
const generator = await startGenerator();
const ctx: Context = { cfg, figures, stages, run: (req) => generator.run(req), log, note };
try {
  for (let run = 1; run <= runs; run++) {
    const t0 = Date.now();
    if (workloads.includes("ingest")) await ingest(ctx);
    if (workloads.includes("deliver")) await preloaded(ctx);
    if (workloads.includes("deliver") || workloads.includes("live")) await live(ctx);
    if (workloads.includes("pending") && run <= pendingRuns) await pendingDelays(ctx);
    if (workloads.includes("lateness")) await lateness(ctx);
    if (workloads.includes("burst") && systems.includes("chronolog")) await burst(ctx);
    if (workloads.includes("cancellable")) await cancellable(ctx);
    if (workloads.includes("ceilings")) {
      for (const [kind, r] of await ceilings(ctx)) {
        const entry = trivial.get(kind) ?? { rate: [], cpu: [] };
        entry.rate.push(...r.rate);
        entry.cpu.push(...r.cpu);
        trivial.set(kind, entry);
      }
    }
    console.log(
      `run ${run} of ${runs} done in ${((Date.now() - t0) / 1000).toFixed(0)} s; load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(" ")}`,
    );
    if (file) writeFileSync(file, render(run)); // kept up to date: a run stopped early leaves its medians so far
  }
} finally {
  generator.close();
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

/** What the stage table shows (a function: render runs after each run, before this module's end is evaluated). */
function stageNote(): string {
  return "from the owner's stage histograms (docs/operations.md), scraped with the event-loop delay at the window's start and end, medians over runs. emit → committed: an Emit or Publish request received to its commit durable; committed → sent: to the delivery written to the executor's stream (a credit, the processor's concurrency, the key's earlier events, the owner's turn); sent → ack: both ways of the transport and the handler; ack → cursor saved: after the handler ran, the cursor's save delay (20 ms) and commit. p50 and p99 are interpolated within the histogram's buckets (0.1 ms to 10 s, about 1.5× apart), as Prometheus' histogram_quantile does: read them to a bucket's width.";
}

function trivialTable(): string[] {
  if (trivial.size === 0) return [];
  const names: Record<string, string> = {
    connect: "@connectrpc/connect-node (as the owner serves)",
    "grpc-js": "@grpc/grpc-js server",
    http2: "bare node:http2, gRPC framing",
  };
  const row = (prefix: string) => [...figures.rows.values()].find((r) => r.label.startsWith(prefix) && r.label.includes("unary Emit"));
  const [rate, cpu] = [row("ingest, 256 in flight"), row("server CPU per event at 256")];
  const lines = [
    "| trivial unary handler (grpc-js client, 256 in flight) | calls/s | server CPU per call (µs) | Chronolog unary Emit / this (calls/s) |",
    "|---|---:|---:|---:|",
  ];
  for (const [kind, r] of trivial) {
    const ratio = rate ? figures.median(rate, "chronolog") / median(r.rate) : NaN;
    lines.push(`| ${names[kind]} | ${fmt(median(r.rate))} | ${fmt(median(r.cpu))} | ${Number.isFinite(ratio) ? `${ratio.toFixed(2)}×` : ""} |`);
  }
  if (rate && cpu)
    lines.push(`| Chronolog unary Emit (from the ingest workload) | ${fmt(figures.median(rate, "chronolog"))} | ${fmt(figures.median(cpu, "chronolog"))} | |`);
  return lines;
}

/** The results as markdown, after `done` runs. */
function render(done: number): string {
  const load1 = loadavg();
  const busy = Math.max(load0[0], load0[1]) > 0.5;
  const notes = [
    `Commit measured: \`${sha}\`${dirty ? " (with uncommitted changes)" : ""}. Command: \`npm run bench:compare${argv.length ? ` -- ${argv.join(" ")}` : ""}\`; ${done < runs ? `**${done} of ${runs} runs done**` : `${runs} run(s)`}, medians${workloads.includes("pending") ? ` (the pending delays: ${Math.min(done, pendingRuns)} run(s))` : ""}.`,
    `Started ${started.toISOString()}, ${((Date.now() - started.getTime()) / 60_000).toFixed(1)} min ${done < runs ? "so far" : "in all"}. Machine: ${cpus().length} × ${cpus()[0]?.model ?? "?"}; load average before ${load0.map((l) => l.toFixed(2)).join(" / ")}, now ${load1.map((l) => l.toFixed(2)).join(" / ")}${busy ? " — **other work was running when it started: figures taken on a busy machine**" : ""}.`,
    `Servers: nats-server ${v.nats} (JetStream, file storage${natsSyncAlways() ? ", sync_interval: always" : "; this version has no sync_interval: an ack means written through the page cache, fsync every 2 min"}), redis-server ${v.redis} (appendonly yes, appendfsync always), BullMQ ${bullmqVersion} on a Redis of its own with the same settings; Chronolog owner: ${cfg.ownerEntry === "bundle" ? "dist/main.js with npm run serve's node flags" : "server/src/main.ts under tsx"}, on **${store}**${ownerServeArgs().length ? `, serve ${ownerServeArgs().join(" ")}` : ""}.`,
    `Under a Chronolog figure of a measured window, the owner's event-loop delay p99 and max in that window (prom-client's \`nodejs_eventloop_lag_*\` from its /metrics, scraped at the window's start and end). It counts the monitor's 10 ms sampling interval: an idle loop reads about 10 ms; a stall of S ms is one sample of S + 10 ms, so the max shows stalls that the p99 of a short window may miss.`,
    `A fresh instance per workload and system; the load generator and consumers (2 processes a system for deliveries, 1 for delays) are processes of their own; closed loops measure ${cfg.durationMs / 1000} s after ${cfg.warmupMs / 1000} s of warm-up; ${cfg.deliverEvents.toLocaleString("en-US")} events preloaded for delivery. What each row measures: bench/compare/README.md.`,
  ];
  return [
    `# bench/compare, ${started.toISOString().slice(0, 10)}${quick ? " (--quick)" : ""}, Chronolog on ${storeSetting()}`,
    "",
    ...notes.map((n) => `- ${n}`),
    "",
    ...figures.table(),
    "",
    ...(stages.table().length ? [...stages.table(), "", `Stages: ${stageNote()}`, ""] : []),
    ...trivialTable(),
    ...(outcomes.length ? ["", "Outcomes:", "", ...outcomes.map((l) => `- ${l}`)] : []),
    ...(lines.length ? ["", "Warnings during the run:", "", ...lines.map((l) => `    ${l}`)] : []),
    ...(runs > 1 ? ["", "Every run's figures:", "", ...figures.runs()] : []),
    "",
  ].join("\n");
}

console.log(`\n${render(runs)}`);
if (file) console.log(`written to ${file}`);
process.exit(0);
