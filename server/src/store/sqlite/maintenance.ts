import { fail } from "../../errors.js";
import type { Committer } from "../committer.js";
import { dialectOf, type Db as AnyDb } from "../sql.js";
import { readInChild } from "./maintenance-read.js";
import { ownerSchemaNames } from "./migrate.js";
import type { SqliteDb as Db } from "./open.js";

/** What a maintenance statement returned: rows for a query, `changes` for a write, and the record's seq. */
export interface SqlResult {
  rows: Record<string, unknown>[];
  changes: number;
  seq: number;
}

/**
 * Runs one maintenance SQL statement inside a group commit, recorded as
 * `maintenance.sql` ({ sql, params, changes, by }) in the same commit, so the
 * log tells who changed what: `record` gives that event's id (the caller makes
 * a new one) and who ran the statement (`by`). A query that only reads runs instead in a child
 * process with a read-only connection and a time limit ({@link readInChild}:
 * DEADLINE_EXCEEDED after 10 s, RESOURCE_EXHAUSTED past 10,000 rows), so no
 * query can stall the owner; it is recorded after it answered. A bad statement fails with INVALID_ARGUMENT
 * naming SQLite's message, and nothing is written. Values come back as
 * JSON-safe scalars (BigInt and Buffer are turned into strings).
 *
 * The log is immutable, and the statement runs on the owner's own
 * connection inside its group commit, so some statements are refused with
 * INVALID_ARGUMENT before they run, and record nothing:
 * - PRAGMAs that set something ({@link refuseSettingPragmas}): SQLite applies
 *   most of them while it compiles the statement, before anything could be
 *   looked at, so this one check reads the statement's words;
 * - everything else is decided from the program SQLite compiled for the
 *   statement (`EXPLAIN`, {@link refuseByProgram}): writing, clearing or
 *   dropping the `events` table or its indexes (whatever the spelling: quoted,
 *   schema-qualified, through a CTE, REPLACE, a trigger it fires...), creating
 *   or dropping triggers, creating temporary tables, views or triggers,
 *   ATTACH/DETACH, VACUUM (INTO), `journal_mode`, and transaction control;
 * - and after it ran, a statement that changed the `events` table's schema
 *   (renamed it, added a column or an index), any trigger or the temporary
 *   schema is undone and refused ({@link guardedSchema}).
 * Underneath, migration 0009's triggers make the database itself refuse any
 * UPDATE or DELETE of an event, whoever issues it.
 */
export async function runMaintenanceSql(
  committer: Committer,
  anyDb: AnyDb,
  sql: string,
  params: unknown[],
  record: { id: string; by: string },
): Promise<SqlResult> {
  const { id, by } = record;
  if (dialectOf(anyDb) === "postgres")
    fail("failed_precondition", "maintenance SQL runs on the SQLite store only: on PostgreSQL, use psql (the log's tables refuse UPDATE and DELETE there too)");
  const db = anyDb as Db;
  if (sql.trim() === "") fail("bad_request", "sql is required", [{ field: "sql", description: "required" }]);
  refuseSettingPragmas(sql);
  const explained = leadingWords(sql, 1)[0]?.word === "EXPLAIN"; // an EXPLAIN only lists a program: it runs nothing
  if (readsOnly(db, sql)) {
    if (!explained) refuseByProgram(db, sql, params);
    const rows = await readInChild(db.name, sql, params);
    const recorded = await committer.submit((tx) =>
      tx.append({ id, type: "maintenance.sql", data: { sql, params: params.map(String), changes: 0, by }, cause: "", actor: null }),
    );
    return { rows, changes: 0, seq: recorded.seq };
  }
  return committer.submit((tx) => {
    const txDb = tx.db as Db;
    if (!explained) refuseByProgram(txDb, sql, params);
    const schemaBefore = guardedSchema(txDb);
    let rows: Record<string, unknown>[] = [];
    let changes = 0;
    try {
      const statement = txDb.prepare(sql);
      if (statement.reader) rows = (statement.all(...params) as Record<string, unknown>[]).map(jsonSafe);
      else changes = statement.run(...params).changes;
    } catch (e) {
      fail("bad_request", `maintenance SQL failed: ${e instanceof Error ? e.message : String(e)}`, [
        { field: "sql", description: e instanceof Error ? e.message : String(e) },
      ]);
    }
    // Thrown inside the unit: the committer rolls the statement back to its savepoint.
    const schemaAfter = guardedSchema(txDb);
    if (schemaAfter.log !== schemaBefore.log) refuse(refusals.schema);
    if (schemaAfter.main !== schemaBefore.main) refuse(refusals.ownerSchema);
    if (schemaAfter.temp !== schemaBefore.temp) refuse(refusals.temp);
    const recorded = tx.append({ id, type: "maintenance.sql", data: { sql, params: params.map(String), changes, by }, cause: "", actor: null });
    return { rows, changes, seq: recorded.seq };
  });
}

/**
 * True for a statement that only reads and returns rows (not a PRAGMA: those report the
 * owner's own connection): it runs in a child process ({@link readInChild}), off the owner's
 * thread and with a time limit. A statement that does not compile goes the commit path, which
 * reports SQLite's error.
 */
function readsOnly(db: Db, sql: string): boolean {
  if (leadingWords(sql, 1)[0]?.word === "PRAGMA") return false;
  try {
    const statement = db.prepare(sql);
    return statement.readonly && statement.reader;
  } catch {
    return false;
  }
}

function jsonSafe(row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(row)) out[k] = typeof v === "bigint" ? v.toString() : Buffer.isBuffer(v) ? v.toString("base64") : v;
  return out;
}

/** The owner's own schema objects (from its migrations), read on the first maintenance statement. */
let ownerNames: Set<string> | undefined;

/** Why a statement is refused, most telling first (a DROP TABLE events also drops its triggers: it is reported as a log write). */
const refusals = {
  log: "the log is immutable: maintenance SQL may read the events table but not write, clear, rebuild or drop it or its indexes",
  schema: "the log is immutable: maintenance SQL may not change the events table's schema (its name, columns, indexes or triggers) nor any trigger",
  triggers:
    "maintenance SQL may not create or drop triggers: the events table's triggers keep the log immutable, and any other would run inside the owner's commits",
  attach: "maintenance SQL may not ATTACH or DETACH databases",
  ownerSchema:
    "maintenance SQL may not drop, rename or alter the owner's own tables, indexes or triggers: they change only through its migrations, and an owner whose table was dropped would not start again (tables you create yourself are yours)",
  temp: "maintenance SQL may not create temporary tables, views or triggers: they would stay on the owner's connection and could shadow its tables",
  vacuum: "maintenance SQL may not VACUUM (it cannot run inside the owner's commit; for a copy, use SQLite's online backup: see the README)",
  journal: "maintenance SQL may not change the journal mode",
  transaction: "maintenance SQL runs inside the owner's group commit: BEGIN, COMMIT, ROLLBACK, SAVEPOINT and RELEASE are refused",
} as const;

function refuse(reason: string): never {
  fail("bad_request", reason, [{ field: "sql", description: reason }]);
}

/** One row of `EXPLAIN`: a VDBE instruction (https://sqlite.org/opcode.html). */
interface Instruction {
  opcode: string;
  p1: number;
  p2: number;
  p3: number;
  p4: unknown;
  p5: number;
}

/** OpenWrite's P5 flag: P2 is a register holding the root page (a btree the statement itself creates), not a root page. */
const OPFLAG_P2ISREG = 0x10;
/** Database 1 of a connection is the temporary one (0 is main; ATTACH, refused, would add more). */
const TEMP_DB = 1;

/**
 * Refuses the statement when the program SQLite compiles for it (trigger
 * programs it would fire included: EXPLAIN lists them) would write the log's
 * b-trees (the `events` table and its indexes, and retention's guard and
 * tombstones, `log_retention` and `removed_events`, by their root pages in
 * `sqlite_schema`), create or drop a trigger, create a temporary object,
 * attach or detach a file, vacuum, change the journal mode, or begin, commit
 * or roll back a transaction. A statement SQLite cannot compile fails with its
 * message. Only PRAGMAs act while compiled, and {@link refuseSettingPragmas}
 * has already refused those that set something.
 */
function refuseByProgram(db: Db, sql: string, params: unknown[]): void {
  let program: Instruction[];
  try {
    program = db.prepare(`EXPLAIN ${sql}`).all(...params) as Instruction[]; // bound like the statement: an EXPLAIN wants its parameters too
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    fail("bad_request", `maintenance SQL failed: ${message}`, [{ field: "sql", description: message }]);
  }
  const roots = new Set(
    (
      db
        .prepare(
          "SELECT rootpage FROM main.sqlite_schema WHERE type IN ('table', 'index') AND tbl_name IN ('events', 'log_retention', 'removed_events') COLLATE NOCASE AND rootpage > 0",
        )
        .pluck()
        .all() as number[]
    ).map(Number),
  );
  const found = new Set<keyof typeof refusals>();
  for (const op of program) {
    switch (op.opcode) {
      case "OpenWrite": // P2 root page (or a register, see P5), P3 database
        if (op.p3 === 0 && (op.p5 & OPFLAG_P2ISREG) === 0 && roots.has(op.p2)) found.add("log");
        break;
      case "Clear": // DELETE without WHERE, REINDEX: P1 root page, P2 database
        if (op.p2 === 0 && roots.has(op.p1)) found.add("log");
        if (op.p2 === TEMP_DB) found.add("temp");
        break;
      case "Destroy": // DROP TABLE / INDEX: P1 root page, P3 database
        if (op.p3 === 0 && roots.has(op.p1)) found.add("log");
        if (op.p3 === TEMP_DB) found.add("temp");
        break;
      case "CreateBtree":
        if (op.p1 === TEMP_DB) found.add("temp");
        break;
      case "DropTrigger":
        found.add("triggers");
        break;
      case "ParseSchema": // after a CREATE: P1 database, P4 what it created ("type='trigger' AND name='...'"); an ALTER TABLE reloads with no P4
        if (typeof op.p4 === "string" && /type='trigger'/.test(op.p4)) found.add("triggers");
        if (op.p1 === TEMP_DB && typeof op.p4 === "string") found.add("temp");
        break;
      case "Function":
      case "PureFunc":
        if (typeof op.p4 === "string" && /^sqlite_(attach|detach)\(/.test(op.p4)) found.add("attach");
        break;
      case "Vacuum":
        found.add("vacuum");
        break;
      case "JournalMode": // P3 the new mode; -1 only reads it
        if (op.p3 !== -1) found.add("journal");
        break;
      case "AutoCommit":
      case "Savepoint":
        found.add("transaction");
        break;
    }
  }
  for (const reason of Object.keys(refusals) as (keyof typeof refusals)[]) if (found.has(reason)) refuse(refusals[reason]);
}

/**
 * What no maintenance statement may change: the `events` table's schema (its
 * table, indexes and triggers) and every trigger (`log`), and the temporary
 * schema (`temp`, empty). A statement that changed either (e.g. `ALTER TABLE
 * events RENAME TO old`, `ALTER TABLE events ADD COLUMN x`, `CREATE INDEX ...
 * ON events`) is rolled back; so is one that changed anything else in the
 * main schema (`main`: dropping or altering an owner table or index would
 * leave a data folder no owner starts on). Objects maintenance itself created
 * (a scratch table) are not guarded. Root pages are not compared: with
 * incremental vacuum, dropping any table moves others' root pages (a rebuilt
 * `events` shows in its program: {@link refuseByProgram}).
 */
function guardedSchema(db: Db): { log: string; temp: string; main: string } {
  const rows = (sql: string) => JSON.stringify(db.prepare(sql).raw().all());
  return {
    log: rows("SELECT type, name, tbl_name, sql FROM main.sqlite_schema WHERE tbl_name = 'events' COLLATE NOCASE OR type = 'trigger' ORDER BY type, name"),
    temp: rows("SELECT type, name, tbl_name, rootpage, sql FROM temp.sqlite_schema ORDER BY type, name"),
    main: JSON.stringify(
      (db.prepare("SELECT type, name, tbl_name, sql FROM main.sqlite_schema ORDER BY type, name").raw().all() as string[][]).filter((r) =>
        (ownerNames ??= ownerSchemaNames()).has(r[1]),
      ),
    ),
  };
}

/**
 * PRAGMAs that take an argument only to say what to report (a table, an index,
 * a limit): these may be given one. Every other PRAGMA may only be read.
 */
const queryPragmas = new Set([
  "table_info",
  "table_xinfo",
  "table_list",
  "index_info",
  "index_xinfo",
  "index_list",
  "foreign_key_list",
  "foreign_key_check",
  "integrity_check",
  "quick_check",
  "optimize",
]);

/**
 * Refuses a PRAGMA that sets something (`PRAGMA [schema.]name = value` or
 * `PRAGMA name(value)`, other than {@link queryPragmas}): `writable_schema`,
 * `journal_mode`, `synchronous`, `locking_mode`, `query_only`, `user_version`
 * (the migrations' counter) and the rest change the owner's own connection or
 * the database header, and SQLite applies many of them while it compiles the
 * statement, so this is decided before anything prepares it, from the
 * statement's leading words read as SQLite's tokenizer reads them (comments,
 * empty statements, `EXPLAIN [QUERY PLAN]` and any quoting of the name).
 * Reading a PRAGMA (`PRAGMA journal_mode`) and the `pragma_*` table-valued
 * functions stay allowed.
 */
function refuseSettingPragmas(sql: string): void {
  const words = leadingWords(sql, 8);
  let i = 0;
  if (words[i]?.word === "EXPLAIN") i += words[i + 1]?.word === "QUERY" ? 3 : 1;
  if (words[i]?.word !== "PRAGMA") return;
  let name = words[i + 1];
  let next = i + 2;
  if (words[next]?.text === ".") {
    name = words[next + 1];
    next += 2;
  }
  const sets = words[next]?.text === "=" || words[next]?.text === "(";
  const pragma = (name?.text ?? "").toLowerCase();
  if (sets && !queryPragmas.has(pragma)) {
    refuse(`maintenance SQL may read PRAGMAs but not set them: PRAGMA ${pragma} would change the owner's connection or the database header`);
  }
}

/** A token: `text` (a quoted name unquoted) and, for a bare word, `word` in upper case. */
interface Token {
  text: string;
  word?: string;
}

/**
 * The first `max` tokens of a statement as SQLite's tokenizer sees them:
 * blanks, `--` and C comments and leading semicolons (empty statements) are
 * skipped; names may be quoted with "", ``, [] or '' (SQLite accepts a string
 * where it wants a name).
 */
function leadingWords(sql: string, max: number): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < sql.length && tokens.length < max) {
    const c = sql[i];
    if (/\s/.test(c) || (c === ";" && tokens.length === 0)) {
      i++;
    } else if (sql.startsWith("--", i)) {
      const end = sql.indexOf("\n", i);
      i = end < 0 ? sql.length : end + 1;
    } else if (sql.startsWith("/*", i)) {
      const end = sql.indexOf("*/", i + 2);
      i = end < 0 ? sql.length : end + 2;
    } else if (c === '"' || c === "`" || c === "'" || c === "[") {
      const close = c === "[" ? "]" : c;
      let text = "";
      let j = i + 1;
      for (; j < sql.length; j++) {
        if (sql[j] !== close) text += sql[j];
        else if (close !== "]" && sql[j + 1] === close) text += sql[j++];
        else break;
      }
      tokens.push({ text });
      i = j + 1;
    } else if (/[A-Za-z_\u0080-\uffff]/.test(c)) {
      let j = i + 1;
      while (j < sql.length && /[A-Za-z0-9_$\u0080-\uffff]/.test(sql[j])) j++;
      const text = sql.slice(i, j);
      tokens.push({ text, word: text.toUpperCase() });
      i = j;
    } else {
      tokens.push({ text: c });
      i++;
    }
  }
  return tokens;
}
