import type { Logger } from "../logger.js";
import type { Committer } from "../store/committer.js";
import type { CursorStatements } from "../store/cursors.js";
import type { ProcessorStages } from "../stages.js";

/** Longest a moved floor waits before it is saved (ms). */
const saveDelayMs = 20;

/** What an {@link AckFloor} needs from its engine. */
export interface AckFloorDeps {
  processor: string;
  committer: Committer;
  cursors: CursorStatements;
  logger: Logger;
  stages: ProcessorStages;
}

/**
 * A processor's ack floor (JetStream's word): every event at or below it is finished, so it is
 * the durable cursor. It follows the events the processor read, in seq order, and which of them
 * finished: the floor is the seq before the first one not finished, or the last seq read when
 * all are. A moved floor is saved within {@link saveDelayMs}, at most one save queued at a time: a
 * burst of acks costs one commit, not one fsync each. A crash loses at most that window of
 * cursor progress, whose events are delivered again (at least once). Once a save is durable,
 * each event it passed is observed in the processor's cursor stage (finished → saved).
 */
export class AckFloor {
  private floor = 0;
  /** Seqs read that the processor takes, ascending; those before {@link orderHead} are passed. */
  private readonly order: number[] = [];
  /** When each event of {@link order} (same index) finished (performance.now() ms); NaN while it has not. */
  private readonly finishedAt: number[] = [];
  private orderHead = 0;
  /** When each event the floor passed since the last save finished (performance.now() ms). */
  private unsaved: number[] = [];
  private saving = false;

  constructor(private readonly deps: AckFloorDeps) {}

  /** The floor as known in memory (saved by the next commit). */
  get value(): number {
    return this.floor;
  }

  /** Events read and not yet passed by the floor (in flight, waiting, or finished after one that is not). */
  get pending(): number {
    return this.order.length - this.orderHead;
  }

  /** Places the floor at `seq` and forgets what was read. */
  reset(seq: number): void {
    this.floor = seq;
    this.order.length = 0;
    this.finishedAt.length = 0;
    this.orderHead = 0;
    this.unsaved = [];
  }

  /** An event the processor takes was read (after every one read before). */
  read(seq: number): void {
    this.order.push(seq);
    this.finishedAt.push(Number.NaN);
  }

  /** Event `seq`, read, finished (acked, or given up on) at `at` (performance.now() ms); one not read (any more) is ignored. */
  finish(seq: number, at: number): void {
    let lo = this.orderHead;
    let hi = this.order.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (this.order[mid] < seq) lo = mid + 1;
      else if (this.order[mid] > seq) hi = mid - 1;
      else {
        this.finishedAt[mid] = at;
        return;
      }
    }
  }

  /** Moves the floor past the finished events at its head (to `delivered`, the last seq read, when every one did) and saves it when it moved. */
  advance(delivered: number): void {
    while (this.orderHead < this.order.length && !Number.isNaN(this.finishedAt[this.orderHead])) {
      this.unsaved.push(this.finishedAt[this.orderHead]);
      this.orderHead++;
    }
    if (this.orderHead > 1024) {
      this.order.splice(0, this.orderHead);
      this.finishedAt.splice(0, this.orderHead);
      this.orderHead = 0;
    }
    const floor = this.orderHead < this.order.length ? this.order[this.orderHead] - 1 : delivered;
    if (floor > this.floor) {
      this.floor = floor;
      this.save();
    }
  }

  private save(): void {
    if (this.saving) return;
    this.saving = true;
    const { committer, cursors, logger, processor, stages } = this.deps;
    setTimeout(() => {
      let passed: number[] = [];
      committer
        .submit((tx) => {
          this.saving = false;
          passed = this.unsaved;
          this.unsaved = [];
          cursors.save(processor, this.floor, tx.now);
        })
        .then(
          () => {
            const now = performance.now();
            for (const at of passed) stages.cursor.observe(now - at);
          },
          (e) => {
            this.saving = false;
            logger.error({ err: e, processor }, "saving the cursor failed");
          },
        );
    }, saveDelayMs);
  }
}
