// BENCH_STORE=postgres: the benchmarks' owners run on PostgreSQL, each on a new database of one
// server started for the benchmark (fsync on, synchronous_commit on: durable as in production)
// and stopped when it exits.
import { connectNative, endNative } from "../../server/src/store/postgres/pg-db.js";
import { startPostgresServer, type PostgresServer } from "../../test/helpers/postgres-server.js";

/** The store the benchmarks run on (BENCH_STORE, default sqlite). */
export const benchStore: "sqlite" | "postgres" = process.env.BENCH_STORE === "postgres" ? "postgres" : "sqlite";
const onPostgres = () => process.env.BENCH_STORE === "postgres";

let server: Promise<PostgresServer> | undefined;
let databases = 0;

/** The `serve` arguments naming a new owner's store: `--data dataDir` on SQLite, `--store` with a new database on PostgreSQL. */
export async function storeArgs(dataDir: string): Promise<string[]> {
  if (!onPostgres()) return ["--data", dataDir];
  if (!server) {
    server = startPostgresServer({ durable: true });
    const started = await server;
    process.on("exit", () => started.stop());
  }
  const { url } = await server;
  const name = `bench_${process.pid}_${++databases}`;
  const admin = connectNative(url, "chronolog bench");
  admin.querySync(`CREATE DATABASE ${name}`);
  endNative(admin);
  const store = new URL(url);
  store.pathname = `/${name}`;
  return ["--store", store.toString()];
}
