/**
 * The keys ready to start, by priority: the highest priority first, and within one priority in
 * turn order (a key added goes after the others: round-robin). Without priorities every key is at
 * 0 and this is one ordered set.
 */
export class ReadyKeys {
  private readonly levels = new Map<number, Set<string>>();
  /** The priorities with keys, highest first. */
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
    if (level.size > 0) return;
    this.levels.delete(priority);
    this.order = this.order.filter((p) => p !== priority);
  }

  clear(): void {
    this.levels.clear();
    this.levelOf.clear();
    this.order = [];
  }

  /** The keys in the order they are served (deleting the key visited is allowed). */
  *[Symbol.iterator](): Generator<string> {
    for (const priority of [...this.order]) {
      const level = this.levels.get(priority);
      if (level) yield* level;
    }
  }
}
