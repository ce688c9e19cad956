import { allows, canRead, resolveActor, underCauseReader, type Principal } from "../auth/principal.js";
import { causeActor, type CauseRef, type LiveCauses } from "../log/causes.js";
import { checkId } from "../log/ids.js";
import { fail } from "../errors.js";
import type { ActionEntry } from "../actions/index.js";
import { runtimeTypes } from "../plugins/manifest.js";
import type { PluginRegistry } from "../plugins/registry.js";
import type { ActorRecord, EventStatements } from "../store/events.js";
import type { TimerStatements } from "../store/timers.js";
import type { TimerRecord } from "../store/timer-records.js";

// The checks of the timer requests, in the order the Timers class comment gives (nothing is
// written when one fails): the request's shape, who acts, what it names (the action, the
// timer) and whether the principal may use it, the input against the action's schema, the
// timer's state.

/** Longest pause or resume note, in characters. */
export const maxNoteLength = 1_000;

/**
 * Checks a timer or delay id a client chose (`field`: its request field): an id as {@link checkId}
 * wants, without "/" (`plugin/schedule` ids belong to declared schedules). Throws
 * INVALID_ARGUMENT naming `field`.
 */
export function checkClientTimerId(id: string, field: string): void {
  checkId(id, field);
  if (id.includes("/"))
    fail("bad_request", `${field} ${JSON.stringify(id)} may not contain "/": ids of the form plugin/schedule belong to declared schedules`, [
      { field, description: "no / (reserved for declared schedules)" },
    ]);
}

/** INVALID_ARGUMENT (shape): asserted actor fields under a cause (the actor is the cause's). */
export function checkNoActorUnderCause(req: { cause: CauseRef | null; actor: Partial<ActorRecord> | undefined }): void {
  if (req.cause && req.actor && Object.values(req.actor).some((v) => v))
    fail("bad_request", "actor must be empty under a cause: the actor is the cause's", [{ field: "actor", description: "empty under a cause" }]);
}

/** PERMISSION_DENIED (who acts): only executors and admins act under a cause. */
export function checkCauseRole(cause: CauseRef | null, principal: Principal, verb: string): void {
  if (cause && principal.role === "client")
    fail("permission_denied", `principal ${principal.name} (role client) may not ${verb} under a cause; only executors act under a cause`);
}

/** INVALID_ARGUMENT (`input` or `input/...`) when `input` does not match the action's schema. */
export function checkInput(entry: ActionEntry, input: Record<string, unknown>): void {
  const violations = entry.validate(input);
  if (violations.length > 0)
    fail(
      "schema_violation",
      `input of ${entry.name} does not match its schema: ${violations.map((v) => `${v.field}: ${v.description}`).join("; ")}`,
      violations,
      { action: entry.name },
    );
}

/**
 * INVALID_ARGUMENT naming `field` unless `id` names a timer or delay to look up: required, and
 * an id as {@link checkId} (no control characters, not only whitespace, not too long), which no
 * stored timer breaks; checked before NOT_FOUND (the README's order of checks).
 */
export function checkTimerIdArgument(id: string, field: string): void {
  if (id === "") fail("bad_request", `${field} is required`, [{ field, description: "required" }]);
  checkId(id, field);
}

/** INVALID_ARGUMENT (shape) for PauseTimer, ResumeTimer, TriggerTimer and BackfillTimer: the timer id is required, the note at most 1,000 characters. */
export function checkControlShape(timerId: string, note: string): void {
  checkTimerIdArgument(timerId, "timer_id");
  if (note.length > maxNoteLength)
    fail("bad_request", `note is longer than ${maxNoteLength} characters`, [{ field: "note", description: `at most ${maxNoteLength} characters` }]);
}

/** FAILED_PRECONDITION unless `timer` is recurring (cron or every_ms): delays and one-shots cannot be paused or backfilled. */
export function checkRecurring(timer: TimerRecord, what: string): void {
  const recurringOnly = `only recurring timers (cron, every_ms) can be ${what}`;
  if (timer.kind === "delay")
    fail(
      "failed_precondition",
      `timer ${JSON.stringify(timer.id)} is a delay: ${what === "paused" ? "a delay cannot be paused; cancel it (CancelDelay) instead" : recurringOnly}`,
    );
  if (timer.spec.kind === "at") fail("failed_precondition", `timer ${JSON.stringify(timer.id)} is a one-shot (at): ${recurringOnly}`);
}

/** What {@link TimerAccess} reads. */
export interface TimerAccessDeps {
  registry: PluginRegistry;
  timers: TimerStatements;
  events: EventStatements;
  live: LiveCauses;
}

/**
 * The checks that read the owner's state (3 and 4 of the Timers class comment, and who acts): the
 * action a request names, the actor a change is made as, the timer it names and whether the
 * principal may change it.
 */
export class TimerAccess {
  constructor(private readonly deps: TimerAccessDeps) {}

  /** True when events of `type` can be in the log: declared by a plugin, or recorded by the runtime. */
  knownEventType(type: string): boolean {
    return this.deps.registry.eventType(type) !== undefined || runtimeTypes.includes(type);
  }

  /** The declared action `action` (NOT_FOUND). */
  action(action: string): ActionEntry {
    return (
      this.deps.registry.action(action) ??
      fail(
        "not_found",
        `action ${JSON.stringify(action)} is not declared by any plugin (use plugin.action)`,
        [{ field: "action", description: "undeclared action" }],
        { action },
      )
    );
  }

  /** Who sets a timer and runs its calls: from outside, as CallAction (the action's allow, PERMISSION_DENIED); under a cause, the cause's actor. */
  who(
    entry: ActionEntry,
    req: { cause: CauseRef | null; actor: Partial<ActorRecord> | undefined },
    principal: Principal,
    verb: string,
  ): { actor: ActorRecord | null; cause: string } {
    if (req.cause) return { actor: causeActor(req.cause.eventId, this.deps.events, this.deps.live, principal), cause: req.cause.eventId };
    if (!allows(entry.allow, principal)) {
      const allowed = entry.allow.length === 0 ? "only code under a cause may call it" : `allow: ${entry.allow.join(", ")}`;
      fail("permission_denied", `principal ${principal.name} (role ${principal.role}) may not ${verb} ${entry.name} (${allowed})`, [], { action: entry.name });
    }
    return { actor: resolveActor(principal, req.actor), cause: "" };
  }

  /** Who makes a change to a timer (the actor of its event): the cause's actor, or the principal's (PERMISSION_DENIED for actor fields it may not have). */
  actorOf(cause: CauseRef | null, principal: Principal): ActorRecord | null {
    return cause ? causeActor(cause.eventId, this.deps.events, this.deps.live, principal) : resolveActor(principal, undefined);
  }

  /**
   * Whom the space rule reads as for `principal`'s change under `cause`: the principal from
   * outside; under a cause, {@link underCauseReader} of the cause's space (work for one space
   * reaches that space's timers and those without one, as for documents).
   */
  reader(cause: CauseRef | null, principal: Principal): Principal {
    return cause ? underCauseReader(principal, this.actorOf(cause, principal)?.in ?? "") : principal;
  }

  /**
   * Timer `id` for a change by `principal` (checks 3 and 4 of the Timers class comment): NOT_FOUND when
   * unknown, not a delay when `what` is "delay", or out of the reach of its {@link reader};
   * PERMISSION_DENIED unless {@link mayManage}.
   */
  managed(id: string, cause: CauseRef | null, principal: Principal, verb: string, what: "timer" | "delay" = "timer"): TimerRecord {
    const timer = this.deps.timers.get(id);
    const field = what === "delay" ? "delay_id" : "timer_id";
    if (!timer || !canRead(this.reader(cause, principal), timer))
      fail("not_found", `no ${what} ${JSON.stringify(id)}`, [{ field, description: `unknown ${what}` }]);
    if (what === "delay" && timer.kind !== "delay")
      fail(
        "failed_precondition",
        `${JSON.stringify(id)} is a ${timer.kind === "runtime" ? "runtime timer: use Unschedule" : "declared schedule: patch its plugin"}, not a delay`,
        [{ field, description: "names a schedule" }],
      );
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
}
