import type { EventRecord } from "../store/events.js";

/**
 * Per-key FIFO lanes. An event waits in its key's lane until every
 * earlier event of that key is finished; different keys run at once.
 *
 * A lane's states: idle (absent) → ready (events waiting, none in flight) →
 * busy (its head taken: in flight or waiting for a retry) → ready or idle on
 * `release`. Keys of events without a key are unique per event.
 */
export class Lanes {
  private readonly waiting = new Map<string, EventRecord[]>();
  private readonly busy = new Set<string>();
  private readonly ready = new Set<string>();
  private count = 0;

  /** Events waiting (not taken). */
  get size(): number {
    return this.count;
  }

  /** Queues an event at the tail of its lane. */
  push(key: string, event: EventRecord): void {
    const lane = this.waiting.get(key);
    if (lane) lane.push(event);
    else this.waiting.set(key, [event]);
    this.count++;
    if (!this.busy.has(key)) this.ready.add(key);
  }

  /** Takes the head of the oldest ready lane and marks the lane busy; undefined when none is ready. */
  take(): { key: string; event: EventRecord } | undefined {
    const key = this.ready.values().next().value;
    if (key === undefined) return undefined;
    this.ready.delete(key);
    const lane = this.waiting.get(key)!;
    const event = lane.shift()!;
    if (lane.length === 0) this.waiting.delete(key);
    this.count--;
    this.busy.add(key);
    return { key, event };
  }

  /** Ends the lane's busy state: its next event (if any) becomes ready. */
  release(key: string): void {
    this.busy.delete(key);
    if (this.waiting.has(key)) this.ready.add(key);
  }

  /** Drops every waiting event (the processor was removed or moved). */
  clear(): void {
    this.waiting.clear();
    this.busy.clear();
    this.ready.clear();
    this.count = 0;
  }
}
