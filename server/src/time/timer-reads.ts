import { recordedInput, type ActionEntry } from "../actions/declaration.js";
import { canRead, type Principal } from "../auth/principal.js";
import { ReadAccess, type ReadDeclarations } from "../auth/read-access.js";
import type { Clock } from "../clock.js";
import { fail } from "../errors.js";
import type { TimerRowReads } from "../store/timers.js";
import { preview } from "./owed.js";
import { checkTimerIdArgument } from "./timer-checks.js";
import { decodeToken, encodeToken, type TimerPage } from "./timer-pages.js";
import type { TimerKind, TimerRecord } from "../store/timer-records.js";
import type { TimerView } from "./timers.js";

/** Most preview times GetTimer computes. */
export const maxPreviewCount = 100;

/** What the reads need of the registered plugins: the read rule's declarations and the actions' private fields. */
export interface TimerReadDeclarations extends ReadDeclarations {
  /** Action `name` (`plugin.action`), if declared. */
  action(name: string): Pick<ActionEntry, "privateFields"> | undefined;
}

/**
 * ListTimers and GetTimer: reads of the `timers` table as a principal may see them (by their
 * actor's `in`, as events; their input as their action's `action.*` and `timer.*` events, see
 * {@link TimerReads.view}), on PostgreSQL without blocking the event loop. They write nothing, so
 * a standby serves them from its own connection as the leader does.
 */
export class TimerReads {
  private readonly access: ReadAccess;

  constructor(private readonly deps: { reads: TimerRowReads; clock: Clock; registry: TimerReadDeclarations }) {
    this.access = new ReadAccess(deps.registry);
  }

  /**
   * `timer` as `principal` may read it (one it reaches: the space is checked before). The input
   * is its action's work, read as that action's `action.*` and `timer.*` events are
   * ({@link ReadAccess.mayReadActionWork}): withheld (empty, `inputWithheld`) from a principal
   * the rule does not admit, the timer's own actor included; shown without the action's
   * `private_fields`, as `action.started` records it, unless the principal is an admin or an
   * executor that may host the action's plugin ({@link ReadAccess.readsPrivateInput}).
   */
  view(principal: Principal, timer: TimerRecord): TimerView {
    if (!this.access.mayReadActionWork(principal, timer.action)) return { ...timer, input: {}, inputWithheld: true };
    const entry = this.access.readsPrivateInput(principal, timer.action) ? undefined : this.deps.registry.action(timer.action);
    return { ...timer, input: entry ? recordedInput(entry, timer.input) : timer.input, inputWithheld: false };
  }

  /**
   * Timers the principal may read (each as {@link view} shows it), pending ones by next due
   * moment, then spent, disabled or paused ones by last change. `pageSize` already checked (1-1000); `kind` "" for all.
   * INVALID_ARGUMENT for a page token not made here.
   */
  async list(pageSize: number, pageToken: string, kind: TimerKind | "", principal: Principal): Promise<TimerPage> {
    const after = pageToken ? decodeToken(pageToken) : null;
    const rows = await this.deps.reads.list(after, kind, pageSize);
    const last = rows[rows.length - 1];
    return {
      timers: rows.filter((t) => canRead(principal, t)).map((t) => this.view(principal, t)),
      nextPageToken:
        rows.length === pageSize && last
          ? encodeToken(last.nextDueMs === null ? { dueMs: null, id: last.id, updatedAt: last.updatedAt } : { dueMs: last.nextDueMs, id: last.id })
          : "",
    };
  }

  /** Timer `timerId` as the principal may read it ({@link view}) with its next `previewCount` due moments (ms). NOT_FOUND when unknown or not readable; INVALID_ARGUMENT above 100 (checked first). */
  async get(timerId: string, previewCount: number, principal: Principal): Promise<{ timer: TimerView; previewMs: number[] }> {
    checkTimerIdArgument(timerId, "timer_id");
    if (previewCount > maxPreviewCount)
      fail("bad_request", `preview_count must be at most ${maxPreviewCount}`, [{ field: "preview_count", description: `at most ${maxPreviewCount}` }]);
    const timer = await this.deps.reads.get(timerId);
    if (!timer || !canRead(principal, timer)) fail("not_found", `no timer ${JSON.stringify(timerId)}`, [{ field: "timer_id", description: "unknown timer" }]);
    return { timer: this.view(principal, timer), previewMs: preview(timer, previewCount, this.deps.clock.now()) };
  }
}
