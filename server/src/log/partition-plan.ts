import type { EventPartition, PartitionRemovalStatements, PartitionSummary, ScannedEvent } from "../store/log-removal.js";
import type { Hold, ProcessorHold } from "./retention-holds.js";
import type { RetentionRule } from "./retention-rules.js";

/** Events and stored bytes, by type. */
export type ByType = Map<string, { events: number; bytes: number }>;

/** A partition every event of which may go: it is dropped whole. */
export interface PartitionDrop {
  partition: EventPartition;
  events: number;
  bytes: number;
  byType: ByType;
}

/** What a pass needs to weigh a whole partition from its summary. */
export interface PartitionWeighing {
  /** The rule each type follows (undefined: kept forever). */
  ruleOf(type: string): RetentionRule | undefined;
  /** Events and bytes of `type` in the whole log. */
  totalOf(type: string): { events: number; bytes: number };
  now: number;
  processors: ProcessorHold[];
  /** Seqs of failed deliveries on record. */
  failedSeqs: number[];
  /** Whether events of `type` may be held by a pending timer, a running call or a document (their holds are read per event). */
  sparselyHeld(type: string): boolean;
  /** Up to `limit` events of `type` with seq in (`afterSeq`, `beforeSeq`), in seq order. */
  scan(type: string, afterSeq: number, beforeSeq: number, limit: number): Promise<ScannedEvent[]>;
  /** The holds on `events` (retention-holds.ts). */
  check(events: ScannedEvent[]): Promise<Map<number, Hold>>;
  /** Events scanned at most per read. */
  batchEvents: number;
}

/**
 * The full partitions' summaries an owner keeps across passes (by partition name): those stored
 * (migration 0011) are loaded at its first pass, and each one read since is stored before it is
 * used.
 */
export class PartitionSummaries {
  readonly byName = new Map<string, PartitionSummary>();
  loaded = false;
}

/** Why a partition the rules would let go whole stays this pass, with its events of each holder. */
export interface PartitionHeld {
  holder: string;
  reason: string;
  events: number;
  types: string[];
}

/**
 * One retention pass over the events table's partitions on PostgreSQL (docs/retention.md,
 * "Space on disk"), decided per partition from its summary: events, bytes, the highest seq and
 * commit time of each type, read once when the partition is full, stored, and kept across passes
 * and restarts (a full partition only loses events; one that lost some by rows is read again). Of the full
 * partitions (the head's is still being written), oldest first, each is:
 * - **dropped** whole when each of its types' rule lets every one of its events go (its newest
 *   is past the age, or has as many newer events of its type as the count or bytes as the size
 *   limit), no processor has its types' events to finish, no failed delivery is in its range,
 *   none of its sparse holders (timer.scheduled, action.started, documents' changes: read by
 *   type and seq range) is held, and no event after it names one of its events as its cause;
 * - **held** when a processor's cursor is below the partition and it takes one of its types: the
 *   processor holds those events (counted from the summary), and the rules leave it alone;
 * - **waiting** when a type's rule lets its events go in time but not all yet: the rules
 *   remove nothing from it row by row, and it is dropped once its last event may go (but for a
 *   processor that has not finished it: the rules then weigh its events by rows, and count
 *   what the processor holds back);
 * - **pinned** otherwise (a type no rule covers or one kept by a key only, a cursor inside it, a
 *   failed delivery, a sparse holder or a kept effect): the rules remove its events row by row,
 *   as on SQLite, and it is dropped once empty.
 * The partition holding the head is removed from row by row. A pass thus costs per partition,
 * not per event, but where a holder pins part of one.
 */
export class PartitionPlan {
  /** Full partitions the rules leave alone this pass (held, waiting, or being dropped). */
  private readonly skipped = new Set<EventPartition>();
  /** Full partitions dropped this pass, or held whole for a processor. */
  private readonly decided = new Map<EventPartition, "dropped" | "held">();
  /** The weighing of this pass's {@link decide}. */
  private weighing: PartitionWeighing | undefined;
  /** Summaries read from a partition's events in this pass (those stored were not). */
  summariesRead = 0;

  private constructor(
    private readonly statements: PartitionRemovalStatements,
    /** The full partitions, oldest first. */
    readonly full: EventPartition[],
    /** Each full partition's summary, by name, kept across passes. */
    private readonly summaries: Map<string, PartitionSummary>,
    /** Stores a summary just read (in a committer unit of its own). */
    private readonly persist: (partition: EventPartition, summary: PartitionSummary) => Promise<void>,
  ) {}

  /**
   * The plan of a pass: the partitions as they are, those below `head` full (the log's last event
   * always stays); the stored summaries are loaded at an owner's first pass.
   */
  static async start(
    statements: PartitionRemovalStatements,
    head: number,
    summaries: PartitionSummaries,
    persist: (partition: EventPartition, summary: PartitionSummary) => Promise<void>,
  ): Promise<PartitionPlan> {
    if (!summaries.loaded) {
      for (const [name, summary] of await statements.stored()) summaries.byName.set(name, summary);
      summaries.loaded = true;
    }
    const partitions = await statements.list();
    const names = new Set(partitions.map((p) => p.name));
    for (const name of summaries.byName.keys()) if (!names.has(name)) summaries.byName.delete(name);
    return new PartitionPlan(
      statements,
      partitions.filter((p) => p.to <= head),
      summaries.byName,
      persist,
    );
  }

  /** The full partition holding `seq`, if any. */
  private partitionOf(seq: number): EventPartition | undefined {
    let low = 0;
    let high = this.full.length - 1;
    while (low <= high) {
      const mid = (low + high) >> 1;
      const p = this.full[mid];
      if (seq < p.from) high = mid - 1;
      else if (seq >= p.to) low = mid + 1;
      else return p;
    }
    return undefined;
  }

  /** The summary of a full partition, read once and stored before it is used (a drop checks it). */
  async summary(partition: EventPartition): Promise<PartitionSummary> {
    let summary = this.summaries.get(partition.name);
    if (!summary) {
      summary = await this.statements.summary(partition);
      this.summariesRead++;
      await this.persist(partition, summary);
      this.summaries.set(partition.name, summary);
    }
    return summary;
  }

  /**
   * Weighs every full partition, oldest first: returns those to drop and those held whole by a
   * processor; marks the held and waiting ones (and those dropped) for the rules to leave alone.
   */
  async decide(w: PartitionWeighing): Promise<{ drops: PartitionDrop[]; held: PartitionHeld[] }> {
    this.weighing = w;
    const drops: PartitionDrop[] = [];
    const held: PartitionHeld[] = [];
    /** Events and bytes of each type in the partitions weighed so far (all older than the next). */
    const through = new Map<string, { events: number; bytes: number }>();
    for (const partition of this.full) {
      const summary = await this.summary(partition);
      let ripe = true;
      let ripens = true;
      for (const [type, s] of summary) {
        const sum = through.get(type) ?? { events: 0, bytes: 0 };
        sum.events += s.events;
        sum.bytes += s.bytes;
        through.set(type, sum);
        const rule = w.ruleOf(type);
        if (!rule || (rule.maxAgeMs === 0 && rule.maxCount === 0 && rule.maxBytes === 0)) {
          ripens = false;
          continue;
        }
        // Its newest event here is a candidate (so are the older ones): by age, or with at
        // least the count (or the bytes) of its type's newer events the rule keeps.
        const total = w.totalOf(type);
        const allGo =
          (rule.maxAgeMs > 0 && s.maxAt < w.now - rule.maxAgeMs) ||
          (rule.maxCount > 0 && total.events - sum.events >= rule.maxCount) ||
          (rule.maxBytes > 0 && total.bytes - sum.bytes >= rule.maxBytes);
        if (!allGo) ripe = false;
      }
      if (!ripens) continue; // pinned: the rules remove what they may by rows
      if (!ripe) {
        // Waiting; but where a processor has not finished it, the rules weigh what they let go
        // by rows (held, and counted so), as in the head's partition.
        if (!w.processors.some((p) => [...summary].some(([t, s]) => (p.on === null || p.on.has(t)) && s.maxSeq > p.floor))) this.skipped.add(partition);
        continue;
      }
      const verdict = await this.holdOf(partition, summary, w);
      if (verdict === "pinned") continue;
      this.skipped.add(partition);
      this.decided.set(partition, verdict.length > 0 ? "held" : "dropped");
      if (verdict.length > 0) held.push(...verdict);
      else drops.push(this.dropOf(partition, summary));
    }
    return { drops, held };
  }

  /**
   * For the log-wide limit, after {@link decide}, a full partition, oldest first: `dropped` or
   * `held` when this pass dropped it already or a processor holds it whole (stepped over), a drop
   * when nothing holds any of its events, whatever the rules, or `rows` when a holder keeps some
   * (its events are weighed one by one).
   */
  async logWide(partition: EventPartition): Promise<PartitionDrop | "dropped" | "held" | "rows"> {
    const decided = this.decided.get(partition);
    if (decided) return decided;
    const summary = await this.summary(partition);
    const verdict = await this.holdOf(partition, summary, this.weighing!);
    if (verdict !== "pinned" && verdict.length === 0) {
      this.decided.set(partition, "dropped");
      this.skipped.add(partition);
      return this.dropOf(partition, summary);
    }
    return "rows";
  }

  /** What holds a partition every event of which its rules let go: none (`[]`), processors behind it (held whole), or `pinned` (its events are weighed one by one). */
  private async holdOf(partition: EventPartition, summary: PartitionSummary, w: PartitionWeighing): Promise<PartitionHeld[] | "pinned"> {
    const held: PartitionHeld[] = [];
    const claimed = new Set<string>();
    for (const p of w.processors) {
      const types = [...summary.keys()].filter((t) => (p.on === null || p.on.has(t)) && !claimed.has(t));
      const newest = Math.max(0, ...types.map((t) => summary.get(t)!.maxSeq));
      if (newest <= p.floor) continue;
      if (p.floor >= partition.from) return "pinned"; // its cursor is inside: which events it finished is read by rows
      for (const t of types) claimed.add(t);
      held.push({
        holder: `processor:${p.name}`,
        reason: `processor ${p.name} has not finished it (its cursor is at ${p.floor})`,
        events: types.reduce((n, t) => n + summary.get(t)!.events, 0),
        types,
      });
    }
    if (held.length > 0) return held;
    if (w.failedSeqs.some((seq) => seq >= partition.from && seq < partition.to)) return "pinned";
    for (const type of summary.keys()) {
      if (!w.sparselyHeld(type)) continue;
      for (let after = partition.from - 1; ; ) {
        const rows = await w.scan(type, after, partition.to, w.batchEvents);
        if (rows.length === 0) break;
        const holds = await w.check(rows);
        if ([...holds.values()].some((h) => h.effect === undefined || this.partitionOf(h.effect) !== partition)) return "pinned";
        after = rows[rows.length - 1].seq;
      }
    }
    if (await this.statements.causedAfter(partition)) return "pinned";
    return [];
  }

  /** Stored bytes of a full partition's events, from its summary (read if need be). */
  async bytesOf(partition: EventPartition): Promise<number> {
    return [...(await this.summary(partition)).values()].reduce((sum, s) => sum + s.bytes, 0);
  }

  private dropOf(partition: EventPartition, summary: PartitionSummary): PartitionDrop {
    const byType: ByType = new Map();
    let events = 0;
    let bytes = 0;
    for (const [type, s] of summary) {
      byType.set(type, { events: s.events, bytes: s.bytes });
      events += s.events;
      bytes += s.bytes;
    }
    return { partition, events, bytes, byType };
  }

  /** The full partition the rules leave alone that holds `seq`, with its events and bytes of `type`: a scan by rows steps over it. */
  skips(seq: number, type: string): { to: number; events: number; bytes: number } | undefined {
    const partition = this.partitionOf(seq);
    if (partition === undefined || !this.skipped.has(partition)) return undefined;
    const s = this.summaries.get(partition.name)?.get(type);
    return { to: partition.to, events: s?.events ?? 0, bytes: s?.bytes ?? 0 };
  }

  /** Events at `seqs` were removed row by row (their unit deleted their partitions' stored summaries): their partitions' summaries are read again. */
  removed(seqs: number[]): void {
    for (const seq of seqs) {
      const partition = this.partitionOf(seq);
      if (partition) this.summaries.delete(partition.name);
    }
  }
}
