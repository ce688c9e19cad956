// Benchmark probe, preloaded into the owner child only by bench/emit/main.ts
// (`node --import tsx --import ./bench/emit/probe.ts server/src/main.ts serve`).
//
// It observes the group commit without changing it: it wraps
// Committer.prototype.flush (same module instance the owner imports) to count
// commits, units per commit and time per commit. On SIGUSR2 it writes the
// counters since the last SIGUSR2 to stderr as one JSON line
// `{"probe": {...}}` and resets them.

import { Committer } from "../../server/src/store/committer.js";

interface Counters {
  commits: number;
  units: number;
  maxBatch: number;
  commitMs: number;
  maxCommitMs: number;
  /** Commits by batch size bucket: 1, 2-7, 8-31, 32-127, 128+. */
  buckets: number[];
}

const fresh = (): Counters => ({ commits: 0, units: 0, maxBatch: 0, commitMs: 0, maxCommitMs: 0, buckets: [0, 0, 0, 0, 0] });
let counters = fresh();

type Flushable = { queue: unknown[]; flush(): void };
const proto = Committer.prototype as unknown as Flushable;
const flush = proto.flush;
if (typeof flush !== "function") throw new Error("bench probe: Committer.prototype.flush not found (committer changed?)");

proto.flush = function (this: Flushable) {
  const units = this.queue.length;
  const started = performance.now();
  flush.call(this);
  if (units === 0) return;
  const ms = performance.now() - started;
  counters.commits++;
  counters.units += units;
  counters.maxBatch = Math.max(counters.maxBatch, units);
  counters.commitMs += ms;
  counters.maxCommitMs = Math.max(counters.maxCommitMs, ms);
  counters.buckets[units === 1 ? 0 : units < 8 ? 1 : units < 32 ? 2 : units < 128 ? 3 : 4]++;
};

process.on("SIGUSR2", () => {
  process.stderr.write(`${JSON.stringify({ probe: counters })}\n`);
  counters = fresh();
});
