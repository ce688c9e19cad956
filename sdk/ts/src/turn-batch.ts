/**
 * Collects the items pushed during one event-loop turn and hands them to `flush` together on the
 * next (`setImmediate`), so an executor answers work that ended together in one message (an
 * AckBatch, an ActionResultBatch) instead of one message each.
 */
export class TurnBatch<T> {
  private items: T[] = [];

  constructor(private readonly flush: (items: T[]) => void) {}

  /** Queues `item`; it is flushed on the next turn with whatever else is pushed before then. */
  push(item: T): void {
    this.items.push(item);
    if (this.items.length > 1) return;
    setImmediate(() => {
      const items = this.items;
      this.items = [];
      this.flush(items);
    });
  }
}
