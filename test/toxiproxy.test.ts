// The toxiproxy helper (test/helpers/toxiproxy.ts) between a libpq client and a real PostgreSQL
// server: the latency it adds is on every round trip, clear() takes it away, and reset_peer
// breaks the connection. Outside CI it needs .tools/toxiproxy-server (.ci/run builds it); in CI
// it always runs.
//
// @module-tag serial
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { NativeClient } from "../server/src/store/postgres/native-client.js";
import { connectNative, endNative } from "../server/src/store/postgres/pg-db.js";
import { startPostgresServer, type PostgresServer } from "./helpers/postgres-server.js";
import { startToxiproxy, toxiproxyBinary, type Proxy as ToxiproxyProxy, type Toxiproxy } from "./helpers/toxiproxy.js";

const runnable = process.env.CI === "true" || toxiproxyBinary() !== undefined;
if (!runnable)
  console.warn(
    "toxiproxy.test.ts skipped: .tools/toxiproxy-server is missing (.ci/run builds it: go install github.com/Shopify/toxiproxy/v2/cmd/server@v2.12.0)",
  );

let server: PostgresServer;
let toxiproxy: Toxiproxy;
let proxy: ToxiproxyProxy;
const clients: NativeClient[] = [];

beforeAll(async () => {
  if (!runnable) return;
  server = await startPostgresServer();
  toxiproxy = await startToxiproxy();
  proxy = await toxiproxy.proxy("postgres", new URL(server.url).host);
}, 60_000);
afterAll(() => {
  for (const client of clients) endNative(client);
  toxiproxy?.stop();
  server?.stop();
});

/** A client connected to the server through the proxy. */
function throughProxy(): NativeClient {
  const url = new URL(server.url);
  url.host = proxy.listen;
  const client = connectNative(url.toString(), "toxiproxy test");
  clients.push(client);
  return client;
}

/**
 * One round trip (SELECT 1) on `client`, as the owner makes them (libpq's synchronous call): how
 * long it took, ms; throws the connection's error. (pg-native's asynchronous query is not told of
 * a reset connection: it would wait forever.)
 */
function roundTrip(client: NativeClient): number {
  const sent = performance.now();
  expect(client.querySync("SELECT 1 AS one")).toEqual([{ one: 1 }]);
  return performance.now() - sent;
}

describe.runIf(runnable)("toxiproxy between a client and PostgreSQL", () => {
  it("adds its latency to every round trip, until cleared", async () => {
    const client = throughProxy();
    await proxy.latency(20);
    const took: number[] = [];
    for (let i = 0; i < 5; i++) took.push(roundTrip(client));
    expect(Math.min(...took)).toBeGreaterThanOrEqual(20);
    await proxy.clear();
    roundTrip(client); // still connected, answered without the toxic
  });

  it("reset_peer breaks the connection", async () => {
    await proxy.clear();
    const client = throughProxy();
    roundTrip(client);
    await proxy.fault("reset_peer");
    expect(() => roundTrip(client)).toThrow(/closed the connection/);
    await proxy.clear();
  });
});
