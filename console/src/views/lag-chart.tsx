// A small line chart of each processor's lag (events) over the last minutes, sampled by the
// processors view at most once a second (uPlot).

import { useEffect, useRef } from "react";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

/** One sample: seconds since the epoch and each processor's lag at that moment. */
export interface LagSample {
  t: number;
  lag: Record<string, number>;
}

const palette = ["#1f6feb", "#d9480f", "#2f9e44", "#ae3ec9", "#e8590c", "#1098ad", "#5c940d", "#c2255c"];

export function LagChart({ samples, names }: { samples: LagSample[]; names: string[] }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const key = names.join("\n");

  // biome-ignore lint/correctness/useExhaustiveDependencies: the chart is made again when the set of names changes (`key`), not for each new array of them
  useEffect(() => {
    if (!box.current) return;
    const opts: uPlot.Options = {
      width: Math.max(300, box.current.clientWidth),
      height: 160,
      legend: { show: true },
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(5, max)] } },
      axes: [{}, { label: "lag (events)", size: 60 }],
      series: [{}, ...names.map((name, i) => ({ label: name, stroke: palette[i % palette.length], width: 1.5 }))],
    };
    plot.current = new uPlot(opts, [[], ...names.map(() => [])], box.current);
    const resize = new ResizeObserver(() => plot.current?.setSize({ width: Math.max(300, box.current?.clientWidth ?? 300), height: 160 }));
    resize.observe(box.current);
    return () => {
      resize.disconnect();
      plot.current?.destroy();
      plot.current = null;
    };
  }, [key]);

  // biome-ignore lint/correctness/useExhaustiveDependencies: `key` stands for `names`, and a new chart (a new `key`) needs the samples again
  useEffect(() => {
    if (!plot.current || samples.length === 0) return;
    plot.current.setData([samples.map((s) => s.t), ...names.map((n) => samples.map((s) => s.lag[n] ?? null))] as uPlot.AlignedData);
    // At least the last minute on the x axis, so the first samples do not stretch it over years.
    const last = samples[samples.length - 1].t;
    plot.current.setScale("x", { min: Math.min(samples[0].t, last - 60), max: last });
  }, [samples, key]);

  return <div ref={box} id="lag-chart" className="chart" data-samples={samples.length} />;
}
