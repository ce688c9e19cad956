import { PulseScope, type PluginManifest } from "@chronolog/sdk/gen/chronolog/v1/plugin_pb";
import type { ActionEntry } from "../actions/declaration.js";
import type { FieldViolation } from "../errors.js";
import { sha256Hex } from "../sha256.js";

// The rules of pulses: what a declaration means, where its interval boundaries
// fall, which interval a moment belongs to, and the call id of an interval's call. Pure
// functions of their arguments: `nowMs` is always passed in. Instants are ms since
// the epoch, UTC.
//
// A pulse is counted from the epoch and nothing about it is stored: its cycle of
// `cycle_seconds` is split into `intervals` equal intervals of `cycle_seconds·1000/intervals`
// ms, and interval k of any cycle starts at a multiple of that length. Interval boundaries are
// thus `n · intervalMs` for every integer n, and the interval index of the one starting at
// `startMs` is `(startMs mod cycleMs) / intervalMs`.
//
// What a declaration must satisfy (checked when its manifest is registered; INVALID_ARGUMENT
// naming `pulses.<name>[.field]`):
// - the name is letters, digits, `_` or `-` (no dots, at most 63), like an action's;
// - `action` names an action of the same plugin (`act` or `<plugin>.act`) whose input schema
//   accepts `{}` (a pulse calls with an empty input);
// - `cycle_seconds` >= 1;
// - `intervals` (0 means 1) splits the cycle into whole milliseconds, each at least
//   {@link minIntervalMs}: `cycle_seconds·1000 mod intervals = 0` and
//   `cycle_seconds·1000 / intervals >= 100`. So a day splits into 24 (one hour each) or 1,440
//   (one minute each), never into 7 (12,342,857.14... ms);
// - `scope` is unspecified (component), COMPONENT or REPLICA.

/** Shortest interval a pulse may have: 100 ms. */
export const minIntervalMs = 100;

/** Who makes a pulse's calls. */
export type PulseScopeName = "component" | "replica";

/** A declared pulse, checked. */
export interface PulseSpec {
  /** `plugin.pulse`: the name executors list in `hello.pulses`. */
  name: string;
  plugin: string;
  /** `plugin.action` it calls. */
  action: string;
  /** Cycle length in seconds (>= 1). */
  cycleSeconds: number;
  /** Intervals per cycle (>= 1). */
  intervals: number;
  /** Length of one interval: cycleSeconds·1000 / intervals ms, a whole number >= 100. */
  intervalMs: number;
  /** `component`: one executor makes each call; `replica`: every connected instance hosting it. */
  scope: PulseScopeName;
}

const pulseName = /^[A-Za-z_][A-Za-z0-9_-]{0,62}$/;

/**
 * Checks the `pulses` of `manifest` (see the rules at the top of this file) against the
 * plugin's compiled `actions`; returns one violation per problem, on `pulses.<name>` or
 * `pulses.<name>.<field>`. Called by compileManifest.
 */
export function checkPulses(manifest: PluginManifest, actions: ActionEntry[]): FieldViolation[] {
  const violations: FieldViolation[] = [];
  for (const [name, decl] of Object.entries(manifest.pulses)) {
    const at = `pulses.${name}`;
    if (!pulseName.test(name)) violations.push({ field: at, description: "pulse name must be letters, digits, _ or - (no dots, at most 63)" });
    const action = qualifiedAction(manifest.name, decl.action);
    const entry = actions.find((a) => a.name === action);
    if (decl.action === "") violations.push({ field: `${at}.action`, description: "action is required: an action of this plugin" });
    else if (!entry) violations.push({ field: `${at}.action`, description: `${JSON.stringify(decl.action)} is not an action of plugin ${manifest.name}` });
    else {
      const rejected = entry.validate({});
      if (rejected.length > 0)
        violations.push({
          field: `${at}.action`,
          description: `the input schema of ${entry.name} rejects {} (a pulse calls with an empty input): ${rejected[0].description}`,
        });
    }
    if (decl.cycleSeconds < 1) violations.push({ field: `${at}.cycle_seconds`, description: "cycle_seconds must be at least 1" });
    else {
      const intervals = decl.intervals || 1;
      const cycleMs = decl.cycleSeconds * 1000;
      if (cycleMs % intervals !== 0 || cycleMs / intervals < minIntervalMs) {
        violations.push({
          field: `${at}.intervals`,
          description: `intervals must split the ${decl.cycleSeconds} s cycle into whole milliseconds of at least ${minIntervalMs} ms each (${cycleMs} mod intervals = 0); ${intervals} does not`,
        });
      }
    }
    if (decl.scope !== PulseScope.UNSPECIFIED && decl.scope !== PulseScope.COMPONENT && decl.scope !== PulseScope.REPLICA) {
      violations.push({ field: `${at}.scope`, description: `unknown scope ${decl.scope}: use PULSE_SCOPE_COMPONENT or PULSE_SCOPE_REPLICA` });
    }
  }
  return violations;
}

/** The pulses of a manifest that passed {@link checkPulses}, as specs. */
export function pulseSpecs(manifest: PluginManifest): PulseSpec[] {
  return Object.entries(manifest.pulses).map(([name, decl]) => {
    const intervals = decl.intervals || 1;
    return {
      name: `${manifest.name}.${name}`,
      plugin: manifest.name,
      action: qualifiedAction(manifest.name, decl.action),
      cycleSeconds: decl.cycleSeconds,
      intervals,
      intervalMs: (decl.cycleSeconds * 1000) / intervals,
      scope: decl.scope === PulseScope.REPLICA ? "replica" : "component",
    };
  });
}

/** `plugin.action` for a pulse's `action` (`act`, or `<plugin>.act` naming its own plugin). */
function qualifiedAction(plugin: string, action: string): string {
  return action.startsWith(`${plugin}.`) ? action : `${plugin}.${action}`;
}

/** Start of the interval of `spec` that holds `nowMs` (ms since the epoch): the last boundary at or before it. */
export function intervalStart(spec: Pick<PulseSpec, "intervalMs">, nowMs: number): number {
  return Math.floor(nowMs / spec.intervalMs) * spec.intervalMs;
}

/** The first boundary of `spec` strictly after `nowMs` (ms since the epoch). */
export function nextBoundary(spec: Pick<PulseSpec, "intervalMs">, nowMs: number): number {
  return intervalStart(spec, nowMs) + spec.intervalMs;
}

/** Index (0-based, below `intervals`) of the interval starting at `startMs` within its cycle: `floor((startMs mod cycle) / intervalMs)`. */
export function intervalIndex(spec: Pick<PulseSpec, "cycleSeconds" | "intervalMs">, startMs: number): number {
  const cycleMs = spec.cycleSeconds * 1000;
  return Math.floor((((startMs % cycleMs) + cycleMs) % cycleMs) / spec.intervalMs);
}

/**
 * The call id of the pulse call for the interval starting at `startMs`: 32 hex
 * characters of SHA-256 over the pulse name, the interval start and, for replica scope, the
 * executor instance. The same interval called again (by this owner or another) is answered
 * from the log instead of running twice.
 */
export function pulseCallId(pulse: string, startMs: number, instance = ""): string {
  return sha256Hex(`pulse-call\n${pulse}\n${startMs}\n${instance}`).slice(0, 32);
}
