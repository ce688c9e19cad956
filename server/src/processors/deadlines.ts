// The ack deadlines of a processor's running tries under one timer: the tries in a list ordered
// by when they are due (a new one almost always goes at the end: tries get the same timeout),
// linked through fields of their own, so arming, moving and removing a deadline allocates
// nothing and touches no timer. The one timer is set for the earliest deadline; an answered try
// leaves it as it is (it fires, finds nothing due, and is set again for the list's new head),
// so a delivery costs no setTimeout nor clearTimeout of its own.

/** What waits for a deadline: its links in the list, kept on it. */
export interface DueLinks {
  /** When it is due (performance.now() ms); meaningful while `due`. */
  dueAt: number;
  /** Its neighbours in the list (null at an end). */
  prevDue: DueLinks | null;
  nextDue: DueLinks | null;
  /** It is in the list. */
  due: boolean;
}

/** Deadlines of items `T`, each told to `expired` once due, in order (unless removed first). */
export class Deadlines<T extends DueLinks> {
  private head: T | null = null;
  private tail: T | null = null;
  private timer: NodeJS.Timeout | undefined;
  /** When the timer fires (performance.now() ms); Infinity when none is set. */
  private timerAt = Number.POSITIVE_INFINITY;

  constructor(private readonly expired: (item: T) => void) {}

  /** `item` is due `ms` from now (moved there when it was due already). */
  set(item: T, ms: number): void {
    if (item.due) this.unlink(item);
    const dueAt = performance.now() + ms;
    item.dueAt = dueAt;
    let before = this.tail;
    while (before !== null && before.dueAt > dueAt) before = before.prevDue as T | null;
    item.prevDue = before;
    item.nextDue = before === null ? this.head : before.nextDue;
    if (item.nextDue === null) this.tail = item;
    else item.nextDue.prevDue = item;
    if (before === null) this.head = item;
    else before.nextDue = item;
    item.due = true;
    if (dueAt < this.timerAt) this.arm(dueAt);
  }

  /** `item` is no longer waited for (nothing when it is not). */
  remove(item: T): void {
    if (item.due) this.unlink(item);
  }

  /** Forgets every deadline and stops the timer. */
  clear(): void {
    for (let item = this.head; item !== null; ) {
      const next = item.nextDue as T | null;
      item.due = false;
      item.prevDue = item.nextDue = null;
      item = next;
    }
    this.head = this.tail = null;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
  }

  private unlink(item: T): void {
    const { prevDue, nextDue } = item;
    if (prevDue === null) this.head = nextDue as T | null;
    else prevDue.nextDue = nextDue;
    if (nextDue === null) this.tail = prevDue as T | null;
    else nextDue.prevDue = prevDue;
    item.prevDue = item.nextDue = null;
    item.due = false;
  }

  private arm(at: number): void {
    clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => this.fire(), Math.max(0, at - performance.now()));
  }

  /** Tells each item due by now, earliest first, then sets the timer for the next one. */
  private fire(): void {
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    const now = performance.now();
    while (this.head !== null && this.head.dueAt <= now) {
      const item = this.head;
      this.unlink(item);
      this.expired(item);
    }
    if (this.head !== null && this.head.dueAt < this.timerAt) this.arm(this.head.dueAt);
  }
}
