import type { Clock } from "../clock.js";
import type { LogTail } from "../log/tail.js";
import type { EventRecord, EventStatements } from "../store/events.js";
import { Debouncer } from "./debounce.js";
import type { ProcessorSpec } from "./declaration.js";
import type { AckFloor } from "./floor.js";
import { KeyQueues } from "./key-limits.js";
import { RateGate } from "./rate-gate.js";
import { LogReader, type ReaderDeps } from "./reader.js";

/** What an {@link Intake} needs from its engine. */
export interface IntakeDeps {
  spec: ProcessorSpec;
  events: EventStatements;
  tail: Pick<LogTail, "readWithin">;
  clock: Clock;
  floor: AckFloor;
  head(): number;
  /** Hands out work (called when a rate's token or a debounced burst is due). */
  pump(): void;
  /** As LogReader's: reads of the log without blocking, and who is told when one came. */
  readLog?: ReaderDeps["readLog"];
  wake?: () => void;
}

/**
 * A processor's events on their way to a delivery: read from the log (LogReader), debounced
 * (Debouncer), queued per key within the concurrency limits and served in turn (KeyQueues), and
 * held to the rate (RateGate). The engine takes the next event to deliver from it and tells it
 * when a delivery ended.
 */
export class Intake {
  private readonly queues: KeyQueues;
  private readonly reader: LogReader;
  /** The processor's rate, if it declares one. */
  readonly rate: RateGate | undefined;
  /** The processor's debounce, if it declares one. */
  readonly debouncer: Debouncer | undefined;
  /** Events finished without a delivery (`if_active`: skip or coalesce). */
  passed = 0;

  constructor(private readonly deps: IntakeDeps) {
    const { spec, clock } = deps;
    this.queues = new KeyQueues(spec.keyLimit, spec.ifActive, spec.priorityOf, spec.weightOf);
    this.rate = spec.rate && new RateGate(spec.rate, clock);
    this.debouncer = spec.debounce && new Debouncer(spec.debounce, clock, (event) => this.requeue(event, true));
    const gather = this.debouncer && ((event: EventRecord) => this.debouncer?.add(event));
    this.reader = new LogReader({ ...deps, queues: this.queues, gather, passed: (events, held) => this.pass(events, held) });
  }

  /** The highest seq read. */
  get delivered(): number {
    return this.reader.delivered;
  }

  /** Reads what it can from the log; true when it stopped for its turn's budget only (read again in a later turn). */
  read(): boolean {
    return this.reader.read();
  }

  /** The next event to deliver within the limits and the rate ({@link takenKey}: its key), or undefined (woken by the rate when a token is due). */
  take(): EventRecord | undefined {
    const next = this.queues.take(this.rate?.admit);
    if (!next) this.rate?.arm(this.queues, this.deps.pump);
    return next;
  }

  /** The key of the event {@link take} returned last. */
  get takenKey(): string {
    return this.queues.takenKey;
  }

  /** Queues an event outside the reader: a redelivery (`held` false: below the floor, not counted), or a debounced burst's last event. */
  requeue(event: EventRecord, held: boolean): void {
    this.queues.requeue(this.deps.spec.keyOf(event) ?? `#${event.seq}`, event);
    if (!held) return;
    this.reader.added(event);
    this.deps.pump();
  }

  /** How many events the delivery of `seq` stands for (debounce; 0: itself only). */
  debounced(seq: number): number {
    return this.debouncer?.count(seq) ?? 0;
  }

  /** A delivery of `key` ended: its key may run its next event. */
  release(key: string): void {
    this.queues.release(key);
  }

  /** A delivery read from the log ended at `at`: it, and the events it stood for, are finished. */
  finished(event: EventRecord, at: number): void {
    this.deps.floor.finish(event.seq, at);
    for (const gathered of this.debouncer?.ended(event.seq) ?? []) this.deps.floor.finish(gathered, at);
    this.reader.released(event);
  }

  /** Forgets everything read and restarts reading after `seq`. */
  reset(seq: number): void {
    this.stop();
    this.queues.clear();
    this.reader.reset(seq);
  }

  /** Stops the rate's and the debounce's timers (the engine stops). */
  stop(): void {
    this.rate?.clear();
    this.debouncer?.clear();
  }

  /** Events finished without a delivery, as the declaration's `if_active` says; `held`: they were in memory. */
  private pass(events: EventRecord[], held: boolean): void {
    const at = performance.now();
    for (const event of events) {
      this.deps.floor.finish(event.seq, at);
      if (held) this.reader.released(event);
    }
    this.passed += events.length;
  }
}
