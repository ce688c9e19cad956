// What one removal unit writes to SQLite's WAL (not a test): `npm run bench:retention:wal`.
//
// BENCH_EVENTS (default 200,000) `rbench.filler` events of about 200 bytes are written into a
// fresh store through the import path (as bench/retention/scale.ts does), once with random ids
// (UUIDv4, as a client may give) and once with the ids the owner gives (UUIDv7, time-ordered).
// Then BENCH_UNITS (default 200) removal units of BENCH_UNIT (default 100) events, oldest first,
// through retention's own statements (store/log-removal.ts), each phase on the next seqs:
//   ids kept: `remove` keeping the removed ids (the default, 1,000,000 kept), then a vacuum step
//             as retention ran one after each unit (`reclaim`, in a transaction of its own);
//   no ids:   `remove` keeping none (what keeping the ids costs, by difference);
//   appends:  for comparison, BENCH_UNIT new events appended in one transaction (UUIDv7 ids).
// Each transaction's WAL frames are counted exactly: the WAL is checkpointed and truncated
// before it, and its size read after it (a frame is a 4 KiB page and its 24-byte header).
// Printed: per phase, frames per transaction (median, p90, max) and KiB per removed event.
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { v7 as uuidv7 } from "uuid";
import { sqliteLogImport, type ImportedEvent } from "../../server/src/store/log-import.js";
import { logRemovalStatements } from "../../server/src/store/log-removal.js";
import { openStore, type SqliteStore } from "../../server/src/store/sqlite/open.js";
import { pct } from "../lib/proc.js";

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const events = env("BENCH_EVENTS", 200_000);
const units = env("BENCH_UNITS", 200);
const unit = env("BENCH_UNIT", 100);
const filler = JSON.stringify({ text: "x".repeat(160) });
const frameBytes = 4096 + 24;

/** Frames in the WAL after `work` ran in one transaction of its own, the WAL empty before it. */
function framesOf(store: SqliteStore, work: () => void): number {
  store.db.pragma("wal_checkpoint(TRUNCATE)");
  store.db.transaction(work).immediate();
  const size = statSync(`${join(store.dataDir, "chronolog.db")}-wal`).size;
  return Math.max(0, Math.round((size - 32) / frameBytes));
}

function describe(label: string, frames: number[], perEvent: number): string {
  const sorted = [...frames].sort((a, b) => a - b);
  const mean = frames.reduce((s, f) => s + f, 0) / frames.length;
  return (
    `    ${label.padEnd(26)} frames a transaction: median ${pct(sorted, 50)}, p90 ${pct(sorted, 90)}, max ${sorted[sorted.length - 1]}; ` +
    `${((mean * frameBytes) / 1024 / perEvent).toFixed(1)} KiB of WAL an event`
  );
}

async function measure(ids: "random" | "time-ordered"): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "chronolog-walcost-"));
  const store = openStore({ dataDir: join(dir, "data"), synchronous: "NORMAL" });
  try {
    const log = sqliteLogImport(store);
    const newId = ids === "random" ? randomUUID : () => uuidv7();
    for (let seq = 1; seq <= events; ) {
      const batch: ImportedEvent[] = [];
      for (const end = Math.min(events, seq + 19_999); seq <= end; seq++)
        batch.push({ seq, id: newId(), type: "rbench.filler", data: filler, cause: "", actor: null, at: seq, trace: null });
      await log.append(batch, batch[0].seq - 1);
    }
    const statements = logRemovalStatements(store.db);
    let next = 1;
    const seqs = () => Array.from({ length: unit }, () => next++);
    const bytes = unit * (filler.length + 36 + 13);
    const kept: number[] = [];
    const reclaimed: number[] = [];
    for (let i = 0; i < units; i++) {
      const batch = seqs();
      kept.push(framesOf(store, () => statements.remove(batch, bytes, 1_000_000)));
      reclaimed.push(framesOf(store, () => statements.reclaim(Math.min(128, Math.ceil((2 * bytes) / 4096) + 8))));
    }
    const none: number[] = [];
    for (let i = 0; i < units; i++) {
      const batch = seqs();
      none.push(framesOf(store, () => statements.remove(batch, bytes, 0)));
    }
    const appends: number[] = [];
    let head = events;
    for (let i = 0; i < units; i++) {
      const batch: ImportedEvent[] = Array.from({ length: unit }, () => ({
        ...{ seq: ++head, id: uuidv7(), type: "rbench.published", data: filler, cause: "" },
        ...{ actor: null, at: head, trace: null },
      }));
      appends.push(framesOf(store, () => void log.append(batch, batch[0].seq - 1)));
    }
    const free = Number(store.db.pragma("freelist_count", { simple: true }));
    const pages = Number(store.db.pragma("page_count", { simple: true }));
    console.log(`  ${events.toLocaleString("en")} events with ${ids} ids; units of ${unit} events (${units} a phase):`);
    console.log(describe("remove, ids kept", kept, unit));
    console.log(describe("its vacuum step", reclaimed, unit));
    console.log(describe("remove, no ids kept", none, unit));
    console.log(describe(`append ${unit} events`, appends, unit));
    console.log(`    the file then: ${pages} pages, ${free} free`);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

console.log(`bench/retention/wal-cost: ${new Date().toISOString()}`);
await measure("random");
await measure("time-ordered");
process.exit(0);
