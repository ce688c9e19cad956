import type { EventPartition, PartitionRemovalStatements, ScannedEvent } from "../store/log-removal.js";
import type { Hold } from "./retention-holds.js";

/** Events and stored bytes, by type. */
export type ByType = Map<string, { events: number; bytes: number }>;

/** A partition every event of which may go: it is dropped whole. */
export interface PartitionDrop {
  partition: EventPartition;
  events: number;
  bytes: number;
  byType: ByType;
}

/** What the survey found in one partition. */
interface Tally {
  events: number;
  bytes: number;
  byType: ByType;
  /** Events a holder keeps (but a cause whose kept effect is in the same partition). */
  held: number;
}

/**
 * One retention pass over the events table's partitions on PostgreSQL (docs/retention.md,
 * "Space on disk"). The pass's rules first run as a survey: what they would remove is tallied by
 * partition, nothing is removed. Then, of the full partitions (the head's is still being
 * written), each is:
 * - **dropped** whole when every event left in it may go (a cause whose kept effect is in the
 *   same partition goes with it);
 * - **waiting** when none of its events is held and each one that may not go yet is of a type
 *   whose rule lets it go in time (by age, count or size): the rules then remove nothing from it
 *   row by row, and it is dropped once its last event may go;
 * - **pinned** otherwise (a holder keeps one of its events, or one is kept by a rule with a key
 *   only, or by no rule): the rules remove its events row by row, as on SQLite, and it is dropped once
 *   empty.
 * The partition holding the head is removed from row by row.
 */
export class PartitionPlan {
  private readonly tallies = new Map<EventPartition, Tally>();
  private readonly waiting = new Set<EventPartition>();

  private constructor(
    private readonly statements: PartitionRemovalStatements,
    /** The full partitions, oldest first. */
    private readonly full: EventPartition[],
    /** Events by type of each full partition, by name, kept across passes (a full partition only loses events). */
    private readonly typeCounts: Map<string, Map<string, number>>,
  ) {}

  /** The plan of a pass: the partitions as they are, those below `head` full (the log's last event always stays). */
  static async start(statements: PartitionRemovalStatements, head: number, typeCounts: Map<string, Map<string, number>>): Promise<PartitionPlan> {
    const partitions = await statements.list();
    const names = new Set(partitions.map((p) => p.name));
    for (const name of typeCounts.keys()) if (!names.has(name)) typeCounts.delete(name);
    return new PartitionPlan(
      statements,
      partitions.filter((p) => p.to <= head),
      typeCounts,
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

  /** Survey: a batch of candidates weighed, with the holds on those that must stay. */
  tally(candidates: ScannedEvent[], holds: Map<number, Hold>): void {
    for (const e of candidates) {
      const partition = this.partitionOf(e.seq);
      if (!partition) continue;
      let tally = this.tallies.get(partition);
      if (!tally) this.tallies.set(partition, (tally = { events: 0, bytes: 0, byType: new Map(), held: 0 }));
      const hold = holds.get(e.seq);
      const goesWithPartition = hold?.effect !== undefined && this.partitionOf(hold.effect) === partition;
      if (hold && !goesWithPartition) {
        tally.held++;
        continue;
      }
      tally.events++;
      tally.bytes += e.bytes;
      const byType = tally.byType.get(e.type) ?? { events: 0, bytes: 0 };
      byType.events++;
      byType.bytes += e.bytes;
      tally.byType.set(e.type, byType);
    }
  }

  /**
   * After the survey: the partitions to drop, oldest first; the others waiting or pinned.
   * `ripens(type)`: an event of `type` that may not go yet will in time (its rule has an age,
   * count or size limit).
   */
  async decide(ripens: (type: string) => boolean): Promise<PartitionDrop[]> {
    const drops: PartitionDrop[] = [];
    for (const partition of this.full) {
      let counts = this.typeCounts.get(partition.name);
      if (!counts) this.typeCounts.set(partition.name, (counts = await this.statements.typeCounts(partition)));
      const tally = this.tallies.get(partition) ?? { events: 0, bytes: 0, byType: new Map(), held: 0 };
      const left = [...counts.values()].reduce((sum, n) => sum + n, 0);
      if (tally.events === left) drops.push({ partition, events: tally.events, bytes: tally.bytes, byType: tally.byType });
      else if (tally.held === 0 && [...counts].every(([type, n]) => (tally.byType.get(type)?.events ?? 0) === n || ripens(type))) this.waiting.add(partition);
    }
    return drops;
  }

  /** Whether the rules leave the event at `seq` for its partition's drop (a waiting partition's). */
  waits(seq: number): boolean {
    const partition = this.partitionOf(seq);
    return partition !== undefined && this.waiting.has(partition);
  }

  /** Events at `seqs` were removed row by row: their partitions' counts are read again. */
  removed(seqs: number[]): void {
    for (const seq of seqs) {
      const partition = this.partitionOf(seq);
      if (partition) this.typeCounts.delete(partition.name);
    }
  }
}
