import type { MergedWrite } from "../sql.js";
import type { Command } from "./pipeline.js";

/** The runs of one merged write held in a batch. */
interface Group {
  merged: MergedWrite;
  /** The merged statement's prepared name on the writer. */
  name: string;
  rows: Record<string, unknown>[];
  /** Where the running unit's own rows start in {@link rows}. */
  unitFrom: number;
}

/**
 * The deferred runs of merged writes (Db.prepareMerged) that a committer batch holds, by merged
 * statement, until they go out as one command each ({@link take}): before another write or a
 * read of the batch, before a second run of a key they hold, and at the end of the slice. A
 * statement per row costs the server a parse, a plan and an execution each; one per slice costs
 * it once (bench/timers on PostgreSQL: three per call of time, an insert and two updates by key).
 */
export class HeldWrites {
  private readonly groups = new Map<string, Group>();
  /** Keys held, by table. */
  private readonly keys = new Map<string, Set<unknown>>();

  /** Whether a run of `merged` with `key` may join what is held (no row of that key is held in its table). */
  accepts(merged: MergedWrite, key: unknown): boolean {
    return !this.keys.get(merged.table)?.has(key);
  }

  /** Holds a run of `merged` (prepared as `name`) with `params` (the single statement's, in order). */
  add(merged: MergedWrite, name: string, params: unknown[]): void {
    let group = this.groups.get(merged.sql);
    if (!group) this.groups.set(merged.sql, (group = { merged, name, rows: [], unitFrom: 0 }));
    const row: Record<string, unknown> = {};
    merged.names.forEach((field, i) => (row[field] = params[i] ?? null));
    group.rows.push(row);
    let keys = this.keys.get(merged.table);
    if (!keys) this.keys.set(merged.table, (keys = new Set()));
    keys.add(row[merged.key]);
  }

  /** A unit begins: the rows held so far are earlier units'. */
  unitStarted(): void {
    for (const group of this.groups.values()) group.unitFrom = group.rows.length;
  }

  /** The running unit threw: its rows are dropped. */
  dropUnit(): void {
    for (const group of this.groups.values()) {
      for (const row of group.rows.splice(group.unitFrom)) this.keys.get(group.merged.table)?.delete(row[group.merged.key]);
    }
  }

  /**
   * Everything held, as commands, and forgotten: `earlier`, the rows of units before the running
   * one (they may go before its own commands), and `own`, its rows.
   */
  take(): { earlier: Command[]; own: Command[] } {
    const earlier: Command[] = [];
    const own: Command[] = [];
    for (const group of this.groups.values()) {
      if (group.unitFrom > 0) earlier.push(commandOf(group, group.rows.slice(0, group.unitFrom)));
      if (group.rows.length > group.unitFrom) own.push(commandOf(group, group.rows.slice(group.unitFrom)));
    }
    this.clear();
    return { earlier, own };
  }

  clear(): void {
    this.groups.clear();
    this.keys.clear();
  }
}

function commandOf(group: Group, rows: Record<string, unknown>[]): Command {
  return { text: group.merged.sql, name: group.name, values: [JSON.stringify(rows)] };
}
