import { canonicalJson } from "../log/canonical.js";
import { canRead, sameActor, type Principal } from "../auth/principal.js";
import { tracing } from "../tracing/tracer.js";
import { traceText } from "../tracing/trace-context.js";
import type { CauseRef, LiveCauses } from "../log/causes.js";
import { derivedId, newId } from "../log/ids.js";
import { asItem, fail, forItem } from "../errors.js";
import type { Clock } from "../clock.js";
import type { PluginRegistry } from "../plugins/registry.js";
import { stepEach, type Committer, type Tx } from "../store/committer.js";
import type { ReadAheadKeys } from "../store/read-ahead.js";
import type { ActorRecord, EventReads, EventRecord, EventStatements } from "../store/events.js";
import type { TimerControlStatements } from "../store/timer-control.js";
import { overdueToJson, policyToJson, specToJson } from "../store/timer-json.js";
import type { TimerRowReads, TimerStatements } from "../store/timers.js";
import type { DelayChains } from "./chains.js";
import { anchorFor, canonicalSpec, checkAt, checkMs, checkSchedulePolicy, firstDue, maxHorizonMs } from "./spec-checks.js";
import { checkCauseRole, checkClientTimerId, checkInput, checkNoActorUnderCause, checkTimerIdArgument, TimerAccess } from "./timer-checks.js";
import { TimerControl } from "./timer-control.js";
import { scheduledEvent, unscheduledEvent } from "./timer-events.js";
import type { TimerPage } from "./timer-pages.js";
import { TimerReads } from "./timer-reads.js";
import { changeEventId, clientDelayEventId, delayRequestDigest, recorded, sameDefinition, timerReadAhead } from "./timer-replay.js";
import { maxDelayBatch, type BackfilledOccurrence, type BackfillInput, type DelayInput, type PauseInput, type ScheduleInput } from "./timer-requests.js";
import { checkCancelOn } from "./cancel-on.js";
import {
  defaultSchedulePolicy,
  type CancelOnRecord,
  type Overdue,
  type SchedulePolicy,
  type TimerKind,
  type TimerRecord,
  type TimerSpec,
} from "../store/timer-records.js";
import { blankTimer, isDefaultPolicy, type TimerView } from "./timers.js";

/** A delay checked and ready to arm: its commit unit, and the event and timer ids it looks up (null: none). */
interface PreparedDelay {
  arm(tx: Tx): { delayId: string; dueMs: number; fresh: boolean };
  eventId: string | null;
  timerId: string | null;
}

/** What the timer requests need. */
export interface TimersDeps {
  registry: PluginRegistry;
  committer: Committer;
  timers: TimerStatements;
  /** ListTimers' and GetTimer's reads (on PostgreSQL without blocking the event loop). */
  reads: TimerRowReads;
  /** Policies, pause, trigger, backfill. */
  control: TimerControlStatements;
  events: EventStatements;
  /** The log's look-ups that do not block the event loop (PostgreSQL: the async connection): whether a request was made before. */
  logReads: Pick<EventReads, "findById">;
  live: LiveCauses;
  clock: Clock;
  /** The owner's region: stamped on the timers and delays it sets. */
  region: number;
  /** Chain depths of delays and their maximum; absent: every delay at depth 0. */
  chains?: DelayChains;
  /** Told after each commit that set a timer, with its next due moment (re-arms the clock). */
  changed(nextDueMs: number | null): void;
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
 * answered as the event left the timer, see TimerControl's controlledFromLog); under a cause a pause
 * of a paused timer or a resume of a running one still records its event, with `unchanged:
 * true`, and a backfill that made nothing its `timer.backfilled` (no occurrence ids), so its
 * retry finds it and gets the same answer (from outside such a no-op records nothing). A cancel
 * racing the claim of the same occurrence is ordered by the committer: either the cancel wins
 * (never called) or the claim does (NOT_FOUND "already made").
 */
export class Timers {
  private readonly access: TimerAccess;
  private readonly controls: TimerControl;
  private readonly reads: TimerReads;

  constructor(private readonly deps: TimersDeps) {
    this.access = new TimerAccess(deps);
    this.controls = new TimerControl(deps, this.access);
    this.reads = new TimerReads(deps);
  }

  /** Sets (or replaces) a runtime timer; returns it as stored. Errors in the class comment's order; FAILED_PRECONDITION when the id is a delay's or a declared schedule's. */
  async schedule(req: ScheduleInput, principal: Principal): Promise<TimerRecord> {
    // 1. shape
    if (req.action === "") fail("bad_request", "action is required", [{ field: "action", description: "required" }]);
    if (req.timerId !== "") checkClientTimerId(req.timerId, "timer_id");
    const spec = canonicalSpec(req.spec);
    const policy = checkSchedulePolicy(req.policy ?? defaultSchedulePolicy, spec);
    const policyJson = { ...(isDefaultPolicy(policy) ? {} : { policy: policyToJson(policy) }), ...cancelOnPart(req.cancelOn) };
    const eventId = req.cause
      ? changeEventId(req.cause, {
          op: "schedule",
          timer_id: req.timerId,
          action: req.action,
          input: req.input,
          spec: specToJson(spec),
          overdue: overdueToJson(req.overdue),
          ...policyJson,
        })
      : null;
    const now = this.deps.clock.now();
    const checkedAt = spec.kind === "at" && spec.atMs < now && (await this.armedBefore(eventId)) ? spec.atMs : now; // a repeat's `at` may have passed since
    firstDue(spec, checkedAt, "spec", policy); // the spec and its bounds (the jitter comes with the id)
    checkNoActorUnderCause(req);
    // 2-5. who, the action, its allow, the input
    checkCauseRole(req.cause, principal, "schedule");
    const entry = this.access.action(req.action);
    const who = this.access.who(entry, req, principal, "schedule");
    checkInput(entry, req.input);
    checkCancelOn(req.cancelOn ?? [], req.input, (type) => this.access.knownEventType(type));
    const trace = tracing.on ? traceText() : undefined; // the caller's span: the timer's occurrences link to it
    const id =
      req.timerId ||
      (req.cause
        ? derivedId(req.cause.eventId, req.cause.position, { op: "schedule", action: entry.name, input: req.input, spec: specToJson(spec), ...policyJson })
        : newId());
    const stored: SchedulePolicy = { ...policy, anchorMs: anchorFor(spec, now) };
    const nextDueMs = firstDue(spec, checkedAt, "spec", stored, id);
    const result = await this.deps.committer.submit(
      (tx) => {
        const prior = recorded(tx, eventId, "timer.scheduled");
        if (prior) return { timer: this.scheduledFromLog(prior, { action: entry.name, input: req.input, spec, overdue: req.overdue, policy }), fresh: false }; // the same request run again
        const existing = this.deps.timers.get(id);
        // A timer out of the principal's reach (another space's; under a cause, out of the cause's) is neither replaced nor described.
        if (existing && !canRead(this.access.reader(req.cause, principal), existing))
          fail(
            "already_exists",
            `timer_id ${JSON.stringify(id)} is already in use; choose another timer_id`,
            [{ field: "timer_id", description: "already in use" }],
            { timer_id: id },
          );
        // 6. state
        if (existing && existing.kind !== "runtime")
          fail(
            "failed_precondition",
            `timer ${JSON.stringify(id)} is a ${existing.kind === "delay" ? "delay (use CancelDelay)" : "declared schedule (patch its plugin)"}; choose another timer_id`,
          );
        const fresh: TimerRecord = {
          ...blankTimer(id, "runtime", tx.now, this.deps.region),
          action: entry.name,
          input: req.input,
          spec,
          nextDueMs,
          actor: who.actor,
          overdue: req.overdue,
          policy: stored,
          ...cancelOnOf(req.cancelOn),
          ...(trace && { trace }),
        };
        // A derived id names this request: a timer under it set by a run whose event has another id (before ids of timer events were derived) is this one.
        if (existing && req.cause && req.timerId === "" && sameDefinition(existing, fresh)) return { timer: existing, fresh: false };
        // The same definition again (a retry) is recorded, and the timer goes on as it was: its count, pause and moments kept.
        const same =
          existing !== undefined && sameDefinition(existing, fresh) && canonicalJson(existing.cancelOn ?? []) === canonicalJson(fresh.cancelOn ?? []);
        this.put(tx, same ? { ...fresh, nextDueMs: existing.nextDueMs, policy: existing.policy } : fresh, who, existing, eventId ?? newId(), {}, same);
        return { timer: this.deps.timers.get(fresh.id) as TimerRecord, fresh: true }; // as stored
      },
      timerReadAhead(this.deps.timers, id, eventId),
    );
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
    const delay = await this.prepareDelay(req, principal);
    const result = await this.deps.committer.submit(delay.arm, this.lookupsOf([delay]));
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
    if (reqs.length > maxDelayBatch)
      fail("too_large", `a batch holds at most ${maxDelayBatch} delays, got ${reqs.length}`, [{ field: "delays", description: "too many" }]);
    const delays = await Promise.all(reqs.map((req, i) => this.prepareDelay(req, principal).catch((e: unknown) => Promise.reject(forItem(`delays[${i}]`, e)))));
    // In steps: a batch of 1,000 does not hold the event loop for all of them at once.
    const results = await this.deps.committer.submitInSteps(
      (tx) => stepEach(delays, (delay, i) => asItem(`delays[${i}]`, () => delay.arm(tx))),
      this.lookupsOf(delays),
    );
    const fresh = results.filter((r) => r.fresh).map((r) => r.dueMs);
    if (fresh.length > 0) this.deps.changed(Math.min(...fresh));
    return results.map(({ delayId, dueMs }) => ({ delayId, dueMs }));
  }

  /**
   * What the commit of `delays` looks up, read ahead for its whole batch (Committer.submit): their
   * `timer.scheduled` events and the timers under their ids. The units are pure: a batch of them
   * takes both to be absent unless found (a retry), so a DelayBatch of new client ids costs the
   * owner's thread no round trip per delay.
   */
  private lookupsOf(delays: PreparedDelay[]): { lookups?: string[]; readAhead?: ReadAheadKeys; pure: true } {
    const events = delays.flatMap((d) => (d.eventId === null ? [] : [d.eventId]));
    const timers = delays.flatMap((d) => (d.timerId === null ? [] : [d.timerId]));
    return { lookups: events.length > 0 ? events : undefined, readAhead: timers.length > 0 ? { from: this.deps.timers, keys: timers } : undefined, pure: true };
  }

  /** A delay's checks (shape, action, who, input, chain); resolves with the unit of work that arms it and what that unit looks up. */
  private async prepareDelay(req: DelayInput, principal: Principal): Promise<PreparedDelay> {
    // 1. shape
    if (req.action === "") fail("bad_request", "action is required", [{ field: "action", description: "required" }]);
    const clientId = req.delayId ?? "";
    if (clientId !== "") {
      if (req.cause)
        fail("bad_request", "delay_id must be empty under a cause: the delay id is derived from the cause", [
          { field: "delay_id", description: "empty under a cause" },
        ]);
      checkClientTimerId(clientId, "delay_id");
    }
    const when = req.when.kind === "interval" ? { interval_ms: req.when.ms } : { at: req.when.atMs };
    const cancelOn = cancelOnPart(req.cancelOn);
    const eventId = req.cause
      ? changeEventId(req.cause, {
          op: "delay",
          action: req.action,
          input: req.input,
          when,
          overdue: overdueToJson(req.overdue),
          fresh_chain: req.freshChain ?? false,
          ...cancelOn,
        })
      : clientId
        ? clientDelayEventId(clientId)
        : null;
    // Looked up only where it is read (without blocking the event loop): an `at` already past, a retry's chain.
    const now = this.deps.clock.now();
    const armed = ((req.when.kind === "at" && req.when.atMs < now) || (req.cause !== null && !req.freshChain)) && (await this.armedBefore(eventId));
    let dueMs: number;
    if (req.when.kind === "interval") {
      dueMs = now + checkMs(req.when.ms, "interval_ms", 0, maxHorizonMs);
    } else {
      dueMs = req.when.atMs;
      checkAt(dueMs, dueMs < now && armed ? dueMs : now, "at"); // a repeat's `at` may have passed since
    }
    checkNoActorUnderCause(req);
    // 2-5.
    checkCauseRole(req.cause, principal, "delay");
    const entry = this.access.action(req.action);
    const who = this.access.who(entry, req, principal, "delay");
    checkInput(entry, req.input);
    checkCancelOn(req.cancelOn ?? [], req.input, (type) => this.access.knownEventType(type));
    const trace = tracing.on ? traceText() : undefined; // the caller's span: the timer's occurrences link to it
    const id = req.cause
      ? derivedId(req.cause.eventId, req.cause.position, {
          op: "delay",
          action: entry.name,
          input: req.input,
          when,
          overdue: overdueToJson(req.overdue),
          ...cancelOn,
        })
      : clientId || newId();
    const digest = clientId
      ? { delay_request: delayRequestDigest({ action: entry.name, input: req.input, when, overdue: overdueToJson(req.overdue), ...cancelOn }) }
      : {};
    // The same request run again is answered from the log below; its chain was checked when it was armed.
    const again = req.cause !== null && !req.freshChain && armed; // depthOf asks nothing otherwise
    const chainDepth = again
      ? 0
      : ((await this.deps.chains?.depthOf({ cause: req.cause, freshChain: req.freshChain ?? false, action: entry.name, delayId: id, actor: who.actor })) ?? 0); // FAILED_PRECONDITION past the maximum
    const arm = (tx: Tx) => {
      const prior = recorded(tx, eventId, "timer.scheduled");
      // Another actor's delay id: taken, and nothing more said of that delay (its request, its moment); admins may act as any actor.
      const othersDelay = (actor: ActorRecord | null) => principal.role !== "admin" && !sameActor(actor, who.actor);
      if (prior && clientId && othersDelay(prior.actor)) delayIdInUse(clientId);
      if (prior && clientId && prior.data.delay_request !== digest.delay_request)
        fail(
          "already_exists",
          `delay_id ${JSON.stringify(clientId)} already names a delay armed by another request (action, input, interval_ms or at, overdue); choose another delay_id`,
          [{ field: "delay_id", description: "already names another delay" }],
          { delay_id: clientId },
        );
      if (prior) return { delayId: prior.data.timer_id as string, dueMs: prior.data.next_due_ms as number, fresh: false }; // the same request run again: armed once
      const existing = clientId || req.cause ? this.deps.timers.get(id) : undefined; // an id made here names no timer yet
      if (existing && clientId) {
        if (othersDelay(existing.actor)) delayIdInUse(clientId);
        // 6. state: the id is another timer's (a schedule's, or a delay without this request's event)
        if (existing.kind !== "delay")
          fail(
            "failed_precondition",
            `delay_id ${JSON.stringify(clientId)} names a ${existing.kind === "runtime" ? "runtime timer (Schedule)" : "declared schedule"}; choose another delay_id`,
            [{ field: "delay_id", description: "names a schedule" }],
          );
        fail(
          "already_exists",
          `delay_id ${JSON.stringify(clientId)} already names another delay; choose another delay_id`,
          [{ field: "delay_id", description: "already names another delay" }],
          { delay_id: clientId },
        );
      }
      // Armed by a run whose event has another id (before ids of timer events were derived): the delay id names this request.
      if (existing) return { delayId: existing.id, dueMs: existing.spec.kind === "at" ? existing.spec.atMs : dueMs, fresh: false };
      const fresh: TimerRecord = {
        ...blankTimer(id, "delay", tx.now, this.deps.region),
        action: entry.name,
        input: req.input,
        spec: { kind: "at", atMs: dueMs },
        nextDueMs: dueMs,
        actor: who.actor,
        overdue: req.overdue,
        chainDepth,
        ...cancelOnOf(req.cancelOn),
        ...(trace && { trace }),
      };
      this.put(tx, fresh, who, undefined, eventId ?? newId(), digest, false, !clientId && !req.cause);
      return { delayId: id, dueMs, fresh: true };
    };
    return { arm, eventId, timerId: clientId || req.cause ? id : null };
  }

  /** Cancels a pending delay. NOT_FOUND when unknown or already made (under a cause, the same request run again succeeds: answered from the log). */
  async cancelDelay(delayId: string, cause: CauseRef | null, principal: Principal): Promise<void> {
    await this.remove(delayId, "delay", cause, principal);
  }

  /** PauseTimer: see {@link TimerControl.pause}; the timer as the principal may read it ({@link TimerReads.view}). */
  async pause(req: PauseInput, principal: Principal): Promise<{ timer: TimerView; unchanged: boolean }> {
    const { timer, unchanged } = await this.controls.pause(req, principal);
    return { timer: this.reads.view(principal, timer), unchanged };
  }

  /** ResumeTimer: see {@link TimerControl.resume}; the timer as the principal may read it ({@link TimerReads.view}). */
  async resume(req: PauseInput, principal: Principal): Promise<{ timer: TimerView; unchanged: boolean }> {
    const { timer, unchanged } = await this.controls.resume(req, principal);
    return { timer: this.reads.view(principal, timer), unchanged };
  }

  /** TriggerTimer: see {@link TimerControl.trigger}. */
  trigger(timerId: string, cause: CauseRef | null, principal: Principal): Promise<{ occurrenceId: string; dueMs: number }> {
    return this.controls.trigger(timerId, cause, principal);
  }

  /** BackfillTimer: see {@link TimerControl.backfill}. */
  backfill(req: BackfillInput, principal: Principal): Promise<BackfilledOccurrence[]> {
    return this.controls.backfill(req, principal);
  }

  /** ListTimers: see {@link TimerReads.list}. */
  list(pageSize: number, pageToken: string, kind: TimerKind | "", principal: Principal): Promise<TimerPage> {
    return this.reads.list(pageSize, pageToken, kind, principal);
  }

  /** GetTimer: see {@link TimerReads.get}. */
  get(timerId: string, previewCount: number, principal: Principal): Promise<{ timer: TimerView; previewMs: number[] }> {
    return this.reads.get(timerId, previewCount, principal);
  }

  /**
   * True when the change event `eventId` is in the log: the request was made before and will be
   * answered from it, so its `at` is not checked against the clock again (it may have passed).
   */
  private async armedBefore(eventId: string | null): Promise<boolean> {
    return eventId !== null && (await this.deps.logReads.findById(eventId)) !== undefined;
  }

  /**
   * Writes `timer` (its policy; not paused, its count from 0, unless `same`: the definition of
   * `existing`, whose count and pause it keeps) and its `timer.scheduled` event (id `eventId`,
   * `extra` added to its data) in unit `tx`; `made`: its id was made here just now (TimerStatements.put).
   */
  private put(
    tx: Tx,
    timer: TimerRecord,
    who: { actor: ActorRecord | null; cause: string },
    existing: TimerRecord | undefined,
    eventId: string,
    extra: Record<string, unknown> = {},
    same = false,
    made = false,
  ): void {
    // A replacement by another definition is a new timer: its occurrences counted from 0, not paused.
    this.deps.timers.put(timer, tx.now, { anew: existing !== undefined && !same, made });
    if (existing?.paused && !same) this.deps.control.setPaused(timer.id, null, timer.nextDueMs, tx.now);
    const event = scheduledEvent(timer, existing !== undefined, who.cause, who.actor, eventId);
    tx.append({ ...event, data: { ...event.data, ...extra }, ...(timer.trace && { trace: timer.trace }) });
  }

  /**
   * The answer to a Schedule under a cause whose `timer.scheduled` event `prior` is in the log
   *, for request `req` (the one that recorded it: the event id covers all of it): the
   * stored timer while it is still the one that request set, else the timer as the event
   * recorded it (its id, next due moment and actor; set at the event's time), though it was
   * since removed or replaced.
   */
  private scheduledFromLog(
    prior: EventRecord,
    req: { action: string; input: Record<string, unknown>; spec: TimerSpec; overdue: Overdue; policy: SchedulePolicy },
  ): TimerRecord {
    const id = prior.data.timer_id as string;
    const asSet: TimerRecord = {
      ...blankTimer(id, "runtime", prior.at, this.deps.region),
      action: req.action,
      input: req.input,
      spec: req.spec,
      nextDueMs: (prior.data.next_due_ms as number | null) ?? null,
      actor: prior.actor,
      overdue: req.overdue,
      policy: req.policy,
    };
    const stored = this.deps.timers.get(id);
    return stored && stored.kind === "runtime" && sameDefinition(stored, asSet) ? stored : asSet;
  }

  /** Unschedule / CancelDelay: deletes a pending timer of `kind` with its `timer.unscheduled` event (checks in the class comment's order). */
  private async remove(id: string, kind: "runtime" | "delay", cause: CauseRef | null, principal: Principal): Promise<void> {
    const what = kind === "delay" ? "delay" : "timer";
    const field = kind === "delay" ? "delay_id" : "timer_id";
    checkTimerIdArgument(id, field);
    checkCauseRole(cause, principal, "act");
    const actor = this.access.actorOf(cause, principal);
    const eventId = cause ? changeEventId(cause, { op: kind === "delay" ? "cancel_delay" : "unschedule", timer_id: id }) : null;
    await this.deps.committer.submit(
      (tx) => {
        if (recorded(tx, eventId, "timer.unscheduled")) return; // the same request run again: removed once, by its first run
        const timer = this.access.managed(id, cause, principal, "cancel", what);
        if (kind === "runtime" && timer.kind !== "runtime")
          fail(
            "failed_precondition",
            `timer ${JSON.stringify(id)} is a ${timer.kind === "delay" ? "delay: use CancelDelay" : "declared schedule: patch its plugin"}`,
          );
        // A one-shot whose occurrence was made (or claimed, inside the lookahead) has nothing left to stop.
        if (timer.nextDueMs === null && !timer.paused && (kind === "delay" || timer.spec.kind === "at"))
          fail("not_found", `${what} ${JSON.stringify(id)} was already made (or skipped)`, [{ field, description: "already made" }]);
        this.deps.timers.remove(id);
        tx.append(unscheduledEvent(timer, cause?.eventId ?? "", actor, eventId ?? newId()));
      },
      timerReadAhead(this.deps.timers, id, eventId),
    );
  }
}

/** `cancel_on` as a request's ids and digests include it: only when given, so ids of requests without one stay as they were. */
function cancelOnPart(cancelOn: CancelOnRecord[] | undefined): { cancel_on?: CancelOnRecord[] } {
  return cancelOn?.length ? { cancel_on: cancelOn } : {};
}

/** `cancelOn` of a timer record: only when given. */
function cancelOnOf(cancelOn: CancelOnRecord[] | undefined): { cancelOn?: CancelOnRecord[] } {
  return cancelOn?.length ? { cancelOn } : {};
}

/** A client's delay id that names another actor's delay or timer: refused as taken, saying nothing of it. */
function delayIdInUse(delayId: string): never {
  fail(
    "already_exists",
    `delay_id ${JSON.stringify(delayId)} is already in use; choose another delay_id`,
    [{ field: "delay_id", description: "already in use" }],
    { delay_id: delayId },
  );
}
