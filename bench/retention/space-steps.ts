// What one step returning free pages to the disk costs (not a test): `npm run bench:retention:space`.
// BENCH_EVENTS (default 1,000,000) events of about 200
// bytes with time-ordered ids are imported into a new store, all but the last BENCH_KEEP (default a
// quarter: the pages a step moves) removed (one transaction, through the guarded path), the WAL checkpointed; then PRAGMA incremental_vacuum(P)
// runs in steps of BENCH_STEP_PAGES (default 128) pages on one connection until an eighth of the file
// is free, the WAL checkpointed (untimed) after each: per step its time, the pages it returned and
// the WAL frames it wrote (p50/p99/max), and the file's size before and after.
import Database from "better-sqlite3";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { v7 as uuidv7 } from "uuid";
import { sqliteLogImport, type ImportedEvent } from "../../server/src/store/log-import.js";
import { openStore } from "../../server/src/store/sqlite/open.js";
import { pct } from "../lib/proc.js";

const events = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const stepPages = Number(process.env.BENCH_STEP_PAGES ?? 128);
const kept = Number(process.env.BENCH_KEEP ?? events / 4);
const dir = mkdtempSync(join(tmpdir(), "chronolog-space-steps-"));
try {
  const store = openStore({ dataDir: dir, synchronous: "NORMAL" });
  const log = sqliteLogImport(store);
  const filler = JSON.stringify({ text: "x".repeat(160) });
  for (let seq = 1; seq <= events; ) {
    const batch: ImportedEvent[] = [];
    for (const end = Math.min(events, seq + 19_999); seq <= end; seq++)
      batch.push({ seq, id: uuidv7(), type: "rbench.filler", data: filler, cause: "", actor: null, at: 1_700_000_000_000 + seq, trace: null });
    await log.append(batch, batch[0].seq - 1);
  }
  await store.close();
  const file = join(dir, "chronolog.db");
  const db = new Database(file);
  db.pragma("synchronous = NORMAL");
  db.pragma("wal_autocheckpoint = 0");
  db.transaction(() => {
    db.prepare("UPDATE log_retention SET removing = 1 WHERE id = 1").run();
    db.prepare("DELETE FROM events WHERE seq <= ?").run(events - kept);
    db.prepare("UPDATE log_retention SET removing = 0 WHERE id = 1").run();
  })();
  db.pragma("wal_checkpoint(TRUNCATE)");
  const sizeBefore = statSync(file).size;
  const free = () => Number(db.pragma("freelist_count", { simple: true }));
  const total = () => Number(db.pragma("page_count", { simple: true }));
  console.log(
    `${events} events, all but the last ${kept} removed: ${(sizeBefore / 1e6).toFixed(1)} MB, ${free()} of ${total()} pages free; steps of ${stepPages} pages`,
  );
  const ms: number[] = [];
  const frames: number[] = [];
  const pages: number[] = [];
  const started = performance.now();
  while (free() > total() / 8) {
    const before = free();
    const t = performance.now();
    db.pragma(`incremental_vacuum(${stepPages})`);
    ms.push(performance.now() - t);
    pages.push(before - free());
    frames.push((db.pragma("wal_checkpoint(PASSIVE)") as { log: number }[])[0].log);
    db.pragma("wal_checkpoint(TRUNCATE)");
  }
  const tookS = (performance.now() - started) / 1000;
  const line = (name: string, values: number[]) => {
    const sorted = [...values].sort((a, b) => a - b);
    return `${name} p50 ${pct(sorted, 50).toFixed(2)} / p99 ${pct(sorted, 99).toFixed(2)} / max ${sorted[sorted.length - 1].toFixed(2)}`;
  };
  const sum = (values: number[]) => values.reduce((s, v) => s + v, 0);
  console.log(
    `${ms.length} steps, ${sum(pages)} pages returned in ${tookS.toFixed(1)} s (checkpoints included), ${(sum(ms) / 1000).toFixed(1)} s in the steps`,
  );
  console.log(`  ${line("ms a step", ms)}; ${(sum(ms) / sum(pages)).toFixed(3)} ms a page`);
  console.log(`  ${line("WAL frames a step", frames)}; ${(sum(frames) / sum(pages)).toFixed(2)} frames a page returned`);
  db.close();
  console.log(`on disk: ${(sizeBefore / 1e6).toFixed(1)} MB before, ${(statSync(file).size / 1e6).toFixed(1)} MB after`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
