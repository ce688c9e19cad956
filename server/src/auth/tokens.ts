import type { PrincipalConfig } from "../config.js";
import { fail } from "../errors.js";
import { localAdmin, type Principal } from "./principal.js";
import { sha256Hex } from "../sha256.js";

/**
 * Resolves a request's `Authorization: Bearer <token>` header to a
 * principal. With no principals configured every caller is the local
 * admin (the owner then binds 127.0.0.1 only). Tokens are compared by their
 * SHA-256, so the config may hold hashes and lookups take constant time.
 */
export class Authenticator {
  private readonly byHash = new Map<string, Principal>();

  constructor(private readonly principals: PrincipalConfig[] | undefined) {
    for (const p of principals ?? []) {
      const hash = p.token_sha256 ?? sha256(p.token ?? "");
      this.byHash.set(hash, { name: p.name, role: p.role, actor: p.actor ?? {}, assert: p.assert ?? {}, plugins: p.plugins });
    }
  }

  /** True when callers must present a token. */
  get required(): boolean {
    return this.principals !== undefined;
  }

  /** The principal for an Authorization header value; UNAUTHENTICATED when missing or unknown. */
  authenticate(authorization: string | null): Principal {
    if (!this.required) return localAdmin;
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "");
    if (!match) fail("unauthenticated", "missing bearer token: send the header `authorization: Bearer <token>`");
    return this.byHash.get(sha256(match[1])) ?? fail("unauthenticated", "unknown bearer token");
  }
}

/**
 * The principals of a config as one fingerprint: "" when there are none (callers need no token),
 * else the SHA-256 of each principal's name, role, token hash, actor, assert and plugins, in
 * name order. Owners of one database compare theirs (store/postgres/lease.ts).
 */
export function principalsFingerprint(principals: PrincipalConfig[] | undefined): string {
  if (principals === undefined) return "";
  const shown = principals
    .map((p) => [p.name, p.role, p.token_sha256 ?? sha256(p.token ?? ""), p.actor ?? {}, p.assert ?? {}, p.plugins ?? null])
    .sort(([a], [b]) => String(a).localeCompare(String(b)));
  return `sha256:${sha256(JSON.stringify(shown))}`;
}

function sha256(text: string): string {
  return sha256Hex(text);
}
