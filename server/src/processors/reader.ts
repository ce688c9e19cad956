import type { LogTail } from "../log/tail.js";
import { storedBytes, type BudgetedRows, type EventRecord, type EventStatements } from "../store/events.js";
import { takes, type ProcessorSpec } from "./declaration.js";
import type { AckFloor } from "./floor.js";
import type { KeyQueues } from "./key-limits.js";

/** Events held in memory ahead of the ack floor at most (in a processor's key queues, in flight or waiting for a retry). */
const readAheadLimit = 2_048;
/**
 * Events read ahead of the ack floor at most, held or not: past a key's share of memory its
 * events stay in the log (KeyQueues), so the reader can look this far past one key's backlog for
 * other keys' events. Each costs the floor a few bytes (its seq).
 */
export const lookAheadLimit = 262_144;
/**
 * Bytes of events ({@link storedBytes}) a processor holds read ahead of its floor at most (in its
 * key queues, in flight or waiting for a retry): past it, it reads no more until some finish (2,048 events
 * of 4 MiB would be 8 GiB). One chunk is read whenever none is held, so a larger event still comes.
 */
export const processorReadAheadBytes = 16 * 1024 * 1024;
const readChunk = 256;
/** Bytes one chunk read from the log holds at most (plus one event). */
const readChunkBytes = 4 * 1024 * 1024;
/** Chunks read in one go at most: a long look ahead goes on in a later turn of the event loop. */
const chunksPerTurn = 16;
/** How soon a read of the log that failed is tried again, ms (a lost connection ends the owner's lead meanwhile). */
const retryReadMs = 200;

/** What a {@link LogReader} needs from its engine. */
export interface ReaderDeps {
  spec: ProcessorSpec;
  events: EventStatements;
  tail: Pick<LogTail, "readWithin">;
  floor: AckFloor;
  queues: KeyQueues;
  /** The log's last committed seq. */
  head(): number;
  /** Takes each event instead of the key queues (a debounce gathering it), when given. */
  gather?: (event: EventRecord) => void;
  /** Events finished without a delivery (the declaration's `if_active`); `held`: they were counted in the held bytes. */
  passed(events: EventRecord[], held: boolean): void;
  /**
   * Where the log's reads are round trips (PostgreSQL: EventReads.readWithin), what is older than
   * the tail is read with it, without blocking the event loop; else from `events`, at once.
   */
  readLog?: (afterSeq: number, limit: number, maxBytes: number, types: string[]) => Promise<BudgetedRows>;
  /** Told when such a read brought a chunk (the engine reads on and hands out what it can). */
  wake?: () => void;
}

/** A chunk read from the log after `after`, with the log's last durable seq when it was read. */
interface Chunk {
  after: number;
  rows: BudgetedRows;
  head: number;
}

/**
 * Reads a processor's events from the log into its key queues, in seq order, each one it takes
 * registered with the ack floor. It holds at most {@link readAheadLimit} events and
 * {@link processorReadAheadBytes} in memory; a key's events past its share are left in the log
 * and read again, for that key alone, as its queue runs low.
 */
export class LogReader {
  /** The highest seq read. */
  delivered = 0;
  /** Stored bytes of the events held (in the queues, in flight or waiting for a retry). */
  heldBytes = 0;
  private held = 0;
  /** A chunk read without blocking, waiting to be taken; whether a read is out; resets so far (a read begun before one is dropped). */
  private fetched: Chunk | undefined;
  private fetching = false;
  private resets = 0;
  /** Spilled keys whose read again is out (read without blocking): none is read again meanwhile. */
  private readonly refilling = new Set<string>();

  /** The event types the processor takes, as reads of the log filter them ([]: all). */
  private readonly types: string[];

  constructor(private readonly deps: ReaderDeps) {
    this.types = deps.spec.on ? [...deps.spec.on] : [];
  }

  /** Restarts reading after `seq`, nothing held. */
  reset(seq: number): void {
    this.resets++;
    this.fetched = undefined;
    this.refilling.clear();
    this.delivered = seq;
    this.heldBytes = 0;
    this.held = 0;
  }

  /** An event held ended (finished or given up on). */
  released(event: EventRecord): void {
    this.held = Math.max(0, this.held - 1); // never below 0: an end arriving after a reset
    this.heldBytes = Math.max(0, this.heldBytes - storedBytes(event));
  }

  /** An event was held again outside the reader (a redelivery). */
  added(event: EventRecord): void {
    this.held++;
    this.heldBytes += storedBytes(event);
  }

  /**
   * Reads spilled keys' events again, then newly committed events, within the bounds. Returns
   * true when it stopped for its turn's budget only (call again in a later turn).
   */
  read(): boolean {
    const more = this.refill();
    const { spec, floor, queues } = this.deps;
    const types = this.types;
    for (let chunks = 0; chunks < chunksPerTurn; chunks++) {
      if (this.held >= readAheadLimit || this.heldBytes >= processorReadAheadBytes || floor.pending >= lookAheadLimit) return more;
      if (this.delivered >= this.deps.head()) return more;
      const chunk = this.chunkAfter(this.delivered, types);
      if (!chunk) return more; // being read without blocking: `wake` reads on
      const { rows: read, head } = chunk;
      const rows = read.events;
      for (const event of rows) {
        if (event.seq > head) break; // committed, not yet durable: read after its fsync
        this.delivered = event.seq;
        if (!takes(spec, event)) continue;
        floor.read(event.seq);
        if (this.deps.gather) {
          this.deps.gather(event);
          continue;
        }
        const pushed = queues.push(spec.keyOf(event) ?? `#${event.seq}`, event);
        if (pushed.kind === "held") this.added(event);
        else if (pushed.kind === "passed") {
          if (!pushed.held) this.deps.passed(pushed.events, false);
          else {
            this.added(event);
            this.deps.passed(pushed.events, true);
          }
        }
      }
      if (!read.cut || rows[rows.length - 1].seq > head) this.delivered = Math.max(this.delivered, head);
    }
    return true;
  }

  /**
   * The next chunk after `after`: from the tail in memory, else read from the log (at once, or
   * without blocking where reads are round trips: undefined then until it came). Its `head`: the
   * log's last durable seq when it was read, all of which the read saw (a chunk not cut ends there).
   */
  private chunkAfter(after: number, types: string[]): Chunk | undefined {
    const head = this.deps.head();
    const inTail = this.deps.tail.readWithin(after, readChunk, readChunkBytes, types);
    if (inTail) return { after, rows: inTail, head };
    const readLog = this.deps.readLog;
    if (!readLog) return { after, rows: this.deps.events.readWithin(after, readChunk, readChunkBytes, types), head };
    const fetched = this.fetched;
    this.fetched = undefined;
    if (fetched?.after === after) return fetched;
    if (this.fetching) return undefined;
    this.fetching = true;
    const resets = this.resets;
    readLog(after, readChunk, readChunkBytes, types).then(
      (rows) => {
        this.fetching = false;
        if (resets === this.resets) this.fetched = { after, rows, head };
        this.deps.wake?.();
      },
      () => {
        this.fetching = false;
        setTimeout(() => this.deps.wake?.(), retryReadMs);
      },
    );
    return undefined;
  }

  /**
   * Reads again, for each spilled key whose queue ran low, its next events up to what was read.
   * Returns true when one stopped for its turn's budget with room left (read on in a later turn).
   * Where the log's reads are round trips (`readLog`), a key's events older than the tail are read
   * without blocking: the key is handed what was read so far, and the rest when its read came.
   */
  private refill(): boolean {
    let more = false;
    const { queues } = this.deps;
    for (const { key, from } of queues.lowKeys()) {
      if (this.refilling.has(key)) continue; // its read is out: what it brings reads on
      const found: EventRecord[] = [];
      let at: Reread = { after: from - 1, room: queues.room(key), done: false };
      let chunks = 0;
      for (; at.room > 0 && !at.done && chunks < chunksPerTurn; chunks++) {
        const rows = this.rereadChunk(key, at.after);
        if (!rows) break; // being read without blocking
        at = this.gatherKey(key, rows, at, this.delivered, found);
      }
      const next = at.done ? 0 : at.after + 1;
      more ||= !at.done && at.room > 0 && chunks === chunksPerTurn;
      queues.refilled(key, found, next);
    }
    return more;
  }

  /**
   * The chunk after `after` read again for `key`: from the tail in memory, else from the log (at
   * once, or where reads are round trips, undefined: a read is sent, and its answer handed to the
   * key when it came, unless the reader was reset meanwhile).
   */
  private rereadChunk(key: string, after: number): BudgetedRows | undefined {
    const { readLog, tail, events } = this.deps;
    const inTail = tail.readWithin(after, readChunk, readChunkBytes, this.types);
    if (inTail) return inTail;
    if (!readLog) return events.readWithin(after, readChunk, readChunkBytes, this.types);
    this.refilling.add(key);
    const resets = this.resets;
    /** Every event through this seq was in the log when the read was sent (a read not cut holds them all). */
    const seen = this.delivered;
    readLog(after, readChunk, readChunkBytes, this.types).then(
      (rows) => {
        if (resets !== this.resets) return;
        this.refilling.delete(key);
        const found: EventRecord[] = [];
        let at = this.gatherKey(key, rows, { after, room: this.deps.queues.room(key), done: false }, this.delivered, found, false);
        // Read whole and not full: it held every event through `seen`, and the reader may have read on since.
        if (!at.done && !rows.cut && at.room > 0 && seen > at.after) at = { ...at, after: seen, done: seen >= this.delivered };
        this.deps.queues.refilled(key, found, at.done ? 0 : at.after + 1);
        this.deps.wake?.();
      },
      () => {
        if (resets !== this.resets) return;
        this.refilling.delete(key);
        this.deps.queues.refilled(key, [], after + 1); // read again from there
        setTimeout(() => this.deps.wake?.(), retryReadMs);
      },
    );
    return undefined;
  }

  /**
   * Takes from a chunk read again after `at.after` the events of `key` through `upTo` (what the
   * reader read), within `at.room`, into `found` (held from now on). Done: every event of the key
   * through `upTo` was read again; `whole`: a chunk not cut holds every event through `upTo` (read
   * from the tail, or at once).
   */
  private gatherKey(key: string, rows: BudgetedRows, at: Reread, upTo: number, found: EventRecord[], whole = true): Reread {
    const { spec } = this.deps;
    let { after, room } = at;
    if (room <= 0) return at; // held its share meanwhile (a redelivery): read again later
    let full = false;
    for (const event of rows.events) {
      if (event.seq > upTo) return { after, room, done: true };
      after = event.seq;
      if (!takes(spec, event) || spec.keyOf(event) !== key) continue;
      found.push(event);
      this.added(event);
      if (--room === 0) {
        full = true;
        break;
      }
    }
    return { after, room, done: after >= upTo || (whole && !full && !rows.cut) };
  }
}

/** Where a key's read again stands: the last seq read, the room left in its queue, whether every spilled event of it was read. */
interface Reread {
  after: number;
  room: number;
  done: boolean;
}
