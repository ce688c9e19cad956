import type { Database as Db } from "better-sqlite3";
import { readdirSync, readFileSync } from "node:fs";
import { fail } from "../../errors.js";
import type { UpgradeListener } from "../store.js";

const migrationsDir = new URL("./migrations/", import.meta.url);

/** The numbered migration files, `NNNN_name.sql`, in order. */
function migrationFiles(): string[] {
  return readdirSync(migrationsDir)
    .filter((f) => /^\d{4}_.+\.sql$/.test(f))
    .sort();
}

/**
 * Names of the tables, indexes and triggers the owner's migrations create (and the
 * `_vNN` rebuilds rename into place): the schema maintenance SQL may not change.
 */
export function ownerSchemaNames(): Set<string> {
  const names = new Set<string>();
  for (const file of migrationFiles()) {
    const sql = readFileSync(new URL(file, migrationsDir), "utf8");
    for (const m of sql.matchAll(/CREATE\s+(?:UNIQUE\s+)?(?:TABLE|INDEX|TRIGGER)\s+(?:IF\s+NOT\s+EXISTS\s+)?([A-Za-z_][A-Za-z0-9_]*)/gi))
      names.add(m[1].replace(/_v\d+$/, ""));
    for (const m of sql.matchAll(/RENAME\s+TO\s+([A-Za-z_][A-Za-z0-9_]*)/gi)) names.add(m[1]);
  }
  return names;
}

/**
 * Applies `migrations/NNNN_*.sql` above `PRAGMA user_version`, each in its own transaction.
 * Refuses (FAILED_PRECONDITION) a folder whose schema is newer than the last migration.
 *
 * A migration that rebuilds an owner table (`DROP TABLE x`, then a new table renamed to x:
 * SQLite cannot change a constraint in place) follows SQLite's procedure for other schema
 * changes (sqlite.org/lang_altertable.html#otheralter), so what an operator's maintenance SQL
 * built on x survives it: foreign keys are off and `legacy_alter_table` on for the migration (a
 * view on x, or a table whose foreign key names x, neither stops it nor loses rows), the
 * operator's indexes on x are made again on the new table, and `PRAGMA foreign_key_check` must
 * find no more rows referring to x's missing rows than before. A failed migration rolls back:
 * the error names it and the schema the folder stays at.
 */
export function migrate(db: Db, onUpgrade?: UpgradeListener): void {
  const current = db.pragma("user_version", { simple: true }) as number;
  const files = migrationFiles();
  const known = Math.max(0, ...files.map((f) => Number(f.slice(0, 4))));
  if (current > known) {
    fail(
      "failed_precondition",
      `the data folder's schema is version ${current}, newer than this owner's ${known}: a newer Chronolog wrote it (its indexes and queries may not match this one's); run that version or a newer one`,
    );
  }
  const pending = files.filter((f) => Number(f.slice(0, 4)) > current);
  if (pending.length > 0 && current > 0) onUpgrade?.({ from: current, to: known, files: pending });
  let at = current;
  for (const file of pending) {
    applyMigration(db, file, at);
    at = Number(file.slice(0, 4));
  }
}

/** Applies one migration in a transaction (see {@link migrate}); `at`: the folder's schema before it. */
function applyMigration(db: Db, file: string, at: number): void {
  const sql = readFileSync(new URL(file, migrationsDir), "utf8");
  const statements = sql.replace(/--[^\n]*|\/\*[\s\S]*?\*\//g, ""); // what it runs, without its comments
  const rebuilt = [...statements.matchAll(/DROP\s+TABLE\s+(?:IF\s+EXISTS\s+)?([A-Za-z_][A-Za-z0-9_]*)/gi)].map((m) => m[1]);
  db.pragma("foreign_keys = OFF"); // a no-op inside a transaction: set around it
  db.pragma("legacy_alter_table = ON");
  try {
    db.transaction(() => {
      const owners = rebuilt.length > 0 ? ownerSchemaNames() : new Set<string>(); // read from the files once, not per index
      const operatorIndexes = indexesOn(db, rebuilt).filter((index) => !owners.has(index.name));
      const danglingBefore = danglingInto(db, rebuilt).length;
      db.exec(sql);
      for (const index of operatorIndexes) db.exec(index.sql);
      const dangling = danglingInto(db, rebuilt);
      if (dangling.length > danglingBefore) throw new Error(`rows of ${dangling[0].table} would refer to rows of ${dangling[0].parent} that are gone`);
      db.pragma(`user_version = ${Number(file.slice(0, 4))}`);
    })();
  } catch (e) {
    const full = (e as { code?: string }).code === "SQLITE_FULL" ? " (a migration that rebuilds tables needs free disk of about twice their size)" : "";
    throw new Error(`migration ${file} failed; the data folder stays at schema ${at}: ${e instanceof Error ? e.message : String(e)}${full}`, { cause: e });
  } finally {
    db.pragma("legacy_alter_table = OFF");
    db.pragma("foreign_keys = ON");
  }
}

/**
 * The rows whose foreign key names a row of `tables` that does not exist (`foreign_key_check`),
 * checked table by table on the tables with such a key: a foreign key SQLite cannot check (its
 * parent columns are not unique: "foreign key mismatch") is skipped, as it is wherever it points.
 */
function danglingInto(db: Db, tables: string[]): { table: string; parent: string }[] {
  if (tables.length === 0) return [];
  const parents = new Set(tables.map((t) => t.toLowerCase()));
  const names = db.prepare("SELECT name FROM main.sqlite_schema WHERE type = 'table'").pluck().all() as string[];
  const keysOf = db.prepare('SELECT "table" FROM pragma_foreign_key_list(?)').pluck();
  const check = db.prepare('SELECT "table", parent FROM pragma_foreign_key_check(?)');
  const dangling: { table: string; parent: string }[] = [];
  for (const name of names) {
    if (!(keysOf.all(name) as string[]).some((parent) => parents.has(parent.toLowerCase()))) continue;
    try {
      dangling.push(...(check.all(name) as { table: string; parent: string }[]).filter((row) => parents.has(row.parent.toLowerCase())));
    } catch (e) {
      if (!(e instanceof Error && e.message.includes("foreign key mismatch"))) throw e;
    }
  }
  return dangling;
}

/** The indexes made by CREATE INDEX (not a constraint's automatic ones) on `tables`. */
function indexesOn(db: Db, tables: string[]): { name: string; sql: string }[] {
  if (tables.length === 0) return [];
  const marks = tables.map(() => "?").join(", ");
  return db
    .prepare(`SELECT name, sql FROM main.sqlite_schema WHERE type = 'index' AND sql IS NOT NULL AND tbl_name COLLATE NOCASE IN (${marks})`)
    .all(...tables) as { name: string; sql: string }[];
}
