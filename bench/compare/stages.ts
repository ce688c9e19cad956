// Where a Chronolog delivery's time went in a measured window of the live workloads: the owner's
// stage histograms (server/src/stages.ts, docs/operations.md) scraped at the window's start and
// end (event-loop.ts), their deltas summed over processors, and each stage's p50 / p99
// interpolated within its bucket as Prometheus' histogram_quantile does. Printed as a table of
// its own, the consumers' emit → handler latency of the same window beside them.
import { fmt } from "./report.js";

/** The stages of an event's way through the owner, in order, as /metrics names them. */
export const deliveryStages = [
  { metric: "chronolog_emit_commit_seconds", name: "emit → committed" },
  { metric: "chronolog_delivery_send_seconds", name: "committed → sent" },
  { metric: "chronolog_delivery_ack_seconds", name: "sent → ack" },
  { metric: "chronolog_delivery_cursor_seconds", name: "ack → cursor saved" },
] as const;

/** The stages of a first call of time (a timer, schedule or delay): its moment to its action's start. */
export const timerStages = [
  { metric: "chronolog_timer_claim_seconds", name: "due → claimed" },
  { metric: "chronolog_timer_send_seconds", name: "claimed → sent" },
  { metric: "chronolog_timer_start_seconds", name: "sent → started" },
] as const;

/** One stage in a window: observations, and p50 / p99 in ms (NaN without observations). */
export interface StageFigure {
  count: number;
  p50: number;
  p99: number;
}

/** Cumulative counts by bucket bound (seconds, Infinity for +Inf) of `metric` in a /metrics page, summed over its label sets. */
function bucketsOf(page: string, metric: string): Map<number, number> {
  const out = new Map<number, number>();
  const line = new RegExp(`^${metric}_bucket\\{([^}]*)\\} (\\S+)$`, "gm");
  for (const [, labels, value] of page.matchAll(line)) {
    const le = /le="([^"]+)"/.exec(labels)?.[1];
    if (le === undefined) continue;
    const bound = le === "+Inf" ? Infinity : Number(le);
    out.set(bound, (out.get(bound) ?? 0) + Number(value));
  }
  return out;
}

/** The `q` quantile (0..1) of cumulative `buckets` (bound → count, ascending bounds), ms; NaN when empty. */
function quantileMs(buckets: [number, number][], q: number): number {
  const total = buckets.at(-1)?.[1] ?? 0;
  if (total <= 0) return Number.NaN;
  const rank = q * total;
  let below = 0;
  let lower = 0;
  for (const [bound, count] of buckets) {
    if (count >= rank) {
      if (bound === Infinity) return lower * 1000; // past the last bound: the last bound, as Prometheus answers
      return (lower + ((bound - lower) * (rank - below)) / Math.max(count - below, 1e-9)) * 1000;
    }
    below = count;
    lower = bound;
  }
  return lower * 1000;
}

/** Each of `stages` between two /metrics pages of one owner (its start and end of a window). */
export function stagesBetween(start: string, end: string, stages: readonly { metric: string; name: string }[] = deliveryStages): Map<string, StageFigure> {
  const out = new Map<string, StageFigure>();
  for (const { metric, name } of stages) {
    const before = bucketsOf(start, metric);
    const delta = [...bucketsOf(end, metric)].sort((a, b) => a[0] - b[0]).map(([bound, count]): [number, number] => [bound, count - (before.get(bound) ?? 0)]);
    out.set(name, { count: delta.at(-1)?.[1] ?? 0, p50: quantileMs(delta, 0.5), p99: quantileMs(delta, 0.99) });
  }
  return out;
}

const median = (values: number[]) => {
  const s = values.filter((v) => !Number.isNaN(v)).sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** The stage figures of every window measured, by window, each run's kept for the medians. */
export class StageTable {
  private readonly windows = new Map<string, { stages: Map<string, StageFigure>; handler?: { p50: number; p99: number } }[]>();

  /** One run's figures of `window`; `handler`: the consumers' emit → handler latency in it, when measured. */
  add(window: string, figures: Map<string, StageFigure>, handler?: { p50: number; p99: number }): void {
    const runs = this.windows.get(window) ?? [];
    runs.push({ stages: figures, handler });
    this.windows.set(window, runs);
  }

  /** The table's lines as markdown (none before a window was measured): medians over runs, p50 / p99 in ms. */
  table(): string[] {
    if (this.windows.size === 0) return [];
    const pair = (p50: number[], p99: number[]) => (p50.length === 0 ? "" : `${fmt(median(p50))} / ${fmt(median(p99))}`);
    const lines = [
      `| Chronolog window: the owner's stage histograms, p50 / p99 (ms) | ${deliveryStages.map((s) => s.name).join(" | ")} | emit → handler (the consumers) | deliveries sent | slowest stage at p99 up to the ack |`,
      `|---|${deliveryStages.map(() => "---:").join("|")}|---:|---:|---|`,
    ];
    for (const [window, runs] of this.windows) {
      const of = (name: string, q: "p50" | "p99" | "count") => runs.map((r) => r.stages.get(name)?.[q] ?? Number.NaN);
      const handled = runs.filter((r) => r.handler);
      // The cursor's save comes after the ack (20 ms of it by design), on no event's way to its handler.
      const p99s = deliveryStages
        .filter((s) => s.name !== "ack → cursor saved")
        .map((s) => [s.name, median(of(s.name, "p99"))] as const)
        .filter(([, v]) => !Number.isNaN(v));
      const slowest = p99s.length ? p99s.reduce((a, b) => (b[1] > a[1] ? b : a))[0] : "";
      lines.push(
        `| ${window} | ${deliveryStages.map((s) => pair(of(s.name, "p50"), of(s.name, "p99"))).join(" | ")} | ${pair(
          handled.map((r) => r.handler!.p50),
          handled.map((r) => r.handler!.p99),
        )} | ${fmt(median(of("committed → sent", "count")))} | ${slowest} |`,
      );
    }
    return lines;
  }
}
