import { existsSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { checkArchive, importArchive } from "../archive/import.js";
import type { Manifest } from "../archive/manifest.js";
import { postgresLogImport, sqliteLogImport } from "../store/log-import.js";
import type { LogImport } from "../store/log-import.js";
import { connectForCommand } from "./serve.js";

/**
 * `chronolog import FOLDER [--data DIR | --store URL]`: loads an archive into the log of a store
 * no owner runs on (SQLite: the folder's owner lock is taken; PostgreSQL: refused while an owner
 * leads the database), under its seqs, ids and times (archive/import.ts); prints a line per file,
 * then the whole. The log must be empty, or hold the first files of this archive from an import
 * that stopped: it goes on after them. The archive is checked before the store is opened, so a
 * refused one creates nothing; an import that fails before its first file is written removes
 * what it created in the data folder (the folder too when it made it).
 */
export async function importCommand(folder: string, flags: { data: string; store?: string }): Promise<void> {
  const manifest = checkArchive(folder);
  if (flags.store !== undefined) {
    const { migratePostgres } = await import("../store/postgres/migrate.js");
    const { endNative } = await import("../store/postgres/pg-db.js");
    const pg = await connectForCommand(flags.store, "import");
    try {
      migratePostgres(pg);
      await run(folder, manifest, postgresLogImport(pg));
    } finally {
      endNative(pg);
    }
    return;
  }
  const { openStore } = await import("../store/sqlite/open.js");
  const before = existsSync(flags.data) ? new Set(readdirSync(flags.data)) : undefined;
  const store = openStore({ dataDir: flags.data });
  let written = 0;
  try {
    await run(folder, manifest, sqliteLogImport(store), () => written++);
  } catch (e) {
    await store.close();
    if (written === 0) removeCreated(flags.data, before);
    throw e;
  }
  await store.close();
}

/** Removes what an import that wrote no event created in data folder `dir`: the folder itself, or the entries it did not hold `before`. */
function removeCreated(dir: string, before: Set<string> | undefined): void {
  if (before === undefined) return rmSync(dir, { recursive: true, force: true });
  for (const entry of readdirSync(dir)) if (!before.has(entry)) rmSync(join(dir, entry), { recursive: true, force: true });
}

async function run(folder: string, manifest: Manifest, target: LogImport, onFile?: () => void): Promise<void> {
  const result = await importArchive(folder, manifest, target, (f) => {
    onFile?.();
    console.log(`${f.name}: ${f.events} events imported`);
  });
  const { present, imported, events } = result;
  if (present > 0 && imported === 0) {
    console.log(`the log holds all of this archive already (${manifest.events} events in ${present} files): nothing to import`);
    return;
  }
  const resumed = present > 0 ? ` (after the ${present} files an earlier import wrote)` : "";
  const last = manifest.files.length === 0 ? "" : `; the log's last seq is ${manifest.files[manifest.files.length - 1].lastSeq}`;
  console.log(`imported ${events} events in ${imported} files${resumed}${last}`);
}
