import type { Database as Db } from "better-sqlite3";
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

/** The fewest ms between two background checkpoints. */
const cadenceMs = 1_000;
/** The same while the WAL holds more than a quarter of its bound: it fills fast, and each checkpoint then copies less. */
const busyCadenceMs = 100;
/** WAL frames (4 KiB pages) past which the writer itself finishes a checkpoint, so the WAL restarts (~64 MiB). */
const maxWalFrames = 16_384;
/** Past the bound, catch-up checkpoints run back to back until one copied at most this share of it (1 MiB): the writer's finish copies about as many. */
const finishShare = 1 / 64;
/** Catch-ups at most before the writer finishes whatever is left (the worker cannot keep up with the writes). */
const maxCatchUps = 4;

/** What `PRAGMA wal_checkpoint` reports: frames in the WAL and frames copied into the database. */
export interface CheckpointResult {
  busy: number;
  log: number;
  checkpointed: number;
}

/** The WAL as the checkpoints saw it, and what they cost (the `chronolog_wal_*` metrics; retention paces by it). */
export interface WalState {
  /** Frames in the WAL at the last checkpoint. */
  frames: number;
  /** The WAL went past its bound and its checkpoint is catching up, until the writer finished it. */
  pastBound: boolean;
  /** Of those, frames not yet copied into the database. */
  backlog: number;
  /** Frames written to the WAL since the store opened, as the checkpoints counted them (the WAL restarts in between). */
  framesWritten: number;
  /** Checkpoints run by the worker, and by the writer on the owner's thread, since the store opened. */
  workerCheckpoints: number;
  writerCheckpoints: number;
  /** Time the owner's thread spent in its checkpoints, ms. */
  writerMs: number;
  /** Free pages returned to the disk by the worker ({@link Checkpointer.returnPages}), its steps, and their time, ms. */
  pagesReturned: number;
  returnSteps: number;
  returnMs: number;
}

/** What one step returning free pages did: the pages it returned, those still free, and its time on the worker, ms. */
export interface PagesReturned {
  pages: number;
  free: number;
  ms: number;
}

/** Runs `write` while the owner's connection does not write (Committer.outside): the worker's writes never make it wait on the lock. */
export type WriteTurn = <T>(write: () => Promise<T>) => Promise<T>;

/** The checkpoint worker: its own connection, one PASSIVE checkpoint per message (CommonJS, run with `eval`). */
const workerSource = `
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.driver);
const db = new Database(workerData.path);
db.pragma("busy_timeout = 5000");
db.pragma("synchronous = NORMAL");
db.pragma("wal_autocheckpoint = 0");
const freelist = db.prepare("PRAGMA freelist_count").pluck();
parentPort.on("message", (message) => {
  if (message === "close") {
    db.close();
    parentPort.close();
    return;
  }
  if (typeof message === "object" && message.returnPages) {
    try {
      const started = performance.now();
      const before = freelist.get();
      db.pragma("incremental_vacuum(" + message.returnPages + ")");
      const free = freelist.get();
      parentPort.postMessage({ returned: { ok: true, pages: before - free, free, ms: performance.now() - started } });
    } catch (error) {
      parentPort.postMessage({ returned: { ok: false, error: String(error) } });
    }
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
 * {@link cadenceMs} after commits ({@link busyCadenceMs} while the WAL holds
 * more than a quarter of its bound): it copies committed frames into the
 * database while the owner goes on writing (WAL readers and writers do not
 * block each other).
 *
 * Under steady writes a passive checkpoint never catches up with the last
 * frame, and SQLite only restarts the WAL from its beginning once every frame
 * was copied. So when the WAL holds more than {@link maxWalFrames} frames the
 * worker first runs checkpoints back to back (catch-ups, each copying what was
 * written while the last one ran) until one had at most a sixty-fourth of the
 * bound to copy (or after {@link maxCatchUps}), then the writer finishes the job
 * itself between two transactions: it copies only what was written during the
 * last catch-up, and syncs. That bounds the WAL near 64 MiB (78 MB at most was
 * measured: what arrives between two checkpoints comes on top). Before the
 * catch-ups the writer copied up to a second of writes and synced them on the
 * owner's thread: during a retention removal on random ids (40 MB of WAL a
 * second) that was a finish every 2 s holding the thread 79 ms on average, up
 * to 265 ms, and the emits' p99 with it; 6 ms on average with the catch-ups
 * (bench/records/2026-12-06-retention-hot-path.md).
 *
 * Durability is unchanged: a checkpoint only copies frames already in the
 * WAL, and with synchronous=NORMAL SQLite syncs the WAL before and the
 * database after copying. A crash mid-checkpoint is recovered by SQLite.
 *
 * The worker's connection also returns the data file's free pages to the disk
 * for retention ({@link returnPages}: PRAGMA incremental_vacuum, which moves
 * the file's last pages into free ones and writes them to the WAL): off the
 * owner's thread, in a turn between two of the committer's batches, so the
 * owner's connection never waits on the write lock it takes. A step is one
 * transaction: a crash mid-step leaves the file as before it.
 */
export class Checkpointer {
  private readonly worker: Worker;
  private inFlight = false;
  private dirty = false;
  private cooling: NodeJS.Timeout | null = null;
  /** Catch-up checkpoints run since the WAL went past its bound. */
  private catchUps = 0;
  /** Frames of the WAL copied into the database at the last checkpoint. */
  private checkpointed = 0;
  private closed = false;
  private waiters: ((result: CheckpointResult) => void)[] = [];
  /** A step returning free pages waits for the worker or runs there: no checkpoint is sent meanwhile. */
  private returning = false;
  /** Told when the checkpoint in flight ends (a step returning pages waits for it). */
  private idleWaiters: (() => void)[] = [];
  /** The step's answer, awaited. */
  private returned: ((message: { ok: boolean; error?: string } & Partial<PagesReturned>) => void) | undefined;
  private readonly wal: WalState = {
    ...{ frames: 0, pastBound: false, backlog: 0, framesWritten: 0, workerCheckpoints: 0, writerCheckpoints: 0, writerMs: 0 },
    ...{ pagesReturned: 0, returnSteps: 0, returnMs: 0 },
  };

  /**
   * `db`: the owner's (writer's) connection, whose automatic checkpoints are turned off;
   * `path`: its database file; `onError`: told when a checkpoint fails (it is tried again later);
   * `bound`: WAL frames past which the writer finishes a checkpoint (default {@link maxWalFrames}).
   */
  constructor(
    private readonly db: Db,
    path: string,
    private readonly onError: (error: unknown) => void,
    private readonly bound = maxWalFrames,
  ) {
    db.pragma("wal_autocheckpoint = 0");
    const driver = createRequire(import.meta.url).resolve("better-sqlite3");
    this.worker = new Worker(workerSource, { eval: true, workerData: { path, driver } });
    this.worker.unref();
    this.worker.on(
      "message",
      (message: { ok: boolean; result?: CheckpointResult; error?: string; returned?: PagesReturned & { ok: boolean; error?: string } }) =>
        message.returned ? this.returned?.(message.returned) : this.done(message),
    );
    this.worker.on("exit", () => this.returned?.({ ok: false, error: "the checkpoint worker exited" }));
    this.worker.on("error", (error) => {
      this.returned?.({ ok: false, error: String(error) });
      this.onError(error);
    });
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

  /** The WAL at the last checkpoint, and the checkpoints' counts. */
  state(): WalState {
    return { ...this.wal };
  }

  /**
   * Returns up to `pages` of the data file's free pages to the disk on the worker's connection, in
   * one transaction: once the checkpoint in flight there has ended (none starts meanwhile), inside
   * `turn`, which keeps the owner's writes out while it runs. Rejects when SQLite fails it.
   */
  async returnPages(pages: number, turn: WriteTurn): Promise<PagesReturned> {
    if (this.closed || this.returning) throw new Error(this.closed ? "the store is closing" : "a step returning free pages runs already");
    this.returning = true;
    try {
      while (this.inFlight) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
      if (this.closed) throw new Error("the store is closing");
      const answer = await turn(
        () =>
          new Promise<{ ok: boolean; error?: string } & Partial<PagesReturned>>((resolve) => {
            this.returned = resolve;
            this.worker.postMessage({ returnPages: Math.max(1, Math.floor(pages)) });
          }),
      );
      this.returned = undefined;
      if (!answer.ok) throw new Error(`returning free pages failed: ${answer.error}`);
      const step = { pages: answer.pages ?? 0, free: answer.free ?? 0, ms: answer.ms ?? 0 };
      this.wal.pagesReturned += Math.max(0, step.pages);
      this.wal.returnSteps++;
      this.wal.returnMs += step.ms;
      return step;
    } finally {
      this.returning = false;
      this.dirty = true; // the step wrote to the WAL: a checkpoint follows
      this.kick();
    }
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
    if (this.closed || this.inFlight || this.returning || this.cooling || !this.dirty) return;
    this.dirty = false;
    this.inFlight = true;
    this.worker.postMessage("checkpoint");
  }

  private done(message: { ok: boolean; result?: CheckpointResult; error?: string }): void {
    this.inFlight = false;
    if (!message.ok) this.onError(new Error(`background WAL checkpoint failed: ${message.error}`));
    const result = message.result ?? { busy: 1, log: -1, checkpointed: -1 };
    this.wal.workerCheckpoints++;
    const copied = this.saw(result);
    let nextMs = result.log > this.bound / 4 ? busyCadenceMs : cadenceMs;
    this.wal.pastBound = result.log > this.bound && copied > 0; // no frames since the writer's finish: nothing to catch up
    if (result.log > this.bound) {
      // Past the bound: what the last checkpoint left (the frames written while it ran) is copied
      // at once, until a checkpoint had little to copy; then the writer copies the rest and syncs.
      if (message.ok && copied > this.bound * finishShare && this.catchUps < maxCatchUps) {
        this.catchUps++;
        nextMs = 0;
      } else if (this.finishOnWriter()) {
        this.catchUps = 0;
        this.wal.pastBound = false;
      }
    } else this.catchUps = 0;
    for (const waiter of this.waiters.splice(0)) waiter(result);
    for (const waiter of this.idleWaiters.splice(0)) waiter();
    if (this.closed) return;
    if (nextMs === 0) {
      this.dirty = true;
      return this.kick();
    }
    this.cooling = setTimeout(() => {
      this.cooling = null;
      this.kick();
    }, nextMs);
    this.cooling.unref();
  }

  /** Copies the last frames on the writer's connection, between transactions, so the next write restarts the WAL; false inside a transaction (tried again at the next checkpoint). */
  private finishOnWriter(): boolean {
    if (this.db.inTransaction) return false;
    const started = performance.now();
    try {
      this.saw((this.db.pragma("wal_checkpoint(PASSIVE)") as CheckpointResult[])[0]);
    } catch (error) {
      this.onError(error);
    }
    this.wal.writerCheckpoints++;
    this.wal.writerMs += performance.now() - started;
    return true;
  }

  /** Notes a checkpoint's result: the WAL's frames (fewer than before: it restarted since) and those left to copy; returns the frames it copied. */
  private saw(result: CheckpointResult): number {
    if (result.log < 0) return 0;
    const restarted = result.log < this.wal.frames || result.checkpointed < this.checkpointed;
    this.wal.framesWritten += restarted ? result.log : result.log - this.wal.frames;
    const copied = restarted ? result.checkpointed : result.checkpointed - this.checkpointed;
    this.wal.frames = result.log;
    this.checkpointed = result.checkpointed;
    this.wal.backlog = Math.max(0, result.log - result.checkpointed);
    return copied;
  }
}
