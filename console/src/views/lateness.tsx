// The lateness histogram of time's calls (how late each call was made after its due moment)
// as a bar chart. The API has no RPC for it: it is read from the owner's `GET /metrics`
// (`chronolog_timer_lateness_seconds`, Prometheus text, admin only), every 5 seconds.

import { useQuery } from "@tanstack/react-query";
import { useEffect, useRef } from "react";
import uPlot from "uplot";
import { getToken } from "../api.js";

const metric = "chronolog_timer_lateness_seconds_bucket";

/** The histogram's buckets: upper bound (s, Infinity last) and the count in that bucket alone. */
function parseLateness(text: string): { le: number; count: number }[] {
  const cumulative: { le: number; total: number }[] = [];
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${metric}{`)) continue;
    const m = /le="([^"]+)"\}\s+(\S+)/.exec(line);
    if (m) cumulative.push({ le: m[1] === "+Inf" ? Infinity : Number(m[1]), total: Number(m[2]) });
  }
  cumulative.sort((a, b) => a.le - b.le);
  return cumulative.map((b, i) => ({ le: b.le, count: b.total - (i > 0 ? cumulative[i - 1].total : 0) }));
}

async function readLateness(): Promise<{ le: number; count: number }[]> {
  const token = getToken();
  const res = await fetch("/metrics", { headers: token ? { authorization: `Bearer ${token}` } : {} });
  if (!res.ok) throw new Error(`GET /metrics: ${res.status} ${(await res.text()).trim()}`);
  return parseLateness(await res.text());
}

function label(le: number): string {
  if (le === Infinity) return "more";
  return le < 1 ? `≤${Math.round(le * 1000)}ms` : `≤${le}s`;
}

export function LatenessChart() {
  const q = useQuery({ queryKey: ["lateness"], queryFn: readLateness, refetchInterval: 5000 });
  const box = useRef<HTMLDivElement>(null);
  const buckets = q.data ?? [];
  const total = buckets.reduce((n, b) => n + b.count, 0);
  const labels = buckets.map((b) => label(b.le));

  // biome-ignore lint/correctness/useExhaustiveDependencies: drawn again when the scrape is new (`dataUpdatedAt`), which is when the buckets are
  useEffect(() => {
    if (!box.current || buckets.length === 0) return;
    const bars = uPlot.paths.bars?.({ size: [0.8, 40] });
    const plot = new uPlot(
      {
        width: Math.max(300, box.current.clientWidth),
        height: 140,
        legend: { show: false },
        scales: { x: { time: false }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
        axes: [{ values: (_u, splits) => splits.map((i) => labels[i] ?? "") }, { label: "calls", size: 50 }],
        series: [{}, { label: "calls", fill: "#1f6feb55", stroke: "#1f6feb", paths: bars, points: { show: false } }],
      },
      [buckets.map((_b, i) => i), buckets.map((b) => b.count)],
      box.current,
    );
    return () => plot.destroy();
  }, [q.dataUpdatedAt]);

  if (q.isError) return <p className="note">Lateness histogram: {(q.error as Error).message}</p>;
  return (
    <div className="lateness">
      <h3>
        Lateness of time's calls <small className="muted">({total} calls since the owner started; from /metrics)</small>
      </h3>
      <div ref={box} id="lateness-chart" className="chart" data-total={total} />
    </div>
  );
}
