// Which stores a suite's owners run on, as the suite declares it with a vitest module tag in its
// opening comment (the tags are defined in vitest.config.ts):
//
//   // @module-tag postgres      its owners follow CHRONOLOG_TEST_STORE: the full run (test/run.mjs)
//                                runs it a second time with every owner on PostgreSQL
//   // @module-tag sqlite-only   it opens stores, on SQLite only: it tests what only SQLite has
//                                (the data folder, its lock, WAL) or the store does not matter to it
//
// Every helper that opens a store for a suite (startTestOwner, spawnOwner, queryStore,
// testDatabase) calls storeOpened(), which fails a suite that declares neither: a suite that
// opens a store cannot be left out of the PostgreSQL pass unnoticed. In the PostgreSQL pass it
// also records the suite in CHRONOLOG_TEST_PG_SUITES, and test/run.mjs fails a suite tagged
// postgres that opened no PostgreSQL database (its second pass tests nothing).
import { appendFileSync, readFileSync } from "node:fs";
import { expect } from "vitest";

/** The tags of this kind, as vitest reads them (its `@module-tag` comment). */
export const storeTags = ["postgres", "sqlite-only"] as const;

/** The module tags in a test file's source, read as vitest reads them. */
export function moduleTags(source: string): string[] {
  return [...source.matchAll(/(\/\/|\*)\s*@module-tag\s+([\w\-/]+)\b/g)].map((m) => m[2]);
}

const declared = new Map<string, string[]>();

/** The store tags of the running test file (an empty list when it has none). */
function storeTagsOf(file: string): string[] {
  let tags = declared.get(file);
  if (tags === undefined) declared.set(file, (tags = moduleTags(readFileSync(file, "utf8")).filter((t) => (storeTags as readonly string[]).includes(t))));
  return tags;
}

/** Called by the helpers that open a store: throws when the running suite declares no store tag; records it in the PostgreSQL pass. */
export function storeOpened(): void {
  const file = expect.getState().testPath;
  if (!file) return; // not inside a vitest test file
  const tags = storeTagsOf(file);
  if (tags.length !== 1) {
    throw new Error(
      `${file} opens a store: its opening comment must say on which stores its owners run, with exactly one of "// @module-tag postgres" (also on PostgreSQL, the full run's second pass) or "// @module-tag sqlite-only" (see test/helpers/store-tags.ts); it has ${tags.length === 0 ? "none" : tags.join(", ")}`,
    );
  }
  const seen = process.env.CHRONOLOG_TEST_PG_SUITES;
  if (seen && process.env.CHRONOLOG_TEST_STORE === "postgres") appendFileSync(seen, `${file}\n`);
}
