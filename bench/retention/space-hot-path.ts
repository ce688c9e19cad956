// Returning free pages to the disk beside commits (not a test): `npm run bench:retention:space-hot-path`.
// BENCH_EVENTS (default 300,000) events of about 200 bytes with time-ordered ids are imported into
// a new store and all but the last BENCH_KEEP (default 75,000: the pages the return moves) removed
// (one transaction), the WAL checkpointed. Then, on
// that store reopened as the owner opens it (its checkpoint worker, a committer, FULL sync), a
// probe appends one event every BENCH_PROBE_MS (default 5) ms while retention's space return runs
// until an eighth of the file is free, paced as retention paces it (removal-pace.ts), in one of two
// ways, each on a copy of the same file, alternating BENCH_ROUNDS (default 2) times:
//   owner:  each step a committer unit running PRAGMA incremental_vacuum on the owner's connection,
//           128 pages (the version before);
//   worker: each step in the checkpoint worker, in a turn between two batches (Committer.outside),
//           sized by SpaceReturn to about 3 ms.
// Printed per run: the return's time and steps, the probes' commit latency (submit → durable)
// p50/p99/max while it ran, the event loop's delay p99/max, and the file's size before and after.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { v7 as uuidv7 } from "uuid";
import { ManualClock } from "../../server/src/clock.js";
import { RemovalPace } from "../../server/src/log/removal-pace.js";
import { SpaceReturn } from "../../server/src/log/space-return.js";
import { Committer } from "../../server/src/store/committer.js";
import { eventStatements } from "../../server/src/store/events.js";
import { sqliteLogImport, type ImportedEvent } from "../../server/src/store/log-import.js";
import { logRemovalStatements } from "../../server/src/store/log-removal.js";
import { openStore } from "../../server/src/store/sqlite/open.js";
import { pct } from "../lib/proc.js";

const events = Number(process.env.BENCH_EVENTS ?? 300_000);
const probeMs = Number(process.env.BENCH_PROBE_MS ?? 5);
const kept = Number(process.env.BENCH_KEEP ?? 75_000);
const rounds = Number(process.env.BENCH_ROUNDS ?? 2);
const dir = mkdtempSync(join(tmpdir(), "chronolog-space-hot-"));
const filler = JSON.stringify({ text: "x".repeat(160) });

async function template(): Promise<string> {
  const dataDir = join(dir, "template");
  const store = openStore({ dataDir, synchronous: "NORMAL" });
  const log = sqliteLogImport(store);
  for (let seq = 1; seq <= events; ) {
    const batch: ImportedEvent[] = [];
    for (const end = Math.min(events, seq + 19_999); seq <= end; seq++)
      batch.push({ seq, id: uuidv7(), type: "rbench.filler", data: filler, cause: "", actor: null, at: 1_700_000_000_000 + seq, trace: null });
    await log.append(batch, batch[0].seq - 1);
  }
  store.db.transaction(() => {
    store.db.prepare("UPDATE log_retention SET removing = 1 WHERE id = 1").run();
    store.db.prepare("DELETE FROM events WHERE seq <= ?").run(events - kept);
    store.db.prepare("UPDATE log_retention SET removing = 0 WHERE id = 1").run();
  })();
  await store.close();
  return dataDir;
}

async function run(from: string, mode: "owner" | "worker", n: number): Promise<void> {
  const dataDir = join(dir, `${mode}-${n}`);
  mkdirSync(dataDir);
  execFileSync("cp", [join(from, "chronolog.db"), join(dataDir, "chronolog.db")]);
  const file = join(dataDir, "chronolog.db");
  const sizeBefore = statSync(file).size;
  const store = openStore({ dataDir });
  const events = eventStatements(store.db);
  const committer = new Committer(store.db, new ManualClock(Date.UTC(2026, 0, 1)), events, { transactions: store.transactions });
  committer.onCommit(() => store.committed());
  const statements = logRemovalStatements(store.db);
  const space = new SpaceReturn(statements);
  const pace = new RemovalPace(committer, () => store.checkpointer.state());
  await store.checkpointer.checkpoint(); // the worker is up (an owner's has been since it opened the store)
  const latencies: number[] = [];
  let probing = true;
  let probes = 0;
  const probe = (async () => {
    while (probing) {
      const sent = performance.now();
      void committer
        .submit((tx) => tx.append({ id: uuidv7(), type: "rbench.probe", data: { n: probes++ }, cause: "", actor: null }))
        .then(() => latencies.push(performance.now() - sent));
      await new Promise((r) => setTimeout(r, probeMs));
    }
  })();
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  const started = performance.now();
  let steps = 0;
  let longestHeld = 0;
  const slow: string[] = [];
  for (let pages = space.next(); pages > 0; pages = space.next()) {
    let held = 0;
    if (mode === "owner") {
      held = await pace.track(() => committer.submit(() => statements.reclaim(128)));
    } else {
      let inWorker = 0;
      const step = await space.stepOutside(
        pages,
        async (p, turn) => {
          const answer = await store.checkpointer.returnPages(p, turn);
          inWorker = answer.ms;
          return answer;
        },
        committer,
      );
      held = step.heldMs;
      if (held > 10) slow.push(`${step.returned} pages: ${held.toFixed(1)} ms held, ${inWorker.toFixed(1)} ms in the worker`);
    }
    longestHeld = Math.max(longestHeld, held);
    steps++;
    await pace.pause(held);
  }
  const tookS = (performance.now() - started) / 1000;
  loop.disable();
  probing = false;
  await probe;
  await committer.stop();
  await store.close();
  const sorted = [...latencies].sort((a, b) => a - b);
  console.log(
    `  ${mode} #${n}: ${steps} steps in ${tookS.toFixed(1)} s (longest ${longestHeld.toFixed(1)} ms holding the committer); ` +
      `probe commits p50 ${pct(sorted, 50).toFixed(1)} / p99 ${pct(sorted, 99).toFixed(1)} / max ${sorted[sorted.length - 1].toFixed(1)} ms (${sorted.length}); ` +
      `event loop delay p99 ${(loop.percentile(99) / 1e6).toFixed(1)} / max ${(loop.max / 1e6).toFixed(1)} ms; ` +
      `${(sizeBefore / 1e6).toFixed(1)} MB → ${(statSync(file).size / 1e6).toFixed(1)} MB`,
  );
  if (slow.length > 0) console.log(`    steps holding the committer over 10 ms: ${slow.join("; ")}`);
}

try {
  console.log(
    `bench/retention/space-hot-path: ${new Date().toISOString()}, ${events} events, all but the last ${kept} removed; a probe commit every ${probeMs} ms`,
  );
  const from = await template();
  for (let n = 1; n <= rounds; n++) {
    await run(from, "owner", n);
    await run(from, "worker", n);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
process.exit(0);
