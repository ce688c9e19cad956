import { Query } from "mingo";
import { fail } from "../errors.js";

/** A compiled MongoDB filter: true when a JSON object matches. */
export type Filter = (data: Record<string, unknown>) => boolean;

/** Matches everything (an empty or absent filter). */
export const matchAll: Filter = () => true;

/**
 * Compiles a MongoDB filter with mingo once (SPEC P1, E9). An unknown
 * operator or malformed filter fails here, at request or registration time,
 * with INVALID_ARGUMENT naming `field` (e.g. `where`).
 */
export function compileFilter(filter: Record<string, unknown> | undefined, field: string): Filter {
  if (filter === undefined || Object.keys(filter).length === 0) return matchAll;
  let query: Query;
  try {
    query = new Query(filter);
  } catch (e) {
    const reason = e instanceof Error ? e.message : String(e);
    fail("invalid_filter", `invalid ${field} filter: ${reason}`, [{ field, description: reason }]);
  }
  return (data) => query.test(data);
}
