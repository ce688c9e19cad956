import { defer, type Db } from "./sql.js";

/** A stored processor cursor; `updatedAt` in ms since the epoch (UTC). */
export interface CursorRow {
  processor: string;
  ackFloor: number;
  paused: boolean;
}

/** A stored failed delivery. */
export interface FailedDeliveryRow {
  processor: string;
  seq: number;
  error: string;
  attempts: number;
  failedSeq: number;
}

/**
 * The statements on `cursors` (a processor's ack floor and pause) and `failed_deliveries`. Reads
 * may run anywhere; writes only inside a committer unit, in the commit of the work they follow.
 * {@link save}, {@link forgetFailure} and {@link recordFailure} are deferred on PostgreSQL
 * (SqlStatement.defer): a fault in them fails the batch there.
 */
export interface CursorStatements {
  /** The cursor of a processor, or undefined when it never started. */
  get(processor: string): CursorRow | undefined;
  /** Saves the ack floor, creating the cursor (not paused) if missing; its paused flag is kept. */
  save(processor: string, ackFloor: number, nowMs: number): void;
  /** Sets the paused flag, creating the cursor at `ackFloor` if missing; an existing cursor keeps its ack floor. */
  setPaused(processor: string, paused: boolean, ackFloor: number, nowMs: number): void;
  /** Failed deliveries of one processor by seq, or of all (`processor` undefined) by processor and seq. */
  failed(processor?: string): FailedDeliveryRow[];
  /** How many failed deliveries a processor has on record (0 for none, or an unknown processor). */
  failedCount(processor: string): number;
  /** Forgets a failed delivery (it was redelivered and finished); nothing when there is none. */
  forgetFailure(processor: string, seq: number): void;
  /** Records a failed delivery, or replaces the error, attempts and failed seq of the one of the same processor and seq. */
  recordFailure(row: FailedDeliveryRow): void;
}

/** The cursors and failed_deliveries tables' statements on `db`. */
export function cursorStatements(db: Db): CursorStatements {
  const get = db.prepare(`SELECT processor, ack_floor AS "ackFloor", paused FROM cursors WHERE processor = ?`);
  const save = db.prepare(
    `INSERT INTO cursors (processor, ack_floor, updated_at) VALUES (?, ?, ?)
     ON CONFLICT (processor) DO UPDATE SET ack_floor = excluded.ack_floor, updated_at = excluded.updated_at`,
  );
  const setPaused = db.prepare(
    `INSERT INTO cursors (processor, ack_floor, paused, updated_at) VALUES (?, ?, ?, ?)
     ON CONFLICT (processor) DO UPDATE SET paused = excluded.paused, updated_at = excluded.updated_at`,
  );
  const failedOf = db.prepare(failedOfSql);
  const failedAll = db.prepare(failedAllSql);
  const failedCount = db.prepare("SELECT COUNT(*) AS n FROM failed_deliveries WHERE processor = ?");
  const deleteFailed = db.prepare("DELETE FROM failed_deliveries WHERE processor = ? AND seq = ?");
  const insertFailed = db.prepare(
    `INSERT INTO failed_deliveries (processor, seq, error, attempts, failed_seq) VALUES (@processor, @seq, @error, @attempts, @failedSeq)
     ON CONFLICT (processor, seq) DO UPDATE SET error = excluded.error, attempts = excluded.attempts, failed_seq = excluded.failed_seq`,
  );
  return {
    get(processor: string): CursorRow | undefined {
      const row = get.get(processor) as { processor: string; ackFloor: number; paused: number } | undefined;
      return row && { processor: row.processor, ackFloor: row.ackFloor, paused: row.paused === 1 };
    },
    save(processor: string, ackFloor: number, nowMs: number): void {
      defer(save, processor, ackFloor, nowMs);
    },
    setPaused(processor: string, paused: boolean, ackFloor: number, nowMs: number): void {
      setPaused.run(processor, ackFloor, paused ? 1 : 0, nowMs);
    },
    failed(processor?: string): FailedDeliveryRow[] {
      return (processor === undefined ? failedAll.all() : failedOf.all(processor)) as FailedDeliveryRow[];
    },
    failedCount(processor: string): number {
      return (failedCount.get(processor) as { n: number }).n;
    },
    forgetFailure(processor: string, seq: number): void {
      defer(deleteFailed, processor, seq);
    },
    recordFailure(row: FailedDeliveryRow): void {
      defer(insertFailed, row);
    },
  };
}

const failedColumns = `processor, seq, error, attempts, failed_seq AS "failedSeq"`;
const failedOfSql = `SELECT ${failedColumns} FROM failed_deliveries WHERE processor = ? ORDER BY seq`;
const failedAllSql = `SELECT ${failedColumns} FROM failed_deliveries ORDER BY processor, seq`;

/**
 * Failed deliveries as CursorStatements.failed reads them, for RPCs: on PostgreSQL on the
 * connection of its own that does not block the event loop ({@link Db.readAsync}); on SQLite at once.
 */
export function failedDeliveryReads(db: Db, statements: CursorStatements): (processor?: string) => Promise<FailedDeliveryRow[]> {
  const readAsync = db.readAsync?.bind(db);
  if (!readAsync) return async (processor) => statements.failed(processor);
  return async (processor) => {
    const rows = (await (processor === undefined ? readAsync(failedAllSql, []) : readAsync(failedOfSql, [processor]))) as Record<string, unknown>[];
    return rows.map((r) => ({
      processor: r.processor as string,
      seq: Number(r.seq),
      error: r.error as string,
      attempts: Number(r.attempts),
      failedSeq: Number(r.failedSeq),
    }));
  };
}

/** Every stored cursor by processor, and how many failed deliveries each processor has on record. */
export interface StoredCursors {
  cursors: Map<string, CursorRow>;
  failures: Map<string, number>;
}

const cursorsAllSql = `SELECT processor, ack_floor AS "ackFloor", paused FROM cursors`;
const failureCountsSql = "SELECT processor, COUNT(*) AS n FROM failed_deliveries GROUP BY processor";

/**
 * How many failed deliveries each processor has on record (a processor with none is absent), for
 * RPCs: on PostgreSQL read on the connection that does not block the event loop ({@link Db.readAsync});
 * on SQLite at once.
 */
export function failureCountReads(db: Db): () => Promise<Map<string, number>> {
  const readAsync = db.readAsync?.bind(db);
  const failureCounts = readAsync ? undefined : db.prepare(failureCountsSql);
  return async () => {
    const rows = (readAsync ? await readAsync(failureCountsSql, []) : failureCounts!.all()) as Record<string, unknown>[];
    return new Map(rows.map((r) => [r.processor as string, Number(r.n)]));
  };
}

/**
 * Every stored cursor and failure count, for an owner that runs no processor (a standby): on
 * PostgreSQL read on the connection that does not block the event loop ({@link Db.readAsync});
 * on SQLite at once.
 */
export function storedCursorReads(db: Db): () => Promise<StoredCursors> {
  const readAsync = db.readAsync?.bind(db);
  const cursorsAll = readAsync ? undefined : db.prepare(cursorsAllSql);
  const failureCounts = readAsync ? undefined : db.prepare(failureCountsSql);
  return async () => {
    const [cursorRows, failureRows] = (
      readAsync ? await Promise.all([readAsync(cursorsAllSql, []), readAsync(failureCountsSql, [])]) : [cursorsAll!.all(), failureCounts!.all()]
    ) as Record<string, unknown>[][];
    const cursors = new Map<string, CursorRow>();
    for (const r of cursorRows)
      cursors.set(r.processor as string, { processor: r.processor as string, ackFloor: Number(r.ackFloor), paused: Number(r.paused) === 1 });
    return { cursors, failures: new Map(failureRows.map((r) => [r.processor as string, Number(r.n)])) };
  };
}
