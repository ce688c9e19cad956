import { newId } from "../log/ids.js";
import { fail } from "../errors.js";
import type { Committer } from "./committer.js";

/** What a maintenance statement returned: rows for a query, `changes` for a write, and the record's seq. */
export interface SqlResult {
  rows: Record<string, unknown>[];
  changes: number;
  seq: number;
}

/**
 * Runs one maintenance SQL statement (O4) inside a group commit, recorded as
 * `maintenance.sql` ({ sql, params, changes, by }) in the same commit, so the
 * log tells who changed what. A bad statement fails with INVALID_ARGUMENT
 * naming SQLite's message, and nothing is written. Values come back as
 * JSON-safe scalars (BigInt and Buffer are turned into strings).
 */
export function runMaintenanceSql(committer: Committer, sql: string, params: unknown[], by: string): Promise<SqlResult> {
  if (sql.trim() === "") fail("bad_request", "sql is required", [{ field: "sql", description: "required" }]);
  refuseLogRewrites(sql);
  return committer.submit((tx) => {
    let rows: Record<string, unknown>[] = [];
    let changes = 0;
    try {
      const statement = tx.db.prepare(sql);
      if (statement.reader) rows = (statement.all(...params) as Record<string, unknown>[]).map(jsonSafe);
      else changes = statement.run(...params).changes;
    } catch (e) {
      fail("bad_request", `maintenance SQL failed: ${e instanceof Error ? e.message : String(e)}`, [{ field: "sql", description: e instanceof Error ? e.message : String(e) }]);
    }
    const record = tx.append({ id: newId(), type: "maintenance.sql", data: { sql, params: params.map(String), changes, by }, cause: "", actor: null });
    return { rows, changes, seq: record.seq };
  });
}

function jsonSafe(row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(row)) out[k] = typeof v === "bigint" ? v.toString() : Buffer.isBuffer(v) ? v.toString("base64") : v;
  return out;
}

/**
 * The log is immutable and its seqs dense (E1): maintenance SQL may read the
 * `events` table but not write it, and may not attach other database files.
 * A textual guard against accidents by an admin, not a sandbox.
 */
function refuseLogRewrites(sql: string): void {
  const text = sql.replace(/--[^\n]*|\/\*[\s\S]*?\*\//g, " ");
  if (/\b(attach|detach)\b/i.test(text)) fail("bad_request", "maintenance SQL may not ATTACH or DETACH databases", [{ field: "sql", description: "ATTACH/DETACH refused" }]);
  const writesEvents = /\b(insert\s+(or\s+\w+\s+)?into|replace\s+into|update(\s+or\s+\w+)?|delete\s+from|drop\s+table(\s+if\s+exists)?|alter\s+table)\s+["`\[]?(main\.)?events\b/i;
  if (writesEvents.test(text)) fail("bad_request", "the log is immutable: maintenance SQL may read the events table but not change it (E1)", [{ field: "sql", description: "writes to events refused" }]);
}
