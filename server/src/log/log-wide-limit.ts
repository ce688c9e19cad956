import type { LogRemovalStatements, ScannedEvent } from "../store/log-removal.js";
import type { LogStats } from "./log-stats.js";
import type { PartitionDrop, PartitionPlan } from "./partition-plan.js";

/** What the log-wide limit's phase of a pass needs (log/retention.ts). */
export interface LogWidePass {
  statements: LogRemovalStatements;
  stats: LogStats;
  /** The log's stored bytes at most. */
  maxBytes: number;
  batchEvents: number;
  /** PostgreSQL's: the pass's plan of the events table's full partitions, decided by the rules already. */
  plan: PartitionPlan | undefined;
  /** Weighs `candidates` against the holds and removes the rest in one unit, then pauses. */
  removeBatch(candidates: ScannedEvent[]): Promise<void>;
  /** Drops a partition nothing holds an event of. */
  drop(drop: PartitionDrop): Promise<void>;
}

/**
 * The log-wide `max_bytes` (docs/retention.md): the oldest events, of any type, whose bytes make
 * the log's excess over the limit at the phase's start are candidates, and no others. They are
 * weighed oldest first, and what a holder keeps counts toward that excess: the pass does not scan
 * on past it (the log stays over the limit until the holders let those events go), so its cost
 * follows the excess, not the log's length.
 *
 * On PostgreSQL the full partitions come first, oldest first, from their summaries: one nothing
 * holds an event of is dropped whole (the limit may thus take up to a partition more than its
 * excess), one a processor holds whole for the rules is stepped over (its bytes count), and one
 * a holder pins is weighed by rows; then the head's partition, by rows.
 */
export async function passLogWide(p: LogWidePass): Promise<void> {
  const excess = p.stats.bytes - p.maxBytes;
  if (excess <= 0) return;
  /** Bytes of the oldest events weighed so far (removed or kept). */
  let weighed = 0;
  let after = 0;
  for (const partition of p.plan?.full ?? []) {
    if (weighed >= excess || p.stats.bytes <= p.maxBytes) return;
    const verdict = await p.plan!.logWide(partition);
    if (verdict === "rows") weighed += await byRows(p, partition.from - 1, partition.to, excess - weighed);
    else if (verdict === "held") weighed += await p.plan!.bytesOf(partition);
    else if (verdict !== "dropped") {
      weighed += verdict.bytes;
      await p.drop(verdict);
    }
    after = partition.to - 1;
  }
  if (weighed < excess) await byRows(p, after, Number.MAX_SAFE_INTEGER, excess - weighed);
}

/** The oldest events with seq in (`afterSeq`, `beforeSeq`) whose bytes make `budget`, in batches; returns the bytes weighed. */
async function byRows(p: LogWidePass, afterSeq: number, beforeSeq: number, budget: number): Promise<number> {
  let weighed = 0;
  let after = afterSeq;
  while (weighed < budget && p.stats.bytes > p.maxBytes) {
    const rows = await p.statements.scanAll(after, p.batchEvents, beforeSeq);
    const candidates: ScannedEvent[] = [];
    for (const row of rows) {
      if (weighed >= budget) break;
      candidates.push(row);
      weighed += row.bytes;
      after = row.seq;
    }
    if (candidates.length > 0) await p.removeBatch(candidates);
    if (rows.length < p.batchEvents) break;
  }
  return weighed;
}

/** How far past its size the log is: within its warning threshold, past it, or past its limit (ordered: a warning is logged when it rises). */
export const SizeLevel = { within: 0, warning: 1, limit: 2 } as const;
export type SizeLevel = (typeof SizeLevel)[keyof typeof SizeLevel];

/** The {@link SizeLevel} of a log of `bytes` (a threshold or limit of 0: none). */
export function sizeLevel(bytes: number, warnBytes: number, maxBytes: number): SizeLevel {
  if (maxBytes > 0 && bytes > maxBytes) return SizeLevel.limit;
  return warnBytes > 0 && bytes > warnBytes ? SizeLevel.warning : SizeLevel.within;
}

/**
 * The log-wide size warning (docs/retention.md): how big the log is, whether past its limit or
 * its warning threshold only, and what holds back the events a rule or the limit lets go (the
 * pass's holders, most events first, each with why the first of them stays), or that nothing does.
 */
export function sizeWarning(
  size: { bytes: number; level: SizeLevel; warnBytes: number; maxBytes: number },
  held: Record<string, number>,
  reasons: ReadonlyMap<string, { reason: string }>,
): string {
  const { bytes, level, warnBytes, maxBytes } = size;
  const where =
    level === SizeLevel.limit
      ? `past its limit of ${maxBytes} (max_bytes)`
      : `past its warning threshold of ${warnBytes}${maxBytes > 0 ? `, under its limit of ${maxBytes}` : ""}`;
  const holders = Object.entries(held)
    .filter(([, events]) => events > 0)
    .sort((a, b) => b[1] - a[1])
    .map(([holder, events]) => `${holder} holds ${events} (${reasons.get(holder)?.reason ?? "held"})`);
  const why =
    holders.length > 0
      ? `retention keeps events it would remove: ${holders.join("; ")}`
      : level === SizeLevel.limit
        ? "nothing holds its oldest events back"
        : "nothing is held back: lower the rules' limits (or set max_bytes) to keep it smaller";
  return `the log takes ${bytes} bytes, ${where}: ${why}`;
}
