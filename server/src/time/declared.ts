import type { ScheduleDeclaration, SchedulePatch } from "@chronolog/sdk/gen/chronolog/v1/plugin_pb";
import type { ActionEntry } from "../actions/declaration.js";
import { canonicalJson } from "../log/canonical.js";
import { ChronologError, type FieldViolation } from "../errors.js";
import { runtimeTypes, type CompiledManifest, type RegisteredPlugin } from "../plugins/manifest.js";
import type { Tx } from "../store/committer.js";
import type { TimerControlStatements } from "../store/timer-control.js";
import { overdueToJson, specToJson } from "../store/timer-json.js";
import type { TimerStatements } from "../store/timers.js";
import { cancelOnViolations } from "./cancel-on.js";
import { parseCron } from "./cron.js";
import { canonicalZone, isValidZoneName } from "./zones.js";
import { dstFromProto, schedulePolicyFromProto } from "./policy-proto.js";
import { policyData, scheduledEvent, unscheduledEvent } from "./timer-events.js";
import { anchorFor, canonicalSpec, checkSchedulePolicy, firstDue, maxHorizonMs, minEveryMs } from "./spec-checks.js";
import {
  defaultSchedulePolicy,
  type CancelOnRecord,
  type DstPolicy,
  type Overdue,
  type SchedulePolicy,
  type TimerRecord,
  type TimerSpec,
} from "../store/timer-records.js";
import { blankTimer, defaultRetryDelaysMs } from "./timers.js";

// Declared schedules: the `schedules` of plugin manifests and the
// `schedule_patches` later plugins make to them, as timers of kind `declared`.
//
// - A schedule `s` of plugin `p` is the timer `p/s` (runtime timer ids may not contain "/").
// - Its effective form is the declaration with every patch naming it applied in registration
//   order (the plugin registered last wins; within one manifest, in list order). Removing a
//   patch restores what is under it. A patch left naming a schedule its plugin has since
//   removed, or one that no longer fits the schedule it names, is ignored (and logged).
// - It runs as the system (actor null), with the effective input, `max_lateness_ms` as its
//   lateness bound (0: none) and `retry_delays_ms` as its retry waits (empty: 10 s then 30 s).
// - It is due only when enabled and of this owner's region (an owner of region N makes the
//   entries of region N only; default 0); otherwise it is stored with no next due moment.
//
// Failure semantics: the timers are written in the commit of the registration that changed
// them ({@link reconcileDeclared} runs inside the registry's unit), and again at every
// start, so the timers always match the stored manifests whatever crashed where. A changed
// spec (cron, zone, every), enabling, or a new region recomputes the next due moment from the
// commit time; a change of input, action, bound or retries keeps it. A removed schedule's
// timer is deleted (its claimed occurrences still run and retry).
//
// a schedule's `policy` (jitter, start/end, max_count, overlap, catch-up) and `dst`
// (gap shift/skip, repeated first/last/both) are part of its definition; a patch replaces them
// whole. A changed policy recomputes the next due moment like a changed spec. A schedule paused
// by PauseTimer stays paused across registrations and restarts (it keeps no next due moment;
// the moment it will resume from follows its spec and policy).

/** Most retries a schedule may declare. */
export const maxRetries = 20;

const scheduleName = /^[A-Za-z_][A-Za-z0-9_-]{0,62}$/;

/** A declared schedule with its patches applied, before it becomes a timer. */
export interface EffectiveSchedule {
  /** `plugin/schedule`. */
  id: string;
  plugin: string;
  schedule: string;
  /** `plugin.action`, resolved. */
  action: string;
  input: Record<string, unknown>;
  /** "" when `everyMs` is used. */
  cron: string;
  zone: string;
  /** 0 when `cron` is used. */
  everyMs: number;
  /** 0: no bound. */
  maxLatenessMs: number;
  retryDelaysMs: number[];
  disabled: boolean;
  region: number;
  /** Its schedule policy (anchor unset). */
  policy: SchedulePolicy;
  /** undefined: shift / first. */
  dst: DstPolicy | undefined;
  /** Events that pause it (time/cancel-on.ts). */
  cancelOn: CancelOnRecord[];
}

/** What the checks know about the plugins: every action by `plugin.action`. */
type ActionLookup = (name: string) => ActionEntry | undefined;

/** The timer id of schedule `schedule` of plugin `plugin`. */
export function declaredTimerId(plugin: string, schedule: string): string {
  return `${plugin}/${schedule}`;
}

/**
 * The problems with `compiled`'s schedules and schedule patches, checked at registration
 * against the other registered plugins `others`: each a violation naming the field,
 * e.g. `schedules.nightly.cron` (a bad expression, parseCron's message), `schedules.nightly.zone`,
 * `schedules.nightly.action` (not declared by this plugin or, as `plugin.action`, any
 * other), `schedules.nightly` (neither or both of cron and every_ms),
 * `schedules.nightly.input/to` (the action's input schema), `schedule_patches[0].plugin` or
 * `.schedule` (unknown). Empty when all is well.
 */
export function scheduleViolations(compiled: CompiledManifest, others: RegisteredPlugin[]): FieldViolation[] {
  const manifest = compiled.manifest;
  const own = new Map(compiled.actions.map((a) => [a.name, a]));
  const otherActions = new Map(others.flatMap((p) => p.compiled.actions.map((a) => [a.name, a] as const)));
  const lookup: ActionLookup = (name) => own.get(name) ?? (name.startsWith(`${manifest.name}.`) ? undefined : otherActions.get(name));
  const violations: FieldViolation[] = [];
  const types = new Set([...compiled.eventTypes, ...others.flatMap((p) => p.compiled.eventTypes)].map((e) => e.type));
  const known = (type: string) => types.has(type) || runtimeTypes.includes(type);
  for (const [name, decl] of Object.entries(manifest.schedules)) {
    const at = `schedules.${name}`;
    if (!scheduleName.test(name)) {
      violations.push({ field: at, description: "schedule name must be letters, digits, _ or - (no dots, at most 63)" });
      continue;
    }
    const base = fromDeclaration(manifest.name, name, decl, violations, at);
    if (base) checkEffective(base, lookup, violations, at);
    if (base) violations.push(...cancelOnViolations(base.cancelOn, base.input, known, `${at}.cancel_on`));
  }
  const byName = new Map(others.map((p) => [p.compiled.manifest.name, p]));
  manifest.schedulePatches.forEach((patch, i) => {
    const at = `schedule_patches[${i}]`;
    const target = byName.get(patch.plugin);
    if (patch.plugin === manifest.name)
      return violations.push({ field: `${at}.plugin`, description: "a plugin changes its own schedules in its schedules, not by a patch" });
    if (!target) return violations.push({ field: `${at}.plugin`, description: `no registered plugin ${JSON.stringify(patch.plugin)}` });
    if (!Object.hasOwn(target.compiled.manifest.schedules, patch.schedule)) {
      return violations.push({ field: `${at}.schedule`, description: `plugin ${patch.plugin} declares no schedule ${JSON.stringify(patch.schedule)}` });
    }
    // The schedule as the other plugins leave it, then this patch on top.
    const current = effectiveSchedules(others).find((s) => s.plugin === patch.plugin && s.schedule === patch.schedule);
    if (!current) return;
    try {
      checkEffective(applyPatch(current, patch), lookup, violations, at);
    } catch (e) {
      if (!(e instanceof ChronologError)) throw e;
      violations.push(...e.violations.map((v) => ({ field: `${at}.${v.field}`, description: v.description })));
    }
  });
  return violations;
}

/**
 * The effective schedules of `plugins`: each declaration with the patches naming it
 * applied in registration order (`registeredAt`, then plugin name). A patch whose result no
 * longer checks (e.g. a zone set on a schedule that became `every_ms`) or that names a
 * schedule no longer declared is left out and passed to `ignored`.
 */
export function effectiveSchedules(
  plugins: RegisteredPlugin[],
  ignored: (plugin: string, patch: SchedulePatch, why: string) => void = () => {},
): EffectiveSchedule[] {
  const byId = new Map<string, EffectiveSchedule>();
  for (const p of plugins) {
    for (const [name, decl] of Object.entries(p.compiled.manifest.schedules)) {
      const base = fromDeclaration(p.compiled.manifest.name, name, decl, [], "");
      if (base) byId.set(base.id, base);
    }
  }
  const ordered = [...plugins].sort((a, b) => a.registeredAt - b.registeredAt || a.compiled.manifest.name.localeCompare(b.compiled.manifest.name));
  for (const p of ordered) {
    for (const patch of p.compiled.manifest.schedulePatches) {
      const id = declaredTimerId(patch.plugin, patch.schedule);
      const current = byId.get(id);
      if (!current) {
        ignored(p.compiled.manifest.name, patch, `no schedule ${id} is declared`);
        continue;
      }
      const problems: FieldViolation[] = [];
      let next = current;
      try {
        next = applyPatch(current, patch);
      } catch (e) {
        if (!(e instanceof ChronologError)) throw e;
        problems.push(...e.violations);
      }
      if (problems.length === 0) checkSpec(next, problems, "patch");
      if (problems.length > 0) ignored(p.compiled.manifest.name, patch, `${problems[0].field}: ${problems[0].description}`);
      else byId.set(id, next);
    }
  }
  return [...byId.values()].sort((a, b) => a.id.localeCompare(b.id));
}

/**
 * `schedule` with `patch`'s fields (cron, zone, input, disabled, dst, policy) put over it; a cron
 * makes an `every_ms` schedule a cron one. Throws INVALID_ARGUMENT (`dst.*`, `policy.*`) for a
 * patch's unknown enum values or out-of-range ms.
 */
export function applyPatch(schedule: EffectiveSchedule, patch: SchedulePatch): EffectiveSchedule {
  const next = { ...schedule };
  if (patch.cron !== undefined) {
    next.cron = patch.cron;
    next.everyMs = 0;
  }
  if (patch.zone !== undefined) next.zone = canonicalZoneName(patch.zone);
  if (patch.input !== undefined) next.input = patch.input;
  if (patch.disabled !== undefined) next.disabled = patch.disabled;
  if (patch.dst !== undefined) next.dst = dstFromProto(patch.dst, "dst");
  if (patch.policy !== undefined) next.policy = schedulePolicyFromProto(patch.policy);
  return next;
}

/**
 * What declared timers to write so they match `plugins`, inside unit `tx`: creates,
 * updates (event `timer.scheduled`, replaced) and deletes (`timer.unscheduled`) the timers of
 * kind `declared`, as the system. Returns the earliest next due moment it set (ms), for the
 * clock, or null. `log` hears about patches left out and schedules that cannot be computed.
 */
export function reconcileDeclared(
  tx: Tx,
  timers: TimerStatements,
  plugins: RegisteredPlugin[],
  region: number,
  log: (message: string, details: Record<string, unknown>) => void,
  control?: TimerControlStatements,
): number | null {
  const existing = new Map(timers.declared().map((t) => [t.id, t]));
  let earliest: number | null = null;
  const schedules = effectiveSchedules(plugins, (plugin, patch, why) =>
    log("a schedule patch is ignored", { plugin, target: declaredTimerId(patch.plugin, patch.schedule), why }),
  );
  for (const s of schedules) {
    const current = existing.get(s.id) ?? timers.get(s.id);
    existing.delete(s.id);
    let timer: TimerRecord;
    let heldDueMs: number | null = null;
    try {
      ({ timer, heldDueMs } = toTimer(s, current, region, tx.now));
    } catch (e) {
      log("a declared schedule cannot be computed; left as it was", { timer: s.id, error: e instanceof Error ? e.message : String(e) });
      continue;
    }
    if (current && current.kind === "declared" && definition(current) === definition(timer) && current.nextDueMs === timer.nextDueMs) continue;
    timers.put(timer, tx.now);
    // put wrote the policy (and the anchor of every_ms moments); a paused schedule stays paused, holding its new first moment.
    if (current?.kind === "declared" && current.paused) control?.setPaused(timer.id, { ...current.paused, heldDueMs }, null, tx.now);
    tx.append(scheduledEvent(timer, current !== undefined, "", null));
    if (timer.nextDueMs !== null && (earliest === null || timer.nextDueMs < earliest)) earliest = timer.nextDueMs;
  }
  for (const gone of existing.values()) {
    timers.remove(gone.id);
    tx.append(unscheduledEvent(gone, "", null));
  }
  return earliest;
}

/**
 * The timer for effective schedule `s` given the stored one (`current`), due only when enabled,
 * of `region` and not paused; `heldDueMs` is the moment a paused one resumes from. A
 * policy whose end has passed leaves it spent (no next due moment).
 */
function toTimer(s: EffectiveSchedule, current: TimerRecord | undefined, region: number, nowMs: number): { timer: TimerRecord; heldDueMs: number | null } {
  const spec = canonicalSpec(
    s.cron ? { kind: "cron", expression: s.cron, zone: s.zone, ...(s.dst ? { dst: s.dst } : {}) } : { kind: "every", everyMs: s.everyMs },
  );
  const overdue: Overdue = s.maxLatenessMs > 0 ? { kind: "max", maxLatenessMs: s.maxLatenessMs } : { kind: "unbounded" };
  const runs = !s.disabled && s.region === region;
  const declared = current?.kind === "declared" ? current : undefined;
  const sameMoments =
    declared !== undefined &&
    canonicalJson(specToJson(declared.spec)) === canonicalJson(specToJson(spec)) &&
    canonicalJson(policyData(declared.policy)) === canonicalJson(policyData(s.policy));
  const policy: SchedulePolicy = { ...s.policy, anchorMs: sameMoments ? declared.policy.anchorMs : anchorFor(spec, nowMs) };
  const paused = declared?.paused ?? null;
  const keep = runs && sameMoments && (paused ? paused.heldDueMs !== null : declared.nextDueMs !== null);
  const kept = paused ? paused.heldDueMs : (declared?.nextDueMs ?? null);
  const due = keep ? kept : runs ? firstDueOrSpent(spec, nowMs, s, policy) : null;
  const timer: TimerRecord = {
    ...blankTimer(s.id, "declared", nowMs, s.region),
    action: s.action,
    input: s.input,
    spec,
    nextDueMs: paused ? null : due,
    plugin: s.plugin,
    schedule: s.schedule,
    overdue,
    disabled: s.disabled,
    retryDelaysMs: s.retryDelaysMs,
    policy,
    paused,
    occurrences: current?.occurrences ?? 0,
    createdAt: current?.createdAt ?? nowMs,
    ...(s.cancelOn.length > 0 ? { cancelOn: s.cancelOn } : {}),
  };
  return { timer, heldDueMs: due };
}

/** `firstDue` of a declared schedule, or null when its policy's end leaves no moment (spent). */
function firstDueOrSpent(spec: TimerSpec, nowMs: number, s: EffectiveSchedule, policy: SchedulePolicy): number | null {
  try {
    return firstDue(spec, nowMs, `schedules.${s.schedule}`, policy, s.id, `schedules.${s.schedule}.policy`);
  } catch (e) {
    if (e instanceof ChronologError && e.violations[0]?.field.endsWith("policy.end")) return null;
    throw e;
  }
}

/** What makes two declared timers the same schedule (next due aside; the policy's anchor aside). */
function definition(t: TimerRecord): string {
  return canonicalJson({
    action: t.action,
    input: t.input,
    spec: specToJson(t.spec),
    overdue: overdueToJson(t.overdue),
    retry: t.retryDelaysMs,
    disabled: t.disabled,
    region: t.region,
    ...policyData(t.policy),
    ...(t.cancelOn?.length ? { cancel_on: t.cancelOn } : {}),
  });
}

/** A declaration as an effective schedule; its shape problems go to `violations` under `at`. */
function fromDeclaration(plugin: string, name: string, decl: ScheduleDeclaration, violations: FieldViolation[], at: string): EffectiveSchedule | undefined {
  const everyMs = safeNumber(decl.everyMs);
  const maxLatenessMs = safeNumber(decl.maxLatenessMs);
  if (maxLatenessMs === undefined || maxLatenessMs > maxHorizonMs)
    violations.push({ field: `${at}.max_lateness_ms`, description: `at most ${maxHorizonMs} ms (100 years)` });
  if (decl.retryDelaysMs.length > maxRetries) violations.push({ field: `${at}.retry_delays_ms`, description: `at most ${maxRetries} retries` });
  if (everyMs === undefined) {
    violations.push({ field: `${at}.every_ms`, description: `from ${minEveryMs} to ${maxHorizonMs} ms` });
    return undefined;
  }
  let policy: SchedulePolicy = { ...defaultSchedulePolicy };
  let dst: DstPolicy | undefined;
  try {
    policy = schedulePolicyFromProto(decl.policy, `${at ? `${at}.` : ""}policy`);
    dst = dstFromProto(decl.dst, `${at ? `${at}.` : ""}dst`);
  } catch (e) {
    if (!(e instanceof ChronologError)) throw e;
    violations.push(...e.violations);
    return undefined;
  }
  return {
    id: declaredTimerId(plugin, name),
    plugin,
    schedule: name,
    action: decl.action.includes(".") ? decl.action : `${plugin}.${decl.action}`,
    input: decl.input ?? {},
    cron: decl.cron,
    zone: canonicalZoneName(decl.zone),
    everyMs,
    maxLatenessMs: maxLatenessMs ?? 0,
    retryDelaysMs: decl.retryDelaysMs.length > 0 ? [...decl.retryDelaysMs] : [...defaultRetryDelaysMs],
    disabled: decl.disabled,
    region: decl.region,
    policy,
    dst,
    cancelOn: decl.cancelOn.map((c) => ({ type: c.type, match: { ...c.match } })),
  };
}

/** A zone as stored: its canonical spelling when valid (`utc` → `UTC`), else as given (the check reports it). */
function canonicalZoneName(zone: string): string {
  return isValidZoneName(zone) ? canonicalZone(zone) : zone;
}

/** Checks an effective schedule's action, input and spec, reporting under `at`. */
function checkEffective(s: EffectiveSchedule, lookup: ActionLookup, violations: FieldViolation[], at: string): void {
  const entry = lookup(s.action);
  if (!entry)
    violations.push({
      field: `${at}.action`,
      description: `action ${JSON.stringify(s.action)} is not declared (name an action of this plugin, or plugin.action)`,
    });
  else for (const v of entry.validate(s.input)) violations.push({ field: `${at}.${v.field}`, description: v.description });
  checkSpec(s, violations, at);
}

/**
 * Checks when `s` fires: exactly one of cron (a valid expression in a valid zone, with its DST
 * policy) and every_ms (in range); zone and dst only with cron; the policy's rules.
 */
function checkSpec(s: EffectiveSchedule, violations: FieldViolation[], at: string): void {
  if (s.cron === "" && s.everyMs === 0) return void violations.push({ field: at, description: "a schedule needs cron or every_ms" });
  if (s.cron !== "" && s.everyMs !== 0) return void violations.push({ field: at, description: "a schedule takes cron or every_ms, not both" });
  const spec: TimerSpec = s.cron ? { kind: "cron", expression: s.cron, zone: s.zone, ...(s.dst ? { dst: s.dst } : {}) } : { kind: "every", everyMs: s.everyMs };
  try {
    checkSchedulePolicy(s.policy, spec, "policy");
  } catch (e) {
    if (!(e instanceof ChronologError)) throw e;
    violations.push(...e.violations.map((v) => ({ field: `${at}.${v.field}`, description: v.description })));
  }
  if (s.cron === "") {
    if (s.zone !== "") violations.push({ field: `${at}.zone`, description: "zone applies to cron only" });
    if (s.dst !== undefined) violations.push({ field: `${at}.dst`, description: "dst applies to cron only" });
    if (s.everyMs < minEveryMs || s.everyMs > maxHorizonMs)
      violations.push({ field: `${at}.every_ms`, description: `from ${minEveryMs} to ${maxHorizonMs} ms (faster cadences are pulses)` });
    return;
  }
  try {
    parseCron(s.cron, s.zone, s.dst);
  } catch (e) {
    if (!(e instanceof ChronologError)) throw e;
    const which = e.violations[0]?.field;
    violations.push({ field: `${at}.${which === "zone" ? "zone" : which === "dstPolicy" ? "dst" : "cron"}`, description: e.message });
  }
}

/** A uint64 field as a number, or undefined when beyond 2^53. */
function safeNumber(value: bigint): number | undefined {
  return value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : undefined;
}
