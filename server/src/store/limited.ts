import type { Db, SqlStatement as Statement } from "./sql.js";

/** Most limit values one {@link limitedStatement} keeps prepared; a query with another limit prepares a statement of its own. */
const keptLimits = 16;

/**
 * A query whose `LIMIT` is written into its SQL, one prepared statement per limit value: `sql`
 * has one `LIMIT ?` (a subquery's may be it), and the returned function gives the statement for
 * `limit`, to run with the other parameters only. SQLite's planner reads the value bound to a
 * `LIMIT ?`, so it compiles such a statement again at every execution after its parameters are
 * bound (sqlite3Reprepare: a claim's `count(*) ... LIMIT ?` took 11 µs against 3 with the limit
 * written in). Up to {@link keptLimits} limit values stay prepared (callers use a few fixed page
 * sizes); beyond them each call prepares its own statement, no dearer than a reprepare. `raw`:
 * rows as arrays (Statement.raw()). Throws a RangeError when `limit` is not a non-negative safe
 * integer.
 */
export function limitedStatement(db: Db, sql: string, options: { raw?: boolean } = {}): (limit: number) => Statement {
  const [before, after, ...more] = sql.split("LIMIT ?");
  if (after === undefined || more.length > 0) throw new Error(`limitedStatement: the SQL must have one "LIMIT ?": ${sql}`);
  const kept = new Map<number, Statement>();
  return (limit) => {
    if (!Number.isSafeInteger(limit) || limit < 0) throw new RangeError(`a query's limit must be a non-negative integer, not ${limit}`);
    let stmt = kept.get(limit);
    if (stmt) return stmt;
    stmt = db.prepare(`${before}LIMIT ${limit}${after}`);
    if (options.raw) stmt.raw();
    if (kept.size < keptLimits) kept.set(limit, stmt);
    return stmt;
  };
}
