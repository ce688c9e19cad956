import { allows, canRead, resolveActor, type Principal } from "../auth/principal.js";
import { canonicalJson } from "../log/canonical.js";
import { causeActor, type LiveCauses } from "../log/causes.js";
import type { CauseRef } from "../log/emit.js";
import { derivedId, maxIdLength, newId } from "../log/ids.js";
import { fail } from "../errors.js";
import type { ActionEntry } from "../actions/index.js";
import type { Clock } from "../clock.js";
import type { PluginRegistry } from "../plugins/registry.js";
import type { Committer, Tx } from "../store/committer.js";
import type { ActorRecord, EventStatements } from "../store/events.js";
import { overdueToJson, specToJson, type TimerCursor, type TimerStatements } from "../store/timers.js";
import type { DelayChains } from "./chains.js";
import { checkAt, defaultRetryDelaysMs, firstDue, maxHorizonMs, preview, type Overdue, type TimerKind, type TimerRecord, type TimerSpec } from "./timers.js";

/** A Schedule (T3), as parsed from the request. */
export interface ScheduleInput {
  /** The timer id; "" for one derived under the cause or, from outside, a fresh UUIDv7. */
  timerId: string;
  /** `plugin.action`. */
  action: string;
  input: Record<string, unknown>;
  spec: TimerSpec;
  overdue: Overdue;
  /** Set when code under a delivery or an action run schedules (X5). */
  cause: CauseRef | null;
  /** Asserted actor fields (from outside only). */
  actor: Partial<ActorRecord> | undefined;
}

/** A Delay (K3), as parsed from the request. */
export interface DelayInput {
  action: string;
  input: Record<string, unknown>;
  /** After `ms` from now, or at `atMs` (ms since the epoch). */
  when: { kind: "interval"; ms: number } | { kind: "at"; atMs: number };
  /** Required by the API (K3). */
  overdue: Overdue;
  cause: CauseRef | null;
  /** Start a new chain instead of continuing the cause's (K5). */
  freshChain?: boolean;
  actor: Partial<ActorRecord> | undefined;
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
  events: EventStatements;
  live: LiveCauses;
  clock: Clock;
  /** The owner's region (K6): stamped on the timers and delays it sets. */
  region: number;
  /** Chain depths of delays and their maximum (K5); absent: every delay at depth 0. */
  chains?: DelayChains;
  /** Told after each commit that set a timer, with its next due moment (re-arms the clock, T5). */
  changed(nextDueMs: number | null): void;
}

/** Most preview times GetTimer computes. */
export const maxPreviewCount = 100;

/**
 * Timer requests (SPEC T3, T4, K3): Schedule, Unschedule, Delay, CancelDelay,
 * ListTimers, GetTimer. Checks run before anything is written: the action
 * exists (NOT_FOUND), the caller may call it (its `allow` from outside, like
 * CallAction; under a cause, executors and admins only, PERMISSION_DENIED),
 * its input matches its schema and the spec is valid (INVALID_ARGUMENT).
 *
 * Failure semantics: each change is one committer unit holding the `timers`
 * row and its event (`timer.scheduled` or `timer.unscheduled`, with the
 * actor of whoever made the change and the cause it was made under), so a
 * timer exists exactly when its event does (E3). The same timer id replaces
 * (Schedule); under a cause, the id is derived from the cause and position
 * (E7) and a retried run that makes the same request finds the stored timer
 * and changes nothing, so a delay or a one-shot it armed fires once. A cancel
 * racing the claim of the same occurrence is ordered by the committer: either
 * the cancel wins (never called) or the claim does (NOT_FOUND "already made").
 */
export class Timers {
  constructor(private readonly deps: TimersDeps) {}

  /** Sets (or replaces) a runtime timer; returns it as stored. Errors as in the class comment; FAILED_PRECONDITION when the id is a delay's or a declared schedule's. */
  async schedule(req: ScheduleInput, principal: Principal): Promise<TimerRecord> {
    const entry = this.checkedAction(req.action, req.input);
    const who = this.who(entry, req, principal, "schedule");
    if (req.timerId.length > maxIdLength) fail("bad_request", `timer_id is longer than ${maxIdLength} characters`, [{ field: "timer_id", description: `at most ${maxIdLength} characters` }]);
    if (req.timerId.includes("/")) fail("bad_request", `timer_id ${JSON.stringify(req.timerId)} may not contain "/": plugin/schedule ids are declared schedules'`, [{ field: "timer_id", description: "no / (reserved for declared schedules)" }]);
    const id = req.timerId || (req.cause ? derivedId(req.cause.eventId, req.cause.position, { op: "schedule", action: entry.name, input: req.input, spec: specToJson(req.spec) }) : newId());
    const nextDueMs = firstDue(req.spec, this.deps.clock.now());
    const timer = await this.deps.committer.submit((tx) => {
      const existing = this.deps.timers.get(id);
      if (existing && existing.kind !== "runtime") fail("failed_precondition", `timer ${JSON.stringify(id)} is a ${existing.kind === "delay" ? "delay (use CancelDelay)" : "declared schedule (patch its plugin)"}; choose another timer_id`);
      const fresh: TimerRecord = { ...blankTimer(id, "runtime", tx.now, this.deps.region), action: entry.name, input: req.input, spec: req.spec, nextDueMs, actor: who.actor, overdue: req.overdue, occurrences: existing?.occurrences ?? 0 };
      if (existing && req.cause && sameDefinition(existing, fresh)) return existing; // a retried run (E7)
      return this.put(tx, fresh, who, existing !== undefined);
    });
    this.deps.changed(timer.nextDueMs);
    return timer;
  }

  /** Stops a runtime timer (T3). NOT_FOUND when unknown; FAILED_PRECONDITION for a delay or a declared schedule. */
  async unschedule(timerId: string, cause: CauseRef | null, principal: Principal): Promise<void> {
    await this.remove(timerId, "runtime", cause, principal);
  }

  /** Arms a delayed call (K3); returns its id and due moment (ms). Errors as for Schedule; `at` more than 1 s past is INVALID_ARGUMENT. */
  async delay(req: DelayInput, principal: Principal): Promise<{ delayId: string; dueMs: number }> {
    const entry = this.checkedAction(req.action, req.input);
    const who = this.who(entry, req, principal, "delay");
    const now = this.deps.clock.now();
    let dueMs: number;
    if (req.when.kind === "interval") {
      if (!Number.isSafeInteger(req.when.ms) || req.when.ms < 0 || req.when.ms > maxHorizonMs) fail("bad_request", `interval_ms must be from 0 to ${maxHorizonMs}`, [{ field: "interval_ms", description: "out of range" }]);
      dueMs = now + req.when.ms;
    } else {
      checkAt(req.when.atMs, now, "at");
      dueMs = req.when.atMs;
    }
    const when = req.when.kind === "interval" ? { interval_ms: req.when.ms } : { at: req.when.atMs };
    const id = req.cause ? derivedId(req.cause.eventId, req.cause.position, { op: "delay", action: entry.name, input: req.input, when, overdue: overdueToJson(req.overdue) }) : newId();
    const chainDepth = (await this.deps.chains?.depthOf({ cause: req.cause, freshChain: req.freshChain ?? false, action: entry.name, delayId: id, actor: who.actor })) ?? 0; // K5: FAILED_PRECONDITION past the maximum
    const timer = await this.deps.committer.submit((tx) => {
      const existing = this.deps.timers.get(id);
      if (existing) return existing; // a retried run under the same cause (E7): armed once
      const fresh: TimerRecord = { ...blankTimer(id, "delay", tx.now, this.deps.region), action: entry.name, input: req.input, spec: { kind: "at", atMs: dueMs }, nextDueMs: dueMs, actor: who.actor, overdue: req.overdue, chainDepth };
      return this.put(tx, fresh, who, false);
    });
    this.deps.changed(timer.nextDueMs);
    return { delayId: timer.id, dueMs: timer.spec.kind === "at" ? timer.spec.atMs : dueMs };
  }

  /** Cancels a pending delay (K3). NOT_FOUND when unknown or already made. */
  async cancelDelay(delayId: string, cause: CauseRef | null, principal: Principal): Promise<void> {
    await this.remove(delayId, "delay", cause, principal);
  }

  /**
   * Timers the principal may read (R5: by their actor's `in`), pending ones by next due
   * moment, then spent ones by id (T4). `pageSize` already checked (1-1000); `kind` ""
   * for all. INVALID_ARGUMENT for a page token not made here.
   */
  list(pageSize: number, pageToken: string, kind: TimerKind | "", principal: Principal): TimerPage {
    const after = pageToken ? decodeToken(pageToken) : null;
    const rows = this.deps.timers.list(after, kind, pageSize);
    const last = rows[rows.length - 1];
    return {
      timers: rows.filter((t) => canRead(principal, t)),
      nextPageToken: rows.length === pageSize && last ? encodeToken({ dueMs: last.nextDueMs, id: last.id }) : "",
    };
  }

  /** Timer `timerId` with its next `previewCount` due moments (ms, T4). NOT_FOUND when unknown or not readable; INVALID_ARGUMENT above 100. */
  get(timerId: string, previewCount: number, principal: Principal): { timer: TimerRecord; previewMs: number[] } {
    if (previewCount > maxPreviewCount) fail("bad_request", `preview_count must be at most ${maxPreviewCount}`, [{ field: "preview_count", description: `at most ${maxPreviewCount}` }]);
    const timer = this.deps.timers.get(timerId);
    if (!timer || !canRead(principal, timer)) fail("not_found", `no timer ${JSON.stringify(timerId)}`, [{ field: "timer_id", description: "unknown timer" }]);
    return { timer, previewMs: preview(timer, previewCount) };
  }

  /** The declared action (NOT_FOUND) whose input matches its schema (INVALID_ARGUMENT, `input/...`). */
  private checkedAction(action: string, input: Record<string, unknown>): ActionEntry {
    if (action === "") fail("bad_request", "action is required", [{ field: "action", description: "required" }]);
    const entry = this.deps.registry.action(action) ?? fail("not_found", `action ${JSON.stringify(action)} is not declared by any plugin (use plugin.action)`, [{ field: "action", description: "undeclared action" }], { action });
    const violations = entry.validate(input);
    if (violations.length > 0) fail("schema_violation", `input of ${entry.name} does not match its schema: ${violations.map((v) => `${v.field}: ${v.description}`).join("; ")}`, violations, { action: entry.name });
    return entry;
  }

  /** Who sets a timer and runs its calls (T9): from outside, as CallAction; under a cause, the cause's actor (X5). */
  private who(entry: ActionEntry, req: { cause: CauseRef | null; actor: Partial<ActorRecord> | undefined }, principal: Principal, verb: string): { actor: ActorRecord | null; cause: string } {
    if (req.cause) {
      if (principal.role === "client") fail("permission_denied", `principal ${principal.name} (role client) may not ${verb} under a cause; only executors act under a cause`);
      if (req.actor && Object.values(req.actor).some((v) => v)) fail("bad_request", "actor must be empty under a cause: the actor is the cause's");
      return { actor: causeActor(req.cause.eventId, this.deps.events, this.deps.live), cause: req.cause.eventId };
    }
    if (!allows(entry.allow, principal)) {
      const allowed = entry.allow.length === 0 ? "only code under a cause may call it" : `allow: ${entry.allow.join(", ")}`;
      fail("permission_denied", `principal ${principal.name} (role ${principal.role}) may not ${verb} ${entry.name} (${allowed})`, [], { action: entry.name });
    }
    return { actor: resolveActor(principal, req.actor), cause: "" };
  }

  /** Writes `timer` and its `timer.scheduled` event in unit `tx`; returns it as stored. */
  private put(tx: Tx, timer: TimerRecord, who: { actor: ActorRecord | null; cause: string }, replaced: boolean): TimerRecord {
    this.deps.timers.put(timer, tx.now);
    tx.append(scheduledEvent(timer, replaced, who.cause, who.actor));
    return this.deps.timers.get(timer.id) as TimerRecord;
  }

  /** Unschedule / CancelDelay: deletes a pending timer of `kind` with its `timer.unscheduled` event. */
  private async remove(id: string, kind: "runtime" | "delay", cause: CauseRef | null, principal: Principal): Promise<void> {
    const what = kind === "delay" ? "delay" : "timer";
    const field = kind === "delay" ? "delay_id" : "timer_id";
    if (id === "") fail("bad_request", `${field} is required`, [{ field, description: "required" }]);
    if (cause && principal.role === "client") fail("permission_denied", `principal ${principal.name} (role client) may not act under a cause; only executors act under a cause`);
    const actor = cause ? causeActor(cause.eventId, this.deps.events, this.deps.live) : resolveActor(principal, undefined);
    await this.deps.committer.submit((tx) => {
      const timer = this.deps.timers.get(id);
      if (!timer || (kind === "delay" && timer.kind !== "delay")) fail("not_found", `no ${what} ${JSON.stringify(id)}`, [{ field, description: `unknown ${what}` }]);
      if (kind === "runtime" && timer.kind !== "runtime") fail("failed_precondition", `timer ${JSON.stringify(id)} is a ${timer.kind === "delay" ? "delay: use CancelDelay" : "declared schedule: patch its plugin"}`);
      if (kind === "delay" && timer.nextDueMs === null) fail("not_found", `delay ${JSON.stringify(id)} was already made`, [{ field, description: "already made" }]);
      const entry = this.deps.registry.action(timer.action);
      if (!cause && principal.role !== "admin" && !(entry && allows(entry.allow, principal))) {
        fail("permission_denied", `principal ${principal.name} (role ${principal.role}) may not cancel a ${what} calling ${timer.action} (it may not call it)`);
      }
      this.deps.timers.remove(id);
      tx.append(unscheduledEvent(timer, cause?.eventId ?? "", actor));
    });
  }
}

/**
 * `timer.scheduled` (T4): a timer was set or changed. Data: timer_id, kind, action, spec,
 * overdue, next_due_ms (null: disabled, spent or another region's), replaced; declared schedules
 * add plugin, schedule, disabled, region and retry_delays_ms. Actor and cause: whoever set it
 * (declared schedules: the system, no cause).
 */
export function scheduledEvent(timer: TimerRecord, replaced: boolean, cause: string, actor: ActorRecord | null) {
  const declared = timer.kind === "declared" ? { plugin: timer.plugin, schedule: timer.schedule, disabled: timer.disabled, region: timer.region, retry_delays_ms: timer.retryDelaysMs } : {};
  return {
    id: newId(),
    type: "timer.scheduled",
    data: { timer_id: timer.id, kind: timer.kind, action: timer.action, spec: specToJson(timer.spec), overdue: overdueToJson(timer.overdue), next_due_ms: timer.nextDueMs, replaced, ...declared },
    cause,
    actor,
  };
}

/** `timer.unscheduled` (T3, T2): timer `timer` was removed. Data: timer_id, kind, action, next_due_ms. */
export function unscheduledEvent(timer: TimerRecord, cause: string, actor: ActorRecord | null) {
  return { id: newId(), type: "timer.unscheduled", data: { timer_id: timer.id, kind: timer.kind, action: timer.action, next_due_ms: timer.nextDueMs }, cause, actor };
}

/** A timer with only its id, kind, region and times set (retries: the default, T7). */
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
    createdAt: nowMs,
    updatedAt: nowMs,
  };
}

/** True when `a` and `b` call the same action with the same input, spec, bound and actor. */
function sameDefinition(a: TimerRecord, b: TimerRecord): boolean {
  const def = (t: TimerRecord) => canonicalJson({ action: t.action, input: t.input, spec: specToJson(t.spec), overdue: overdueToJson(t.overdue), actor: t.actor });
  return def(a) === def(b);
}

/** A ListTimers page token: base64url of `[next due ms | null, id]`. */
function encodeToken(cursor: TimerCursor): string {
  return Buffer.from(JSON.stringify([cursor.dueMs, cursor.id])).toString("base64url");
}

function decodeToken(token: string): TimerCursor {
  try {
    const [dueMs, id] = JSON.parse(Buffer.from(token, "base64url").toString("utf8")) as unknown[];
    if ((dueMs === null || Number.isSafeInteger(dueMs)) && typeof id === "string") return { dueMs: dueMs as number | null, id };
  } catch {
    /* falls through */
  }
  fail("bad_request", "page_token is not one returned by ListTimers", [{ field: "page_token", description: "malformed" }]);
}
