/** How large one batch may grow: items, and bytes as `sizeOf` estimates them. */
export interface BatchLimits {
  maxItems: number;
  maxBytes: number;
}

/**
 * Collects the items pushed during one event-loop turn and hands them to `flush` together on the
 * next (`setImmediate`), so an executor answers work that ended together in one message (an
 * AckBatch, an ActionResultBatch) instead of one message each. A batch never grows past
 * `limits()` (read at each push): an item that would take it over flushes what is collected first.
 */
export class TurnBatch<T> {
  private items: T[] = [];
  private bytes = 0;
  private scheduled = false;

  constructor(
    private readonly flush: (items: T[]) => void,
    private readonly sizeOf: (item: T) => number,
    private readonly limits: () => BatchLimits,
  ) {}

  /** Queues `item`; it is flushed on the next turn with whatever else is pushed before then (within the limits). */
  push(item: T): void {
    const size = this.sizeOf(item);
    const { maxItems, maxBytes } = this.limits();
    if (this.items.length > 0 && (this.items.length >= maxItems || this.bytes + size > maxBytes)) this.flushNow();
    this.items.push(item);
    this.bytes += size;
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.flushNow();
    });
  }

  private flushNow(): void {
    const items = this.items;
    this.items = [];
    this.bytes = 0;
    if (items.length > 0) this.flush(items);
  }
}
