// The figures of bench/compare: medians over runs, the ratio of Chronolog's figure to the best
// peer's, printed as a table and written as a markdown file.
import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";

export const peers = ["nats", "redis", "bullmq"] as const;
export type Column = (typeof peers)[number] | "chronolog";
const headings: Record<Column, string> = { nats: "NATS JetStream", redis: "Redis (always)", bullmq: "BullMQ", chronolog: "Chronolog" };

export interface Row {
  /** What the row measures, unit included. */
  label: string;
  /** "higher" when more is better (rates), "lower" for latency, CPU and memory. */
  better: "higher" | "lower";
  values: Partial<Record<Column, number[]>>;
  /** Compare Chronolog against this figure of the peers (another row's label) instead of the row's own. */
  against?: string;
}

export class Figures {
  readonly rows = new Map<string, Row>();

  add(label: string, better: Row["better"], column: Column, value: number, against?: string): void {
    let row = this.rows.get(label);
    if (!row) this.rows.set(label, (row = { label, better, values: {}, against }));
    (row.values[column] ??= []).push(value);
  }

  median(row: Row, column: Column): number {
    // Infinity stays: a latency without bound (events never handled in time).
    const values = [...(row.values[column] ?? [])].filter((v) => !Number.isNaN(v)).sort((a, b) => a - b);
    if (values.length === 0) return NaN;
    const mid = values.length >> 1;
    return values.length % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
  }

  /** Chronolog's median over the best peer's median (NaN without both). */
  ratio(row: Row): { ratio: number; best: string } {
    const base = row.against ? this.rows.get(row.against) : row;
    if (!base) return { ratio: NaN, best: "" };
    const candidates = peers.map((p) => [p, this.median(base, p)] as const).filter(([, v]) => !Number.isNaN(v));
    if (candidates.length === 0) return { ratio: NaN, best: "" };
    const [best, value] = candidates.reduce((a, b) => ((row.better === "higher" ? b[1] > a[1] : b[1] < a[1]) ? b : a));
    return { ratio: this.median(row, "chronolog") / value, best: headings[best] };
  }

  /** Every run's value of every figure, in run order, as markdown (the spread behind the medians). */
  runs(): string[] {
    const cols: Column[] = [...peers, "chronolog"];
    const lines = [`| figure, each run | ${cols.map((c) => headings[c]).join(" | ")} |`, `|---|${cols.map(() => "---").join("|")}|`];
    for (const row of this.rows.values()) lines.push(`| ${row.label} | ${cols.map((c) => (row.values[c] ?? []).map((v) => fmt(v)).join(", ")).join(" | ")} |`);
    return lines;
  }

  /** The table's lines as markdown. */
  table(): string[] {
    const cols: Column[] = [...peers, "chronolog"];
    const lines = [`| figure | ${cols.map((c) => headings[c]).join(" | ")} | Chronolog / best peer |`, `|---|${cols.map(() => "---:").join("|")}|---|`];
    for (const row of this.rows.values()) {
      const { ratio, best } = this.ratio(row);
      const ratioText = Number.isFinite(ratio) ? `${fmtRatio(ratio)} (${best}; ${row.better} is better)` : "";
      lines.push(`| ${row.label} | ${cols.map((c) => fmt(this.median(row, c), row.values[c]?.length ?? 0)).join(" | ")} | ${ratioText} |`);
    }
    return lines;
  }
}

function fmtRatio(r: number): string {
  return `${r >= 10 ? r.toFixed(0) : r >= 1 ? r.toFixed(2) : r.toPrecision(2)}×`;
}

/** A median with sensible digits; "" where the column has no value. */
export function fmt(v: number, n = 1): string {
  if (n === 0) return "";
  if (v === Infinity) return "∞";
  if (!Number.isFinite(v)) return "–";
  const digits = Math.abs(v) >= 100 ? 0 : Math.abs(v) >= 10 ? 1 : 2;
  return v.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

export function commitOf(repo: string): { sha: string; dirty: boolean } {
  const sha = execFileSync("git", ["rev-parse", "HEAD"], { cwd: repo, encoding: "utf8" }).trim();
  const dirty = execFileSync("git", ["status", "--porcelain", "--untracked-files=no"], { cwd: repo, encoding: "utf8" }).trim() !== "";
  return { sha, dirty };
}

/** The results file's path: bench/compare/results/<date>-<time>-<commit>[-<store>].md (the folder made); SQLite's files name no store. */
export function resultsFile(repo: string, sha: string, started: Date, store: string): string {
  const dir = join(repo, "bench/compare/results");
  mkdirSync(dir, { recursive: true });
  const stamp = started.toISOString().slice(0, 16).replace("T", "-").replace(":", "");
  return join(dir, `${stamp}-${sha.slice(0, 10)}${store === "sqlite" ? "" : `-${store}`}.md`);
}
