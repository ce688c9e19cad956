import type { BatchReads } from "../sql.js";

/**
 * Rows of one table read for the committer's running batch ahead of its units (Db.readForBatch),
 * by key; the batch's end forgets them ({@link clear}, from BatchWriter.reset).
 */
export class BatchReadCache implements BatchReads {
  /** Rows read for the batch, by key; null: no row had the key when it was read. */
  private readonly rows = new Map<string, unknown | null>();

  remember(key: string, row: unknown | null): void {
    this.rows.set(key, row);
  }

  recalled(key: string): unknown | null | undefined {
    return this.rows.get(key);
  }

  forget(key: string): void {
    this.rows.delete(key);
  }

  clear(): void {
    this.rows.clear();
  }
}
