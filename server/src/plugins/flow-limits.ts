import type { ConcurrencyLimit } from "@chronolog/sdk/gen/chronolog/v1/plugin_pb";
import type { FieldViolation } from "../errors.js";

/** The most a concurrency limit may count: an executor's credits at most. */
export const maxConcurrency = 65_536;
/** The heaviest weight of a key in fair turns. */
export const maxWeight = 1_000;
const ifActiveValues = new Set(["", "queue", "skip", "coalesce"]);

/**
 * A manifest's JSON form with the shorthand `concurrency: {limit, key, total}` of processors and
 * actions written as `concurrency_limit` (a processor's `concurrency` number keeps its meaning).
 * Other values are left for the manifest's reader to judge.
 */
export function withConcurrencyShorthand(json: unknown): unknown {
  if (!isObject(json)) return json;
  const out: Record<string, unknown> = { ...json };
  for (const section of ["processors", "actions"]) {
    const decls = out[section];
    if (!isObject(decls)) continue;
    out[section] = Object.fromEntries(
      Object.entries(decls).map(([name, decl]) => {
        if (!isObject(decl) || !isObject(decl.concurrency)) return [name, decl];
        const { concurrency, ...rest } = decl;
        if ("concurrency_limit" in rest || "concurrencyLimit" in rest) return [name, decl]; // both: the reader names the unknown form
        return [name, { ...rest, concurrency_limit: concurrency }];
      }),
    );
  }
  return out;
}

/**
 * Problems of a concurrency limit at `at` (e.g. `processors.sync.concurrency`); `laneKey`: a
 * processor's `key` (it and the limit's key must not name two keys), undefined for an action.
 */
export function concurrencyProblems(at: string, limit: ConcurrencyLimit | undefined, laneKey: string | undefined): FieldViolation[] {
  if (!limit) return [];
  const problems: FieldViolation[] = [];
  const problem = (field: string, description: string) => problems.push({ field: `${at}.${field}`, description });
  if (limit.limit > maxConcurrency) problem("limit", `limit must be at most ${maxConcurrency}`);
  if (limit.total > maxConcurrency) problem("total", `total must be at most ${maxConcurrency}`);
  if (laneKey && limit.key && laneKey !== limit.key)
    problem("key", `the processor's key (${laneKey}) and its concurrency key (${limit.key}) name two keys: give one`);
  if (!ifActiveValues.has(limit.ifActive)) problem("if_active", `if_active must be queue, skip or coalesce, not ${JSON.stringify(limit.ifActive)}`);
  if (laneKey === undefined && limit.ifActive !== "") problem("if_active", "if_active is for processors: an action's call past its limit waits");
  const weights = Object.entries(limit.weights);
  if (laneKey === undefined && weights.length > 0)
    problem("weights", "weights are for processors' fair turns: an action's calls past its limit wait in the order they came");
  else if (weights.length > 0 && !limit.key && !laneKey) problem("weights", "weights are per value of a key: give the limit a key");
  for (const [value, weight] of weights) if (weight < 1 || weight > maxWeight) problem(`weights.${value}`, `a weight must be 1 to ${maxWeight}, not ${weight}`);
  if (laneKey === undefined && limit.key !== "" && !/^input(\.|$)/.test(limit.key))
    problem("key", `an action's key is a path into its call starting with input, e.g. input.customer_id, not ${JSON.stringify(limit.key)}`);
  return problems;
}

/** A path into an event: one of its fields, then keys of its data or actor (`data.customer_id`, `actor.in`). */
const eventPath = /^(?:id|type|cause|data|actor)(?:\.[^.]+)*$/;

/**
 * Problems of a processor's paths into its events (its key, its limits' and rate's keys, its
 * debounce key, its priority), by field under `at`: a path that can find nothing (a typo, a
 * missing `data.`) would otherwise be taken silently and key every event alike.
 */
export function eventPathProblems(at: string, paths: Record<string, string | undefined>): FieldViolation[] {
  const problems: FieldViolation[] = [];
  for (const [field, path] of Object.entries(paths))
    if (path && !eventPath.test(path))
      problems.push({
        field: `${at}.${field}`,
        description: `a path into the event starting with data, actor, id, type or cause, e.g. data.customer_id, not ${JSON.stringify(path)}`,
      });
  return problems;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
