import { importArchive } from "../archive/import.js";
import { postgresLogImport, sqliteLogImport } from "../store/log-import.js";
import type { LogImport } from "../store/log-import.js";
import { connectForCommand } from "./serve.js";

/**
 * `chronolog import FOLDER [--data DIR | --store URL]`: loads an archive into the log of a store
 * no owner runs on (SQLite: the folder's owner lock is taken; PostgreSQL: refused while an owner
 * leads the database), under its seqs, ids and times (archive/import.ts); prints a line per file,
 * then the whole. The log must be empty, or hold the first files of this archive from an import
 * that stopped: it goes on after them.
 */
export async function importCommand(folder: string, flags: { data: string; store?: string }): Promise<void> {
  if (flags.store !== undefined) {
    const { migratePostgres } = await import("../store/postgres/migrate.js");
    const { endNative } = await import("../store/postgres/pg-db.js");
    const pg = await connectForCommand(flags.store, "import");
    try {
      migratePostgres(pg);
      await run(folder, postgresLogImport(pg));
    } finally {
      endNative(pg);
    }
    return;
  }
  const { openStore } = await import("../store/sqlite/open.js");
  const store = openStore({ dataDir: flags.data });
  try {
    await run(folder, sqliteLogImport(store));
  } finally {
    await store.close();
  }
}

async function run(folder: string, target: LogImport): Promise<void> {
  const result = await importArchive(folder, target, (f) => console.log(`${f.name}: ${f.events} events imported`));
  const { manifest, present, imported, events } = result;
  if (present > 0 && imported === 0) {
    console.log(`the log holds all of this archive already (${manifest.events} events in ${present} files): nothing to import`);
    return;
  }
  const resumed = present > 0 ? ` (after the ${present} files an earlier import wrote)` : "";
  const last = manifest.files.length === 0 ? "" : `; the log's last seq is ${manifest.files[manifest.files.length - 1].lastSeq}`;
  console.log(`imported ${events} events in ${imported} files${resumed}${last}`);
}
