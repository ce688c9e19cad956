import type { NativeClient } from "./native-client.js";

/**
 * For a command that writes a database no owner may run on (copy-store, import): inside the
 * command's transaction, locks the lease row, so an owner taking the lease waits for the
 * transaction to end, and throws when an owner leads the database now.
 */
export function refuseLiveLeader(pg: NativeClient): void {
  const [lease] = pg.querySync("SELECT holder, expires_at > clock_timestamp() AS live FROM chronolog_lease WHERE id = 1 FOR UPDATE");
  if (lease?.live) throw new Error(`an owner leads this database (lease holder ${String(lease.holder)}): stop every owner on it first`);
}
