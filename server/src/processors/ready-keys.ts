/** Priorities whose emptied queue is kept for their next key (up to this many priorities). */
const keptLevels = 8;
/** Visited entries a queue keeps at its front before it drops them (and at least half of it visited). */
const compactAfter = 1_024;

/**
 * One priority's keys in turn order: a queue of entries (a key and its ticket) with a head. An
 * entry stands while its ticket is its key's current one ({@link ReadyKeys.ticketOf}); a key
 * deleted leaves its entry behind, passed over when it reaches the head.
 */
interface Level {
  keys: string[];
  tickets: number[];
  head: number;
  /** Keys ready at this priority. */
  ready: number;
}

/**
 * The keys ready to start, by priority: the highest priority first, and within one priority in
 * turn order (a key added goes after the others: round-robin). Without priorities every key is at
 * 0 and this is one queue. Adding, deleting and finding the next key make no object: a key is
 * taken and added again at every delivery of a busy processor.
 */
export class ReadyKeys {
  private readonly levels = new Map<number, Level>();
  /** The priorities with a queue in {@link levels} (possibly empty: up to {@link keptLevels}), highest first. */
  private order: number[] = [];
  /** Each ready key's priority. */
  private readonly levelOf = new Map<string, number>();
  /** Each ready key's ticket: its entry in its priority's queue. */
  private readonly ticketOf = new Map<string, number>();
  private tickets = 0;

  /** Adds `key` at `priority` after the keys there; a key already in keeps its place. */
  add(key: string, priority: number): void {
    if (this.levelOf.has(key)) return;
    let level = this.levels.get(priority);
    if (!level) {
      level = { keys: [], tickets: [], head: 0, ready: 0 };
      this.levels.set(priority, level);
      this.order.push(priority);
      if (this.order.length > 1) this.order.sort((a, b) => b - a);
    }
    const ticket = ++this.tickets;
    level.keys.push(key);
    level.tickets.push(ticket);
    level.ready++;
    this.levelOf.set(key, priority);
    this.ticketOf.set(key, ticket);
  }

  delete(key: string): void {
    const priority = this.levelOf.get(key);
    if (priority === undefined) return;
    this.levelOf.delete(key);
    this.ticketOf.delete(key);
    const level = this.levels.get(priority)!;
    if (--level.ready > 0) return;
    level.keys.length = 0;
    level.tickets.length = 0;
    level.head = 0;
    if (this.levels.size <= keptLevels) return;
    for (const [p, l] of this.levels) if (l.ready === 0) this.levels.delete(p);
    this.order = this.order.filter((p) => this.levels.has(p));
  }

  clear(): void {
    this.levels.clear();
    this.levelOf.clear();
    this.ticketOf.clear();
    this.order = [];
  }

  /** The key served next: the first in turn of the highest priority with keys; undefined when none is ready. */
  first(): string | undefined {
    for (let i = 0; i < this.order.length; i++) {
      const level = this.levels.get(this.order[i])!;
      if (level.ready === 0) continue;
      const { keys, tickets } = level;
      let head = level.head;
      while (this.ticketOf.get(keys[head]) !== tickets[head]) head++;
      if (head > compactAfter && head * 2 > keys.length) {
        keys.splice(0, head);
        tickets.splice(0, head);
        head = 0;
      }
      level.head = head;
      return keys[head];
    }
    return undefined;
  }
}
