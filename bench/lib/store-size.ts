// The size of an owner's store on disk, for the retention benchmarks.
import { statSync } from "node:fs";
import { join } from "node:path";
import { connectNative, endNative } from "../../server/src/store/postgres/pg-db.js";

/** A file's size, bytes (0 when it is not there). */
export function fileBytes(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

/** The store's size on disk, bytes: the SQLite file and its WAL, or the events partitions with their indexes and TOAST. */
export function storeBytes(store: { dataDir: string } | { url: string }): number {
  if ("dataDir" in store) return fileBytes(join(store.dataDir, "chronolog.db")) + fileBytes(join(store.dataDir, "chronolog.db-wal"));
  const db = connectNative(store.url, "chronolog bench");
  try {
    const [row] = db.querySync("SELECT COALESCE(SUM(pg_total_relation_size(relid)), 0)::bigint AS bytes FROM pg_partition_tree('events') WHERE isleaf") as {
      bytes: string;
    }[];
    return Number(row.bytes);
  } finally {
    endNative(db);
  }
}
