import { alwaysTrusted, type Trust } from "../trust.js";

/**
 * A queue of messages to one stream, read by the stream's writer. Bounded by
 * the sender: the owner puts at most the executor's credits of deliveries
 * and invocations in flight, plus control messages.
 */
export class Outbox<T> {
  private readonly items: T[] = [];
  private wake: (() => void) | null = null;
  private ended = false;

  /** Queues a message; ignored once ended. */
  push(item: T): void {
    if (this.ended) return;
    this.items.push(item);
    this.wake?.();
  }

  /** Ends the stream after the queued messages. */
  end(): void {
    this.ended = true;
    this.wake?.();
  }

  /**
   * Yields messages until `end()` or `signal` aborts. `toMessages` turns the items
   * queued at one moment into what is written (e.g. deliveries combined into one batch);
   * nothing is written while `trust` is not trusted (a leader whose lease is too old): checked
   * before each message, since the writer may hold the generator between two of one turn's
   * messages for as long as the owner was paused.
   */
  async *drain<U>(signal: AbortSignal, toMessages: (items: T[]) => U[], trust: Trust = alwaysTrusted): AsyncGenerator<U> {
    const onAbort = () => this.end();
    signal.addEventListener("abort", onAbort, { once: true });
    try {
      for (;;) {
        while (this.items.length > 0) {
          for (const message of toMessages(this.items.splice(0))) {
            if (!trust.trusted()) await trust.whenTrusted();
            yield message;
          }
        }
        if (this.ended || signal.aborted) return;
        await new Promise<void>((resolve) => (this.wake = resolve));
        this.wake = null;
      }
    } finally {
      signal.removeEventListener("abort", onAbort);
    }
  }
}
