// The owner's public API over Connect (connect-web, fetch) on the page's own origin: the console
// is served by the owner, so every call goes to the same port. The bearer token the operator
// typed in is kept in sessionStorage: for this tab only, gone when it closes.

import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { AdminService } from "@chronolog/sdk/gen/chronolog/v1/admin_pb";
import { CollectionService } from "@chronolog/sdk/gen/chronolog/v1/collection_pb";
import { LogService } from "@chronolog/sdk/gen/chronolog/v1/log_pb";
import { PluginService } from "@chronolog/sdk/gen/chronolog/v1/plugin_pb";
import { TimeService } from "@chronolog/sdk/gen/chronolog/v1/time_pb";
import { Health } from "@chronolog/sdk/gen/grpc/health/v1/health_pb";

const tokenKey = "chronolog.console.token";

/** The token of this tab ("" when none was given). */
export function getToken(): string {
  return sessionStorage.getItem(tokenKey) ?? "";
}

/** Keeps `token` for this tab; "" forgets it. */
export function setToken(token: string): void {
  if (token) sessionStorage.setItem(tokenKey, token);
  else sessionStorage.removeItem(tokenKey);
}

const bearer: Interceptor = (next) => (req) => {
  const token = getToken();
  if (token) req.header.set("authorization", `Bearer ${token}`);
  return next(req);
};

const transport = createConnectTransport({ baseUrl: location.origin, useBinaryFormat: true, interceptors: [bearer] });

export const log = createClient(LogService, transport);
export const admin = createClient(AdminService, transport);
export const time = createClient(TimeService, transport);
export const plugins = createClient(PluginService, transport);
export const collections = createClient(CollectionService, transport);
const health = createClient(Health, transport);

/** A standby owner (PostgreSQL): it serves reads of what the leader committed, and names the leader. */
export interface Standby {
  /** The leader's URL as the lease names it ("" while none is known). */
  leaderUrl: string;
}

/**
 * Whether the owner serving this page is a standby, from the headers of its health answer
 * (`chronolog-role`, `chronolog-leader`; no token needed): the standby, or null for a leader (an
 * owner on SQLite is its own leader and says nothing).
 */
export async function ownerStandby(): Promise<Standby | null> {
  let role = "";
  let leaderUrl = "";
  await health.check(
    {},
    {
      onHeader: (h) => {
        role = h.get("chronolog-role") ?? "";
        leaderUrl = h.get("chronolog-leader") ?? "";
      },
    },
  );
  return role === "standby" ? { leaderUrl } : null;
}

/** What the page may show: `admin` false hides every AdminService view and button; a standby shows no change. */
export interface Session {
  admin: boolean;
  /** True when the owner has principals (a token was needed). */
  signedIn: boolean;
  /** The owner is a standby (changes are made at its leader), or null. */
  standby: Standby | null;
}

/**
 * Finds out who this tab is: an AdminService read answers for an admin, PERMISSION_DENIED for
 * any other principal. Throws the UNAUTHENTICATED error when a token is needed (or is wrong).
 */
export async function whoAmI(): Promise<Omit<Session, "standby">> {
  const signedIn = getToken() !== "";
  try {
    await admin.listProcessors({});
    return { admin: true, signedIn };
  } catch (e) {
    const err = ConnectError.from(e);
    if (err.code === Code.PermissionDenied) return { admin: false, signedIn };
    throw err;
  }
}

/** True for the error that asks for a (better) token. */
export function isUnauthenticated(e: unknown): boolean {
  return e instanceof ConnectError && e.code === Code.Unauthenticated;
}

/** An error as one line: `Code: message`. */
export function errorText(e: unknown): string {
  const err = ConnectError.from(e);
  return `${Code[err.code]}: ${err.rawMessage}`;
}

/** What the owner's config tells the console (`console` in the config file): a trace viewer's URL with `{trace_id}`. */
export interface ConsoleSettings {
  trace_url?: string;
}

/** The console's settings, served by the owner next to its files. */
export async function consoleSettings(): Promise<ConsoleSettings> {
  const response = await fetch(new URL("/console/settings.json", location.origin));
  if (!response.ok) throw new Error(`the console's settings: HTTP ${response.status}`);
  return (await response.json()) as ConsoleSettings;
}
