import { Counter, Gauge, type Registry } from "prom-client";

/** One rate's waits as the metrics read them: a processor's or an action's. */
export interface RateWaits {
  kind: "processor" | "action";
  /** `plugin.processor` or `plugin.action`. */
  name: string;
  /** Ms that work waited for a token, in all, since the owner started (or the declaration changed). */
  waitedMs: number;
  /** Pieces of work that waited. */
  waits: number;
  /** Pieces of work waiting for a token now. */
  waiting: number;
}

/** The rates' metrics, read at scrape time from `read` (a declaration changed starts again from 0: a counter reset). */
export function rateMetrics(registry: Registry, read: () => Iterable<RateWaits>): void {
  const registers = [registry];
  const labelNames = ["kind", "name"] as const;
  new Counter({
    name: "chronolog_rate_wait_seconds_total",
    help: "Time deliveries and action calls waited for a token of their rate (rate: {limit, period_ms, key, burst}) before they started, by processor or action.",
    labelNames,
    registers,
    collect() {
      this.reset();
      for (const r of read()) this.inc({ kind: r.kind, name: r.name }, r.waitedMs / 1000);
    },
  });
  new Counter({
    name: "chronolog_rate_waits_total",
    help: "Deliveries and action calls that waited for a token of their rate before they started.",
    labelNames,
    registers,
    collect() {
      this.reset();
      for (const r of read()) this.inc({ kind: r.kind, name: r.name }, r.waits);
    },
  });
  new Gauge({
    name: "chronolog_rate_waiting",
    help: "Deliveries and action calls waiting for a token of their rate now.",
    labelNames,
    registers,
    collect() {
      this.reset();
      for (const r of read()) this.set({ kind: r.kind, name: r.name }, r.waiting);
    },
  });
}
