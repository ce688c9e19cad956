import type { BatchReads } from "../sql.js";

/**
 * Rows of one table read for the committer's running batch ahead of its units (Db.readForBatch),
 * by key; the batch's end forgets them ({@link clear}, from BatchWriter.reset). What a unit
 * remembers (a row it wrote) is undone with the unit ({@link unitStarted}, {@link unitFailed}).
 */
export class BatchReadCache implements BatchReads {
  /** Rows read for the batch, by key; null: no row had the key when it was read. */
  private readonly rows = new Map<string, unknown | null>();
  /** What the running unit changed: each key with what it held before (undefined: nothing). */
  private unit: [key: string, before: unknown | null | undefined][] = [];

  remember(key: string, row: unknown | null): void {
    this.unit.push([key, this.rows.get(key)]);
    this.rows.set(key, row);
  }

  recalled(key: string): unknown | null | undefined {
    return this.rows.get(key);
  }

  forget(key: string): void {
    this.rows.delete(key);
  }

  forgetAll(): void {
    this.rows.clear();
  }

  /** A unit begins: what it remembers from now on is undone if it fails. */
  unitStarted(): void {
    this.unit = [];
  }

  /** The running unit threw: what it remembered is as before it (what it forgot stays forgotten: read again). */
  unitFailed(): void {
    for (let i = this.unit.length - 1; i >= 0; i--) {
      const [key, before] = this.unit[i];
      if (before === undefined) this.rows.delete(key);
      else this.rows.set(key, before);
    }
    this.unit = [];
  }

  clear(): void {
    this.rows.clear();
    this.unit = [];
  }
}
