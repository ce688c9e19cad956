/**
 * What the store's modules need of a database connection: the synchronous statement API of
 * better-sqlite3, which the SQLite store passes as it is (no wrapper on the embedded default's
 * hot path) and the PostgreSQL store implements over libpq's synchronous calls
 * ({@link import("./postgres/pg-db.js").PgDb}).
 */

/** What a write statement changed. */
export interface RunResult {
  changes: number;
}

/** A prepared statement: positional `?` parameters, or one object for `@name` ones. */
export interface SqlStatement {
  run(...params: unknown[]): RunResult;
  /**
   * A write whose outcome the caller does not need now. SQLite runs it at once; PostgreSQL, inside
   * the committer's units, sends it with the next statement that needs an answer or at the end of
   * the slice (one round trip for many), and a failure then fails the whole batch: only for writes
   * that cannot fail but for a fault (updates by key, inserts of new keys).
   */
  defer?(...params: unknown[]): void;
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  iterate(...params: unknown[]): IterableIterator<unknown>;
  /** Rows as their first column's value. */
  pluck(toggle?: boolean): this;
  /** Rows as arrays. */
  raw(toggle?: boolean): this;
}

/** A connection to the owner's database, SQLite's or PostgreSQL's. */
export interface Db {
  prepare(sql: string): SqlStatement;
  /** Runs SQL without parameters (one or more statements). */
  exec(sql: string): unknown;
  /** A write transaction is open on the connection. */
  readonly inTransaction: boolean;
  /**
   * PostgreSQL's only: inserts into `table` held until the committer's slice ends and sent then
   * in multi-row INSERTs (each statement is a round trip there), kept by the value of column
   * `keyColumn` so reads inside the transaction find them. The same holder for the same table.
   */
  deferInserts?(table: string, columns: string[], keyColumn: number): DeferredRows;
  /**
   * PostgreSQL's only: runs the read `sql` (`?` parameters) on the committer's connection before a
   * batch's units run, without blocking the event loop.
   */
  readAhead?(sql: string, params: unknown[]): Promise<unknown[]>;
  /** {@link readAhead} of several reads in one round trip: each one's rows, in order. */
  readAheadAll?(reads: [sql: string, params: unknown[]][]): Promise<unknown[][]>;
  /**
   * PostgreSQL's only: inside the committer's batch, before its units run: a check sent ahead of
   * everything the batch writes, failing the batch ({@link GuardFailedError}) when the read `sql`
   * (`?` parameters) finds a row. What the units assumed absent without reading it stays so.
   */
  guardAbsent?(sql: string, params: unknown[]): void;
  /**
   * PostgreSQL's only: the rows of the read `sql` (`?` parameters), read outside the committer on
   * a connection of its own without blocking the event loop (reads asked for together go in one
   * round trip). What RPCs read (pages of the log, an event) goes this way; SQLite's reads are
   * not round trips, and run at once.
   */
  readAsync?(sql: string, params: unknown[]): Promise<unknown[]>;
  /**
   * PostgreSQL's only: a keyed write (an insert of a new key, an update by key) whose deferred runs
   * ({@link SqlStatement.defer}) in a committer batch are sent together as one statement,
   * `merged.sql` ({@link MergedWrite}); elsewhere it runs as `sql`.
   */
  prepareMerged?(sql: string, merged: MergedWrite): SqlStatement;
  /**
   * PostgreSQL's only: where the rows of `table` read for the committer's running batch ahead of
   * its units are kept (the same holder for the same table); its transaction's end forgets them.
   */
  readForBatch?(table: string): BatchReads;
}

/**
 * How the deferred runs of a keyed write are sent as one statement ({@link Db.prepareMerged}): a
 * run writes only the row of its key, so runs of different keys may go in any order; a run of a
 * key already held, or any other write, sends what is held first (the order of each row's writes
 * is kept).
 */
export interface MergedWrite {
  /** The table the write changes. */
  table: string;
  /** The names of the single statement's parameters, in order: the fields of each row in `sql`. */
  names: string[];
  /** The parameter (by name) that is the row's key. */
  key: string;
  /**
   * The statement writing every run at once: its one parameter `?` is a JSON array of objects
   * (`names` → a run's parameters), e.g. through `jsonb_to_recordset(?::jsonb)`; it may name that
   * parameter again as `$1`.
   */
  sql: string;
}

/** `sql`, its deferred runs merged as `merged` says where the database does that ({@link Db.prepareMerged}). */
export function prepareMerged(db: Db, sql: string, merged: MergedWrite): SqlStatement {
  return db.prepareMerged ? db.prepareMerged(sql, merged) : db.prepare(sql);
}

/** Rows of a table read for the committer's running batch, by key ({@link Db.readForBatch}). */
export interface BatchReads {
  /** Keeps, for the rest of the batch, the row read with `key` (null: none has it). */
  remember(key: string, row: unknown | null): void;
  /** The row read for the batch with `key` (null: none had it), or undefined when it was not read (or was forgotten). */
  recalled(key: string): unknown | null | undefined;
  /** Forgets what was read with `key` (a unit changed that row: read it again). */
  forget(key: string): void;
  /** Forgets every row read (a unit changed rows it cannot name: read them again). */
  forgetAll(): void;
}

/** A batch's guard ({@link Db.guardAbsent}) found what its units assumed absent: nothing of it was committed; it runs again, reading first. */
export class GuardFailedError extends Error {
  constructor() {
    super("rows a batch assumed absent were found: it runs again, reading them first");
  }
}

/** Rows held by {@link Db.deferInserts}, and rows of the table read for the batch. */
export interface DeferredRows {
  add(row: unknown[]): void;
  /** The row added in the batch's transaction with this key, if any. */
  get(key: string): unknown[] | undefined;
  /** Keeps, for the rest of the batch, the row read with `key` (null: none has it). */
  remember(key: string, row: unknown | null): void;
  /** The row read for the batch with `key` (null: none had it), or undefined when it was not read. */
  recalled(key: string): unknown | null | undefined;
}

/** Runs the write `statement` with `params` as {@link SqlStatement.defer} says (SQLite's statements run it at once). */
export function defer(statement: SqlStatement, ...params: unknown[]): void {
  if (statement.defer) statement.defer(...params);
  else statement.run(...params);
}

/** The SQL dialects a store speaks. */
export type Dialect = "sqlite" | "postgres";

/** The dialect of `db`'s database: PostgreSQL's connections say so, SQLite's (better-sqlite3's own objects) do not. */
export function dialectOf(db: Db): Dialect {
  return (db as { dialect?: Dialect }).dialect ?? "sqlite";
}

/** The SQL of `sql` for `db`'s dialect, where the two differ (upserts that ignore, scalar max, rowid deletes). */
export function sqlFor(db: Db, sql: Record<Dialect, string>): string {
  return sql[dialectOf(db)];
}
