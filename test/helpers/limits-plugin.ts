import { create, toJson } from "@bufbuild/protobuf";
import { PluginManifestSchema } from "@chronolog/sdk/gen/chronolog/v1/plugin_pb";
import { definePlugin, manifestOf, type PluginDefinition } from "../../sdk/ts/src/plugin.js";

/** One run's start or end, as the limits executor prints it (one JSON line each). */
export interface RunLine {
  ev: "start" | "end";
  /** `work` (a delivery of processor limits.work), `charge` (a call of action limits.charge), `ping` (a call of limits.ping) or `settle` (a delivery of limits.settle). */
  what: "work" | "charge" | "ping" | "settle";
  /** limits.settle: the events the delivery stands for (ctx.debounced). */
  count?: number;
  /** The event's seq, or the call's input `n`. */
  id: number;
  customer: string;
  pid: number;
  /** Date.now() when printed. */
  at: number;
}

/**
 * The plugin of the concurrency-limit tests: processor `limits.work` on `work.queued` (at most
 * 2 deliveries in flight per `data.customer`, 6 in all) and action `limits.charge` (1 call per
 * `input.customer`, 3 in all; a run's timeout 5 s, no grace) and action `limits.ping` (3 calls
 * per 10 s, a burst of 3: a start line only, no wait). Each run prints a start and an end line ({@link RunLine}) and takes
 * `runMs`. Processor `limits.settle` on `doc.changed` debounces by `data.doc` (2 s of quiet, at
 * most 3 s) and prints an end line at once, with the count its delivery stands for.
 */
export function limitsPlugin(runMs = 150): PluginDefinition {
  const line = (l: Omit<RunLine, "pid" | "at">) => process.stdout.write(`${JSON.stringify({ ...l, pid: process.pid, at: Date.now() })}\n`);
  return definePlugin({
    name: "limits",
    events: { "work.queued": { allow: ["*"] }, "doc.changed": { allow: ["*"] } },
    processors: {
      settle: {
        on: "doc.changed",
        debounce: { key: "data.doc", periodMs: 2_000, maxWaitMs: 3_000 },
        concurrency: 8,
        start: "beginning",
        run(ctx) {
          line({ ev: "end", what: "settle", id: Number(ctx.event.seq), customer: String(ctx.data.doc), count: ctx.debounced });
        },
      },
      work: {
        on: "work.queued",
        concurrency: { limit: 2, key: "data.customer", total: 6 },
        start: "beginning",
        retryDelaysMs: [20, 40, 80],
        async run(ctx) {
          const l = { what: "work" as const, id: Number(ctx.event.seq), customer: String(ctx.data.customer) };
          line({ ev: "start", ...l });
          await new Promise((r) => setTimeout(r, runMs));
          line({ ev: "end", ...l });
        },
      },
    },
    actions: {
      charge: {
        allow: ["*"],
        concurrency: { limit: 1, key: "input.customer", total: 3 },
        timeoutMs: 5_000,
        timeoutGraceMs: 0,
        async run(_ctx, input) {
          const l = { what: "charge" as const, id: Number(input.n), customer: String(input.customer) };
          line({ ev: "start", ...l });
          await new Promise((r) => setTimeout(r, runMs));
          line({ ev: "end", ...l });
          return { n: input.n };
        },
      },
      ping: {
        allow: ["*"],
        rate: { limit: 3, periodMs: 10_000, burst: 3 },
        timeoutMs: 20_000,
        run(_ctx, input) {
          line({ ev: "start", what: "ping", id: Number(input.n), customer: "" });
          return { n: input.n };
        },
      },
    },
  });
}

/** The plugin's manifest in its JSON form (for a --plugins folder). */
export function limitsPluginManifest(): unknown {
  return toJson(PluginManifestSchema, create(PluginManifestSchema, manifestOf(limitsPlugin())));
}

/**
 * The most runs of `what` in flight at once, per customer and in all, from the lines of every
 * executor; a run without an end line ended when its process was killed (`killedAt` by pid).
 */
export function peaks(lines: RunLine[], what: RunLine["what"], killedAt: Map<number, number>): { perCustomer: number; total: number } {
  const edges: { at: number; delta: number; customer: string }[] = [];
  const open = new Map<string, RunLine[]>();
  const runKey = (l: RunLine) => `${l.pid}/${l.id}`;
  for (const l of lines.filter((x) => x.what === what)) {
    const starts = open.get(runKey(l)) ?? [];
    open.set(runKey(l), starts);
    if (l.ev === "start") starts.push(l);
    else {
      const start = starts.shift();
      if (start) edges.push({ at: start.at, delta: 1, customer: l.customer }, { at: l.at, delta: -1, customer: l.customer });
    }
  }
  for (const start of [...open.values()].flat()) {
    const end = killedAt.get(start.pid);
    if (end === undefined) throw new Error(`run ${runKey(start)} has no end and its executor was not killed`);
    edges.push({ at: start.at, delta: 1, customer: start.customer }, { at: end, delta: -1, customer: start.customer });
  }
  edges.sort((a, b) => a.at - b.at || a.delta - b.delta); // an end and a start at the same ms: the end first
  const byCustomer = new Map<string, number>();
  let total = 0;
  let perCustomer = 0;
  let totalPeak = 0;
  for (const e of edges) {
    total += e.delta;
    const n = (byCustomer.get(e.customer) ?? 0) + e.delta;
    byCustomer.set(e.customer, n);
    perCustomer = Math.max(perCustomer, n);
    totalPeak = Math.max(totalPeak, total);
  }
  return { perCustomer, total: totalPeak };
}
