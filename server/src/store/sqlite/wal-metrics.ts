import { Counter, Gauge, type Registry } from "prom-client";
import type { WalState } from "./checkpointer.js";

/**
 * `chronolog_wal_*`: SQLite's write-ahead log as its checkpoints saw it (store/sqlite/checkpointer.ts):
 * its frames (4 KiB pages), those written, and the checkpoints, by where they ran (`worker`: the
 * checkpoint thread; `writer`: the owner's own thread, when the WAL grew past its bound).
 */
export function walMetrics(registry: Registry, wal: () => WalState): void {
  const registers = [registry];
  new Gauge({
    name: "chronolog_wal_frames",
    help: "Frames (4 KiB pages) in SQLite's WAL at the last checkpoint.",
    registers,
    collect() {
      this.set(wal().frames);
    },
  });
  new Counter({
    name: "chronolog_wal_frames_written_total",
    help: "Frames (4 KiB pages) written to SQLite's WAL, as the checkpoints counted them.",
    registers,
    collect() {
      this.reset();
      this.inc(wal().framesWritten);
    },
  });
  new Counter({
    name: "chronolog_wal_checkpoints_total",
    help: "WAL checkpoints by where they ran: worker (the checkpoint thread) or writer (the owner's thread, when the WAL grew past its bound).",
    labelNames: ["by"] as const,
    registers,
    collect() {
      const state = wal();
      this.reset();
      this.inc({ by: "worker" }, state.workerCheckpoints);
      this.inc({ by: "writer" }, state.writerCheckpoints);
    },
  });
  new Counter({
    name: "chronolog_space_returned_pages_total",
    help: "Free pages (4 KiB) of the data file retention returned to the disk, in the checkpoint thread (SQLite's incremental vacuum, once much of the file is free).",
    registers,
    collect() {
      this.reset();
      this.inc(wal().pagesReturned);
    },
  });
  new Counter({
    name: "chronolog_space_return_steps_total",
    help: "Steps that returned free pages to the disk in the checkpoint thread: the owner's commits waited for each.",
    registers,
    collect() {
      this.reset();
      this.inc(wal().returnSteps);
    },
  });
  new Counter({
    name: "chronolog_space_return_seconds_total",
    help: "Time the checkpoint thread spent returning free pages to the disk.",
    registers,
    collect() {
      this.reset();
      this.inc(wal().returnMs / 1000);
    },
  });
  new Counter({
    name: "chronolog_wal_writer_checkpoint_seconds_total",
    help: "Time the owner's thread spent finishing WAL checkpoints itself: every request, stream and timer waited for it.",
    registers,
    collect() {
      this.reset();
      this.inc(wal().writerMs / 1000);
    },
  });
}
