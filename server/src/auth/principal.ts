import type { ActorRecord } from "../store/events.js";
import { fail } from "../errors.js";

/** The roles a principal can have. */
export type Role = "admin" | "executor" | "client";

/** Actor fields, in their canonical order. */
export const actorFields = ["id", "for", "in", "via"] as const;
/** One actor field name. */
export type ActorField = (typeof actorFields)[number];

/**
 * Who is calling: resolved from the bearer token by `auth/tokens.ts`.
 * `actor` gives the fields used when a request asserts none; `assert` lists,
 * per actor field, the patterns a request may assert (`*` anything, `user:*`
 * a prefix). A field with no patterns can only take its default.
 */
export interface Principal {
  name: string;
  role: Role;
  actor: Partial<ActorRecord>;
  assert: Partial<Record<ActorField, string[]>>;
  /** Executors: patterns of the plugins its hellos may register and host (absent: any, `*`); admins: any. */
  plugins?: string[];
}

/** The caller when no config is given: a local admin that may assert anything. */
export const localAdmin: Principal = {
  name: "local",
  role: "admin",
  actor: {},
  assert: { id: ["*"], for: ["*"], in: ["*"], via: ["*"] },
};

/**
 * The owner itself, as the principal of the calls time makes: only the
 * owner's clock passes it, compared by identity; no token resolves to it.
 */
export const systemPrincipal: Principal = Object.freeze({ name: "system", role: "admin", actor: {}, assert: {} }) as Principal;

/**
 * True when `principal` may register plugin `plugin` through an executor hello and host its
 * processors, actions and pulses: admins always, executors when a `plugins` pattern matches.
 */
export function mayUsePlugin(principal: Principal, plugin: string): boolean {
  return principal.role === "admin" || (principal.plugins ?? ["*"]).some((pattern) => matchesPattern(pattern, plugin));
}

/** True when `value` matches `pattern` (`*`, an exact string, or a `prefix*`). */
export function matchesPattern(pattern: string, value: string): boolean {
  if (pattern === "*") return true;
  if (pattern.endsWith("*")) return value.startsWith(pattern.slice(0, -1));
  return pattern === value;
}

/**
 * The actor a client request runs as: each asserted field must match one of
 * the principal's patterns for it (admins may assert anything; PERMISSION_DENIED names the field);
 * unasserted fields take the principal's defaults. A request that would leave every field empty
 * (none asserted, none defaulted) came through its principal: `via` is `principal:<name>`
 * ({@link principalVia}). Null, the system, is only the owner's own work (time, pulses, declared
 * schedules), which never comes here.
 */
export function resolveActor(principal: Principal, asserted: Partial<ActorRecord> | undefined): ActorRecord {
  const actor: ActorRecord = { id: "", for: "", in: "", via: "" };
  for (const field of actorFields) {
    const value = asserted?.[field] ?? "";
    if (value === "") {
      actor[field] = principal.actor[field] ?? "";
      continue;
    }
    const patterns = principal.role === "admin" ? ["*"] : (principal.assert[field] ?? []);
    if (!patterns.some((p) => matchesPattern(p, value))) {
      fail("permission_denied", `principal ${principal.name} may not assert actor.${field} = ${JSON.stringify(value)}`, [], { field: `actor.${field}` });
    }
    actor[field] = value;
  }
  if (actorFields.every((f) => actor[f] === "")) actor.via = principalVia(principal);
  return actor;
}

/** The `via` of a request whose principal gives no actor fields and that asserts none: `principal:<name>`. */
export function principalVia(principal: Principal): string {
  return `principal:${principal.name}`;
}

/**
 * True when an `allow` list (event type, action, collection) admits the
 * principal: `*` anyone, `role:<role>`, or the principal's name.
 */
export function allows(allow: readonly string[], principal: Principal): boolean {
  return allow.some((entry) => entry === "*" || entry === `role:${principal.role}` || entry === principal.name);
}

/** Whether two actors are the same one: every field equal (none, null, is every field empty). */
export function sameActor(a: ActorRecord | null, b: ActorRecord | null): boolean {
  return actorFields.every((field) => (a?.[field] ?? "") === (b?.[field] ?? ""));
}

/**
 * True when the principal may read an event: {@link canReach} its space
 * (its actor's `in`).
 */
export function canRead(principal: Principal, event: { actor: ActorRecord | null }): boolean {
  return canReach(principal, event.actor?.in ?? "");
}

/**
 * The one visibility rule of spaces, for events, timers and documents
 * alike: admins reach every space; others reach no space ("") and the spaces
 * they may assert (`assert.in`) or default to (`actor.in`).
 */
export function canReach(principal: Principal, space: string): boolean {
  if (principal.role === "admin" || space === "") return true;
  if (principal.actor.in === space) return true;
  return (principal.assert.in ?? []).some((p) => matchesPattern(p, space));
}

/**
 * Whom the space rule ({@link canReach}) takes code under a cause for: the cause's actor when
 * it has a space (`causeSpace`), so work for one space reads and writes that space's documents
 * and those without one, whatever its token may reach; under a cause without a space, its
 * principal (the token's own spaces).
 */
export function underCauseReader(principal: Principal, causeSpace: string): Principal {
  return causeSpace === "" ? principal : { name: principal.name, role: "client", actor: { in: causeSpace }, assert: {} };
}
