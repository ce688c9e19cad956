import type { Db } from "./database.js";

/** A stored processor cursor (P3); `updatedAt` in ms since the epoch (UTC). */
export interface CursorRow {
  processor: string;
  ackFloor: number;
  paused: boolean;
}

/** A stored failed delivery (P6). */
export interface FailedDeliveryRow {
  processor: string;
  seq: number;
  error: string;
  attempts: number;
  failedSeq: number;
}

/** The statements on `cursors` and `failed_deliveries`, one function each. Writes run inside a committer unit. */
export function cursorStatements(db: Db) {
  const get = db.prepare("SELECT processor, ack_floor AS ackFloor, paused FROM cursors WHERE processor = ?");
  const save = db.prepare(
    `INSERT INTO cursors (processor, ack_floor, updated_at) VALUES (?, ?, ?)
     ON CONFLICT (processor) DO UPDATE SET ack_floor = excluded.ack_floor, updated_at = excluded.updated_at`,
  );
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
      save.run(processor, ackFloor, nowMs);
    },
    /** Records (or updates) a failed delivery. */
    recordFailure(row: FailedDeliveryRow): void {
      insertFailed.run(row);
    },
  };
}

/** The statements of {@link cursorStatements}. */
export type CursorStatements = ReturnType<typeof cursorStatements>;
