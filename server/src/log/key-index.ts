import type { LogRemovalStatements } from "../store/log-removal.js";
import { eventKeyOf } from "./retention-rules.js";

/** Events one step of a key index's scan reads. */
const stepRows = 2_000;

/**
 * The latest seq of each key among the events of some types (the value at a path into the event, as JSON),
 * kept in memory and brought up to date by scanning only what was appended since
 * ({@link update}): what compaction (`keep: latest_per_key`) and the documents' hold read.
 * Removals do not make it wrong: it is only asked whether an event still in the log has a later
 * one of its key. Its memory grows with the number of distinct keys.
 */
export class KeyIndex {
  private readonly scanned = new Map<string, number>();
  readonly latest = new Map<string, number>();

  constructor(
    private readonly statements: LogRemovalStatements,
    private readonly types: string[],
    private readonly path: string[],
  ) {}

  /** Reads the events appended since the last update, a step at a time (other work runs between steps). */
  async update(): Promise<Map<string, number>> {
    for (const type of this.types) {
      for (;;) {
        const rows = await this.statements.scanType(type, this.scanned.get(type) ?? 0, stepRows);
        for (const row of rows) {
          const key = eventKeyOf(row, this.path);
          if (key !== undefined && (this.latest.get(key) ?? 0) < row.seq) this.latest.set(key, row.seq);
          this.scanned.set(type, row.seq);
        }
        await new Promise((resolve) => setImmediate(resolve));
        if (rows.length < stepRows) break;
      }
    }
    return this.latest;
  }
}
