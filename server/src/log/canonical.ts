import canonicalizeModule from "canonicalize";

// canonicalize is CommonJS; under NodeNext its default import is module.exports, the function.
const canonicalize = canonicalizeModule as unknown as (value: unknown) => string | undefined;

/** Canonical JSON (RFC 8785): the same value always gives the same string. */
export function canonicalJson(value: unknown): string {
  return canonicalize(value) ?? "null";
}
