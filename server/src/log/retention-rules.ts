import { RetentionKeep, type RetentionRule as RetentionRuleProto } from "@chronolog/sdk/gen/chronolog/v1/plugin_pb";
import { retentionArchiveSchema, type RetentionArchiveConfig } from "../archive/retention-archive.js";
import type { FieldViolation } from "../errors.js";

/** One retention rule, from the owner's config or a plugin's manifest (docs/retention.md). */
export interface RetentionRule {
  /** The types it covers: `*`, `prefix*` or an exact type. */
  types: string;
  /** Events committed more than this many ms ago are candidates (0: no age limit). */
  maxAgeMs: number;
  /** Of each type, events older than the newest `maxCount` are candidates (0: no count limit). */
  maxCount: number;
  /** Of each type, events older than the newest ones taking `maxBytes` are candidates (0: no size limit). */
  maxBytes: number;
  /** Compaction: of the events with the same value at this path into the event (`data._id` as `["data", "_id"]`), all but the last are candidates (undefined: none). */
  latestPerKey?: string[];
  /** Where it was declared: `config` or `plugin <name>`. */
  source: string;
}

/** The owner config's `log.retention` section, as written (snake_case). */
export interface RetentionConfig {
  rules?: RetentionRuleConfig[];
  /** The log's stored bytes at most (0 or absent: no log-wide limit): the oldest events are removed past it, whatever the rules. */
  max_bytes?: number;
  /** Past this many stored bytes the owner warns (default 80% of `max_bytes`). */
  warn_bytes?: number;
  /** Time between two retention passes, ms (default 60,000). */
  interval_ms?: number;
  /** Events one removal batch takes at most (default 100). */
  batch_events?: number;
  /** Ids (and seqs) of removed events kept for GetEvent's answer, the newest (default 1,000,000; 0: none). */
  removed_ids_kept?: number;
  /** Archive events before removing them (archive/retention-archive.ts). */
  archive?: RetentionArchiveConfig;
}

/** One rule in the owner's config. */
export interface RetentionRuleConfig {
  types: string;
  max_age_ms?: number;
  max_count?: number;
  max_bytes?: number;
  keep?: "latest_per_key";
  key?: string;
}

const limit = { type: "integer", minimum: 0, maximum: Number.MAX_SAFE_INTEGER };
/** A rule's limit: checked by {@link configRetentionRules}, which says what a 0 or a negative one should be. */
const ruleLimit = { type: "integer", maximum: Number.MAX_SAFE_INTEGER };

/** The JSON Schema of the config's `log.retention` section (config.ts). */
export const retentionConfigSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    rules: {
      type: "array",
      items: {
        type: "object",
        additionalProperties: false,
        required: ["types"],
        properties: {
          types: { type: "string", minLength: 1 },
          max_age_ms: ruleLimit,
          max_count: ruleLimit,
          max_bytes: ruleLimit,
          keep: { enum: ["latest_per_key"] },
          key: { type: "string", minLength: 1 },
        },
      },
    },
    max_bytes: limit,
    warn_bytes: limit,
    interval_ms: { type: "integer", minimum: 100, maximum: 86_400_000 },
    batch_events: { type: "integer", minimum: 1, maximum: 100_000 },
    removed_ids_kept: limit,
    archive: retentionArchiveSchema,
  },
};

const typePattern = /^(\*|[a-z0-9_.-]+\*?)$/;
/** A compaction key: a path into the event, as processors' keys are written (`data._id`, `type`, `cause`). */
const keyPath = /^(?:id|type|cause|data(?:\.[^.\s]+)*)$/;

/** What is wrong with a rule's fields, as violations under `at` (e.g. `retention[0]`); empty when it is sound. */
function ruleViolations(rule: Omit<RetentionRule, "source" | "latestPerKey">, keep: boolean, key: string, at: string): FieldViolation[] {
  const violations: FieldViolation[] = [];
  if (!typePattern.test(rule.types))
    violations.push({ field: `${at}.types`, description: "types must be *, a prefix ending in * (e.g. booking.*) or an event type" });
  if (keep && key === "") violations.push({ field: `${at}.key`, description: "keep latest_per_key needs key: a path into the event, e.g. data._id" });
  else if (keep && !keyPath.test(key))
    violations.push({
      field: `${at}.key`,
      description: `key must be a path into the event starting with data (or id, type, cause), e.g. data._id, not ${JSON.stringify(key)}`,
    });
  if (!keep && key !== "") violations.push({ field: `${at}.key`, description: "key is only for keep latest_per_key" });
  if (!keep && rule.maxAgeMs === 0 && rule.maxCount === 0 && rule.maxBytes === 0)
    violations.push({
      field: at,
      description: "a retention rule needs a limit (max_age_ms, max_count, max_bytes: each 1 or more; 0 is none) or keep latest_per_key",
    });
  return violations;
}

/** A manifest's retention rules, checked: violations name `retention[i]`. */
export function manifestRetentionRules(plugin: string, rules: RetentionRuleProto[]): { rules: RetentionRule[]; violations: FieldViolation[] } {
  const out: RetentionRule[] = [];
  const violations: FieldViolation[] = [];
  for (const [i, r] of rules.entries()) {
    const keep = r.keep === RetentionKeep.LATEST_PER_KEY;
    const rule = { types: r.types, maxAgeMs: safe(r.maxAgeMs), maxCount: safe(r.maxCount), maxBytes: safe(r.maxBytes) };
    const found = ruleViolations(rule, keep, r.key, `retention[${i}]`);
    violations.push(...found);
    if (found.length === 0) out.push({ ...rule, latestPerKey: keep ? r.key.split(".") : undefined, source: `plugin ${plugin}` });
  }
  return { rules: out, violations };
}

const limitNames = { max_age_ms: "age", max_count: "count", max_bytes: "size" };

/** What is wrong with a limit written as `value` at `field`: 0 or less would read as none (leaving it out is none). */
function limitProblem(name: keyof typeof limitNames, value: unknown): string | undefined {
  if (typeof value !== "number" || value >= 1) return undefined;
  return `${name} must be 1 or more, not ${value} (leave it out for no ${limitNames[name]} limit)`;
}

/**
 * The limits a manifest's JSON form (`retention[i]`, snake_case or camelCase) writes as 0 or
 * less: in the proto a 0 is no limit, so a written one is refused here, before it is read.
 */
export function writtenLimitViolations(json: unknown): FieldViolation[] {
  const rules = (json as { retention?: unknown } | null)?.retention;
  if (!Array.isArray(rules)) return [];
  const violations: FieldViolation[] = [];
  for (const [i, rule] of rules.entries()) {
    if (typeof rule !== "object" || rule === null) continue;
    for (const [name, camel] of [
      ["max_age_ms", "maxAgeMs"],
      ["max_count", "maxCount"],
      ["max_bytes", "maxBytes"],
    ] as const) {
      const written = (rule as Record<string, unknown>)[name] ?? (rule as Record<string, unknown>)[camel];
      const problem = limitProblem(name, typeof written === "string" && written.trim() !== "" ? Number(written) : written); // uint64 may be written as a string
      if (problem) violations.push({ field: `retention[${i}].${name}`, description: problem });
    }
  }
  return violations;
}

/** The config's retention rules; throws naming the rule when one is unsound (the owner refuses to start). */
export function configRetentionRules(config: RetentionConfig | undefined): RetentionRule[] {
  return (config?.rules ?? []).map((r, i) => {
    const keep = r.keep === "latest_per_key";
    // A limit written as 0 or less would read as none: it is refused (leaving it out is none).
    for (const field of ["max_age_ms", "max_count", "max_bytes"] as const) {
      const problem = limitProblem(field, r[field]);
      if (problem) throw new Error(`log.retention.rules[${i}].${field}: ${problem}`);
    }
    const rule = { types: r.types, maxAgeMs: r.max_age_ms ?? 0, maxCount: r.max_count ?? 0, maxBytes: r.max_bytes ?? 0 };
    const [problem] = ruleViolations(rule, keep, r.key ?? "", `log.retention.rules[${i}]`);
    if (problem) throw new Error(`${problem.field}: ${problem.description}`);
    return { ...rule, latestPerKey: keep ? (r.key as string).split(".") : undefined, source: "config" };
  });
}

/**
 * A stored manifest's rules with the keys of earlier versions (a bare path into the data, `_id`)
 * written as paths into the event (`data._id`): manifests registered before keep their meaning.
 * A key that already names the event (`data.…`, `id`, `type`, `cause`) is left as it is.
 */
export function withEventPathKeys(rules: RetentionRuleProto[]): void {
  for (const rule of rules) if (rule.key !== "" && !keyPath.test(rule.key) && !rule.key.startsWith("data.")) rule.key = `data.${rule.key}`;
}

/** Whether type pattern `pattern` (`*`, `prefix*` or exact) covers `type`. */
export function typeMatches(pattern: string, type: string): boolean {
  if (pattern === "*") return true;
  return pattern.endsWith("*") ? type.startsWith(pattern.slice(0, -1)) : type === pattern;
}

/**
 * The rule that applies to `type`: the first of the config's rules that covers it, else the
 * first of `ownRules` (the rules of the plugin that declares the type) that does; undefined: the
 * type is kept forever.
 */
export function ruleFor(type: string, configRules: RetentionRule[], ownRules: RetentionRule[] = []): RetentionRule | undefined {
  return configRules.find((r) => typeMatches(r.types, type)) ?? ownRules.find((r) => typeMatches(r.types, type));
}

/** The value at `path` (`["data", "_id"]`) in an event as a string key (JSON of it), or undefined when absent. */
export function eventKeyOf(event: { id: string; type: string; cause: string; data: string }, path: string[]): string | undefined {
  const [head, ...rest] = path;
  if (head !== "data") return JSON.stringify(event[head as "id" | "type" | "cause"]);
  return keyOf(JSON.parse(event.data) as Record<string, unknown>, rest);
}

/** The value at `path` in `data` as a string key (JSON of it), or undefined when absent. */
export function keyOf(data: Record<string, unknown>, path: string[]): string | undefined {
  let value: unknown = data;
  for (const part of path) {
    if (value === null || typeof value !== "object") return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value === undefined ? undefined : JSON.stringify(value);
}

function safe(n: bigint): number {
  return n > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(n);
}
