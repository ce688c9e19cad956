/**
 * Tells waiters when the log's head moves past a seq. The committer calls
 * `advance` after each commit; watchers await `waitPast` when caught up.
 */
export class HeadSignal {
  private waiters = new Set<{ seq: number; wake: () => void }>();

  constructor(private current: number) {}

  /** The last committed seq. */
  get head(): number {
    return this.current;
  }

  /** Records a new head and wakes every waiter it passes. */
  advance(head: number): void {
    this.current = head;
    for (const waiter of this.waiters) if (head > waiter.seq) waiter.wake();
  }

  /** Resolves once the head is past `seq`, or when `signal` aborts. */
  waitPast(seq: number, signal: AbortSignal): Promise<void> {
    if (this.current > seq || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const waiter = {
        seq,
        wake: () => {
          this.waiters.delete(waiter);
          signal.removeEventListener("abort", waiter.wake);
          resolve();
        },
      };
      this.waiters.add(waiter);
      signal.addEventListener("abort", waiter.wake, { once: true });
    });
  }
}
