// A CPU cap for one process of the timers benchmark (BENCH_OWNER_CPU): a cgroup whose CFS quota
// gives the process and all its threads at most `cores` cores, in 10 ms periods. It stands in for a
// slower machine in a repeatable way: the owner's share of one core in bench (a) is ~55-70%, so a
// cap of 0.7 leaves it the headroom a slow spell of this machine leaves it (its CPU per call 1.3-1.5x).
// Needs a writable cgroup cpu controller (v1 at /sys/fs/cgroup/cpu, or v2 with cpu.max).
import { existsSync, mkdirSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const periodUs = 10_000;

/** A process's CPU cap; `release` removes its cgroup once the process has exited. */
export interface CpuCap {
  release(): void;
}

/**
 * Puts process `pid` (every thread) in a new cgroup capped at `cores` cores (0 < cores, e.g. 0.7).
 * Throws when no writable cgroup cpu controller is found, naming the paths tried.
 */
export function capCpu(pid: number, cores: number): CpuCap {
  if (!(cores > 0)) throw new Error(`BENCH_OWNER_CPU must be a number of cores above 0 (got ${cores})`);
  const quotaUs = Math.round(cores * periodUs);
  const v1 = "/sys/fs/cgroup/cpu";
  const v2 = "/sys/fs/cgroup";
  const name = `chronolog-bench-${process.pid}`;
  const isV1 = existsSync(join(v1, "cpu.cfs_quota_us"));
  const dir = join(isV1 ? v1 : v2, name);
  const release = () => {
    try {
      rmdirSync(dir);
    } catch {
      // still holds a process (the owner did not exit), or was never made: nothing to remove
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
    throw new Error(`BENCH_OWNER_CPU needs a writable cgroup cpu controller: ${tried}; ${e instanceof Error ? e.message : String(e)}`);
  }
  return { release };
}
