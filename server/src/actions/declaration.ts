import type { ActionDeclaration } from "@chronolog/sdk/gen/chronolog/v1/plugin_pb";
import type { FieldViolation } from "../errors.js";
import type { Validator } from "../plugins/schemas.js";
import { concurrencyProblems } from "../plugins/flow-limits.js";
import { keyPath, numberPath } from "../log/key-path.js";
import { compileRate, rateProblems, type RateSpec } from "../flow/rate.js";
import { limitsText } from "../flow/limits-text.js";

/** The longest wait a timer can arm (setTimeout's limit), ms: a declared grace may not be longer. */
export const maxTimerMs = 2_147_483_647;

/** Default time one run of an action may take: 30,000 ms. */
export const defaultActionTimeoutMs = 30_000;

/**
 * A declared action, ready to check calls against.
 * `name` is the full `plugin.action`, the name callers and executors use.
 */
export interface ActionEntry {
  /** `plugin.action`. */
  name: string;
  plugin: string;
  /** Checks the input; violations are rooted at `input` (e.g. `input/amount`). */
  validate: Validator;
  /** Top-level input fields removed from recorded inputs (`action.started`). The executor gets them. */
  privateFields: string[];
  /** Records `action.started|retried|completed|failed` (default true). False: no events at all. */
  record: boolean;
  /** Who may call it from outside (`*`, `role:X`, principal name); empty: only code under a cause. */
  allow: string[];
  /** How long one run may take, in ms (default 30,000); also bounds the wait for an executor. */
  timeoutMs: number;
  /** How long past its timeout a run (told to cancel) may still answer before the call is recorded failed, ms (default: `timeoutMs`). */
  timeoutGraceMs: number;
  /** Calls in flight at once per key (`keyOf`) and in all; absent: bounded by the executors' credits only. */
  concurrency?: ActionConcurrency;
  /** Calls started per period, per key; absent: no rate. */
  rate?: RateSpec;
  /** The priority of a call (from `{input}`): calls waiting for a concurrency slot start highest first. */
  priorityOf: (call: { input: Record<string, unknown> }) => number;
  /** Its flow limits in a few words (limitsText), for listings. */
  limits: string;
}

/** An action's concurrency limits. */
export interface ActionConcurrency {
  /** Calls of one key in flight at once. */
  limit: number;
  /** The key of a call (from `{input}`); null: the call counts against no key. */
  keyOf: (call: { input: Record<string, unknown> }) => string | null;
  /** Calls in flight at once in all (Infinity: no bound). */
  total: number;
}

/** Action names within a plugin: letters, digits, `_` and `-`, no dots (`plugin.action` must split once). */
const actionName = /^[A-Za-z_][A-Za-z0-9_-]{0,62}$/;
/** A private field is a top-level field name. */
const fieldName = /^[^.$\s][^.\s]*$/;

/**
 * Checks and compiles one action declaration of plugin `plugin`.
 * Returns the entry (absent when the input schema does not compile) and the
 * problems found, each as a violation on `actions.<name>[.part]`. `allow`
 * entries are checked by the manifest, with the event types' rule.
 */
export function compileAction(
  plugin: string,
  name: string,
  decl: ActionDeclaration,
  compile: (schema: Record<string, unknown> | undefined, root: string) => Validator,
): { entry?: ActionEntry; violations: FieldViolation[] } {
  const at = `actions.${name}`;
  const violations: FieldViolation[] = [];
  if (!actionName.test(name)) violations.push({ field: at, description: "action name must be letters, digits, _ or - (no dots, at most 63)" });
  for (const field of decl.privateFields) {
    if (!fieldName.test(field))
      violations.push({ field: `${at}.private_fields`, description: `invalid private field ${JSON.stringify(field)}: a top-level field name` });
  }
  if (decl.priority !== "" && !/^input(\.|$)/.test(decl.priority))
    violations.push({
      field: `${at}.priority`,
      description: `an action's priority is a path into its call starting with input, e.g. input.priority, not ${JSON.stringify(decl.priority)}`,
    });
  violations.push(...concurrencyProblems(`${at}.concurrency`, decl.concurrencyLimit, undefined), ...rateProblems(`${at}.rate`, decl.rate, true));
  if ((decl.timeoutGraceMs ?? 0) > maxTimerMs)
    violations.push({ field: `${at}.timeout_grace_ms`, description: `timeout_grace_ms must be at most ${maxTimerMs} (about 24.8 days)` });
  let validate: Validator | undefined;
  try {
    validate = compile(decl.inputSchema, "input");
  } catch (e) {
    violations.push({ field: `${at}.input_schema`, description: e instanceof Error ? e.message : String(e) });
  }
  if (!validate) return { violations };
  return {
    entry: {
      name: `${plugin}.${name}`,
      plugin,
      validate,
      privateFields: [...decl.privateFields],
      record: decl.record ?? true,
      allow: [...decl.allow],
      timeoutMs: decl.timeoutMs || defaultActionTimeoutMs,
      timeoutGraceMs: decl.timeoutGraceMs ?? (decl.timeoutMs || defaultActionTimeoutMs),
      concurrency: decl.concurrencyLimit && {
        limit: decl.concurrencyLimit.limit || (decl.concurrencyLimit.key ? 1 : Number.POSITIVE_INFINITY),
        keyOf: keyPath(decl.concurrencyLimit.key),
        total: decl.concurrencyLimit.total || (decl.concurrencyLimit.key ? Number.POSITIVE_INFINITY : decl.concurrencyLimit.limit || Number.POSITIVE_INFINITY),
      },
      rate: compileRate(decl.rate),
      priorityOf: numberPath(decl.priority),
      limits: limitsText(decl),
    },
    violations,
  };
}

/** `input` without the action's private top-level fields: what `action.started` records. A copy. */
export function recordedInput(entry: Pick<ActionEntry, "privateFields">, input: Record<string, unknown>): Record<string, unknown> {
  if (entry.privateFields.length === 0) return input;
  const copy = { ...input };
  for (const field of entry.privateFields) delete copy[field];
  return copy;
}
