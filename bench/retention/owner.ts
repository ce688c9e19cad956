// The retention benchmark's owner (bench/retention/main.ts starts it as a child process, so its
// event loop is its own): an owner on a ManualClock (its clock and its TimerHost), which moves only
// when the benchmark says so. Usage:
//   node --import tsx bench/retention/owner.ts '{"dataDir","store"?,"pluginsDir","retention"?,"spanSeqs"?}'
// With `spanSeqs` on PostgreSQL the owner starts once (its migrations make the first partition, of
// the default span), stops, and its still empty log gets partitions of `spanSeqs` seqs from the
// first on; then it starts for good.
// Prints {"url"} once serving, then a {"pass"} line per retention pass. Reads commands, one JSON
// line each, and answers each with a line: {"advance": ms} moves the clock (the timers it rings,
// the retention's pass timer among them, ring at once); {"stop": true} closes the owner and exits.
import { createInterface } from "node:readline";
import { pino } from "pino";
import { ManualClock } from "../../server/src/clock.js";
import type { OwnerConfig } from "../../server/src/config.js";
import { startOwner, type Owner } from "../../server/src/owner.js";
import { connectNative, endNative } from "../../server/src/store/postgres/pg-db.js";

interface Options {
  dataDir: string;
  store?: string;
  pluginsDir: string;
  retention?: NonNullable<OwnerConfig["log"]>["retention"];
  spanSeqs?: number;
}

/** 2026-03-02T12:00:00Z: the simulated time starts here. */
const simulatedStart = Date.UTC(2026, 2, 2, 12);

/** The one principal's token (an admin): the benchmark's client and executor use it. */
const benchToken = "retention-bench-token-0123456789";
const options = JSON.parse(process.argv[2]) as Options;
const clock = new ManualClock(simulatedStart);

function start(): Promise<Owner> {
  return startOwner({
    dataDir: options.dataDir,
    ...(options.store ? { store: options.store } : {}),
    host: "127.0.0.1",
    port: 0,
    pluginsDir: options.pluginsDir,
    logger: pino({ level: "warn" }, process.stderr),
    clock,
    timers: clock,
    timerRetentionMs: 0,
    callRetentionMs: 0,
    timerLookaheadMs: 0,
    config: { principals: [{ name: "bench", token: benchToken, role: "admin" }], ...(options.retention ? { log: { retention: options.retention } } : {}) },
  });
}

if (options.store && options.spanSeqs) {
  await (await start()).close();
  const db = connectNative(options.store, "chronolog bench");
  try {
    const [{ n }] = db.querySync("SELECT COUNT(*)::int AS n FROM events") as { n: number }[];
    if (n > 0) throw new Error("the log is not empty: its partitions stay");
    for (const { name } of db.querySync("SELECT name FROM event_partitions") as { name: string }[]) db.querySync(`DROP TABLE ${name}`);
    db.querySync("DELETE FROM event_partitions");
    db.querySync(`UPDATE event_partitioning SET span = ${Number(options.spanSeqs)}`);
    db.querySync("SELECT chronolog_event_room(1)");
  } finally {
    endNative(db);
  }
}

const owner = await start();
const say = (line: object) => process.stdout.write(`${JSON.stringify(line)}\n`);
owner.logRetention.onPass((pass) => say({ pass }));
say({ url: `http://127.0.0.1:${owner.port}` });

for await (const line of createInterface({ input: process.stdin })) {
  const command = JSON.parse(line) as { advance?: number; stop?: boolean };
  if (command.advance !== undefined) {
    clock.advance(command.advance);
    say({ advanced: clock.now() });
  }
  if (command.stop) {
    await owner.close();
    say({ stopped: true });
    process.exit(0);
  }
}
