import { storedBytes, type BudgetedRows, type EventReads, type EventRecord } from "../store/events.js";

/** Most events the tail keeps. */
const maxEvents = 16_384;
/** Most bytes of events (as stored) the tail keeps. */
const maxBytes = 8 * 1024 * 1024;

/** What stands in the tail's array for an event it no longer keeps. */
const dropped = undefined as unknown as EventRecord;

/**
 * The last events committed, kept in memory as the committer made them durable: readers at the
 * end of the log (a processor after each commit) take them from here instead of the store, where
 * every read is a round trip the owner waits for (PostgreSQL) or a query it runs (SQLite). Holds
 * a contiguous run of seqs ending at the last durable one; a reader further back reads the store.
 * Beside each event it keeps when its commit became durable (the delivery stages count from there: stages.ts).
 */
export class LogTail {
  private events: EventRecord[] = [];
  /** When each event of {@link events} (same index) became durable, performance.now() ms. */
  private durableAt: number[] = [];
  /** Index of the oldest event kept in {@link events}. */
  private start = 0;
  private bytes = 0;

  /**
   * Adds a commit's events (the seqs after the last one kept; after a gap, only they are kept),
   * durable at `durableAt` (performance.now() ms; default now).
   */
  add(events: EventRecord[], durableAt = performance.now()): void {
    if (events.length === 0) return;
    const last = this.events[this.events.length - 1];
    if (last && events[0].seq !== last.seq + 1) this.clear();
    for (const event of events) {
      this.events.push(event);
      this.durableAt.push(durableAt);
      this.bytes += storedBytes(event);
    }
    while (this.events.length - this.start > maxEvents || (this.bytes > maxBytes && this.events.length - this.start > 1)) {
      this.bytes -= storedBytes(this.events[this.start]);
      this.events[this.start++] = dropped; // the array is compacted now and then; the event goes at once
    }
    if (this.start > 4_096 && this.start * 2 > this.events.length) {
      this.events = this.events.slice(this.start);
      this.durableAt = this.durableAt.slice(this.start);
      this.start = 0;
    }
  }

  /** Forgets the events through `seq` (retention removed some of them: readers of those seqs read the store). */
  forgetThrough(seq: number): void {
    while (this.start < this.events.length && this.events[this.start].seq <= seq) {
      this.bytes -= storedBytes(this.events[this.start]);
      this.events[this.start++] = dropped;
    }
  }

  /**
   * What {@link import("../store/events.js").EventStatements.readWithin} would read after
   * `afterSeq` (up to `limit` events of `types`, all types when empty, stopping after the one
   * that brings their bytes to `maxBytes`), or undefined when the tail does not hold every event
   * after `afterSeq` (read the store).
   */
  readWithin(afterSeq: number, limit: number, budget: number, types: string[]): BudgetedRows | undefined {
    const first = this.events[this.start]?.seq;
    if (first === undefined || afterSeq + 1 < first) return undefined;
    const wanted = types.length > 0 ? new Set(types) : undefined;
    const events: EventRecord[] = [];
    let bytes = 0;
    for (let i = this.start + (afterSeq + 1 - first); i < this.events.length; i++) {
      const event = this.events[i];
      if (wanted && !wanted.has(event.type)) continue;
      events.push(event);
      bytes += storedBytes(event);
      if (events.length === limit || bytes >= budget) return { events, bytes, cut: true };
    }
    return { events, bytes, cut: false };
  }

  /** When event `seq`'s commit became durable (performance.now() ms), or undefined when the tail no longer holds it (or never did). */
  durableAtOf(seq: number): number | undefined {
    const first = this.events[this.start]?.seq;
    if (first === undefined || seq < first) return undefined;
    return this.durableAt[this.start + (seq - first)];
  }

  private clear(): void {
    this.events = [];
    this.durableAt = [];
    this.start = 0;
    this.bytes = 0;
  }
}

/** `reads` reading the events after a seq from `tail` when it holds them all: a watcher or a page at the end of the log reads no store. */
export function readsWithTail(tail: LogTail, reads: EventReads): EventReads {
  return {
    readWithin: async (afterSeq, limit, maxBytes, types = []) =>
      tail.readWithin(afterSeq, limit, maxBytes, types) ?? reads.readWithin(afterSeq, limit, maxBytes, types),
    findById: (id) => reads.findById(id),
    bySeqs: (seqs) => reads.bySeqs(seqs),
    firstAtOrAfter: (atMs) => reads.firstAtOrAfter(atMs),
  };
}
