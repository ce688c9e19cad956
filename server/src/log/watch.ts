import type { EventReads, EventRecord } from "../store/events.js";
import type { HeadSignal } from "./head.js";
import { readPage, readStart, type LogQuery } from "./read.js";

/** A watch stream's items: events in seq order, and one `caughtUp` marker. */
export type WatchItem = { event: EventRecord } | { caughtUp: number };

/** Events read per step; bounds a watcher's memory. */
const pageSize = 256;

/**
 * Follows the log: catches up from `query.afterSeq` reading pages of the
 * log, yields `caughtUp` once at the head, then waits for commits and
 * reads again. Nothing is pushed to a watcher: it pulls pages as its
 * consumer pulls items, so a slow or stalled reader holds at most one page
 * and never makes the owner buffer (back-pressure comes from the transport
 * awaiting each write). An event `query.where` cannot be applied to does not
 * match, as for ReadLog: it never ends the watch. Between pages of a catch-up
 * it lets other work run, so a long scan (a selective or costly `where`) never
 * holds the owner for more than a page. Ends when `signal` aborts. With `start` (where the log
 * starts, and whether to start there), a watch that retention overtook (the events after its
 * position were removed) ends with OUT_OF_RANGE, or goes on from the log's start.
 */
export async function* watchLog(
  events: Pick<EventReads, "readWithin">,
  head: HeadSignal,
  query: LogQuery,
  signal: AbortSignal,
  start?: { firstSeq: () => Promise<number>; fromFirstSeq: boolean },
): AsyncGenerator<WatchItem> {
  let afterSeq = query.afterSeq;
  let caughtUp = false;
  while (!signal.aborted) {
    if (start && afterSeq > 0) afterSeq = readStart(afterSeq, await start.firstSeq(), start.fromFirstSeq, "after_seq");
    const headSeq = head.head;
    const page = await readPage(events, { ...query, afterSeq }, pageSize, headSeq);
    for (const event of page.events) yield { event };
    afterSeq = page.scannedTo;
    if (!page.atHead) {
      await new Promise((resolve) => setImmediate(resolve));
      continue;
    }
    if (!caughtUp) {
      caughtUp = true;
      yield { caughtUp: headSeq }; // the log's head, also when the watch starts past it (after_seq > head)
    }
    await head.waitPast(afterSeq, signal);
  }
}
