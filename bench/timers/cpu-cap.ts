// A CPU cap for one process of the timers benchmark (BENCH_OWNER_CPU): a cgroup whose CFS quota
// gives the process and all its threads at most `cores` cores, in 10 ms periods. It stands in for a
// slower machine in a repeatable way: the owner's share of one core in bench (a) is ~55-70%, so a
// cap of 0.7 leaves it the headroom a slow spell of this machine leaves it (its CPU per call 1.3-1.5x).
// Needs a writable cgroup cpu controller (v1 at /sys/fs/cgroup/cpu, or v2 with cpu.max).
import { existsSync, mkdirSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const periodUs = 10_000;
/** The least cap: cgroup v1 takes no quota under 1 ms a period. */
const minCores = 0.1;

/**
 * `text` (BENCH_OWNER_CPU) as a number of cores, at least {@link minCores}; throws naming the
 * value otherwise (a bench checks it before it starts anything).
 */
export function parseCores(text: string): number {
  const cores = text.trim() === "" ? NaN : Number(text);
  if (!(cores >= minCores)) throw new Error(`BENCH_OWNER_CPU must be a number of cores, at least ${minCores} (1 ms of each 10 ms period): got "${text}"`);
  return cores;
}

/** A process's CPU cap; `release` removes its cgroup, waiting up to 2 s for the process to have left it (exited). */
export interface CpuCap {
  release(): void;
}

/**
 * Puts process `pid` (every thread) in a new cgroup capped at `cores` cores (from
 * {@link parseCores}). Throws when the cgroup cannot be made (no writable cpu controller: not
 * root, or cgroup v2 without the cpu controller delegated), with the cause, removing what it made.
 */
export function capCpu(pid: number, cores: number): CpuCap {
  const quotaUs = Math.round(cores * periodUs);
  const v1 = "/sys/fs/cgroup/cpu";
  const v2 = "/sys/fs/cgroup";
  const name = `chronolog-bench-${process.pid}`;
  const isV1 = existsSync(join(v1, "cpu.cfs_quota_us"));
  const dir = join(isV1 ? v1 : v2, name);
  const release = () => {
    const pause = new Int32Array(new SharedArrayBuffer(4));
    for (let tries = 0; tries < 100; tries++) {
      try {
        return rmdirSync(dir);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "EBUSY") return; // never made, or already removed
        Atomics.wait(pause, 0, 0, 20); // a killed process is still exiting: synchronous, as at exit
      }
    }
  };
  try {
    mkdirSync(dir);
    if (isV1) {
      writeFileSync(join(dir, "cpu.cfs_period_us"), String(periodUs));
      writeFileSync(join(dir, "cpu.cfs_quota_us"), String(quotaUs));
    } else {
      writeFileSync(join(dir, "cpu.max"), `${quotaUs} ${periodUs}`);
    }
    writeFileSync(join(dir, "cgroup.procs"), String(pid));
  } catch (e) {
    release();
    const tried = `${v1}/cpu.cfs_quota_us (cgroup v1), or ${v2} with the cpu controller in cgroup.subtree_control (v2)`;
    throw new Error(
      `BENCH_OWNER_CPU could not cap process ${pid} (it needs a writable cgroup cpu controller: ${tried}): ${e instanceof Error ? e.message : String(e)}`,
    );
  }
  return { release };
}
