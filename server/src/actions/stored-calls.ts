import type { Clock } from "../clock.js";
import type { CallRow } from "../store/calls.js";
import type { EventReads } from "../store/events.js";
import { callFromLog, type CallIdentity } from "./records.js";

/** What {@link StoredCalls} reads. */
export interface StoredCallsDeps {
  /** A call's stored row without blocking the event loop (PostgreSQL: the async connection). */
  callRows(callId: string): Promise<CallRow | undefined>;
  /** The log's look-ups that do not block the event loop. */
  logReads: Pick<EventReads, "findById">;
  clock: Clock;
}

/**
 * What is stored of a call before it starts a run: its row, else, for a recorded call whose row
 * the retention deleted, what its events tell (callFromLog), read without blocking the event
 * loop. A run of the call that started after a read began and ended before it answered makes the
 * read stale ({@link ended}): it is read again.
 */
export class StoredCalls {
  /** The reads under way, by call id. */
  private readonly reading = new Map<string, Set<{ stale: boolean }>>();

  constructor(private readonly deps: StoredCallsDeps) {}

  /**
   * What is stored of `call`; undefined as soon as `running(callId)` holds (the caller finds the
   * run). The caller goes on when it resolves, in the same turn: no run can end in between.
   */
  async read(call: CallIdentity, running: (callId: string) => boolean): Promise<CallRow | undefined> {
    const { callRows, logReads, clock } = this.deps;
    let reads = this.reading.get(call.callId);
    if (!reads) this.reading.set(call.callId, (reads = new Set()));
    const read = { stale: true };
    try {
      let row: CallRow | undefined;
      while (read.stale && !running(call.callId)) {
        read.stale = false;
        reads.add(read);
        row = (await callRows(call.callId)) ?? (await callFromLog(logReads, call, clock.now()));
      }
      return row;
    } finally {
      reads.delete(read);
      if (reads.size === 0) this.reading.delete(call.callId);
    }
  }

  /** A run of call `callId` ended: the reads of it under way are stale. */
  ended(callId: string): void {
    for (const read of this.reading.get(callId) ?? []) read.stale = true;
  }
}
