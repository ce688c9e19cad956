import { canRead, type Principal } from "../auth/principal.js";
import type { Clock } from "../clock.js";
import { fail } from "../errors.js";
import type { TimerRowReads } from "../store/timers.js";
import { preview } from "./owed.js";
import { checkTimerIdArgument } from "./timer-checks.js";
import { decodeToken, encodeToken, type TimerPage } from "./timer-pages.js";
import type { TimerKind, TimerRecord } from "../store/timer-records.js";

/** Most preview times GetTimer computes. */
export const maxPreviewCount = 100;

/**
 * ListTimers and GetTimer: reads of the `timers` table as a principal may see them (by their
 * actor's `in`, as events), on PostgreSQL without blocking the event loop. They write nothing, so
 * a standby serves them from its own connection as the leader does.
 */
export class TimerReads {
  constructor(private readonly deps: { reads: TimerRowReads; clock: Clock }) {}

  /**
   * Timers the principal may read, pending ones by next due moment, then spent, disabled or
   * paused ones by last change. `pageSize` already checked (1-1000); `kind` "" for all.
   * INVALID_ARGUMENT for a page token not made here.
   */
  async list(pageSize: number, pageToken: string, kind: TimerKind | "", principal: Principal): Promise<TimerPage> {
    const after = pageToken ? decodeToken(pageToken) : null;
    const rows = await this.deps.reads.list(after, kind, pageSize);
    const last = rows[rows.length - 1];
    return {
      timers: rows.filter((t) => canRead(principal, t)),
      nextPageToken:
        rows.length === pageSize && last
          ? encodeToken(last.nextDueMs === null ? { dueMs: null, id: last.id, updatedAt: last.updatedAt } : { dueMs: last.nextDueMs, id: last.id })
          : "",
    };
  }

  /** Timer `timerId` with its next `previewCount` due moments (ms). NOT_FOUND when unknown or not readable; INVALID_ARGUMENT above 100 (checked first). */
  async get(timerId: string, previewCount: number, principal: Principal): Promise<{ timer: TimerRecord; previewMs: number[] }> {
    checkTimerIdArgument(timerId, "timer_id");
    if (previewCount > maxPreviewCount)
      fail("bad_request", `preview_count must be at most ${maxPreviewCount}`, [{ field: "preview_count", description: `at most ${maxPreviewCount}` }]);
    const timer = await this.deps.reads.get(timerId);
    if (!timer || !canRead(principal, timer)) fail("not_found", `no timer ${JSON.stringify(timerId)}`, [{ field: "timer_id", description: "unknown timer" }]);
    return { timer, previewMs: preview(timer, previewCount, this.deps.clock.now()) };
  }
}
