// Stores opened in the test process, on SQLite and on PostgreSQL alike, for the store conformance
// suites (test/store-conformance*.test.ts): the same cases run on each kind of store.
import Database from "better-sqlite3";
import { join } from "node:path";
import { ManualClock, type Clock } from "../../server/src/clock.js";
import { Committer, type CommitterOptions } from "../../server/src/store/committer.js";
import { eventStatements, type EventStatements } from "../../server/src/store/events.js";
import { connectPostgres, type PostgresDatabase } from "../../server/src/store/postgres/open.js";
import { connectNative, endNative, numberParameters } from "../../server/src/store/postgres/pg-db.js";
import type { FencedError } from "../../server/src/store/postgres/transactions.js";
import { openStore } from "../../server/src/store/sqlite/open.js";
import type { Store } from "../../server/src/store/store.js";
import { tempDir, testDatabase } from "./owner.js";

/** The kinds of store a conformance suite runs on. */
export type StoreKind = "sqlite" | "postgres";

/**
 * The stores the conformance suites run on: SQLite always; PostgreSQL too when the test server
 * runs (CHRONOLOG_TEST_PG_URL: the PostgreSQL pass, CHRONOLOG_TEST_STORE=postgres, starts it).
 */
export const storeKinds: StoreKind[] = process.env.CHRONOLOG_TEST_PG_URL ? ["sqlite", "postgres"] : ["sqlite"];

/** An open store of a test, with what its cases need around it. */
export interface TestStore {
  kind: StoreKind;
  store: Store;
  events: EventStatements;
  /** A committer on the store (a ManualClock at 2026-01-01 unless `clock` is given). */
  committer(options?: Partial<CommitterOptions>, clock?: Clock): Committer;
  /** Runs `sql` (`?` parameters) on a connection of its own and returns its rows: what another reader, or a restart, sees. */
  query(sql: string, params?: (string | number | null)[]): Record<string, unknown>[];
  /** What the store told of a takeover (PostgreSQL's fence) or a lost connection, in order. */
  told: { fenced: FencedError[]; lost: Error[] };
  /** PostgreSQL's database, whose lease the store leads under, and its URL (undefined on SQLite). */
  database?: PostgresDatabase;
  url?: string;
  /** The same database opened again, once this store is closed. */
  reopen(): Promise<TestStore>;
  close(): Promise<void>;
}

const open = new Set<TestStore>();
/** Numbers the PostgreSQL stores' instance ids: a takeover ends the connections of its holder's id, and only those. */
let instances = 0;

/** Opens a new, empty store of `kind`; {@link closeTestStores} closes it. `leaseMs`: PostgreSQL's lease (default 30 s). */
export async function openTestStore(kind: StoreKind, options: { leaseMs?: number } = {}): Promise<TestStore> {
  if (kind === "sqlite") return sqliteStore(tempDir("chronolog-store-"));
  return postgresStore(testDatabase(tempDir("chronolog-store-")), `t${process.pid}-${++instances}`, options.leaseMs ?? 30_000);
}

/** Closes every store the test opened (afterEach). */
export async function closeTestStores(): Promise<void> {
  for (const store of [...open]) await store.close();
}

function sqliteStore(dataDir: string): TestStore {
  const store = openStore({ dataDir });
  const opened: TestStore = {
    ...common("sqlite", store),
    query(sql, params = []) {
      const db = new Database(join(dataDir, "chronolog.db"));
      try {
        const statement = db.prepare(sql);
        if (!statement.reader) return (statement.run(...params), []);
        return statement.all(...params) as Record<string, unknown>[];
      } finally {
        db.close();
      }
    },
    async reopen() {
      await opened.close();
      return sqliteStore(dataDir);
    },
    async close() {
      if (!open.delete(opened)) return;
      await store.close();
    },
  };
  open.add(opened);
  return opened;
}

async function postgresStore(url: string, instanceId: string, leaseMs: number): Promise<TestStore> {
  const database = connectPostgres(url, { instanceId, advertiseUrl: "http://127.0.0.1:1", leaseMs });
  const told = { fenced: [] as FencedError[], lost: [] as Error[] };
  try {
    const state = await database.lease.tryTake();
    if (!state.leading) throw new Error(`the test database's lease is held by another owner (term ${state.term})`);
  } catch (e) {
    database.close();
    throw e;
  }
  const store = database.open(
    (e) => told.fenced.push(e),
    (e) => told.lost.push(e),
  );
  const opened: TestStore = {
    ...common("postgres", store),
    told,
    database,
    url,
    query(sql, params = []) {
      const client = connectNative(url, "chronolog tests");
      try {
        return client.querySync(
          numberParameters(sql).text,
          params.map((p) => (p === null ? null : String(p))),
        );
      } finally {
        endNative(client);
      }
    },
    async reopen() {
      await opened.close();
      return postgresStore(url, instanceId, leaseMs);
    },
    async close() {
      if (!open.delete(opened)) return;
      await database.lease.release().catch(() => undefined); // the next open of the database takes it at once
      database.close();
    },
  };
  open.add(opened);
  return opened;
}

function common(kind: StoreKind, store: Store) {
  const events = eventStatements(store.db);
  return {
    kind,
    store,
    events,
    told: { fenced: [], lost: [] },
    committer: (options: Partial<CommitterOptions> = {}, clock: Clock = new ManualClock(Date.UTC(2026, 0, 1))) =>
      new Committer(store.db, clock, events, { transactions: store.transactions, ...options }),
  };
}

/** A test event: type `test.happened`, no cause, no actor. */
export const testEvent = (id: string, data: Record<string, unknown> = {}) => ({ id, type: "test.happened", data, cause: "", actor: null });
