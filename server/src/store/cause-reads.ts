import { budgetedRows, fromRow, type BudgetedRows, type EventRecord, type EventRow } from "./events.js";
import { dialectOf, type Db, type SqlStatement } from "./sql.js";

// The log's reads by cause, for ReadLog's `cause` filter and the walk down a cause's tree
// (log/cause-tree.ts): by the index events_by_cause (cause, seq) and by id, never a scan.
// Lists of causes and ids go as one JSON array parameter, so one statement serves any count.

/** An event as the tree walk reads it: its place and links, and its data only for the types whose data names calls (`linkTypes`). */
export interface TreeRow {
  seq: number;
  id: string;
  type: string;
  cause: string;
  actor: EventRecord["actor"];
  /** The data of an event of `linkTypes`, else undefined (not read). */
  data: Record<string, unknown> | undefined;
}

/** The log's reads by cause, outside the committer (PostgreSQL: without blocking the event loop). */
export interface CauseReads {
  /**
   * As EventReads.readWithin, of the events whose cause is one of `causes`: up to `limit` events
   * with seq > `afterSeq` in seq order, of `types` when given, stopping after the one that brings
   * their stored bytes to `maxBytes`.
   */
  readUnder(causes: string[], afterSeq: number, limit: number, maxBytes: number, types?: string[]): Promise<BudgetedRows>;
  /** Up to `limit` events whose cause is one of `causes`, in seq order, as {@link TreeRow}s (data only of `linkTypes`). */
  treeRows(causes: string[], linkTypes: string[], limit: number): Promise<TreeRow[]>;
  /** The events with these ids (those in the log), in seq order. */
  byIds(ids: string[]): Promise<EventRecord[]>;
}

/** What the tree walk reads of a row ({@link TreeRow}). */
interface TreeRowData {
  seq: number;
  id: string;
  type: string;
  cause: string;
  actor: string | null;
  data: string | null;
}

/** The cause reads on `db`. */
export function causeReads(db: Db): CauseReads {
  const postgres = dialectOf(db) === "postgres";
  // A JSON array parameter as a set of strings.
  const listOf = postgres ? "SELECT jsonb_array_elements_text(?::jsonb)" : "SELECT value FROM json_each(?)";
  const treeSql = `SELECT seq, id, type, cause, actor, CASE WHEN type IN (${listOf}) THEN data END AS data
                   FROM events WHERE cause IN (${listOf}) ORDER BY seq LIMIT ?`;
  const byIdsSql = `SELECT * FROM events WHERE id IN (${listOf}) ORDER BY seq`;
  const underSql = (typed: boolean): string => {
    const ofTypes = typed ? ` AND type IN (${listOf})` : "";
    if (!postgres) return `SELECT * FROM events WHERE cause IN (${listOf})${ofTypes} AND seq > ? ORDER BY seq LIMIT ?`;
    // As events.ts's pgBudgetedSql: the server cuts the rows at the byte budget.
    const bytes = "octet_length(data) + COALESCE(octet_length(actor), 0) + char_length(id) + char_length(type) + char_length(cause)";
    return `SELECT seq, id, type, data, cause, actor, at FROM (
              SELECT *, sum(${bytes}) OVER (ORDER BY seq ROWS UNBOUNDED PRECEDING) - (${bytes}) AS before
              FROM events WHERE cause IN (${listOf})${ofTypes} AND seq > ? ORDER BY seq LIMIT ?) AS chunk
            WHERE before < ? ORDER BY seq`;
  };
  const readAsync = db.readAsync?.bind(db);
  const prepared = new Map<string, SqlStatement>();
  const rows = async (sql: string, params: unknown[]): Promise<unknown[]> => {
    if (readAsync) return readAsync(sql, params);
    let stmt = prepared.get(sql);
    if (!stmt) {
      stmt = db.prepare(sql);
      prepared.set(sql, stmt);
    }
    return stmt.all(...params);
  };
  return {
    async readUnder(causes, afterSeq, limit, maxBytes, types = []) {
      const typed = types.length > 0;
      const params: unknown[] = [JSON.stringify(causes), ...(typed ? [JSON.stringify(types)] : []), afterSeq, limit];
      if (postgres) params.push(Math.min(maxBytes, Number.MAX_SAFE_INTEGER));
      return budgetedRows((await rows(underSql(typed), params)) as EventRow[], limit, maxBytes);
    },
    async treeRows(causes, linkTypes, limit) {
      const found = (await rows(treeSql, [JSON.stringify(linkTypes), JSON.stringify(causes), limit])) as TreeRowData[];
      return found.map((r) => ({
        seq: Number(r.seq),
        id: r.id,
        type: r.type,
        cause: r.cause,
        actor: r.actor === null ? null : JSON.parse(r.actor),
        data: r.data === null ? undefined : (JSON.parse(r.data) as Record<string, unknown>),
      }));
    },
    async byIds(ids) {
      if (ids.length === 0) return [];
      return ((await rows(byIdsSql, [JSON.stringify(ids)])) as EventRow[]).map(fromRow);
    },
  };
}
