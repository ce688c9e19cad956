import { createRequire } from "node:module";
import { isConnectionLost } from "../../errors.js";
import { GuardFailedError, type BatchReads, type Db, type MergedWrite, type RunResult, type SqlStatement } from "../sql.js";
import type { AsyncReader } from "./async-reader.js";
import { BatchReadCache } from "./batch-reads.js";
import { BatchWriter, guardText } from "./batch-writer.js";
import type { NativeClient, Waits } from "./native-client.js";
import { pipelineAsync, type Command } from "./pipeline.js";
import { PreparedStatements } from "./prepared.js";
import { DeferredInserts } from "./deferred-inserts.js";

const require = createRequire(import.meta.url);

type NativeClientClass = new (config: { types: TypeParsers; arrayMode?: boolean }) => NativeClient;
interface TypeParsers {
  getTypeParser(oid: number, format?: string): (text: string) => unknown;
}

/** libpq's bindings, loaded on the first connection (an owner on SQLite never loads them). */
let native: { pgTypes: TypeParsers; Client: NativeClientClass } | undefined;
function loadNative(): { pgTypes: TypeParsers; Client: NativeClientClass } {
  if (native) return native;
  let Client: NativeClientClass;
  try {
    Client = require("pg-native") as NativeClientClass;
  } catch (e) {
    // An optional dependency: its libpq addon is built at `npm ci` when libpq's headers and a compiler are there.
    throw new Error(
      `the PostgreSQL driver is not installed (${(e as Error).message.split("\n")[0]}): install libpq's headers and a compiler (Debian: apt install libpq-dev g++ make), then run npm ci again`,
    );
  }
  return (native = { pgTypes: require("pg-types") as TypeParsers, Client });
}

/**
 * Values as the SQLite store returns them, so the store's modules read both alike: 64-bit
 * integers and numerics as numbers (every stored integer is a ms time, a seq or a count, below
 * 2^53), booleans as 1 and 0.
 */
const types: TypeParsers = {
  getTypeParser(oid, format) {
    if (oid === 20 || oid === 1700) return Number; // int8, numeric (sum)
    if (oid === 16) return (text) => (text === "t" ? 1 : 0);
    return loadNative().pgTypes.getTypeParser(oid, format);
  },
};

/**
 * A new libpq client connected to `url`, named `applicationName` in pg_stat_activity (what a
 * standby's takeover ends). A broken connection is reported as an error of its next call, never
 * as an unhandled 'error' event.
 */
export function connectNative(url: string, applicationName: string, options: { arrayMode?: boolean } = {}): NativeClient {
  const client = new (loadNative().Client)({ types, arrayMode: options.arrayMode });
  client.on("error", () => undefined); // its async query's callback gets the error too
  client.connectSync(withApplicationName(url, applicationName));
  return client;
}

/** Clients ended lately, held until their socket watcher closed ({@link endNative}). */
const ending = new Set<NativeClient>();

/**
 * Ends `client`'s connection. libpq's addon closes the connection's socket watcher through
 * libuv, which finishes the close in its loop's next close phase, yet lets the client be
 * garbage-collected at once: collected before that phase, libuv reads freed memory and aborts
 * the process. So the client stays referenced for two turns of the loop (a close phase between).
 */
export function endNative(client: NativeClient): void {
  client.end();
  ending.add(client);
  setImmediate(() => setImmediate(() => ending.delete(client)));
}

/**
 * `url` with `application_name` (and `options`, unless given) in its query. The query is written
 * with percent-encoding: URLSearchParams writes a space as `+`, which libpq keeps as a `+`.
 */
function withApplicationName(url: string, name: string): string {
  const parsed = new URL(url);
  const params = new Map(parsed.searchParams);
  params.set("application_name", name);
  if (!params.has("options")) params.set("options", "-c client_min_messages=warning"); // no NOTICEs on stderr
  parsed.search = [...params].map(([key, value]) => `${encodeURIComponent(key)}=${encodeURIComponent(value)}`).join("&");
  return parsed.toString();
}

/** A PostgreSQL error's SQLSTATE (e.g. 23505 for a unique violation), if the error came from the server. */
export function sqlState(error: unknown): string | undefined {
  return (error as { sqlState?: string }).sqlState;
}

/**
 * Runs `fn` on `client` and gives a thrown error the SQLSTATE of the last result (pg-native
 * throws bare Errors); `onLost` hears of an error that means the connection is gone.
 */
function withState<T>(client: NativeClient, fn: () => T, onLost?: (error: Error) => void): T {
  try {
    return fn();
  } catch (error) {
    const state = client.pq.resultErrorFields()?.sqlState;
    if (error instanceof Error && state) (error as Error & { sqlState?: string }).sqlState = state;
    if (onLost && isConnectionLost(error)) onLost(error as Error);
    throw error;
  }
}

/** SQL with `?` and `@name` parameters turned into PostgreSQL's `$n`, and the name of each `$n` (for `@name` parameters). */
export function numberParameters(sql: string): { text: string; names: string[] | undefined; count: number } {
  let text = "";
  let count = 0;
  const named = new Map<string, number>();
  for (let i = 0; i < sql.length; i++) {
    const c = sql[i];
    if (c === "'" || c === '"') {
      const end = sql.indexOf(c, i + 1);
      const stop = end < 0 ? sql.length : end;
      text += sql.slice(i, stop + 1);
      i = stop;
    } else if (c === "-" && sql[i + 1] === "-") {
      const end = sql.indexOf("\n", i);
      i = end < 0 ? sql.length : end - 1;
    } else if (c === "?") {
      text += `$${++count}`;
    } else if (c === "@" && /[A-Za-z_]/.test(sql[i + 1] ?? "")) {
      const name = /^[A-Za-z_][A-Za-z0-9_]*/.exec(sql.slice(i + 1))![0];
      let n = named.get(name);
      if (n === undefined) named.set(name, (n = named.size + 1));
      text += `$${n}`;
      i += name.length;
    } else text += c;
  }
  if (count > 0 && named.size > 0) throw new Error(`SQL mixes ? and @name parameters: ${sql}`);
  return { text, names: named.size > 0 ? [...named.keys()] : undefined, count: count + named.size };
}

/** A parameter as libpq's text format takes it. */
function toParameter(value: unknown): unknown {
  if (value === undefined || value === null) return null;
  if (typeof value === "bigint" || typeof value === "number") return String(value);
  if (Buffer.isBuffer(value)) return `\\x${value.toString("hex")}`;
  return value;
}

/**
 * A statement of {@link PgDb}: prepared on a connection the first time its SQL runs there
 * ({@link PgDb.preparedName}).
 */
class PgStatement implements SqlStatement {
  private readonly text: string;
  private readonly names: string[] | undefined;
  private readonly count: number;
  private mode: "rows" | "pluck" | "raw" = "rows";
  /** Its deferred runs in a batch go out as one statement (Db.prepareMerged); `sql` numbered. */
  private readonly merged: MergedWrite | undefined;
  /** Only reads: needs no savepoint of its unit. */
  private readonly reads: boolean;

  constructor(
    private readonly db: PgDb,
    sql: string,
    merged?: MergedWrite,
  ) {
    ({ text: this.text, names: this.names, count: this.count } = numberParameters(sql));
    if (merged) this.merged = { ...merged, sql: numberParameters(merged.sql).text };
    this.reads = /^\s*SELECT\b/i.test(sql);
  }

  pluck(toggle = true): this {
    this.mode = toggle ? "pluck" : "rows";
    return this;
  }

  raw(toggle = true): this {
    this.mode = toggle ? "raw" : "rows";
    return this;
  }

  run(...params: unknown[]): RunResult {
    return { changes: this.execute(params).rowCount };
  }

  /**
   * Inside the committer's units: queues the write, sent with the next statement that needs an
   * answer or at the end of the slice (BatchWriter); elsewhere it runs at once.
   */
  defer(...params: unknown[]): void {
    const batch = this.db.batch;
    if (!batch.writing) return void this.execute(params);
    if (this.merged) return batch.deferMerged(this.merged, this.db.statementName(this.merged.sql, 1), params);
    batch.defer({ text: this.text, name: this.db.statementName(this.text, this.count), values: this.values(params) });
  }

  get(...params: unknown[]): unknown {
    return this.shape(this.execute(params).rows)[0];
  }

  all(...params: unknown[]): unknown[] {
    return this.shape(this.execute(params).rows);
  }

  iterate(...params: unknown[]): IterableIterator<unknown> {
    return this.all(...params)[Symbol.iterator]();
  }

  private execute(params: unknown[]): { rows: Record<string, unknown>[]; rowCount: number } {
    const values = this.values(params);
    const batch = this.db.batch;
    if (batch.writing) {
      if (!this.reads) batch.beforeWrite();
      return batch.answer({ text: this.text, name: this.db.statementName(this.text, this.count), values });
    }
    const client = this.db.reader;
    const rows = withState(
      client,
      () => client.executeSync(this.db.preparedName(client, this.text, this.count), values) as Record<string, unknown>[],
      this.db.onLost,
    );
    return { rows, rowCount: Number(client.pq.cmdTuples()) || 0 };
  }

  private values(params: unknown[]): unknown[] {
    if (this.names) {
      const object = (params[0] ?? {}) as Record<string, unknown>;
      return this.names.map((name) => toParameter(object[name]));
    }
    if (params.length !== this.count) throw new RangeError(`the statement takes ${this.count} parameters, got ${params.length}: ${this.text}`);
    return params.map(toParameter);
  }

  private shape(rows: Record<string, unknown>[]): unknown[] {
    if (this.mode === "rows") return rows;
    return rows.map((row) => {
      const values = Object.values(row);
      return this.mode === "pluck" ? values[0] : values;
    });
  }
}

/** Counts `client`'s synchronous calls (each a round trip the caller's thread waits for) in `tally`. */
function countWaits(client: NativeClient, tally: Waits): void {
  for (const name of ["querySync", "executeSync", "prepareSync"] as const) {
    const call = client[name].bind(client) as (...args: unknown[]) => never;
    client[name] = (...args: unknown[]) => {
      const started = performance.now();
      try {
        return call(...args);
      } finally {
        tally.count++;
        tally.ms += performance.now() - started;
      }
    };
  }
}

/**
 * The owner's PostgreSQL database behind the store's synchronous {@link Db} API, on two libpq
 * connections: the writer, on which the committer's transaction runs (statements go there
 * while its units run, {@link writing}), and the reader, on which everything else reads what is
 * committed. The writer's transaction stays open across a batch's slices and commits without
 * blocking the event loop ({@link import("./transactions.js").PgTransactions}).
 */
export class PgDb implements Db {
  readonly dialect = "postgres" as const;
  /** Inserts held until the slice ends (events.ts): the events appended. */
  deferredEvents: DeferredInserts | undefined;
  /** Told when a statement finds its connection gone (the owner steps down: it cannot know what committed). */
  onLost: ((error: Error) => void) | undefined;
  /** The statements prepared on each connection. */
  private readonly prepared = new Map<NativeClient, PreparedStatements>();
  /** The round trips the owner's thread waited for, by connection (`chronolog_store_waits_total`). */
  readonly waits: { writer: Waits; reader: Waits } = { writer: { count: 0, ms: 0 }, reader: { count: 0, ms: 0 } };
  /** The committer's batch on the writer: its transaction, the units' savepoints, the writes not sent yet. */
  readonly batch: BatchWriter;
  /** Rows read for the running batch ahead of its units, by table ({@link readForBatch}). */
  private readonly batchReads = new Map<string, BatchReadCache>();

  constructor(
    readonly writer: NativeClient,
    readonly reader: NativeClient,
    /** Reads outside the committer that never block the event loop ({@link readAsync}), on a connection of their own. */
    private readonly asyncReader?: AsyncReader,
  ) {
    countWaits(writer, this.waits.writer);
    if (reader !== writer) countWaits(reader, this.waits.reader);
    const writerStatements = this.statementsOf(writer);
    this.batch = new BatchWriter(
      writer,
      this.waits.writer,
      () => this.onLost,
      () => this.deferredEvents,
      {
        unitStarted: () => {
          for (const reads of this.batchReads.values()) reads.unitStarted();
        },
        unitFailed: () => {
          for (const reads of this.batchReads.values()) reads.unitFailed();
        },
        clear: () => {
          for (const reads of this.batchReads.values()) reads.clear();
        },
      },
      writerStatements,
    );
  }

  get inTransaction(): boolean {
    return this.writer.getTransactionStatus() !== "I";
  }

  prepare(sql: string): SqlStatement {
    return new PgStatement(this, sql);
  }

  prepareMerged(sql: string, merged: MergedWrite): SqlStatement {
    if (numberParameters(sql).count !== merged.names.length) throw new Error(`merged write: ${merged.names.length} names for the parameters of ${sql}`);
    return new PgStatement(this, sql, merged);
  }

  deferInserts(table: string, columns: string[], keyColumn: number): DeferredInserts {
    if (table !== "events") throw new Error(`inserts into ${table} are not deferred`);
    return (this.deferredEvents ??= new DeferredInserts(table, columns, keyColumn));
  }

  guardAbsent(sql: string, params: unknown[]): void {
    const { text, count } = numberParameters(sql);
    const guard = guardText(text);
    this.batch.guard({ text: guard, name: this.statementName(guard, count), values: params.map(toParameter) });
  }

  readAsync(sql: string, params: unknown[]): Promise<unknown[]> {
    if (!this.asyncReader) return Promise.resolve(this.prepare(sql).all(...params));
    return this.asyncReader.read(numberParameters(sql).text, params.map(toParameter));
  }

  readForBatch(table: string): BatchReads {
    let reads = this.batchReads.get(table);
    if (!reads) this.batchReads.set(table, (reads = new BatchReadCache()));
    return reads;
  }

  readAhead(sql: string, params: unknown[]): Promise<unknown[]> {
    return this.readAheadAll([[sql, params]]).then((results) => results[0]);
  }

  readAheadAll(reads: [sql: string, params: unknown[]][]): Promise<unknown[][]> {
    return this.pipeline(reads.map(([sql, params]) => ({ text: numberParameters(sql).text, values: params.map(toParameter) })));
  }

  /**
   * Sends `queries` on the writer at once (pipeline mode: one round trip for all) without
   * blocking the event loop; resolves with each one's rows, or rejects with the first error (a
   * broken connection is told to {@link onLost}).
   */
  pipeline(queries: Command[]): Promise<Record<string, unknown>[][]> {
    const statements = this.statementsOf(this.writer);
    const sent = statements.withPrepares(queries);
    return pipelineAsync(this.writer, sent).then(
      (answered) => {
        const outcomes = statements.settle(sent, answered);
        const failed = outcomes.findIndex((o) => o.error);
        if (failed >= 0) throw queries[failed].guard ? new GuardFailedError() : outcomes[failed].error;
        return outcomes.map((o) => o.rows);
      },
      (error: Error) => {
        if (isConnectionLost(error) || this.writer.pq.socket() < 0) this.onLost?.(error);
        throw error;
      },
    );
  }

  /** The name `text` is prepared under on `client`, preparing it there now (a round trip) the first time ({@link PreparedStatements}). */
  preparedName(client: NativeClient, text: string, count: number): string {
    return this.statementsOf(client).ready(text, count);
  }

  /** The name `text` is prepared under on the writer, for a pipeline there: prepared in the first pipeline that sends it. */
  statementName(text: string, count: number): string {
    return this.statementsOf(this.writer).nameOf(text, count);
  }

  private statementsOf(client: NativeClient): PreparedStatements {
    let statements = this.prepared.get(client);
    if (!statements) this.prepared.set(client, (statements = new PreparedStatements(client)));
    return statements;
  }

  /** Runs `sql`: one statement inside the committer's units (with what is queued before it), any outside. */
  exec(sql: string): void {
    if (!this.batch.writing) return void withState(this.reader, () => this.reader.querySync(sql), this.onLost);
    this.batch.beforeWrite();
    this.batch.answer({ text: sql });
  }

  /**
   * Checks that the database answers with a round trip ({@link onLost} hears of a broken
   * connection): on the `async` connection where there is one, so the check never blocks the event
   * loop (a PostgreSQL restart breaks every connection of the owner, that one too).
   */
  probe(): void {
    if (this.asyncReader)
      void this.asyncReader.read("SELECT 1", []).catch(() => undefined); // a loss is told to onLost by the reader
    else withState(this.reader, () => this.reader.querySync("SELECT 1"), this.onLost);
  }

  close(): void {
    endNative(this.writer);
    if (this.reader !== this.writer) endNative(this.reader);
    if (this.asyncReader) endNative(this.asyncReader.client);
  }
}
