/**
 * Items held until a start time on `performance.now()`'s clock (ms): held
 * invocations (Invocation.hold_ms). One timer, armed for the earliest, starts
 * every item whose time has come, never before it (a timer that rings early, as
 * libuv's whole-ms loop time allows, re-arms for the rest). A held item keeps
 * only itself and its time alive, so many held at once cost the GC little.
 */
export class HoldQueue<T> {
  /** Ascending by `atMs`; equal times keep their arrival order. */
  private readonly items: { atMs: number; item: T }[] = [];
  private timer: NodeJS.Timeout | undefined;
  private armedForMs = Infinity;
  private waiters: (() => void)[] = [];

  /** `start(item, lateMs)` runs when an item's time has come; `lateMs` is how many whole ms after it. */
  constructor(private readonly start: (item: T, lateMs: number) => void) {}

  /** Holds in the queue right now. */
  get size(): number {
    return this.items.length;
  }

  /** Holds `item` until `atMs` (started at once, synchronously, when that has passed). */
  add(item: T, atMs: number): void {
    const now = performance.now();
    if (atMs <= now) return this.start(item, Math.floor(now - atMs));
    let i = this.items.length;
    while (i > 0 && this.items[i - 1].atMs > atMs) i--;
    this.items.splice(i, 0, { atMs, item });
    if (atMs < this.armedForMs) this.arm(now);
  }

  /** Takes the first held item matching `test` out of the queue (it will not start); undefined when none. */
  remove(test: (item: T) => boolean): T | undefined {
    const i = this.items.findIndex((e) => test(e.item));
    if (i < 0) return undefined;
    const [{ item }] = this.items.splice(i, 1);
    this.settle();
    return item;
  }

  /** Drops every held item (none will start), e.g. when their stream ended. */
  clear(): void {
    this.items.length = 0;
    this.settle();
  }

  /** Resolves once no item is held (at once when none is). */
  drained(): Promise<void> {
    return this.items.length === 0 ? Promise.resolve() : new Promise((resolve) => this.waiters.push(resolve));
  }

  private arm(now: number): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.armedForMs = this.items[0]?.atMs ?? Infinity;
    if (this.armedForMs !== Infinity) this.timer = setTimeout(this.ring, Math.ceil(this.armedForMs - now));
  }

  private readonly ring = (): void => {
    const now = performance.now();
    let due = 0;
    while (due < this.items.length && this.items[due].atMs <= now) due++;
    const started = this.items.splice(0, due);
    this.arm(now);
    for (const { atMs, item } of started) this.start(item, Math.floor(now - atMs));
    this.settle();
  };

  /** Disarms the timer when nothing is held, and wakes `drained()` waiters. */
  private settle(): void {
    if (this.items.length > 0) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.armedForMs = Infinity;
    for (const wake of this.waiters.splice(0)) wake();
  }
}
