import { Query } from "mingo";
import { Context } from "mingo/core";
import { resolve } from "mingo/util";
import { RE2JS } from "re2js";
import { ChronologError, fail } from "../errors.js";

/** A compiled MongoDB filter: true when a JSON object matches. Throws INVALID_ARGUMENT when the filter cannot be applied to it. */
export type Filter = (data: Record<string, unknown>) => boolean;

/** Matches everything (an empty or absent filter). */
export const matchAll: Filter = () => true;

/**
 * Compiles a MongoDB filter with mingo once (SPEC P1, E9). An unknown
 * operator, a malformed filter, a script (`$where`, `$function`: scripts are
 * disabled) or a `$regex` that is not valid RE2 syntax fails here, at request or registration time, with
 * INVALID_ARGUMENT naming `field` (e.g. `where`). A filter that is valid but
 * fails on a particular document (e.g. `{a: {$in: 5}}`) throws
 * INVALID_ARGUMENT when applied; callers decide what that means for them.
 */
export function compileFilter(filter: Record<string, unknown> | undefined, field: string): Filter {
  if (filter === undefined || Object.keys(filter).length === 0) return matchAll;
  const linear = withRe2(filter, field) as Record<string, unknown>;
  let query: Query;
  try {
    query = new Query(linear, { scriptEnabled: false, context: re2Context });
    // Some refusals (scripts in $expr) only surface when a document is tested.
    query.test({});
  } catch (e) {
    const reason = e instanceof Error ? e.message : String(e);
    fail("invalid_filter", `invalid ${label(field)}: ${reason}`, [{ field, description: reason }]);
  }
  return (data) => {
    try {
      return query.test(data);
    } catch (e) {
      const reason = e instanceof Error ? e.message : String(e);
      throw new ChronologError("invalid_filter", `${label(field)} cannot be applied: ${reason}`, [{ field, description: reason }]);
    }
  };
}

/** How a message names the filter: "where filter", or "filter" when the field is already called so. */
const label = (field: string) => (field === "filter" ? "filter" : `${field} filter`);

/** What `$re2` carries: a pattern and RE2JS flags. */
interface Re2Args {
  pattern: string;
  flags: number;
}

/**
 * `$re2`, the query operator every `$regex` becomes: RE2 semantics (no backtracking, so time
 * linear in the input whatever the pattern: a filter can never stall the owner, SPEC P1, E9),
 * searched anywhere in the string like MongoDB's `$regex`; an array matches when one of its
 * strings does.
 */
const $re2 = (selector: string, args: Re2Args) => {
  const re = RE2JS.compile(args.pattern, args.flags);
  const test = (v: unknown) => typeof v === "string" && re.matcher(v).find();
  return (doc: Record<string, unknown>) => {
    const value = resolve(doc, selector);
    return Array.isArray(value) ? value.some(test) : test(value);
  };
};

/** mingo's operators plus `$re2`. */
const re2Context = Context.init().addQueryOps({ $re2 } as unknown as Parameters<Context["addQueryOps"]>[0]);

/** `$options` letters and their RE2JS flags (MongoDB's `x` has no RE2 equivalent). */
const re2Flags: Record<string, number> = { i: RE2JS.CASE_INSENSITIVE, m: RE2JS.MULTILINE, s: RE2JS.DOTALL };

/**
 * A copy of `value` where every `{ $regex, $options }` is `{ $re2 }`, compiled once here so a
 * pattern RE2 cannot run (backreferences, lookaround) or an unknown option fails at request or
 * registration time with INVALID_ARGUMENT naming `field`.
 */
function withRe2(value: unknown, field: string): unknown {
  if (Array.isArray(value)) return value.map((v) => withRe2(v, field));
  if (value === null || typeof value !== "object") return value;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    if (key === "$regex" || (key === "$options" && "$regex" in value)) continue;
    out[key] = withRe2(inner, field);
  }
  if (!("$regex" in value)) return out;
  const { $regex: pattern, $options: options = "" } = value as { $regex: unknown; $options?: unknown };
  const bad = (why: string) => fail("invalid_filter", `invalid ${label(field)}: $regex ${JSON.stringify(pattern)} ${why}`, [{ field, description: why }]);
  if (typeof pattern !== "string") bad("must be a string");
  if (typeof options !== "string") bad("$options must be a string");
  let flags = 0;
  for (const letter of options as string) flags |= re2Flags[letter] ?? bad(`$options ${JSON.stringify(letter)} is not supported (i, m, s)`);
  try {
    RE2JS.compile(pattern as string, flags);
  } catch (e) {
    bad(`is not RE2 syntax (no backreferences or lookaround): ${e instanceof Error ? e.message : String(e)}`);
  }
  out.$re2 = { pattern: pattern as string, flags } satisfies Re2Args;
  return out;
}
