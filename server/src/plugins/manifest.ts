import { fromJson, toJson, type JsonValue } from "@bufbuild/protobuf";
import { canonicalJson } from "../log/canonical.js";
import { PluginManifestSchema, type PluginManifest } from "@chronolog/sdk/gen/chronolog/v1/plugin_pb";
import { compileAction, maxTimerMs, type ActionEntry } from "../actions/declaration.js";
import { compileCollection, type CollectionEntry } from "../collections/declaration.js";
import { ChronologError, fail, type FieldViolation } from "../errors.js";
import { compileFilter } from "../log/filter.js";
import { jsonProblem } from "../json-limits.js";
import { schemaCompiler, type Validator } from "./schemas.js";
import { checkPulses } from "../time/pulse-rules.js";
import { concurrencyProblems, eventPathProblems, withConcurrencyShorthand } from "./flow-limits.js";
import { rateProblems } from "../flow/rate.js";
import { debounceProblems } from "../processors/debounce.js";
import { manifestRetentionRules, typeMatches, writtenLimitViolations, type RetentionRule } from "../log/retention-rules.js";

/** A declared event type, ready to check emits against. */
export interface EventTypeEntry {
  type: string;
  plugin: string;
  validate: Validator;
  /** Who may emit it from outside; empty: only code under a cause. */
  allow: string[];
}

/** A manifest that passed every check, with its compiled parts. */
export interface CompiledManifest {
  manifest: PluginManifest;
  /** Canonical JSON of the manifest: equal strings mean equal manifests. */
  canonical: string;
  eventTypes: EventTypeEntry[];
  /** Declared collections; names and change types are checked against other plugins by the registry. */
  collections: CollectionEntry[];
  /** Declared actions, named `plugin.action`. */
  actions: ActionEntry[];
  /** Its retention rules, for its own event types and its collections' change types. */
  retention: RetentionRule[];
}

/** A registered plugin: its current manifest and revision (from 1), time in ms (UTC). */
export interface RegisteredPlugin {
  compiled: CompiledManifest;
  revision: number;
  registeredAt: number;
}

const pluginName = /^[a-z][a-z0-9_-]{0,62}$/;
const eventTypeName = /^[a-z][a-z0-9_-]*(\.[a-z0-9_-]+)+$/;
// A principal name never starts with `role:`, so `role:<typo>` is rejected, not taken for a name.
const allowEntry = /^(\*|role:(admin|executor|client)|(?!role:)[A-Za-z0-9_.:@-]+)$/;
/** Event types the runtime records itself; plugins cannot declare them. */
export const runtimeTypes = [
  "action.started",
  "action.completed",
  "action.failed",
  "action.retried",
  "processor.retried",
  "processor.failed",
  "processor.cursor_moved",
  "processor.redelivered",
  "processor.dismissed",
  "processor.paused",
  "processor.resumed",
  "maintenance.sql",
  "timer.scheduled",
  "timer.unscheduled",
  "timer.skipped",
  "timer.chain_exceeded",
  "timer.failed",
  "timer.paused",
  "timer.resumed",
  "timer.triggered",
  "timer.backfilled",
];

/**
 * Reads a manifest from its JSON form (a file's content or a Struct), field
 * names in snake_case or camelCase; a processor's or action's `concurrency: {...}` is its
 * `concurrency_limit` (plugins/flow-limits.ts). Unknown fields are errors, so a typo
 * never passes silently. INVALID_ARGUMENT names the source.
 */
export function manifestFromJson(json: unknown, source: string): PluginManifest {
  const [written] = writtenLimitViolations(json);
  if (written) fail("invalid_manifest", `invalid plugin manifest ${source}: ${written.field}: ${written.description}`, [written]);
  try {
    return fromJson(PluginManifestSchema, withConcurrencyShorthand(json) as JsonValue);
  } catch (e) {
    fail("invalid_manifest", `invalid plugin manifest ${source}: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/**
 * Checks a manifest and compiles its schemas and filters. Every
 * problem is reported at once as INVALID_ARGUMENT with one violation per
 * declaration, e.g. `events.booking.created.schema`.
 */
export function compileManifest(manifest: PluginManifest, options: { stored?: boolean } = {}): CompiledManifest {
  const violations: FieldViolation[] = [];
  const check = (field: string, ok: boolean, description: string) => ok || violations.push({ field, description });
  check("name", pluginName.test(manifest.name), "plugin name must be lowercase letters, digits, - or _ (at most 63)");
  const compile = schemaCompiler();
  const eventTypes: EventTypeEntry[] = [];
  for (const [type, decl] of Object.entries(manifest.events)) {
    const at = `events.${type}`;
    check(at, eventTypeName.test(type), "event type must be dotted lowercase, e.g. booking.created");
    check(at, !isRuntimeType(type), "event type is recorded by the runtime and cannot be declared");
    for (const entry of decl.allow)
      check(`${at}.allow`, allowEntry.test(entry), `invalid allow entry ${JSON.stringify(entry)}: use *, role:<admin|executor|client> or a principal name`);
    checkReaders(`${at}.read`, decl.read, check);
    const validate = attempt(() => compile(decl.schema, "data"), `${at}.schema`, violations);
    if (validate) eventTypes.push({ type, plugin: manifest.name, validate, allow: [...decl.allow] });
  }
  for (const [name, decl] of Object.entries(manifest.processors)) {
    const at = `processors.${name}`;
    attempt(() => compileFilter(decl.where, `${at}.where`), `${at}.where`, violations);
    checkReaders(`${at}.read`, decl.read, check);
    check(`${at}.concurrency`, decl.concurrency <= 1024, "concurrency must be at most 1024");
    violations.push(
      ...concurrencyProblems(`${at}.concurrency`, decl.concurrencyLimit, decl.key),
      ...rateProblems(`${at}.rate`, decl.rate, false),
      ...debounceProblems(`${at}.debounce`, decl.debounce),
      ...eventPathProblems(at, {
        key: decl.key,
        "concurrency.key": decl.concurrencyLimit?.key,
        "rate.key": decl.rate?.key,
        "debounce.key": decl.debounce?.key,
        priority: decl.priority,
      }),
    );
    check(`${at}.timeout_grace_ms`, (decl.timeoutGraceMs ?? 0) <= maxTimerMs, `timeout_grace_ms must be at most ${maxTimerMs} (about 24.8 days)`);
  }
  const collections: CollectionEntry[] = [];
  for (const [name, decl] of Object.entries(manifest.collections)) {
    for (const entry of decl.allow)
      check(
        `collections.${name}.allow`,
        allowEntry.test(entry),
        `invalid allow entry ${JSON.stringify(entry)}: use *, role:<admin|executor|client> or a principal name`,
      );
    const compiled = compileCollection(manifest.name, name, decl, compile);
    violations.push(...compiled.violations);
    if (compiled.entry) collections.push(compiled.entry);
  }
  const actions: ActionEntry[] = [];
  for (const [name, decl] of Object.entries(manifest.actions)) {
    for (const entry of decl.allow)
      check(
        `actions.${name}.allow`,
        allowEntry.test(entry),
        `invalid allow entry ${JSON.stringify(entry)}: use *, role:<admin|executor|client> or a principal name`,
      );
    checkReaders(`actions.${name}.read`, decl.read, check);
    const compiled = compileAction(manifest.name, name, decl, compile);
    violations.push(...compiled.violations);
    if (compiled.entry) actions.push(compiled.entry);
  }
  violations.push(...checkPulses(manifest, actions));
  const retention = manifestRetentionRules(manifest.name, manifest.retention);
  violations.push(...retention.violations);
  // A plugin's rules apply to its own types only (ruleFor): one that covers none of them would be silently ignored.
  // A stored manifest, registered before this was checked, loads as it was (such a rule still applies to nothing).
  const ownTypes = [...Object.keys(manifest.events), ...Object.keys(manifest.collections).flatMap((c) => changeOps.map((op) => `${c}.${op}`))];
  for (const [i, r] of manifest.retention.entries())
    check(
      `retention[${i}].types`,
      options.stored === true || r.types === "" || ownTypes.some((t) => typeMatches(r.types, t)),
      `${JSON.stringify(r.types)} covers none of the plugin's event types or its collections' change events: a plugin's rules apply to those only (rules for other types go in the owner's config, log.retention)`,
    );
  for (const [field, value] of structsOf(manifest)) {
    const problem = jsonProblem(value, field);
    if (problem) violations.push({ field, description: problem });
  }
  if (violations.length > 0) {
    const first = violations[0];
    fail("invalid_manifest", `invalid plugin manifest ${manifest.name || "(unnamed)"}: ${first.field}: ${first.description}`, violations, {
      plugin: manifest.name,
    });
  }
  return { manifest, canonical: canonicalManifest(manifest), eventTypes, collections, actions, retention: retention.rules };
}

/** What a collection's change events end in. */
const changeOps = ["created", "updated", "deleted"];

/** Canonical JSON (RFC 8785) of a manifest. */
export function canonicalManifest(manifest: PluginManifest): string {
  return canonicalJson(toJson(PluginManifestSchema, manifest));
}

/** Every JSON object a manifest carries, with its field: each is kept and sent back (ListPlugins), inputs go into timers' calls and events. */
function* structsOf(m: PluginManifest): Generator<[string, unknown]> {
  for (const [type, d] of Object.entries(m.events)) yield [`events.${type}.schema`, d.schema];
  for (const [name, d] of Object.entries(m.collections)) yield [`collections.${name}.schema`, d.schema];
  for (const [name, d] of Object.entries(m.actions)) yield [`actions.${name}.input_schema`, d.inputSchema];
  for (const [name, d] of Object.entries(m.processors)) yield [`processors.${name}.where`, d.where];
  for (const [name, d] of Object.entries(m.schedules)) yield [`schedules.${name}.input`, d.input];
  for (const [i, p] of m.schedulePatches.entries()) yield [`schedule_patches[${i}].input`, p.input];
}

/** Checks a `read` list (who may read events: auth/read-access.ts), entry by entry, with the form of `allow`. */
function checkReaders(field: string, read: readonly string[], check: (field: string, ok: boolean, description: string) => unknown): void {
  for (const entry of read)
    check(field, allowEntry.test(entry), `invalid read entry ${JSON.stringify(entry)}: use *, role:<admin|executor|client> or a principal name`);
}

function isRuntimeType(type: string): boolean {
  return runtimeTypes.includes(type);
}

function attempt<T>(f: () => T, field: string, violations: FieldViolation[]): T | undefined {
  try {
    return f();
  } catch (e) {
    const description = e instanceof ChronologError ? (e.violations[0]?.description ?? e.message) : e instanceof Error ? e.message : String(e);
    violations.push({ field, description });
    return undefined;
  }
}
