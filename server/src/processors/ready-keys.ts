/**
 * Priorities whose emptied key set is kept for the next key (a key is added and taken in turn at
 * every delivery of a processor that keeps up: its set would otherwise be made anew each time).
 */
const keptLevels = 8;

/**
 * The keys ready to start, by priority: the highest priority first, and within one priority in
 * turn order (a key added goes after the others: round-robin). Without priorities every key is at
 * 0 and this is one ordered set.
 */
export class ReadyKeys {
  /** The keys of each priority, in turn order; a priority's set may be empty (up to {@link keptLevels} of them). */
  private readonly levels = new Map<number, Set<string>>();
  /** The priorities with a set in {@link levels}, highest first. */
  private order: number[] = [];
  private readonly levelOf = new Map<string, number>();

  /** Adds `key` at `priority` after the keys there; a key already in keeps its place. */
  add(key: string, priority: number): void {
    if (this.levelOf.has(key)) return;
    let level = this.levels.get(priority);
    if (!level) {
      level = new Set();
      this.levels.set(priority, level);
      this.order.push(priority);
      if (this.order.length > 1) this.order.sort((a, b) => b - a);
    }
    level.add(key);
    this.levelOf.set(key, priority);
  }

  delete(key: string): void {
    const priority = this.levelOf.get(key);
    if (priority === undefined) return;
    this.levelOf.delete(key);
    const level = this.levels.get(priority)!;
    level.delete(key);
    if (level.size > 0 || this.levels.size <= keptLevels) return;
    for (const [p, keys] of this.levels) if (keys.size === 0) this.levels.delete(p);
    this.order = this.order.filter((p) => this.levels.has(p));
  }

  clear(): void {
    this.levels.clear();
    this.levelOf.clear();
    this.order = [];
  }

  /** The key served next: the first in turn of the highest priority with keys; undefined when none is ready. */
  first(): string | undefined {
    for (let i = 0; i < this.order.length; i++) {
      const level = this.levels.get(this.order[i])!;
      if (level.size > 0) return level.values().next().value;
    }
    return undefined;
  }
}
