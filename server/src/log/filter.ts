import { Query } from "mingo";
import safeRegex from "safe-regex2";
import { ChronologError, fail } from "../errors.js";

/** A compiled MongoDB filter: true when a JSON object matches. Throws INVALID_ARGUMENT when the filter cannot be applied to it. */
export type Filter = (data: Record<string, unknown>) => boolean;

/** Matches everything (an empty or absent filter). */
export const matchAll: Filter = () => true;

/**
 * Compiles a MongoDB filter with mingo once (SPEC P1, E9). An unknown
 * operator, a malformed filter, a script (`$where`, `$function`: scripts are
 * disabled) or a `$regex` that can take exponential time (checked with
 * safe-regex2) fails here, at request or registration time, with
 * INVALID_ARGUMENT naming `field` (e.g. `where`). A filter that is valid but
 * fails on a particular document (e.g. `{a: {$in: 5}}`) throws
 * INVALID_ARGUMENT when applied; callers decide what that means for them.
 */
export function compileFilter(filter: Record<string, unknown> | undefined, field: string): Filter {
  if (filter === undefined || Object.keys(filter).length === 0) return matchAll;
  checkRegexes(filter, field);
  let query: Query;
  try {
    query = new Query(filter, { scriptEnabled: false });
    // Some refusals (scripts in $expr) only surface when a document is tested.
    query.test({});
  } catch (e) {
    const reason = e instanceof Error ? e.message : String(e);
    fail("invalid_filter", `invalid ${field} filter: ${reason}`, [{ field, description: reason }]);
  }
  return (data) => {
    try {
      return query.test(data);
    } catch (e) {
      const reason = e instanceof Error ? e.message : String(e);
      throw new ChronologError("invalid_filter", `${field} filter cannot be applied: ${reason}`, [{ field, description: reason }]);
    }
  };
}

/** Rejects `$regex` patterns with super-linear backtracking (ReDoS) anywhere in the filter. */
function checkRegexes(value: unknown, field: string): void {
  if (Array.isArray(value)) return value.forEach((v) => checkRegexes(v, field));
  if (value === null || typeof value !== "object") return;
  for (const [key, inner] of Object.entries(value)) {
    if (key === "$regex") {
      if (typeof inner !== "string") fail("invalid_filter", `invalid ${field} filter: $regex must be a string`, [{ field, description: "$regex must be a string" }]);
      if (!safeRegex(inner)) fail("invalid_filter", `invalid ${field} filter: $regex ${JSON.stringify(inner)} may take exponential time; simplify it (no nested quantifiers)`, [{ field, description: "unsafe $regex" }]);
    }
    checkRegexes(inner, field);
  }
}
