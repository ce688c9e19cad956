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

/** The statements on `cursors` and `failed_deliveries`, one function each. Writes run inside a committer unit. */
export function cursorStatements(db: Db) {
  const get = db.prepare(`SELECT processor, ack_floor AS "ackFloor", paused FROM cursors WHERE processor = ?`);
  const save = db.prepare(
    `INSERT INTO cursors (processor, ack_floor, updated_at) VALUES (?, ?, ?)
     ON CONFLICT (processor) DO UPDATE SET ack_floor = excluded.ack_floor, updated_at = excluded.updated_at`,
  );
  const setPaused = db.prepare(
    `INSERT INTO cursors (processor, ack_floor, paused, updated_at) VALUES (?, ?, ?, ?)
     ON CONFLICT (processor) DO UPDATE SET paused = excluded.paused, updated_at = excluded.updated_at`,
  );
  const failedOf = db.prepare(`SELECT processor, seq, error, attempts, failed_seq AS "failedSeq" FROM failed_deliveries WHERE processor = ? ORDER BY seq`);
  const failedAll = db.prepare(`SELECT processor, seq, error, attempts, failed_seq AS "failedSeq" FROM failed_deliveries ORDER BY processor, seq`);
  const failedCount = db.prepare("SELECT COUNT(*) AS n FROM failed_deliveries WHERE processor = ?");
  const deleteFailed = db.prepare("DELETE FROM failed_deliveries WHERE processor = ? AND seq = ?");
  const insertFailed = db.prepare(
    `INSERT INTO failed_deliveries (processor, seq, error, attempts, failed_seq) VALUES (@processor, @seq, @error, @attempts, @failedSeq)
     ON CONFLICT (processor, seq) DO UPDATE SET error = excluded.error, attempts = excluded.attempts, failed_seq = excluded.failed_seq`,
  );
  return {
    /** The cursor of a processor, or undefined when it never started. */
    get(processor: string): CursorRow | undefined {
      const row = get.get(processor) as { processor: string; ackFloor: number; paused: number } | undefined;
      return row && { processor: row.processor, ackFloor: row.ackFloor, paused: row.paused === 1 };
    },
    /** Saves the ack floor (inside the commit of the work it follows). */
    save(processor: string, ackFloor: number, nowMs: number): void {
      defer(save, processor, ackFloor, nowMs);
    },
    /** Sets the paused flag (creating the cursor at `ackFloor` if missing). */
    setPaused(processor: string, paused: boolean, ackFloor: number, nowMs: number): void {
      setPaused.run(processor, ackFloor, paused ? 1 : 0, nowMs);
    },
    /** Failed deliveries of one processor (or all when `processor` is undefined), by seq. */
    failed(processor?: string): FailedDeliveryRow[] {
      return (processor === undefined ? failedAll.all() : failedOf.all(processor)) as FailedDeliveryRow[];
    },
    /** How many failed deliveries a processor has on record. */
    failedCount(processor: string): number {
      return (failedCount.get(processor) as { n: number }).n;
    },
    /** Forgets a failed delivery (it was redelivered and finished). */
    forgetFailure(processor: string, seq: number): void {
      defer(deleteFailed, processor, seq);
    },
    /** Records (or updates) a failed delivery. */
    recordFailure(row: FailedDeliveryRow): void {
      defer(insertFailed, row);
    },
  };
}

/** The statements of {@link cursorStatements}. */
export type CursorStatements = ReturnType<typeof cursorStatements>;
