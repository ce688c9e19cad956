// BENCH_STORE=postgres: the benchmarks' owners run on PostgreSQL, each on a new database of one
// server started for the benchmark (fsync on, synchronous_commit on: durable as in production)
// and stopped when it exits.
// BENCH_PG_LATENCY_MS=N (with BENCH_STORE=postgres): the owners reach that server through one
// toxiproxy started with it (test/helpers/toxiproxy.ts), which adds N ms to every answer, as a
// database in another zone would; 0 goes through the proxy with nothing added. The benchmark's own
// connection, which creates the databases, stays direct.
import { execFileSync } from "node:child_process";
import { connectNative, endNative } from "../../server/src/store/postgres/pg-db.js";
import { startPostgresServer } from "../../test/helpers/postgres-server.js";
import { startToxiproxy } from "../../test/helpers/toxiproxy.js";

/** The store the benchmarks run on (BENCH_STORE, default sqlite). */
export const benchStore: "sqlite" | "postgres" = process.env.BENCH_STORE === "postgres" ? "postgres" : "sqlite";

/** Read when used: a benchmark may set BENCH_STORE itself (bench/takeover). */
const onPostgres = () => process.env.BENCH_STORE === "postgres";

/** Milliseconds the proxy adds to each of PostgreSQL's answers (BENCH_PG_LATENCY_MS); undefined: the owners connect directly. */
export function benchLatencyMs(): number | undefined {
  const value = process.env.BENCH_PG_LATENCY_MS;
  if (value === undefined || value === "") return undefined;
  const ms = Number(value);
  if (!Number.isFinite(ms) || ms < 0) throw new Error(`BENCH_PG_LATENCY_MS must be a number of milliseconds, 0 or more: ${value}`);
  if (!onPostgres()) throw new Error("BENCH_PG_LATENCY_MS needs BENCH_STORE=postgres");
  return ms;
}

/** The server's admin URL (direct) and the host:port the owners' store URLs name (the proxy's when there is one). */
interface Reached {
  admin: string;
  ownersHost: string;
}

let reached: Promise<Reached> | undefined;
let databases = 0;

async function start(): Promise<Reached> {
  const server = await startPostgresServer({ durable: true });
  process.on("exit", () => server.stop());
  const direct = new URL(server.url).host;
  const latency = benchLatencyMs();
  if (latency === undefined) return { admin: server.url, ownersHost: direct };
  const toxiproxy = await startToxiproxy();
  process.on("exit", () => toxiproxy.stop());
  const proxy = await toxiproxy.proxy("postgres", direct);
  await proxy.latency(latency);
  return { admin: server.url, ownersHost: proxy.listen };
}

/** The `serve` arguments naming a new owner's store: `--data dataDir` on SQLite, `--store` with a new database on PostgreSQL. */
export async function storeArgs(dataDir: string): Promise<string[]> {
  if (!onPostgres()) return ["--data", dataDir];
  reached ??= start();
  const { admin: url, ownersHost } = await reached;
  const name = `bench_${process.pid}_${++databases}`;
  const admin = connectNative(url, "chronolog bench");
  admin.querySync(`CREATE DATABASE ${name}`);
  endNative(admin);
  const store = new URL(url);
  store.host = ownersHost;
  store.pathname = `/${name}`;
  return ["--store", store.toString()];
}

/** The owners' store in words, for a record's header: the database, its settings and the distance to it. */
export function storeDescription(): string {
  if (!onPostgres()) return "SQLite, synchronous=FULL (the WAL fsynced before every answer)";
  let version = "PostgreSQL";
  try {
    version = execFileSync("pg_config", ["--version"], { encoding: "utf8" }).trim();
  } catch {
    /* described without its version */
  }
  const latency = benchLatencyMs();
  const distance =
    latency === undefined
      ? "reached directly on loopback"
      : `reached through toxiproxy on loopback adding ${latency} ms to every answer (BENCH_PG_LATENCY_MS=${latency})`;
  return `${version}, a server started for the run (fsync on, synchronous_commit on), a new database per owner, ${distance}`;
}

/** A short name of the store setting, for file names and titles: `sqlite`, `postgres`, `postgres+5ms`. */
export function storeSetting(): string {
  const latency = benchLatencyMs();
  return !onPostgres() ? "sqlite" : latency === undefined ? "postgres" : `postgres+${latency}ms`;
}
