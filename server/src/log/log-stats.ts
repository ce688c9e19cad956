import { Counter, Gauge, type Registry } from "prom-client";
import { storedBytes, type EventRecord } from "../store/events.js";
import type { LogRemovalStatements } from "../store/log-removal.js";

/** Events one step of the count at start reads (a step blocks SQLite's event loop for about this many rows' read). */
const countStepRows = 20_000;

/**
 * The log's events and stored bytes by type, in memory: counted once at start in steps by seq
 * (the owner serves meanwhile; {@link ready} resolves once counted, or once {@link stop}ped or
 * failed: it never rejects), then kept by the commits
 * ({@link appended}) and retention's removals ({@link removed}). What retention's count and size
 * limits read, and what the `chronolog_log_*` metrics show: no scrape reads the store.
 */
export class LogStats {
  private readonly byType = new Map<string, { events: number; bytes: number }>();
  private counted = false;
  private readonly pending: EventRecord[] = [];
  /** The lowest seq in the log (0: empty), as retention last saw it. */
  firstSeq = 0;
  /** Events and bytes retention removed since the log began. */
  removedEvents = 0;
  removedBytes = 0;
  readonly ready: Promise<void>;
  private stopped = false;

  /** Counts the log through `head` (the committer's head at start) in steps; later commits come through {@link appended}. */
  /** `onCountError`: told when the count at start fails (the counts then lack what it had not read). */
  constructor(
    private readonly statements: LogRemovalStatements,
    head: number,
    onCountError: (err: unknown) => void,
  ) {
    const removed = statements.removedTotals();
    this.removedEvents = removed.events;
    this.removedBytes = removed.bytes;
    this.ready = this.count(head).catch((err) => {
      if (!this.stopped) onCountError(err);
    });
  }

  /** Ends the count at start after its current step (call before the store closes); {@link ready} resolves then. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.ready;
  }

  /** Events committed to the log (a commit follower). */
  appended(events: EventRecord[]): void {
    if (!this.counted) {
      this.pending.push(...events);
      return;
    }
    for (const event of events) this.add(event.type, 1, storedBytes(event));
    if (this.firstSeq === 0 && events.length > 0) this.firstSeq = events[0].seq;
  }

  /** Events retention removed: `byType` counts and bytes by type. */
  removed(byType: Map<string, { events: number; bytes: number }>, firstSeq: number): void {
    for (const [type, { events, bytes }] of byType) {
      this.add(type, -events, -bytes);
      this.removedEvents += events;
      this.removedBytes += bytes;
    }
    this.firstSeq = firstSeq;
  }

  /** Events and bytes of `type` in the log. */
  of(type: string): { events: number; bytes: number } {
    return this.byType.get(type) ?? { events: 0, bytes: 0 };
  }

  /** The types with events in the log. */
  types(): string[] {
    return [...this.byType.keys()];
  }

  /** Stored bytes of the whole log. */
  get bytes(): number {
    let total = 0;
    for (const { bytes } of this.byType.values()) total += bytes;
    return total;
  }

  private add(type: string, events: number, bytes: number): void {
    const entry = this.byType.get(type) ?? { events: 0, bytes: 0 };
    entry.events += events;
    entry.bytes += bytes;
    if (entry.events <= 0) this.byType.delete(type);
    else this.byType.set(type, entry);
  }

  private async count(head: number): Promise<void> {
    this.firstSeq = await this.statements.firstSeq();
    for (let after = Math.max(0, this.firstSeq - 1); after < head && !this.stopped; after += countStepRows) {
      for (const t of await this.statements.totals(after, Math.min(head, after + countStepRows))) this.add(t.type, t.events, t.bytes);
      await new Promise((resolve) => setImmediate(resolve));
    }
    this.counted = true;
    const pending = this.pending.splice(0).filter((e) => e.seq > head);
    this.appended(pending);
  }
}

/**
 * Registers the log's metrics on an owner's registry, read from `stats` when scraped:
 * `chronolog_log_bytes`, `chronolog_log_events{type}`, `chronolog_log_first_seq`,
 * `chronolog_log_removed_events_total` and `chronolog_log_removed_bytes_total`.
 */
export function logStatsMetrics(registry: Registry, stats: LogStats): void {
  new Gauge({
    name: "chronolog_log_bytes",
    help: "Stored bytes of the log's events (data and actor as JSON, id, type and cause; the file with its indexes takes about twice this).",
    registers: [registry],
    collect() {
      this.set(stats.bytes);
    },
  });
  new Gauge({
    name: "chronolog_log_events",
    help: "Events in the log, by type.",
    labelNames: ["type"] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const type of stats.types()) this.set({ type }, stats.of(type).events);
    },
  });
  new Gauge({
    name: "chronolog_log_first_seq",
    help: "Where the log starts: its lowest seq still stored (0: empty). Retention removed the events before it.",
    registers: [registry],
    collect() {
      this.set(stats.firstSeq);
    },
  });
  new Counter({
    name: "chronolog_log_removed_events_total",
    help: "Events retention removed from the log since it began.",
    registers: [registry],
    collect() {
      this.reset();
      this.inc(stats.removedEvents);
    },
  });
  new Counter({
    name: "chronolog_log_removed_bytes_total",
    help: "Stored bytes of the events retention removed from the log since it began.",
    registers: [registry],
    collect() {
      this.reset();
      this.inc(stats.removedBytes);
    },
  });
}
