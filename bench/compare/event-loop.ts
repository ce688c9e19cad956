// The owner's /metrics over a measured window: scraped at the window's start and end. Its
// event-loop delay: prom-client's default metrics `nodejs_eventloop_lag_p99_seconds` and
// `nodejs_eventloop_lag_max_seconds` come from a histogram that it resets at every scrape, so a
// scrape at the window's start (whose figures are dropped) and one at its end give the window's;
// any other scrape in between would cut the window, so both pages are kept for the figures that
// need deltas (the stage histograms: stages.ts). The owner answers a scrape on its event loop: a
// loop stalled when a window opens opens it late, by that stall (which the window then misses).
import { sleep } from "../lib/proc.js";

/** The event-loop delay over a window, ms (NaN when the owner did not answer the scrape). */
export interface LoopDelay {
  p99Ms: number;
  maxMs: number;
}

/** A window's event-loop delay, and the /metrics pages scraped at its start and end ("" for one not answered). */
export interface OwnerWindow extends LoopDelay {
  pages: { start: string; end: string };
}

/** The owner's /metrics page at `url` (http://host:port), "" when it did not answer. */
async function scrape(url: string): Promise<string> {
  try {
    return await (await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(60_000) })).text();
  } catch {
    return "";
  }
}

/** The event-loop delay since the scrape before `page`. */
function loopDelayOf(page: string): LoopDelay {
  const ms = (name: string) => 1000 * Number(new RegExp(`^${name} (\\S+)$`, "m").exec(page)?.[1] ?? NaN);
  return { p99Ms: ms("nodejs_eventloop_lag_p99_seconds"), maxMs: ms("nodejs_eventloop_lag_max_seconds") };
}

/** Opens a window now; `close()` ends it and gives its figures. */
export async function openWindow(url: string): Promise<{ close(): Promise<OwnerWindow> }> {
  const start = await scrape(url);
  return {
    close: async () => {
      const end = await scrape(url);
      return { ...loopDelayOf(end), pages: { start, end } };
    },
  };
}

/**
 * Runs `body` with a window from `fromMs` after the call to `toMs` after it (undefined: until
 * `body` ends): the closed loops' measured window is their warm-up's end to the window's end.
 */
export async function loopDuring<T>(url: string, body: () => Promise<T>, fromMs: number, toMs?: number): Promise<{ result: T; loop: OwnerWindow }> {
  const t0 = performance.now();
  const opened = sleep(fromMs).then(() => openWindow(url));
  const closed = toMs === undefined ? undefined : opened.then(async (w) => (await sleep(t0 + toMs - performance.now()), w.close()));
  const result = await body();
  const loop = closed ? await closed : await (await opened).close();
  return { result, loop };
}
