import type { Principal } from "../auth/principal.js";
import type { Clock } from "../clock.js";
import type { CauseRef } from "../log/causes.js";
import { derivedId, newId } from "../log/ids.js";
import { fail } from "../errors.js";
import type { PluginRegistry } from "../plugins/registry.js";
import type { Committer } from "../store/committer.js";
import type { EventRecord } from "../store/events.js";
import type { TimerControlStatements } from "../store/timer-control.js";
import type { TimerRowReads, TimerStatements } from "../store/timers.js";
import { occurrenceId, triggeredOccurrenceId } from "./occurrence-ids.js";
import { backfillMoments, resumeDue } from "./owed.js";
import { pastToleranceMs } from "./spec-checks.js";
import { checkCauseRole, checkControlShape, checkRecurring, type TimerAccess } from "./timer-checks.js";
import { controlEvent } from "./timer-events.js";
import { changeEventId, recorded, timerReadAhead } from "./timer-replay.js";
import type { BackfilledOccurrence, BackfillInput, PauseInput } from "./timer-requests.js";
import type { TimerKind, TimerRecord } from "../store/timer-records.js";
import { blankTimer } from "./timers.js";

// The control requests on a timer that is set: PauseTimer, ResumeTimer, TriggerTimer and
// BackfillTimer, with the checks and failure semantics of the Timers class comment (service.ts).

/** What {@link TimerControl} needs (a part of the timer requests' deps). */
export interface TimerControlDeps {
  registry: PluginRegistry;
  committer: Committer;
  timers: TimerStatements;
  /** Timers read without blocking the event loop (a backfill's moments are known before its unit). */
  reads: Pick<TimerRowReads, "get">;
  control: TimerControlStatements;
  clock: Clock;
  /** The owner's region: a declared schedule resumed runs here only when it is its region's. */
  region: number;
  /** Told after each commit that changed when a timer is next due (re-arms the clock). */
  changed(nextDueMs: number | null): void;
}

/** PauseTimer, ResumeTimer, TriggerTimer and BackfillTimer (Timers hands them over). */
export class TimerControl {
  constructor(
    private readonly deps: TimerControlDeps,
    private readonly access: TimerAccess,
  ) {}

  /**
   * Pauses recurring timer `req.timerId`: it claims nothing (no next due moment) until
   * resumed; occurrences already claimed still run and retry. Records `timer.paused` (data:
   * timer_id, kind, action, note, held_due_ms) and returns the timer; one already paused is left
   * alone (`unchanged`; nothing recorded from outside, under a cause a `timer.paused` with
   * `unchanged: true`, `paused_at_ms` and `pause_note` of the pause it found, so a retry finds
   * it). Under a cause the same request run again is answered from its event.
   * FAILED_PRECONDITION for a delay or a one-shot (`at`).
   */
  async pause(req: PauseInput, principal: Principal): Promise<{ timer: TimerRecord; unchanged: boolean }> {
    checkControlShape(req.timerId, req.note);
    checkCauseRole(req.cause, principal, "pause timers");
    const actor = this.access.actorOf(req.cause, principal);
    const eventId = req.cause ? changeEventId(req.cause, { op: "pause", timer_id: req.timerId, note: req.note }) : null;
    return this.deps.committer.submit(
      (tx) => {
        const prior = recorded(tx, eventId, "timer.paused");
        if (prior) return { timer: this.controlledFromLog(prior), unchanged: prior.data.unchanged === true }; // the same request run again
        const timer = this.access.managed(req.timerId, req.cause, principal, "pause");
        checkRecurring(timer, "paused");
        if (timer.paused) {
          if (eventId)
            tx.append(
              controlEvent(
                "timer.paused",
                timer,
                { note: req.note, held_due_ms: timer.paused.heldDueMs, unchanged: true, paused_at_ms: timer.paused.atMs, pause_note: timer.paused.note },
                req.cause,
                actor,
                eventId,
              ),
            );
          return { timer, unchanged: true };
        }
        this.deps.control.setPaused(timer.id, { note: req.note, atMs: tx.now, heldDueMs: timer.nextDueMs }, null, tx.now);
        tx.append(controlEvent("timer.paused", timer, { note: req.note, held_due_ms: timer.nextDueMs }, req.cause, actor, eventId ?? newId()));
        return { timer: this.deps.timers.get(timer.id) as TimerRecord, unchanged: false };
      },
      timerReadAhead(this.deps.timers, req.timerId, eventId),
    );
  }

  /**
   * Resumes paused timer `req.timerId`. Its next due moment: the one it held if still
   * ahead; else at most one missed occurrence, by its catch-up policy ({@link resumeDue}), due
   * at once; else its next moment. A declared schedule disabled or of another region stays
   * without one. Records `timer.resumed` (data: timer_id, kind, action, note, paused_at_ms,
   * next_due_ms); one not paused is left alone (`unchanged`; under a cause recorded with
   * `unchanged: true` and `paused_at_ms` null, as for {@link pause}). Under a cause the same
   * request run again is answered from its event. FAILED_PRECONDITION for a delay or a
   * one-shot.
   */
  async resume(req: PauseInput, principal: Principal): Promise<{ timer: TimerRecord; unchanged: boolean }> {
    checkControlShape(req.timerId, req.note);
    checkCauseRole(req.cause, principal, "resume timers");
    const actor = this.access.actorOf(req.cause, principal);
    const eventId = req.cause ? changeEventId(req.cause, { op: "resume", timer_id: req.timerId, note: req.note }) : null;
    const result = await this.deps.committer.submit(
      (tx) => {
        const prior = recorded(tx, eventId, "timer.resumed");
        if (prior) return { timer: this.controlledFromLog(prior), unchanged: prior.data.unchanged === true, fresh: false }; // the same request run again
        const timer = this.access.managed(req.timerId, req.cause, principal, "resume");
        checkRecurring(timer, "paused");
        if (!timer.paused) {
          if (eventId)
            tx.append(
              controlEvent(
                "timer.resumed",
                timer,
                { note: req.note, paused_at_ms: null, next_due_ms: timer.nextDueMs, unchanged: true },
                req.cause,
                actor,
                eventId,
              ),
            );
          return { timer, unchanged: true, fresh: true };
        }
        const runs = timer.kind !== "declared" || (!timer.disabled && timer.region === this.deps.region);
        const nextDueMs = runs ? resumeDue(timer, tx.now) : null;
        this.deps.control.setPaused(timer.id, null, nextDueMs, tx.now);
        tx.append(
          controlEvent(
            "timer.resumed",
            timer,
            { note: req.note, paused_at_ms: timer.paused.atMs, next_due_ms: nextDueMs },
            req.cause,
            actor,
            eventId ?? newId(),
          ),
        );
        return { timer: this.deps.timers.get(timer.id) as TimerRecord, unchanged: false, fresh: true };
      },
      timerReadAhead(this.deps.timers, req.timerId, eventId),
    );
    if (result.fresh) this.deps.changed(result.timer.nextDueMs);
    return { timer: result.timer, unchanged: result.unchanged };
  }

  /**
   * Makes one occurrence of timer `timerId` now, paused or not, beside its schedule: due at
   * the commit time, with its own occurrence id (derived from the cause under one, so a retried
   * run triggers once), calling its action with its input as its actor, with its retries
   *, whatever its lateness bound and overlap policy; not counted in `occurrences` nor
   * toward `max_count`. Records `timer.triggered` (data: timer_id, kind, action, occurrence_id,
   * due_ms). Under a cause the same request run again is answered from that event, even
   * when the timer was removed since. FAILED_PRECONDITION for a delay, or when its action is no
   * longer declared.
   */
  async trigger(timerId: string, cause: CauseRef | null, principal: Principal): Promise<{ occurrenceId: string; dueMs: number }> {
    checkControlShape(timerId, "");
    checkCauseRole(cause, principal, "trigger timers");
    const actor = this.access.actorOf(cause, principal);
    const id = triggeredOccurrenceId(timerId, cause ? derivedId(cause.eventId, cause.position, { op: "trigger", timer: timerId }) : newId());
    const eventId = cause ? changeEventId(cause, { op: "trigger", timer_id: timerId }) : null;
    const result = await this.deps.committer.submit(
      (tx) => {
        const prior = recorded(tx, eventId, "timer.triggered");
        if (prior) return { occurrenceId: prior.data.occurrence_id as string, dueMs: prior.data.due_ms as number, fresh: false }; // the same request run again
        const timer = this.access.managed(timerId, cause, principal, "trigger");
        if (timer.kind === "delay")
          fail("failed_precondition", `timer ${JSON.stringify(timerId)} is a delay: it makes one call; cancel it (CancelDelay) or call its action`);
        if (!this.deps.registry.action(timer.action))
          fail("failed_precondition", `timer ${JSON.stringify(timerId)} calls ${timer.action}, which is no longer declared`);
        this.deps.control.queueTriggered(
          {
            id,
            timerId,
            dueMs: tx.now,
            action: timer.action,
            input: timer.input,
            actor: timer.actor,
            overdue: { kind: "unbounded" },
            retryDelaysMs: timer.retryDelaysMs,
          },
          tx.now,
        );
        tx.append(controlEvent("timer.triggered", timer, { occurrence_id: id, due_ms: tx.now }, cause, actor, eventId ?? newId()));
        return { occurrenceId: id, dueMs: tx.now, fresh: true };
      },
      timerReadAhead(this.deps.timers, timerId, eventId),
    );
    if (result.fresh) this.deps.changed(result.dueMs);
    return { occurrenceId: result.occurrenceId, dueMs: result.dueMs };
  }

  /**
   * Makes one occurrence of recurring timer `req.timerId` per fire time in [start, end),
   * paused or not: each due at its own moment (with the timer's jitter, so it is the occurrence
   * the schedule would have made: same id) and called in due order, whatever the lateness bound
   * and the timer's own bounds and count; moments already made (or claimed) are not made again
   * (`existing`). Calls may overlap like any occurrences. Records `timer.backfilled` (data:
   * timer_id, kind, action, start_ms, end_ms, occurrence_ids, existing) when it made any; under
   * a cause always, with `moments_ms` (every fire time of the range, in order), and the same
   * request run again is answered from that event, whatever became of the timer.
   * INVALID_ARGUMENT for `end` not after `start`, in the future, or over 1,000 fire times;
   * FAILED_PRECONDITION for a delay or a one-shot.
   */
  async backfill(req: BackfillInput, principal: Principal): Promise<BackfilledOccurrence[]> {
    checkControlShape(req.timerId, "");
    if (req.endMs <= req.startMs)
      fail("bad_request", `end ${iso(req.endMs)} must be after start ${iso(req.startMs)}`, [{ field: "end", description: "not after start" }]);
    const now = this.deps.clock.now();
    if (req.endMs > now + pastToleranceMs)
      fail("bad_request", `end ${iso(req.endMs)} is in the future (now ${iso(now)}): backfill covers moments that have passed`, [
        { field: "end", description: "in the future" },
      ]);
    checkCauseRole(req.cause, principal, "backfill timers");
    const actor = this.access.actorOf(req.cause, principal);
    const eventId = req.cause ? changeEventId(req.cause, { op: "backfill", timer_id: req.timerId, start_ms: req.startMs, end_ms: req.endMs }) : null;
    const ids = await this.backfilledIds(req);
    const readAhead = timerReadAhead(this.deps.timers, req.timerId, eventId);
    const result = await this.deps.committer.submit(
      (tx) => {
        const prior = recorded(tx, eventId, "timer.backfilled");
        if (prior) {
          // The same request run again: the answer its first run got.
          const made = new Set(prior.data.occurrence_ids as string[]);
          return {
            out: (prior.data.moments_ms as number[]).map((dueMs) => ({
              occurrenceId: occurrenceId(req.timerId, dueMs),
              dueMs,
              existing: !made.has(occurrenceId(req.timerId, dueMs)),
            })),
            fresh: false,
          };
        }
        const timer = this.access.managed(req.timerId, req.cause, principal, "backfill");
        checkRecurring(timer, "backfilled");
        if (!this.deps.registry.action(timer.action))
          fail("failed_precondition", `timer ${JSON.stringify(timer.id)} calls ${timer.action}, which is no longer declared`);
        // Each next tried at its own due moment: the retry claim takes them in that order.
        const queued = backfillMoments(timer, req.startMs, req.endMs).map((dueMs) => ({
          id: occurrenceId(timer.id, dueMs),
          timerId: timer.id,
          dueMs,
          action: timer.action,
          input: timer.input,
          actor: timer.actor,
          overdue: { kind: "unbounded" as const },
          retryDelaysMs: timer.retryDelaysMs,
        }));
        const written = this.deps.control.queueBackfilled(queued, tx.now);
        const out: BackfilledOccurrence[] = queued.map((o) => ({ occurrenceId: o.id, dueMs: o.dueMs, existing: !written.has(o.id) }));
        const made = out.filter((o) => !o.existing);
        if (made.length > 0 || eventId) {
          const moments = eventId ? { moments_ms: out.map((o) => o.dueMs) } : {};
          tx.append(
            controlEvent(
              "timer.backfilled",
              timer,
              { start_ms: req.startMs, end_ms: req.endMs, occurrence_ids: made.map((o) => o.occurrenceId), existing: out.length - made.length, ...moments },
              req.cause,
              actor,
              eventId ?? newId(),
            ),
          );
        }
        return { out, fresh: true };
      },
      ids.length > 0 ? { ...readAhead, readAhead: [readAhead.readAhead, { from: this.deps.control.occurrenceIds, keys: ids }] } : readAhead,
    );
    const first = result.fresh ? result.out.find((o) => !o.existing) : undefined;
    if (first) this.deps.changed(first.dueMs);
    return result.out;
  }

  /**
   * The occurrence ids BackfillTimer `req` would make of its timer as stored now, to read ahead of
   * its batch where the store does (PostgreSQL): the unit then writes the new ones answering nothing (unless the timer changed
   * meanwhile: then it asks by writing). None for a timer that cannot be backfilled, or a range
   * that cannot be: the unit says why, after the checks that come first.
   */
  private async backfilledIds(req: BackfillInput): Promise<string[]> {
    if (!this.deps.control.occurrenceIds.readsAhead) return []; // SQLite: its writes answer at once
    const stored = await this.deps.reads.get(req.timerId);
    if (!stored || stored.kind === "delay" || stored.spec.kind === "at") return [];
    try {
      return backfillMoments(stored, req.startMs, req.endMs).map((dueMs) => occurrenceId(stored.id, dueMs));
    } catch {
      return [];
    }
  }

  /**
   * The answer to a PauseTimer or ResumeTimer under a cause whose event `prior` is in the log
   *: the timer as that event left it, whatever became of it since: the stored timer (or,
   * once removed, one with only the event's id, kind and action) with the pause state and next
   * due moment the event recorded.
   */
  private controlledFromLog(prior: EventRecord): TimerRecord {
    const data = prior.data;
    const id = data.timer_id as string;
    const stored = this.deps.timers.get(id);
    const base =
      stored && stored.kind === data.kind && stored.action === data.action
        ? stored
        : { ...blankTimer(id, data.kind as TimerKind, prior.at, this.deps.region), action: data.action as string };
    if (prior.type === "timer.resumed") return { ...base, paused: null, nextDueMs: (data.next_due_ms as number | null) ?? null };
    const unchanged = data.unchanged === true;
    const paused = {
      note: (unchanged ? data.pause_note : data.note) as string,
      atMs: unchanged ? (data.paused_at_ms as number) : prior.at,
      heldDueMs: (data.held_due_ms as number | null) ?? null,
    };
    return { ...base, paused, nextDueMs: null };
  }
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
