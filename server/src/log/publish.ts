import { ChronologError } from "../errors.js";
import type { EmitResult } from "./emit.js";

/** How one emit of a publish stream ended: its event, or its error. */
export type PublishOutcome<Ref> = { ref: Ref; result: EmitResult; error?: undefined } | { ref: Ref; error: ChronologError; result?: undefined };

interface Entry<Ref> {
  ref: Ref;
  outcome: PublishOutcome<Ref> | undefined;
  /** What the emit's data weighs (its JSON), counted against {@link maxUnacknowledgedBytes}. */
  bytes: number;
}

/** Emits one publish stream may have unacknowledged unless the owner's config says otherwise. */
export const defaultPublishWindow = 1_024;

/**
 * Bytes of event data one publish stream may have unacknowledged: past it the owner reads no more
 * of the stream until acks go out, whatever the window says (a window of 1,024 emits of 4 MiB each
 * would hold 4 GiB). One emit is always taken, however large.
 */
export const maxUnacknowledgedBytes = 16 * 1024 * 1024;

/**
 * The emits of one publish stream between their arrival and their ack (ARCHITECTURE "The hot
 * path"), in the spirit of JetStream's async publish with a max-pending bound, or a Kafka
 * producer's in-flight requests: each emit runs on its own (the committer groups them, one
 * fsync for many; a refused one fails alone), its outcome is acknowledged in arrival order, and
 * at most `window` emits, and about {@link maxUnacknowledgedBytes} of their data, are
 * unacknowledged at once. The stream's reader calls {@link addAll} for each message and awaits
 * {@link room} before reading more, so while the window is full nothing more is read and the
 * transport's flow control holds the client back. An emit counts until its ack was handed to the
 * transport ({@link acks} resumed after yielding it); then nothing of it is kept.
 */
export class PublishPipeline<Ref> {
  private readonly entries: Entry<Ref>[] = [];
  /** Index of the first entry whose ack was not yet handed on (entries before it are dropped in chunks). */
  private first = 0;
  /** Index of the first entry not yet taken into a batch of acks (at or after `first`). */
  private next = 0;
  /** Settled entries from `next` on, in a row: the next batch of acks. */
  private ready = 0;
  /** Data bytes of the emits read and not yet acknowledged. */
  private bytes = 0;
  private ended = false;
  private failure: unknown;
  private wakeAcks: (() => void) | undefined;
  private wakeRoom: (() => void) | undefined;

  constructor(readonly window: number) {}

  /** Emits read and not yet acknowledged. */
  get unacknowledged(): number {
    return this.entries.length - this.first;
  }

  /**
   * Adds the next emits (one message's): `outcomes` settles with a result or error for each, in
   * order; when it rejects, every one of them fails with that error (a {@link ChronologError} is made of it).
   */
  addAll(refs: Ref[], outcomes: Promise<(EmitResult | ChronologError)[]>, bytes: number[] = []): void {
    const entries = refs.map((ref, i): Entry<Ref> => ({ ref, outcome: undefined, bytes: bytes[i] ?? 0 }));
    for (const entry of entries) {
      this.entries.push(entry);
      this.bytes += entry.bytes;
    }
    outcomes.then(
      (results) =>
        this.settle(entries, (entry, i) =>
          results[i] instanceof ChronologError ? { ref: entry.ref, error: results[i] } : { ref: entry.ref, result: results[i] },
        ),
      (error) => this.settle(entries, (entry) => ({ ref: entry.ref, error: ChronologError.from(error) })),
    );
  }

  /** Resolves once fewer than `window` emits, and less than {@link maxUnacknowledgedBytes} of data, are unacknowledged. */
  room(): Promise<void> {
    if (this.hasRoom() || this.ended) return Promise.resolve();
    return new Promise((resolve) => (this.wakeRoom = resolve));
  }

  private hasRoom(): boolean {
    return this.unacknowledged === 0 || (this.unacknowledged < this.window && this.bytes < maxUnacknowledgedBytes);
  }

  /** No more emits come: {@link acks} ends after the last one's ack. */
  end(): void {
    this.ended = true;
    this.wakeAcks?.();
    this.wakeRoom?.();
  }

  /** The stream's reading failed: {@link acks} throws `error` (after nothing more). */
  fail(error: unknown): void {
    this.failure = error;
    this.end();
  }

  /**
   * Yields the acks in arrival order, each batch as soon as its emits (and every one before them)
   * settled; ends when {@link end} was called and every emit was acknowledged, or when `signal` aborts.
   */
  async *acks(signal: AbortSignal): AsyncGenerator<PublishOutcome<Ref>[]> {
    const onAbort = () => this.wakeAcks?.();
    signal.addEventListener("abort", onAbort, { once: true });
    try {
      for (;;) {
        if (this.failure !== undefined) throw this.failure;
        if (signal.aborted) return;
        if (this.ready > 0) {
          yield this.take();
          this.handedOn();
          continue;
        }
        if (this.ended && this.unacknowledged === 0) return;
        await new Promise<void>((resolve) => (this.wakeAcks = resolve));
        this.wakeAcks = undefined;
      }
    } finally {
      signal.removeEventListener("abort", onAbort);
    }
  }

  /** Takes the settled entries from `next` on (they leave the window once handed on). */
  private take(): PublishOutcome<Ref>[] {
    const until = this.next + this.ready;
    const batch: PublishOutcome<Ref>[] = [];
    for (let i = this.next; i < until; i++) batch.push(this.entries[i].outcome!);
    this.next = until;
    this.ready = 0;
    this.countReady(); // the following entries may have settled already
    return batch;
  }

  /** The batch taken last was handed to the transport: its emits leave the window, and nothing of them is kept (their events may be large). */
  private handedOn(): void {
    for (let i = this.first; i < this.next; i++) {
      const entry = this.entries[i];
      this.bytes -= entry.bytes;
      entry.outcome = undefined;
    }
    this.first = this.next;
    if (this.first >= 1024 && this.first * 2 >= this.entries.length) {
      this.entries.splice(0, this.first);
      this.next -= this.first;
      this.first = 0;
    }
    if (this.hasRoom()) this.wakeRoom?.();
  }

  private settle(entries: Entry<Ref>[], outcome: (entry: Entry<Ref>, i: number) => PublishOutcome<Ref>): void {
    entries.forEach((entry, i) => (entry.outcome = outcome(entry, i)));
    if (entries.length === 0 || this.entries[this.next + this.ready] !== entries[0]) return; // they wait behind earlier ones
    this.countReady();
    this.wakeAcks?.();
  }

  /** Counts the settled entries from `next + ready` on. */
  private countReady(): void {
    for (let i = this.next + this.ready; i < this.entries.length && this.entries[i].outcome !== undefined; i++) this.ready++;
  }
}
