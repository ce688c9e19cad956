import { allows, canRead, resolveActor, type Principal } from "../auth/principal.js";
import { canonicalJson } from "../log/canonical.js";
import { causeActor, type LiveCauses } from "../log/causes.js";
import type { CauseRef } from "../log/emit.js";
import { checkId, derivedId, newId } from "../log/ids.js";
import { asItem, fail, forItem } from "../errors.js";
import type { ActionEntry } from "../actions/index.js";
import type { Clock } from "../clock.js";
import type { PluginRegistry } from "../plugins/registry.js";
import type { Committer, Tx } from "../store/committer.js";
import type { ActorRecord, EventRecord, EventStatements } from "../store/events.js";
import { overdueToJson, policyToJson, specToJson, type TimerControlStatements, type TimerCursor, type TimerStatements } from "../store/timers.js";
import type { DelayChains } from "./chains.js";
import { defaultDstPolicy } from "./cron.js";
import {
  anchorFor,
  backfillMoments,
  checkAt,
  checkMs,
  checkSchedulePolicy,
  defaultRetryDelaysMs,
  defaultSchedulePolicy,
  firstDue,
  isDefaultPolicy,
  maxHorizonMs,
  maxNoteLength,
  occurrenceId,
  pastToleranceMs,
  preview,
  resumeDue,
  triggeredOccurrenceId,
  type Overdue,
  type SchedulePolicy,
  type TimerKind,
  type TimerRecord,
  type TimerSpec,
} from "./timers.js";
import { canonicalZone, isValidZoneName } from "./zones.js";
import { sha256Hex } from "../sha256.js";

/** A Schedule, as parsed from the request. */
export interface ScheduleInput {
  /** The timer id; "" for one derived under the cause or, from outside, a fresh UUIDv7. */
  timerId: string;
  /** `plugin.action`. */
  action: string;
  input: Record<string, unknown>;
  spec: TimerSpec;
  overdue: Overdue;
  /** Jitter, bounds, maximum count, overlap and catch-up; absent: the defaults. */
  policy?: SchedulePolicy;
  /** Set when code under a delivery or an action run schedules. */
  cause: CauseRef | null;
  /** Asserted actor fields (from outside only). */
  actor: Partial<ActorRecord> | undefined;
}

/** A Delay, as parsed from the request. */
export interface DelayInput {
  action: string;
  input: Record<string, unknown>;
  /** After `ms` from now, or at `atMs` (ms since the epoch). */
  when: { kind: "interval"; ms: number } | { kind: "at"; atMs: number };
  /** Required by the API. */
  overdue: Overdue;
  cause: CauseRef | null;
  /** Start a new chain instead of continuing the cause's. */
  freshChain?: boolean;
  actor: Partial<ActorRecord> | undefined;
  /** The client's delay id (from outside only); ""/absent: derived under a cause, else a fresh UUIDv7. */
  delayId?: string;
}

/** Largest batch accepted by one DelayBatch. */
export const maxDelayBatch = 10_000;

/** A PauseTimer or ResumeTimer, as parsed from the request. */
export interface PauseInput {
  timerId: string;
  /** Why; at most {@link maxNoteLength} characters, recorded in the event. */
  note: string;
  cause: CauseRef | null;
}

/** A BackfillTimer, as parsed from the request: the range [startMs, endMs), ms since the epoch. */
export interface BackfillInput {
  timerId: string;
  startMs: number;
  endMs: number;
  cause: CauseRef | null;
}

/** One occurrence of a backfill. */
export interface BackfilledOccurrence {
  /** Occurrence id (also its call id). */
  occurrenceId: string;
  /** Its due moment, ms since the epoch (the action's `scheduled`). */
  dueMs: number;
  /** True when it had been made before (not made again). */
  existing: boolean;
}

/** A page of ListTimers. */
export interface TimerPage {
  timers: TimerRecord[];
  /** "" at the end. */
  nextPageToken: string;
}

/** What the timer requests need. */
export interface TimersDeps {
  registry: PluginRegistry;
  committer: Committer;
  timers: TimerStatements;
  /** Policies, pause, trigger, backfill. */
  control: TimerControlStatements;
  events: EventStatements;
  live: LiveCauses;
  clock: Clock;
  /** The owner's region: stamped on the timers and delays it sets. */
  region: number;
  /** Chain depths of delays and their maximum; absent: every delay at depth 0. */
  chains?: DelayChains;
  /** Told after each commit that set a timer, with its next due moment (re-arms the clock). */
  changed(nextDueMs: number | null): void;
}

/** Most preview times GetTimer computes. */
export const maxPreviewCount = 100;

/**
 * Checks a timer or delay id a client chose (`field`: its request field): an id as {@link checkId}
 * wants, without "/" (`plugin/schedule` ids belong to declared schedules). Throws
 * INVALID_ARGUMENT naming `field`.
 */
function checkClientTimerId(id: string, field: string): void {
  checkId(id, field);
  if (id.includes("/")) fail("bad_request", `${field} ${JSON.stringify(id)} may not contain "/": ids of the form plugin/schedule belong to declared schedules`, [{ field, description: "no / (reserved for declared schedules)" }]);
}

/**
 * Timer requests: Schedule, Unschedule, Delay, CancelDelay,
 * ListTimers, GetTimer, PauseTimer, ResumeTimer, TriggerTimer, BackfillTimer.
 *
 * The order of the checks, the same for every request (nothing is written when one fails):
 * 1. INVALID_ARGUMENT for the request's shape: required fields, ids, the spec (cron syntax,
 *    zone, DST policy, `at`, `every_ms`), the policy, `interval_ms`, notes, ranges. These need
 *    no lookup and reveal nothing about the owner's state, so anyone gets them first.
 * 2. PERMISSION_DENIED for who is acting: only executors and admins act under a cause; asserted
 *    actor fields must be the principal's.
 * 3. NOT_FOUND for what the request names: an undeclared action; a timer that does not exist
 *    or that the caller may not read (so its existence does not leak).
 * 4. PERMISSION_DENIED for that thing: calling the action needs its `allow` (like CallAction);
 *    managing a timer (unschedule, cancel, pause, resume, trigger, backfill) needs the admin
 *    role, work under a cause, or, for runtime timers and delays, the allow of its action;
 *    declared schedules are managed by admins (and code under a cause) only.
 * 5. INVALID_ARGUMENT for the input against the action's schema (shown only to callers who may
 *    call it, so the schema does not leak).
 * 6. FAILED_PRECONDITION for the timer's state (a delay cannot be paused, ...).
 *
 * Failure semantics: each change is one committer unit holding the `timers` row (and any
 * occurrence rows) and its event (`timer.scheduled`, `.unscheduled`, `.paused`, `.resumed`,
 * `.triggered`, `.backfilled`, with the actor of whoever made the change and the cause it was
 * made under), so a change exists exactly when its event does. The same timer id replaces
 * (Schedule; the replacement is not paused); under a cause, ids are derived from the cause and
 * position and a retried run that makes the same request changes nothing. Schedule,
 * Unschedule, Delay and CancelDelay under a cause record their event with an id derived from
 * the cause, the position and the request ({@link changeEventId}); the same request run again
 * (a retried delivery, an action called again) finds that event and is answered from it, first
 * of all, whatever happened to the timer since: the same timer or delay id and due moment, an
 * Unschedule or CancelDelay that succeeded (not NOT_FOUND because the first run removed it),
 * nothing armed or removed again. PauseTimer, ResumeTimer, TriggerTimer and BackfillTimer under
 * a cause do the same with `timer.paused` / `.resumed` / `.triggered` / `.backfilled` (each
 * answered as the event left the timer, see {@link controlledFromLog}); under a cause a pause
 * of a paused timer or a resume of a running one still records its event, with `unchanged:
 * true`, and a backfill that made nothing its `timer.backfilled` (no occurrence ids), so its
 * retry finds it and gets the same answer (from outside such a no-op records nothing). A cancel
 * racing the claim of the same occurrence is ordered by the committer: either the cancel wins
 * (never called) or the claim does (NOT_FOUND "already made").
 */
export class Timers {
  constructor(private readonly deps: TimersDeps) {}

  /** Sets (or replaces) a runtime timer; returns it as stored. Errors in the class comment's order; FAILED_PRECONDITION when the id is a delay's or a declared schedule's. */
  async schedule(req: ScheduleInput, principal: Principal): Promise<TimerRecord> {
    // 1. shape
    if (req.action === "") fail("bad_request", "action is required", [{ field: "action", description: "required" }]);
    if (req.timerId !== "") checkClientTimerId(req.timerId, "timer_id");
    const spec = canonicalSpec(req.spec);
    const policy = checkSchedulePolicy(req.policy ?? defaultSchedulePolicy, spec);
    const policyJson = isDefaultPolicy(policy) ? {} : { policy: policyToJson(policy) };
    const eventId = req.cause ? changeEventId(req.cause, { op: "schedule", timer_id: req.timerId, action: req.action, input: req.input, spec: specToJson(spec), overdue: overdueToJson(req.overdue), ...policyJson }) : null;
    const now = this.deps.clock.now();
    const checkedAt = spec.kind === "at" && this.armedBefore(eventId) ? Math.min(now, spec.atMs) : now; // a repeat's `at` may have passed since
    firstDue(spec, checkedAt, "spec", policy); // the spec and its bounds (the jitter comes with the id)
    checkNoActorUnderCause(req);
    // 2-5. who, the action, its allow, the input
    checkCauseRole(req.cause, principal, "schedule");
    const entry = this.action(req.action);
    const who = this.who(entry, req, principal, "schedule");
    checkInput(entry, req.input);
    const id = req.timerId || (req.cause ? derivedId(req.cause.eventId, req.cause.position, { op: "schedule", action: entry.name, input: req.input, spec: specToJson(spec), ...policyJson }) : newId());
    const stored: SchedulePolicy = { ...policy, anchorMs: anchorFor(spec, now) };
    const nextDueMs = firstDue(spec, checkedAt, "spec", stored, id);
    const result = await this.deps.committer.submit((tx) => {
      const prior = recorded(tx, eventId, "timer.scheduled");
      if (prior) return { timer: this.scheduledFromLog(prior, { action: entry.name, input: req.input, spec, overdue: req.overdue, policy }), fresh: false }; // the same request run again
      const existing = this.deps.timers.get(id);
      // 6. state
      if (existing && existing.kind !== "runtime") fail("failed_precondition", `timer ${JSON.stringify(id)} is a ${existing.kind === "delay" ? "delay (use CancelDelay)" : "declared schedule (patch its plugin)"}; choose another timer_id`);
      const fresh: TimerRecord = { ...blankTimer(id, "runtime", tx.now, this.deps.region), action: entry.name, input: req.input, spec, nextDueMs, actor: who.actor, overdue: req.overdue, policy: stored, occurrences: existing?.occurrences ?? 0 };
      // A derived id names this request: a timer under it set by a run whose event has another id (before ids of timer events were derived) is this one.
      if (existing && req.cause && req.timerId === "" && sameDefinition(existing, fresh)) return { timer: existing, fresh: false };
      return { timer: this.put(tx, fresh, who, existing, eventId ?? newId()), fresh: true };
    });
    if (result.fresh) this.deps.changed(result.timer.nextDueMs);
    return result.timer;
  }

  /** Stops a runtime timer. NOT_FOUND when unknown or a one-shot (`at`) already made (under a cause, the same request run again succeeds: answered from the log); FAILED_PRECONDITION for a delay or a declared schedule. */
  async unschedule(timerId: string, cause: CauseRef | null, principal: Principal): Promise<void> {
    await this.remove(timerId, "runtime", cause, principal);
  }

  /**
   * Arms a delayed call; returns its id and due moment (ms; under a cause, the same request
   * run again gets the first run's, from the log). Errors as for Schedule; `at` more than 1 s
   * past is INVALID_ARGUMENT.
   *
   * From outside, a client-given `delayId` makes the Delay safe to retry (like Emit's id and
   * Schedule's timer_id): its `timer.scheduled` event gets an id derived from the delay id alone
   * ({@link clientDelayEventId}) and records a digest of the request (`delay_request`: action,
   * input, interval_ms or at, overdue). A Delay whose delay id has that event is answered from
   * it, first of all, as a retry under a cause is: the same request gets the same id and due
   * moment and nothing is armed or recorded, whether the delay is pending, made, cancelled or
   * swept; another request is ALREADY_EXISTS. A delay id that names a schedule (runtime or
   * declared) is FAILED_PRECONDITION, as Schedule with a delay's id is. Under a cause
   * `delayId` must be empty (INVALID_ARGUMENT): the id is derived there.
   */
  async delay(req: DelayInput, principal: Principal): Promise<{ delayId: string; dueMs: number }> {
    const unit = await this.prepareDelay(req, principal);
    const result = await this.deps.committer.submit(unit);
    if (result.fresh) this.deps.changed(result.dueMs);
    return { delayId: result.delayId, dueMs: result.dueMs };
  }

  /**
   * Arms several delays at once (DelayBatch): every one is checked first, then all commit in one
   * transaction or none do. An error names the delay by its index (`delays[3].delay_id`). The same
   * request twice in one batch (same delay id) arms it once and answers it twice.
   */
  async delayBatch(reqs: DelayInput[], principal: Principal): Promise<{ delayId: string; dueMs: number }[]> {
    if (reqs.length === 0) fail("bad_request", "no delays to arm", [{ field: "delays", description: "empty" }]);
    if (reqs.length > maxDelayBatch) fail("too_large", `a batch holds at most ${maxDelayBatch} delays, got ${reqs.length}`, [{ field: "delays", description: "too many" }]);
    const units = await Promise.all(reqs.map((req, i) => this.prepareDelay(req, principal).catch((e: unknown) => Promise.reject(forItem(`delays[${i}]`, e)))));
    const results = await this.deps.committer.submit((tx) => units.map((unit, i) => asItem(`delays[${i}]`, () => unit(tx))));
    const fresh = results.filter((r) => r.fresh).map((r) => r.dueMs);
    if (fresh.length > 0) this.deps.changed(Math.min(...fresh));
    return results.map(({ delayId, dueMs }) => ({ delayId, dueMs }));
  }

  /** A delay's checks (shape, action, who, input, chain); resolves with the unit of work that arms it. */
  private async prepareDelay(req: DelayInput, principal: Principal): Promise<(tx: Tx) => { delayId: string; dueMs: number; fresh: boolean }> {
    // 1. shape
    if (req.action === "") fail("bad_request", "action is required", [{ field: "action", description: "required" }]);
    const clientId = req.delayId ?? "";
    if (clientId !== "") {
      if (req.cause) fail("bad_request", "delay_id must be empty under a cause: the delay id is derived from the cause", [{ field: "delay_id", description: "empty under a cause" }]);
      checkClientTimerId(clientId, "delay_id");
    }
    const when = req.when.kind === "interval" ? { interval_ms: req.when.ms } : { at: req.when.atMs };
    const eventId = req.cause ? changeEventId(req.cause, { op: "delay", action: req.action, input: req.input, when, overdue: overdueToJson(req.overdue), fresh_chain: req.freshChain ?? false }) : clientId ? clientDelayEventId(clientId) : null;
    // Looked up once, only where it is read: an `at` checked against the clock, a retry's chain.
    const armed = (req.when.kind === "at" || (req.cause !== null && !req.freshChain)) && this.armedBefore(eventId);
    const now = this.deps.clock.now();
    let dueMs: number;
    if (req.when.kind === "interval") {
      dueMs = now + checkMs(req.when.ms, "interval_ms", 0, maxHorizonMs);
    } else {
      dueMs = req.when.atMs;
      checkAt(dueMs, armed ? Math.min(now, dueMs) : now, "at"); // a repeat's `at` may have passed since
    }
    checkNoActorUnderCause(req);
    // 2-5.
    checkCauseRole(req.cause, principal, "delay");
    const entry = this.action(req.action);
    const who = this.who(entry, req, principal, "delay");
    checkInput(entry, req.input);
    const id = req.cause ? derivedId(req.cause.eventId, req.cause.position, { op: "delay", action: entry.name, input: req.input, when, overdue: overdueToJson(req.overdue) }) : clientId || newId();
    const digest = clientId ? { delay_request: delayRequestDigest({ action: entry.name, input: req.input, when, overdue: overdueToJson(req.overdue) }) } : {};
    // The same request run again is answered from the log below; its chain was checked when it was armed.
    const again = Boolean(req.cause) && !req.freshChain && armed; // depthOf asks nothing otherwise
    const chainDepth = again ? 0 : ((await this.deps.chains?.depthOf({ cause: req.cause, freshChain: req.freshChain ?? false, action: entry.name, delayId: id, actor: who.actor })) ?? 0); // FAILED_PRECONDITION past the maximum
    return (tx) => {
      const prior = recorded(tx, eventId, "timer.scheduled");
      if (prior && clientId && prior.data.delay_request !== digest.delay_request) fail("already_exists", `delay_id ${JSON.stringify(clientId)} already names a delay armed by another request (action, input, interval_ms or at, overdue); choose another delay_id`, [{ field: "delay_id", description: "already names another delay" }], { delay_id: clientId });
      if (prior) return { delayId: prior.data.timer_id as string, dueMs: prior.data.next_due_ms as number, fresh: false }; // the same request run again: armed once
      const existing = this.deps.timers.get(id);
      if (existing && clientId) {
        // 6. state: the id is another timer's (a schedule's, or a delay without this request's event)
        if (existing.kind !== "delay") fail("failed_precondition", `delay_id ${JSON.stringify(clientId)} names a ${existing.kind === "runtime" ? "runtime timer (Schedule)" : "declared schedule"}; choose another delay_id`, [{ field: "delay_id", description: "names a schedule" }]);
        fail("already_exists", `delay_id ${JSON.stringify(clientId)} already names another delay; choose another delay_id`, [{ field: "delay_id", description: "already names another delay" }], { delay_id: clientId });
      }
      // Armed by a run whose event has another id (before ids of timer events were derived): the delay id names this request.
      if (existing) return { delayId: existing.id, dueMs: existing.spec.kind === "at" ? existing.spec.atMs : dueMs, fresh: false };
      const fresh: TimerRecord = { ...blankTimer(id, "delay", tx.now, this.deps.region), action: entry.name, input: req.input, spec: { kind: "at", atMs: dueMs }, nextDueMs: dueMs, actor: who.actor, overdue: req.overdue, chainDepth };
      this.put(tx, fresh, who, undefined, eventId ?? newId(), digest);
      return { delayId: id, dueMs, fresh: true };
    };
  }

  /** Cancels a pending delay. NOT_FOUND when unknown or already made (under a cause, the same request run again succeeds: answered from the log). */
  async cancelDelay(delayId: string, cause: CauseRef | null, principal: Principal): Promise<void> {
    await this.remove(delayId, "delay", cause, principal);
  }

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
    const actor = this.actorOf(req.cause, principal);
    const eventId = req.cause ? changeEventId(req.cause, { op: "pause", timer_id: req.timerId, note: req.note }) : null;
    return this.deps.committer.submit((tx) => {
      const prior = recorded(tx, eventId, "timer.paused");
      if (prior) return { timer: this.controlledFromLog(prior), unchanged: prior.data.unchanged === true }; // the same request run again
      const timer = this.managed(req.timerId, req.cause, principal, "pause");
      checkRecurring(timer, "paused");
      if (timer.paused) {
        if (eventId) tx.append(controlEvent("timer.paused", timer, { note: req.note, held_due_ms: timer.paused.heldDueMs, unchanged: true, paused_at_ms: timer.paused.atMs, pause_note: timer.paused.note }, req.cause, actor, eventId));
        return { timer, unchanged: true };
      }
      this.deps.control.setPaused(timer.id, { note: req.note, atMs: tx.now, heldDueMs: timer.nextDueMs }, null, tx.now);
      tx.append(controlEvent("timer.paused", timer, { note: req.note, held_due_ms: timer.nextDueMs }, req.cause, actor, eventId ?? newId()));
      return { timer: this.deps.timers.get(timer.id) as TimerRecord, unchanged: false };
    });
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
    const actor = this.actorOf(req.cause, principal);
    const eventId = req.cause ? changeEventId(req.cause, { op: "resume", timer_id: req.timerId, note: req.note }) : null;
    const result = await this.deps.committer.submit((tx) => {
      const prior = recorded(tx, eventId, "timer.resumed");
      if (prior) return { timer: this.controlledFromLog(prior), unchanged: prior.data.unchanged === true, fresh: false }; // the same request run again
      const timer = this.managed(req.timerId, req.cause, principal, "resume");
      checkRecurring(timer, "paused");
      if (!timer.paused) {
        if (eventId) tx.append(controlEvent("timer.resumed", timer, { note: req.note, paused_at_ms: null, next_due_ms: timer.nextDueMs, unchanged: true }, req.cause, actor, eventId));
        return { timer, unchanged: true, fresh: true };
      }
      const runs = timer.kind !== "declared" || (!timer.disabled && timer.region === this.deps.region);
      const nextDueMs = runs ? resumeDue(timer, tx.now) : null;
      this.deps.control.setPaused(timer.id, null, nextDueMs, tx.now);
      tx.append(controlEvent("timer.resumed", timer, { note: req.note, paused_at_ms: timer.paused.atMs, next_due_ms: nextDueMs }, req.cause, actor, eventId ?? newId()));
      return { timer: this.deps.timers.get(timer.id) as TimerRecord, unchanged: false, fresh: true };
    });
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
    const actor = this.actorOf(cause, principal);
    const id = triggeredOccurrenceId(timerId, cause ? derivedId(cause.eventId, cause.position, { op: "trigger", timer: timerId }) : newId());
    const eventId = cause ? changeEventId(cause, { op: "trigger", timer_id: timerId }) : null;
    const result = await this.deps.committer.submit((tx) => {
      const prior = recorded(tx, eventId, "timer.triggered");
      if (prior) return { occurrenceId: prior.data.occurrence_id as string, dueMs: prior.data.due_ms as number, fresh: false }; // the same request run again
      const timer = this.managed(timerId, cause, principal, "trigger");
      if (timer.kind === "delay") fail("failed_precondition", `timer ${JSON.stringify(timerId)} is a delay: it makes one call; cancel it (CancelDelay) or call its action`);
      if (!this.deps.registry.action(timer.action)) fail("failed_precondition", `timer ${JSON.stringify(timerId)} calls ${timer.action}, which is no longer declared`);
      this.deps.control.queue({ id, timerId, dueMs: tx.now, action: timer.action, input: timer.input, actor: timer.actor, overdue: { kind: "unbounded" }, retryDelaysMs: timer.retryDelaysMs }, "trigger", tx.now, tx.now);
      tx.append(controlEvent("timer.triggered", timer, { occurrence_id: id, due_ms: tx.now }, cause, actor, eventId ?? newId()));
      return { occurrenceId: id, dueMs: tx.now, fresh: true };
    });
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
    if (req.endMs <= req.startMs) fail("bad_request", `end ${iso(req.endMs)} must be after start ${iso(req.startMs)}`, [{ field: "end", description: "not after start" }]);
    const now = this.deps.clock.now();
    if (req.endMs > now + pastToleranceMs) fail("bad_request", `end ${iso(req.endMs)} is in the future (now ${iso(now)}): backfill covers moments that have passed`, [{ field: "end", description: "in the future" }]);
    checkCauseRole(req.cause, principal, "backfill timers");
    const actor = this.actorOf(req.cause, principal);
    const eventId = req.cause ? changeEventId(req.cause, { op: "backfill", timer_id: req.timerId, start_ms: req.startMs, end_ms: req.endMs }) : null;
    const result = await this.deps.committer.submit((tx) => {
      const prior = recorded(tx, eventId, "timer.backfilled");
      if (prior) {
        // The same request run again: the answer its first run got.
        const made = new Set(prior.data.occurrence_ids as string[]);
        return { out: (prior.data.moments_ms as number[]).map((dueMs) => ({ occurrenceId: occurrenceId(req.timerId, dueMs), dueMs, existing: !made.has(occurrenceId(req.timerId, dueMs)) })), fresh: false };
      }
      const timer = this.managed(req.timerId, req.cause, principal, "backfill");
      checkRecurring(timer, "backfilled");
      if (!this.deps.registry.action(timer.action)) fail("failed_precondition", `timer ${JSON.stringify(timer.id)} calls ${timer.action}, which is no longer declared`);
      const out: BackfilledOccurrence[] = [];
      for (const dueMs of backfillMoments(timer, req.startMs, req.endMs)) {
        const id = occurrenceId(timer.id, dueMs);
        // Next try at its own due moment: the retry claim takes them in that order.
        const fresh = this.deps.control.queue({ id, timerId: timer.id, dueMs, action: timer.action, input: timer.input, actor: timer.actor, overdue: { kind: "unbounded" }, retryDelaysMs: timer.retryDelaysMs }, "backfill", dueMs, tx.now);
        out.push({ occurrenceId: id, dueMs, existing: !fresh });
      }
      const made = out.filter((o) => !o.existing);
      if (made.length > 0 || eventId) {
        const moments = eventId ? { moments_ms: out.map((o) => o.dueMs) } : {};
        tx.append(controlEvent("timer.backfilled", timer, { start_ms: req.startMs, end_ms: req.endMs, occurrence_ids: made.map((o) => o.occurrenceId), existing: out.length - made.length, ...moments }, req.cause, actor, eventId ?? newId()));
      }
      return { out, fresh: true };
    });
    const first = result.fresh ? result.out.find((o) => !o.existing) : undefined;
    if (first) this.deps.changed(first.dueMs);
    return result.out;
  }

  /**
   * Timers the principal may read (by their actor's `in`), pending ones by next due
   * moment, then spent, disabled or paused ones by last change. `pageSize` already checked
   * (1-1000); `kind` "" for all. INVALID_ARGUMENT for a page token not made here.
   */
  list(pageSize: number, pageToken: string, kind: TimerKind | "", principal: Principal): TimerPage {
    const after = pageToken ? decodeToken(pageToken) : null;
    const rows = this.deps.timers.list(after, kind, pageSize);
    const last = rows[rows.length - 1];
    return {
      timers: rows.filter((t) => canRead(principal, t)),
      nextPageToken: rows.length === pageSize && last ? encodeToken(last.nextDueMs === null ? { dueMs: null, id: last.id, updatedAt: last.updatedAt } : { dueMs: last.nextDueMs, id: last.id }) : "",
    };
  }

  /** Timer `timerId` with its next `previewCount` due moments (ms). NOT_FOUND when unknown or not readable; INVALID_ARGUMENT above 100 (checked first). */
  get(timerId: string, previewCount: number, principal: Principal): { timer: TimerRecord; previewMs: number[] } {
    checkTimerIdArgument(timerId, "timer_id");
    if (previewCount > maxPreviewCount) fail("bad_request", `preview_count must be at most ${maxPreviewCount}`, [{ field: "preview_count", description: `at most ${maxPreviewCount}` }]);
    const timer = this.deps.timers.get(timerId);
    if (!timer || !canRead(principal, timer)) fail("not_found", `no timer ${JSON.stringify(timerId)}`, [{ field: "timer_id", description: "unknown timer" }]);
    return { timer, previewMs: preview(timer, previewCount, this.deps.clock.now()) };
  }

  /**
   * True when the change event `eventId` is in the log: the request was made before and will be
   * answered from it, so its `at` is not checked against the clock again (it may have passed).
   */
  private armedBefore(eventId: string | null): boolean {
    return eventId !== null && this.deps.events.findById(eventId) !== undefined;
  }

  /** The declared action `action` (NOT_FOUND). */
  private action(action: string): ActionEntry {
    return this.deps.registry.action(action) ?? fail("not_found", `action ${JSON.stringify(action)} is not declared by any plugin (use plugin.action)`, [{ field: "action", description: "undeclared action" }], { action });
  }

  /** Who sets a timer and runs its calls: from outside, as CallAction (the action's allow, PERMISSION_DENIED); under a cause, the cause's actor. */
  private who(entry: ActionEntry, req: { cause: CauseRef | null; actor: Partial<ActorRecord> | undefined }, principal: Principal, verb: string): { actor: ActorRecord | null; cause: string } {
    if (req.cause) return { actor: causeActor(req.cause.eventId, this.deps.events, this.deps.live), cause: req.cause.eventId };
    if (!allows(entry.allow, principal)) {
      const allowed = entry.allow.length === 0 ? "only code under a cause may call it" : `allow: ${entry.allow.join(", ")}`;
      fail("permission_denied", `principal ${principal.name} (role ${principal.role}) may not ${verb} ${entry.name} (${allowed})`, [], { action: entry.name });
    }
    return { actor: resolveActor(principal, req.actor), cause: "" };
  }

  /** Who makes a change to a timer (the actor of its event): the cause's actor, or the principal's (PERMISSION_DENIED for actor fields it may not have). */
  private actorOf(cause: CauseRef | null, principal: Principal): ActorRecord | null {
    return cause ? causeActor(cause.eventId, this.deps.events, this.deps.live) : resolveActor(principal, undefined);
  }

  /**
   * Timer `id` for a change by `principal` (checks 3 and 4 of the class comment): NOT_FOUND when
   * unknown, not a delay when `what` is "delay", or, from outside, not readable; PERMISSION_DENIED
   * unless {@link mayManage}.
   */
  private managed(id: string, cause: CauseRef | null, principal: Principal, verb: string, what: "timer" | "delay" = "timer"): TimerRecord {
    const timer = this.deps.timers.get(id);
    const field = what === "delay" ? "delay_id" : "timer_id";
    if (!timer || (!cause && !canRead(principal, timer))) fail("not_found", `no ${what} ${JSON.stringify(id)}`, [{ field, description: `unknown ${what}` }]);
    if (what === "delay" && timer.kind !== "delay") fail("failed_precondition", `${JSON.stringify(id)} is a ${timer.kind === "runtime" ? "runtime timer: use Unschedule" : "declared schedule: patch its plugin"}, not a delay`, [{ field, description: "names a schedule" }]);
    if (!this.mayManage(timer, cause, principal)) {
      const why = timer.kind === "declared" ? "declared schedules are managed by admins" : `it may not call ${timer.action}`;
      fail("permission_denied", `principal ${principal.name} (role ${principal.role}) may not ${verb} ${what} ${JSON.stringify(id)} (${why})`);
    }
    return timer;
  }

  /** True when `principal` may change `timer`: under a cause, as an admin, or (runtime timers and delays) when its action's allow admits it. */
  private mayManage(timer: TimerRecord, cause: CauseRef | null, principal: Principal): boolean {
    if (cause || principal.role === "admin") return true;
    if (timer.kind === "declared") return false;
    const entry = this.deps.registry.action(timer.action);
    return entry !== undefined && allows(entry.allow, principal);
  }

  /** Writes `timer` (its policy, not paused) and its `timer.scheduled` event (id `eventId`, `extra` added to its data) in unit `tx`; returns it as stored. */
  private put(tx: Tx, timer: TimerRecord, who: { actor: ActorRecord | null; cause: string }, existing: TimerRecord | undefined, eventId: string, extra: Record<string, unknown> = {}): TimerRecord {
    this.deps.timers.put(timer, tx.now);
    if (existing?.paused) this.deps.control.setPaused(timer.id, null, timer.nextDueMs, tx.now); // a replacement is a new timer: not paused
    const event = scheduledEvent(timer, existing !== undefined, who.cause, who.actor, eventId);
    tx.append({ ...event, data: { ...event.data, ...extra } });
    return this.deps.timers.get(timer.id) as TimerRecord;
  }

  /**
   * The answer to a Schedule under a cause whose `timer.scheduled` event `prior` is in the log
   *, for request `req` (the one that recorded it: the event id covers all of it): the
   * stored timer while it is still the one that request set, else the timer as the event
   * recorded it (its id, next due moment and actor; set at the event's time), though it was
   * since removed or replaced.
   */
  private scheduledFromLog(prior: EventRecord, req: { action: string; input: Record<string, unknown>; spec: TimerSpec; overdue: Overdue; policy: SchedulePolicy }): TimerRecord {
    const id = prior.data.timer_id as string;
    const asSet: TimerRecord = { ...blankTimer(id, "runtime", prior.at, this.deps.region), action: req.action, input: req.input, spec: req.spec, nextDueMs: (prior.data.next_due_ms as number | null) ?? null, actor: prior.actor, overdue: req.overdue, policy: req.policy };
    const stored = this.deps.timers.get(id);
    return stored && stored.kind === "runtime" && sameDefinition(stored, asSet) ? stored : asSet;
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
    const base = stored && stored.kind === data.kind && stored.action === data.action ? stored : { ...blankTimer(id, data.kind as TimerKind, prior.at, this.deps.region), action: data.action as string };
    if (prior.type === "timer.resumed") return { ...base, paused: null, nextDueMs: (data.next_due_ms as number | null) ?? null };
    const unchanged = data.unchanged === true;
    const paused = { note: (unchanged ? data.pause_note : data.note) as string, atMs: unchanged ? (data.paused_at_ms as number) : prior.at, heldDueMs: (data.held_due_ms as number | null) ?? null };
    return { ...base, paused, nextDueMs: null };
  }

  /** Unschedule / CancelDelay: deletes a pending timer of `kind` with its `timer.unscheduled` event (checks in the class comment's order). */
  private async remove(id: string, kind: "runtime" | "delay", cause: CauseRef | null, principal: Principal): Promise<void> {
    const what = kind === "delay" ? "delay" : "timer";
    const field = kind === "delay" ? "delay_id" : "timer_id";
    checkTimerIdArgument(id, field);
    checkCauseRole(cause, principal, "act");
    const actor = this.actorOf(cause, principal);
    const eventId = cause ? changeEventId(cause, { op: kind === "delay" ? "cancel_delay" : "unschedule", timer_id: id }) : null;
    await this.deps.committer.submit((tx) => {
      if (recorded(tx, eventId, "timer.unscheduled")) return; // the same request run again: removed once, by its first run
      const timer = this.managed(id, cause, principal, "cancel", what);
      if (kind === "runtime" && timer.kind !== "runtime") fail("failed_precondition", `timer ${JSON.stringify(id)} is a ${timer.kind === "delay" ? "delay: use CancelDelay" : "declared schedule: patch its plugin"}`);
      // A one-shot whose occurrence was made (or claimed, inside the lookahead) has nothing left to stop.
      if (timer.nextDueMs === null && !timer.paused && (kind === "delay" || timer.spec.kind === "at")) fail("not_found", `${what} ${JSON.stringify(id)} was already made (or skipped)`, [{ field, description: "already made" }]);
      this.deps.timers.remove(id);
      tx.append(unscheduledEvent(timer, cause?.eventId ?? "", actor, eventId ?? newId()));
    });
  }
}

/** A spec as stored: a cron zone in its canonical spelling (`utc` → `UTC`), a default DST policy left out. */
export function canonicalSpec(spec: TimerSpec): TimerSpec {
  if (spec.kind !== "cron") return spec;
  const zone = isValidZoneName(spec.zone) ? canonicalZone(spec.zone) : spec.zone;
  const dst = spec.dst && (spec.dst.gap !== defaultDstPolicy.gap || spec.dst.repeated !== defaultDstPolicy.repeated) ? spec.dst : undefined;
  return { kind: "cron", expression: spec.expression, zone, ...(dst ? { dst } : {}) };
}

/** INVALID_ARGUMENT (shape): asserted actor fields under a cause (the actor is the cause's). */
function checkNoActorUnderCause(req: { cause: CauseRef | null; actor: Partial<ActorRecord> | undefined }): void {
  if (req.cause && req.actor && Object.values(req.actor).some((v) => v)) fail("bad_request", "actor must be empty under a cause: the actor is the cause's", [{ field: "actor", description: "empty under a cause" }]);
}

/** PERMISSION_DENIED (who acts): only executors and admins act under a cause. */
function checkCauseRole(cause: CauseRef | null, principal: Principal, verb: string): void {
  if (cause && principal.role === "client") fail("permission_denied", `principal ${principal.name} (role client) may not ${verb} under a cause; only executors act under a cause`);
}

/**
 * The id of the event a Schedule, Unschedule, Delay, CancelDelay, PauseTimer, ResumeTimer,
 * TriggerTimer or BackfillTimer under `cause` records: derived from the cause, the request's position and the request (`op` and every field
 * that shapes the change), so the same request run again (a retried delivery, an action called
 * again) finds it in the log, and another request at that position does not.
 */
function changeEventId(cause: CauseRef, request: Record<string, unknown>): string {
  return derivedId(cause.eventId, cause.position, { timer_change: request });
}

/**
 * The id of the `timer.scheduled` event of a Delay from outside with client delay id `delayId`
 *: derived from the delay id alone, so the log holds at most one arming per delay id (its
 * unique id index) and a retry finds it whatever happened to the delay since.
 */
function clientDelayEventId(delayId: string): string {
  return derivedId("client-delay", 0, { delay_id: delayId });
}

/** The `delay_request` of such an event: a SHA-256 (hex) of the request's action, input, interval_ms or at, and overdue (what "the same request" compares). */
function delayRequestDigest(request: Record<string, unknown>): string {
  return sha256Hex(canonicalJson(request));
}

/** Event `id` when it is in the log as a `type` (a request under a cause run again); undefined when absent or `id` is null. ALREADY_EXISTS when it is another type's. */
function recorded(tx: Tx, id: string | null, type: string): EventRecord | undefined {
  if (id === null) return undefined;
  const prior = tx.events.findById(id);
  if (prior && prior.type !== type) fail("id_conflict", `event id ${id} is already in the log as a ${prior.type} event (seq ${prior.seq})`, [], { id, seq: String(prior.seq) });
  return prior;
}

/** INVALID_ARGUMENT (`input` or `input/...`) when `input` does not match the action's schema. */
function checkInput(entry: ActionEntry, input: Record<string, unknown>): void {
  const violations = entry.validate(input);
  if (violations.length > 0) fail("schema_violation", `input of ${entry.name} does not match its schema: ${violations.map((v) => `${v.field}: ${v.description}`).join("; ")}`, violations, { action: entry.name });
}

/**
 * INVALID_ARGUMENT naming `field` unless `id` names a timer or delay to look up: required, and
 * an id as {@link checkId} (no control characters, not only whitespace, not too long), which no
 * stored timer breaks; checked before NOT_FOUND (the README's order of checks).
 */
function checkTimerIdArgument(id: string, field: string): void {
  if (id === "") fail("bad_request", `${field} is required`, [{ field, description: "required" }]);
  checkId(id, field);
}

/** INVALID_ARGUMENT (shape) for PauseTimer, ResumeTimer, TriggerTimer and BackfillTimer: the timer id is required, the note at most 1,000 characters. */
function checkControlShape(timerId: string, note: string): void {
  checkTimerIdArgument(timerId, "timer_id");
  if (note.length > maxNoteLength) fail("bad_request", `note is longer than ${maxNoteLength} characters`, [{ field: "note", description: `at most ${maxNoteLength} characters` }]);
}

/** FAILED_PRECONDITION unless `timer` is recurring (cron or every_ms): delays and one-shots cannot be paused or backfilled. */
function checkRecurring(timer: TimerRecord, what: string): void {
  if (timer.kind === "delay") fail("failed_precondition", `timer ${JSON.stringify(timer.id)} is a delay: a delay cannot be ${what}; cancel it (CancelDelay) instead`);
  if (timer.spec.kind === "at") fail("failed_precondition", `timer ${JSON.stringify(timer.id)} is a one-shot (at): only recurring timers (cron, every_ms) can be ${what}`);
}

/**
 * A `timer.paused`, `.resumed`, `.triggered` or `.backfilled` event: data timer_id, kind,
 * action and `data`; the actor of whoever made the change; the cause it was made under. Id:
 * `id` (derived under a cause, see changeEventId), else fresh.
 */
function controlEvent(type: "timer.paused" | "timer.resumed" | "timer.triggered" | "timer.backfilled", timer: TimerRecord, data: Record<string, unknown>, cause: CauseRef | null, actor: ActorRecord | null, id: string) {
  return { id, type, data: { timer_id: timer.id, kind: timer.kind, action: timer.action, ...data }, cause: cause?.eventId ?? "", actor };
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/**
 * `timer.scheduled`: a timer was set or changed. Data: timer_id, kind, action, spec,
 * overdue, next_due_ms (null: disabled, spent, paused or another region's), replaced; declared
 * schedules add plugin, schedule, disabled, region and retry_delays_ms; a timer with a policy
 * other than the default adds `policy`; a delay armed from outside with a client `delay_id` adds
 * `delay_request` (see Timers.delay). Actor and cause: whoever set it (declared schedules: the
 * system, no cause). Id: `id` (derived under a cause, see changeEventId), else fresh.
 */
export function scheduledEvent(timer: TimerRecord, replaced: boolean, cause: string, actor: ActorRecord | null, id = newId()) {
  const declared = timer.kind === "declared" ? { plugin: timer.plugin, schedule: timer.schedule, disabled: timer.disabled, region: timer.region, retry_delays_ms: timer.retryDelaysMs } : {};
  return {
    id,
    type: "timer.scheduled",
    data: { timer_id: timer.id, kind: timer.kind, action: timer.action, spec: specToJson(timer.spec), overdue: overdueToJson(timer.overdue), next_due_ms: timer.nextDueMs, replaced, ...declared, ...policyData(timer.policy) },
    cause,
    actor,
  };
}

/** `timer.unscheduled`: timer `timer` was removed. Data: timer_id, kind, action, next_due_ms. Id: `id` (derived under a cause), else fresh. */
export function unscheduledEvent(timer: TimerRecord, cause: string, actor: ActorRecord | null, id = newId()) {
  return { id, type: "timer.unscheduled", data: { timer_id: timer.id, kind: timer.kind, action: timer.action, next_due_ms: timer.nextDueMs }, cause, actor };
}

/** A timer with only its id, kind, region and times set (retries: the default). */
export function blankTimer(id: string, kind: TimerKind, nowMs: number, region: number): TimerRecord {
  return {
    id,
    kind,
    action: "",
    input: {},
    spec: { kind: "at", atMs: nowMs },
    nextDueMs: null,
    actor: null,
    plugin: "",
    schedule: "",
    overdue: { kind: "unbounded" },
    chainDepth: 0,
    occurrences: 0,
    region,
    disabled: false,
    retryDelaysMs: [...defaultRetryDelaysMs],
    policy: { ...defaultSchedulePolicy },
    paused: null,
    createdAt: nowMs,
    updatedAt: nowMs,
  };
}

/** True when `a` and `b` call the same action with the same input, spec, bound, policy (its anchor aside) and actor. */
function sameDefinition(a: TimerRecord, b: TimerRecord): boolean {
  const def = (t: TimerRecord) => canonicalJson({ action: t.action, input: t.input, spec: specToJson(t.spec), overdue: overdueToJson(t.overdue), policy: policyData(t.policy), actor: t.actor });
  return def(a) === def(b);
}

/** `{ policy }` (its stored JSON without the anchor) when `policy` is not the default, else nothing. */
export function policyData(policy: SchedulePolicy): { policy?: Record<string, unknown> } {
  if (isDefaultPolicy(policy)) return {};
  const { anchor_ms: _anchor, ...json } = policyToJson(policy);
  return { policy: json };
}

/** A ListTimers page token: base64url of `[next due ms, id]`, or in the tail without a next due moment `[null, id, last change ms]`. */
function encodeToken(cursor: TimerCursor): string {
  return Buffer.from(JSON.stringify(cursor.dueMs === null ? [null, cursor.id, cursor.updatedAt] : [cursor.dueMs, cursor.id])).toString("base64url");
}

function decodeToken(token: string): TimerCursor {
  let parts: unknown[] = [];
  try {
    parts = JSON.parse(Buffer.from(token, "base64url").toString("utf8")) as unknown[];
  } catch {
    /* falls through */
  }
  const [dueMs, id, updatedAt] = Array.isArray(parts) ? parts : [];
  if (typeof id === "string" && Number.isSafeInteger(dueMs)) return { dueMs: dueMs as number, id };
  if (typeof id === "string" && dueMs === null && Number.isSafeInteger(updatedAt)) return { dueMs: null, id, updatedAt: updatedAt as number };
  if (typeof id === "string" && dueMs === null && parts.length === 2) {
    fail("bad_request", "page_token was made by an older owner (its tail of spent timers was ordered by id); list again from the start", [{ field: "page_token", description: "from an older version" }]);
  }
  fail("bad_request", "page_token is not one returned by ListTimers", [{ field: "page_token", description: "malformed" }]);
}
