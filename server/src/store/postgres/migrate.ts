import { readdirSync, readFileSync } from "node:fs";
import { fail } from "../../errors.js";
import type { UpgradeListener } from "../store.js";
import type { NativeClient } from "./native-client.js";

const migrationsDir = new URL("./pg-migrations/", import.meta.url);

/** Serialises migrations of owners starting together on one database (a key of pg_advisory_lock). */
const migrationLockKey = 0x6368726f; // "chro"

/** The numbered PostgreSQL migration files, `NNNN_name.sql`, in order. */
function migrationFiles(): string[] {
  return readdirSync(migrationsDir)
    .filter((f) => /^\d{4}_.+\.sql$/.test(f))
    .sort();
}

/**
 * Applies `pg-migrations/NNNN_*.sql` above the version in `chronolog_schema`, each in its own
 * transaction, under an advisory lock (owners starting together on one database migrate once).
 * Refuses (FAILED_PRECONDITION) a database whose schema is newer than the last migration.
 * Returns the schema version found (0: none, the schema was created) and the one it is now.
 */
export function migratePostgres(client: NativeClient, onUpgrade?: UpgradeListener): { from: number; to: number } {
  client.querySync(`SELECT pg_advisory_lock(${migrationLockKey})`);
  try {
    client.querySync("CREATE TABLE IF NOT EXISTS chronolog_schema (version INTEGER NOT NULL)");
    const current = Number(client.querySync("SELECT COALESCE(MAX(version), 0) AS version FROM chronolog_schema")[0].version);
    const files = migrationFiles();
    const known = Math.max(0, ...files.map((f) => Number(f.slice(0, 4))));
    if (current > known) {
      fail(
        "failed_precondition",
        `the database's schema is version ${current}, newer than this owner's ${known}: a newer Chronolog wrote it; run that version or a newer one`,
      );
    }
    const pending = files.filter((f) => Number(f.slice(0, 4)) > current);
    if (pending.length > 0 && current > 0) onUpgrade?.({ from: current, to: known, files: pending });
    for (const file of pending) {
      const sql = readFileSync(new URL(file, migrationsDir), "utf8");
      client.querySync("BEGIN");
      try {
        client.querySync(sql);
        client.querySync(`INSERT INTO chronolog_schema (version) VALUES (${Number(file.slice(0, 4))})`);
        client.querySync("COMMIT");
      } catch (e) {
        client.querySync("ROLLBACK");
        throw new Error(`migration ${file} failed (the database stays at its schema before it): ${(e as Error).message}`);
      }
    }
    return { from: current, to: known };
  } finally {
    client.querySync(`SELECT pg_advisory_unlock(${migrationLockKey})`);
  }
}
