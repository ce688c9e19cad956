/** Rows per multi-row INSERT of a flush (the widest table, 19 columns: 19,000 parameters, below PostgreSQL's 65,535). */
const rowsPerInsert = 1_000;

/**
 * Inserts held back until the end of a committer slice and sent then as multi-row INSERTs: on
 * PostgreSQL every statement is a round trip the event loop waits for, and an emit's insert is
 * most of a unit's statements. Rows are kept by key (an event's id) until the batch's
 * transaction ends, so reads inside it find them ({@link get}) without a round trip, and a unit
 * that throws drops its own ({@link discardTo}). Rows of the table read for the batch ahead of
 * its units ({@link remember}) are kept the same way: one statement for a batch's lookups.
 */
export class DeferredInserts {
  /** Rows added since the last flush. */
  private rows: unknown[][] = [];
  /** Rows added in the batch's transaction, flushed or not. */
  private readonly byKey = new Map<string, unknown[]>();
  /** Rows read for the batch, by key; null: no row has the key (as of the batch's start). */
  private readonly read = new Map<string, unknown | null>();

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

  /** The row added in the batch's transaction with this key, if any. */
  get(key: string): unknown[] | undefined {
    return this.byKey.get(key);
  }

  /** Keeps, for the rest of the batch, the row read with `key` (null: none has it). */
  remember(key: string, row: unknown | null): void {
    this.read.set(key, row);
  }

  /** The row read for the batch with `key` (null: none had it), or undefined when it was not read. */
  recalled(key: string): unknown | null | undefined {
    return this.read.get(key);
  }

  /** Where the rows end now: {@link discardTo} it drops what was added since. */
  mark(): number {
    return this.rows.length;
  }

  discardTo(mark: number): void {
    for (const row of this.rows.splice(mark)) this.byKey.delete(row[this.keyColumn] as string);
  }

  /** The multi-row INSERTs of the rows added since the last take (to run inside the open transaction); {@link get} still finds them. */
  takeInserts(): { text: string; values: unknown[] }[] {
    const width = this.columns.length;
    const queries = [];
    for (let from = 0; from < this.rows.length; from += rowsPerInsert) {
      const chunk = this.rows.slice(from, from + rowsPerInsert);
      const marks = chunk.map((_, r) => `(${this.columns.map((_, c) => `$${r * width + c + 1}`).join(", ")})`).join(", ");
      queries.push({
        text: `INSERT INTO ${this.table} (${this.columns.join(", ")}) VALUES ${marks}`,
        values: chunk.flat().map((v) => (v === null || v === undefined ? null : String(v))),
      });
    }
    this.rows = [];
    return queries;
  }

  /** Forgets everything: the batch's transaction ended. */
  clear(): void {
    this.rows = [];
    this.byKey.clear();
    this.read.clear();
  }
}
