import type { NativeClient } from "./pg-db.js";

/** Rows per multi-row INSERT of a flush (the widest table, 19 columns: 19,000 parameters, below PostgreSQL's 65,535). */
const rowsPerInsert = 1_000;

/**
 * Inserts held back until the end of a committer slice and sent then as multi-row INSERTs: on
 * PostgreSQL every statement is a round trip the event loop waits for, and an emit's insert is
 * most of a unit's statements. Rows are kept by key (an event's id) so reads inside the
 * transaction find them ({@link get}), and a unit that throws drops its own ({@link discardTo}).
 */
export class DeferredInserts {
  private rows: unknown[][] = [];
  private readonly byKey = new Map<string, unknown[]>();

  constructor(
    private readonly table: string,
    private readonly columns: string[],
    /** The column holding a row's key. */
    private readonly keyColumn: number,
  ) {}

  add(row: unknown[]): void {
    this.rows.push(row);
    this.byKey.set(row[this.keyColumn] as string, row);
  }

  /** The held row with this key, if any. */
  get(key: string): unknown[] | undefined {
    return this.byKey.get(key);
  }

  /** Where the rows end now: {@link discardTo} it drops what was added since. */
  mark(): number {
    return this.rows.length;
  }

  discardTo(mark: number): void {
    for (const row of this.rows.splice(mark)) this.byKey.delete(row[this.keyColumn] as string);
  }

  /** Inserts the held rows on `client` (inside the open transaction) and forgets them. */
  flush(client: NativeClient): void {
    const width = this.columns.length;
    for (let from = 0; from < this.rows.length; from += rowsPerInsert) {
      const chunk = this.rows.slice(from, from + rowsPerInsert);
      const marks = chunk.map((_, r) => `(${this.columns.map((_, c) => `$${r * width + c + 1}`).join(", ")})`).join(", ");
      client.querySync(`INSERT INTO ${this.table} (${this.columns.join(", ")}) VALUES ${marks}`, chunk.flat().map((v) => (v === null || v === undefined ? null : String(v))));
    }
    this.clear();
  }

  clear(): void {
    this.rows = [];
    this.byKey.clear();
  }
}
