import { isConnectionLost } from "../../errors.js";
import type { DeferredInserts } from "./deferred-inserts.js";
import type { NativeClient, Waits } from "./native-client.js";
import { GuardFailedError, type MergedWrite } from "../sql.js";
import { HeldWrites } from "./held-writes.js";
import { pipelineSync, type Command, type Outcome } from "./pipeline.js";
import { PreparedStatements } from "./prepared.js";

/** The rows read for a batch ahead of its units (BatchReadCache, of every table), as the batch's units and end concern them. */
export interface BatchReadsOfUnits {
  unitStarted(): void;
  unitFailed(): void;
  clear(): void;
}

const noReads: BatchReadsOfUnits = { unitStarted() {}, unitFailed() {}, clear() {} };

/**
 * The writer connection's state while the committer runs a batch, which is one transaction on
 * it: what the batch's units wrote and that was not sent yet, and their savepoints.
 *
 * Every statement is a round trip on PostgreSQL, and the owner's thread waits for those a unit
 * needs an answer from. So nothing is sent that can wait: the transaction's BEGIN, a unit's
 * savepoint (set before its first write) and the release of the one before, and the writes whose
 * outcome nobody reads now (SqlStatement.defer) are queued, and go in one pipeline with the next
 * statement that needs an answer ({@link answer}: one round trip for them all), or at the end of
 * the slice ({@link take}, sent without blocking). A unit that throws before its queued commands
 * were sent drops them (no round trip); after, its savepoint is rolled back to.
 *
 * The runs of a merged write (Db.prepareMerged) are held apart and go out as one statement
 * ({@link HeldWrites}), before the batch's next other write, read or the slice's end.
 *
 * A queued write that fails is found only when it is sent, after its unit returned: the batch
 * is then {@link broken} and its commit fails (as a failed COMMIT does). Only writes that cannot
 * fail but for a fault (updates by key, inserts of new keys) are deferred.
 */
/** `read` wrapped in a statement that fails when it finds a row (division by zero): a batch's guard ({@link BatchWriter.guard}). */
export function guardText(read: string): string {
  return `SELECT 1 / (CASE WHEN EXISTS (${read}) THEN 0 ELSE 1 END)`;
}

export class BatchWriter {
  /** The committer's units are running: statements go to the writer, writes into the batch's transaction. */
  writing = false;
  /** The transaction's BEGIN was sent or queued: it begins with the batch's first write. */
  begun = false;
  /** The running unit's savepoint was set (sent or queued). */
  savepoint: "none" | "set" = "none";
  /** The last unit's savepoint waits to be released (with the next one's). */
  releasePending = false;
  /** A queued command of an earlier unit failed: the batch's transaction is aborted. */
  broken: Error | undefined;
  /** Commands queued, not sent. */
  private queue: Command[] = [];
  /** Runs of merged writes held, not queued yet. */
  private readonly held = new HeldWrites();
  /**
   * The state before the running unit's savepoint was queued (to drop what it queued, or roll
   * back to its savepoint once sent), and where its SAVEPOINT is in the queue.
   */
  private unit = { queued: 0, begun: false, releasePending: false, sends: 0, savepointAt: 0 };
  /** Where the running unit's own commands start in {@link queue}. */
  private unitFrom = 0;
  /** Pipelines sent in the batch so far. */
  private sends = 0;

  constructor(
    private readonly writer: NativeClient,
    private readonly waits: Waits,
    private readonly onLost: () => ((error: Error) => void) | undefined,
    /** The events appended, held for multi-row inserts (dropped with a unit that throws). */
    private readonly events: () => DeferredInserts | undefined,
    /** The rows of other tables read for the batch (Db.readForBatch): told of its units, forgotten at its end. */
    private readonly reads: BatchReadsOfUnits = noReads,
    /** The writer's statements: those the batch's commands name are prepared in the pipeline that first sends them. */
    private readonly statements: PreparedStatements = new PreparedStatements(writer),
  ) {}

  /** A unit begins. */
  unitStarted(): void {
    this.savepoint = "none";
    this.unitFrom = this.queue.length;
    this.held.unitStarted();
    this.reads.unitStarted();
  }

  /**
   * The unit returned. A savepoint never sent is dropped (nothing could roll back to it: the
   * unit's writes went nowhere before it returned); one sent is released with the next one's (or
   * stays until the commit).
   */
  unitEnded(): void {
    if (this.savepoint === "set") {
      if (this.sends === this.unit.sends) this.queue.splice(this.unit.savepointAt, 1);
      else this.releasePending = true;
    }
    this.savepoint = "none";
  }

  /** The unit threw: what it wrote is undone. */
  unitFailed(): void {
    this.reads.unitFailed();
    if (this.savepoint === "set") {
      if (this.sends === this.unit.sends) {
        // Its savepoint was not sent: dropping what it queued since undoes it (and the BEGIN or release queued with it).
        this.queue.length = this.unit.queued;
        this.held.dropUnit();
        this.begun = this.unit.begun;
        this.releasePending = this.unit.releasePending;
      } else {
        this.queue.length = 0; // its savepoint was sent: what was queued or held since the last send is its own
        this.held.dropUnit();
        this.queue.push({ text: "ROLLBACK TO unit" }, { text: "RELEASE unit" });
      }
    }
    this.savepoint = "none";
  }

  /** Before a write of the running unit: queues the BEGIN, the last unit's release and this unit's savepoint, as needed. */
  beforeWrite(): void {
    if (!this.writing || this.savepoint === "set") return;
    const state = { queued: this.queue.length, begun: this.begun, releasePending: this.releasePending, sends: this.sends };
    if (!this.begun) this.queue.push({ text: "BEGIN" });
    if (this.releasePending) this.queue.push({ text: "RELEASE unit" });
    this.unit = { ...state, savepointAt: this.queue.length };
    this.queue.push({ text: "SAVEPOINT unit" });
    this.begun = true;
    this.releasePending = false;
    this.savepoint = "set";
  }

  /**
   * Before the batch's units run: queues `guard`, a read wrapped by {@link guardText}, ahead of all
   * the batch will write.
   */
  guard(guard: Command): void {
    this.queue.push({ ...guard, guard: true });
    this.unitFrom = this.queue.length;
  }

  /** Queues a write of the running unit whose outcome is not needed now. */
  defer(command: Command): void {
    this.beforeWrite();
    this.queueHeld();
    this.queue.push(command);
  }

  /** Holds a run of merged write `merged` (prepared as `name`) of the running unit, with the single statement's `params`. */
  deferMerged(merged: MergedWrite, name: string, params: unknown[]): void {
    this.beforeWrite();
    if (!this.held.accepts(merged, params[merged.names.indexOf(merged.key)] ?? null)) this.queueHeld();
    this.held.add(merged, name, params);
  }

  /**
   * Queues what is held: earlier units' rows before the running unit's own commands (so a unit
   * that throws still drops only its own), its own rows after them.
   */
  private queueHeld(): void {
    const { earlier, own } = this.held.take();
    if (earlier.length > 0 && this.savepoint === "set") {
      this.queue.splice(this.unit.queued, 0, ...earlier);
      this.unit.queued += earlier.length;
      this.unit.savepointAt += earlier.length;
      this.unitFrom = Math.max(this.unitFrom, this.unit.queued);
    } else this.queue.push(...earlier);
    this.queue.push(...own);
  }

  /**
   * Runs `command` on the writer and returns its answer, sending the queued commands before it
   * in the same round trip. Throws its error; when a queued command of an earlier unit failed, the
   * batch is {@link broken} too.
   */
  answer(command: Command): Outcome {
    this.queueHeld();
    const commands = [...this.queue, command];
    const from = this.unitFrom;
    this.queue = [];
    this.unitFrom = 0;
    this.sends++;
    const started = performance.now();
    let outcomes: Outcome[];
    try {
      const sent = this.statements.withPrepares(commands);
      outcomes = this.statements.settle(sent, pipelineSync(this.writer, sent));
    } catch (error) {
      if (isConnectionLost(error)) this.onLost()?.(error as Error);
      throw error;
    } finally {
      this.waits.count++;
      this.waits.ms += performance.now() - started;
    }
    const failed = outcomes.findIndex((o) => o.error);
    if (failed < 0) return outcomes[outcomes.length - 1];
    const error = commands[failed].guard ? new GuardFailedError() : outcomes[failed].error!;
    if (failed < from) this.broken ??= error; // an earlier unit's write (that unit already answered), or the batch's guard
    throw error;
  }

  /** The queued commands, taken to be sent at the end of a slice (and the events' inserts after them). */
  take(): Command[] {
    this.queueHeld();
    const commands = this.queue;
    this.queue = [];
    this.unitFrom = 0;
    this.sends++;
    const inserts = this.events()?.takeInserts() ?? [];
    if (inserts.length > 0 && !this.begun) {
      commands.push({ text: "BEGIN" });
      this.begun = true;
    }
    commands.push(...inserts);
    return commands;
  }

  /** Forgets the batch (its transaction ended, or is to be rolled back). */
  reset(): void {
    this.writing = false;
    this.begun = false;
    this.savepoint = "none";
    this.releasePending = false;
    this.broken = undefined;
    this.queue = [];
    this.held.clear();
    this.unitFrom = 0;
    this.events()?.clear();
    this.reads.clear();
  }
}
