import type { Database as Db } from "better-sqlite3";
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

/** The fewest ms between two background checkpoints. */
const cadenceMs = 1_000;
/** WAL frames (4 KiB pages) past which the writer itself finishes a checkpoint, so the WAL restarts (~64 MiB). */
const maxWalFrames = 16_384;

/** What `PRAGMA wal_checkpoint` reports: frames in the WAL and frames copied into the database. */
export interface CheckpointResult {
  busy: number;
  log: number;
  checkpointed: number;
}

/** The checkpoint worker: its own connection, one PASSIVE checkpoint per message (CommonJS, run with `eval`). */
const workerSource = `
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.driver);
const db = new Database(workerData.path);
db.pragma("busy_timeout = 5000");
db.pragma("synchronous = NORMAL");
parentPort.on("message", (message) => {
  if (message === "close") {
    db.close();
    parentPort.close();
    return;
  }
  try {
    parentPort.postMessage({ ok: true, result: db.pragma("wal_checkpoint(PASSIVE)")[0] });
  } catch (error) {
    parentPort.postMessage({ ok: false, error: String(error) });
  }
});
`;

/**
 * Checkpoints the WAL off the event loop (speed).
 *
 * SQLite's automatic checkpoint runs inside the COMMIT that crosses 1,000
 * WAL pages: it copies the WAL into the database and fsyncs both, on the
 * owner's only thread (a third of the firing path's CPU in bench/timers). Here
 * the writer's connection has `wal_autocheckpoint=0`, and a worker thread
 * with its own connection runs `wal_checkpoint(PASSIVE)` at most every
 * {@link cadenceMs} after commits: it copies committed frames into the
 * database while the owner goes on writing (WAL readers and writers do not
 * block each other).
 *
 * Under steady writes a passive checkpoint never catches up with the last
 * frame, and SQLite only restarts the WAL from its beginning once every frame
 * was copied. So when the WAL holds more than {@link maxWalFrames} frames the
 * writer finishes the job itself between two transactions (cheap: the worker
 * copied nearly everything), which bounds the WAL near 64 MiB (78 MB at most was
 * measured: what arrives between two checkpoints comes on top).
 *
 * Durability is unchanged: a checkpoint only copies frames already in the
 * WAL, and with synchronous=NORMAL SQLite syncs the WAL before and the
 * database after copying. A crash mid-checkpoint is recovered by SQLite.
 */
export class Checkpointer {
  private readonly worker: Worker;
  private inFlight = false;
  private dirty = false;
  private cooling: NodeJS.Timeout | null = null;
  private closed = false;
  private waiters: ((result: CheckpointResult) => void)[] = [];

  /**
   * `db`: the owner's (writer's) connection, whose automatic checkpoints are turned off;
   * `path`: its database file; `onError`: told when a checkpoint fails (it is tried again later).
   */
  constructor(
    private readonly db: Db,
    path: string,
    private readonly onError: (error: unknown) => void,
  ) {
    db.pragma("wal_autocheckpoint = 0");
    const driver = createRequire(import.meta.url).resolve("better-sqlite3");
    this.worker = new Worker(workerSource, { eval: true, workerData: { path, driver } });
    this.worker.unref();
    this.worker.on("message", (message: { ok: boolean; result?: CheckpointResult; error?: string }) => this.done(message));
    this.worker.on("error", (error) => this.onError(error));
  }

  /** A commit wrote to the WAL: a checkpoint follows within {@link cadenceMs}. */
  committed(): void {
    this.dirty = true;
    this.kick();
  }

  /** Runs a background checkpoint now (after the one in flight); resolves with its result (tests). */
  checkpoint(): Promise<CheckpointResult> {
    return new Promise((resolve) => {
      this.waiters.push(resolve);
      this.dirty = true;
      if (this.cooling) clearTimeout(this.cooling);
      this.cooling = null;
      this.kick();
    });
  }

  /** Stops the worker and closes its connection (before the owner's own connection closes). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.cooling) clearTimeout(this.cooling);
    const exited = new Promise((resolve) => this.worker.once("exit", resolve));
    this.worker.ref(); // unref'd while it serves; the process must not end before the worker closed its connection
    this.worker.postMessage("close");
    await exited;
  }

  private kick(): void {
    if (this.closed || this.inFlight || this.cooling || !this.dirty) return;
    this.dirty = false;
    this.inFlight = true;
    this.worker.postMessage("checkpoint");
  }

  private done(message: { ok: boolean; result?: CheckpointResult; error?: string }): void {
    this.inFlight = false;
    if (!message.ok) this.onError(new Error(`background WAL checkpoint failed: ${message.error}`));
    const result = message.result ?? { busy: 1, log: -1, checkpointed: -1 };
    if (result.log > maxWalFrames) this.finishOnWriter();
    for (const waiter of this.waiters.splice(0)) waiter(result);
    if (this.closed) return;
    this.cooling = setTimeout(() => {
      this.cooling = null;
      this.kick();
    }, cadenceMs);
    this.cooling.unref();
  }

  /** Copies the last frames on the writer's connection, between transactions, so the next write restarts the WAL. */
  private finishOnWriter(): void {
    try {
      if (!this.db.inTransaction) this.db.pragma("wal_checkpoint(PASSIVE)");
    } catch (error) {
      this.onError(error);
    }
  }
}
