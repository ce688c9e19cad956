// A leader whose thread gets stuck: takes the lease of the database at URL (argv[2]) with a lease
// of 1,000 ms, renews it from its thread (lease-renewer.ts), says it is alive for a while, prints
// "stuck", then blocks its thread for good, as a thread waiting on a database that never answers
// would. test/postgres-store.test.ts then takes the lease from it and expects the renewer's
// watchdog to end the process.
// Usage: node --conditions=chronolog-source --import tsx test/helpers/stuck-leader.ts URL
import { connectPostgres } from "../../server/src/store/postgres/open.js";
import { LeaseRenewer } from "../../server/src/store/postgres/lease-renewer.js";

const url = process.argv[2];
if (!url) throw new Error("usage: stuck-leader.ts <postgres url>");
const database = connectPostgres(url, { instanceId: "stuck", advertiseUrl: "http://127.0.0.1:1", leaseMs: 1_000 });
const taken = await database.lease.tryTake();
if (!taken.leading) throw new Error("the lease is held by another owner");
const renewer = new LeaseRenewer({
  url,
  applicationName: "chronolog stuck lease",
  leaseMs: 1_000,
  term: database.lease.term,
  takenAt: database.lease.takenAt,
  onTaken: () => undefined,
  onError: () => undefined,
});
for (let i = 0; i < 5; i++) {
  renewer.alive();
  await new Promise((resolve) => setTimeout(resolve, 100));
}
console.log(`stuck ${database.lease.term}`);
Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0); // never woken
