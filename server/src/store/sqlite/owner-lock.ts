import Database from "better-sqlite3";
import { readdirSync, readFileSync, readlinkSync, realpathSync, statSync, writeFileSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { ChronologError } from "../../errors.js";

/**
 * The lock file of a data folder. The names stay `owner.lock` and
 * `owner.pid` although they look like leftovers: an owner of an older version
 * locks `owner.lock` too, and a renamed lock would let the two run on one
 * folder. Never delete `owner.lock` while an owner runs (README).
 */
const lockFileName = "owner.lock";
/** The pid of the owner holding the lock, for messages and the check of {@link liveOwnerOf}. */
const pidFileName = "owner.pid";

/** Options of {@link OwnerLock.take}. */
export interface OwnerLockOptions {
  dataDir: string;
  /**
   * Told once when `owner.lock` was deleted or replaced while this owner ran and
   * it could not take it again (another owner holds it now): the owner must
   * stop writing at once (owner.ts logs it as fatal and exits).
   */
  onLost: (error: ChronologError) => void;
  /** Told when `owner.lock` was deleted or replaced and this owner took it again (default: nothing). */
  onRetaken?: (message: string) => void;
  /** How often the lock file is checked, ms (default 1,000). */
  checkIntervalMs?: number;
}

type Db = Database.Database;

/**
 * Keeps other owners out of a data folder: an exclusive SQLite
 * transaction held open on `owner.lock` for the life of the process. The
 * operating system drops it when the process dies, even on `kill -9`, so a
 * crashed owner never leaves a stale lock.
 *
 * A lock on a file is a lock on that file, not on its name: deleting
 * `owner.lock` while the owner runs would let a second owner create a new one
 * and lock it. So a watchdog (an unref'd timer, every second) compares the
 * file at the path with the one locked (device and inode from `stat`; an fd of
 * our own on the file would be a trap: closing any fd of a file drops the
 * process's POSIX locks on it, SQLite's included). When it is gone or
 * replaced, the owner locks the file at the path again; if another owner holds
 * that one, `onLost` is told and this owner stops, so at most one owner keeps
 * writing within about a second. Meanwhile the owner also keeps `owner.pid`
 * naming itself.
 *
 * Belt and braces, at start: a folder whose `owner.pid` names a live process
 * that looks like an owner of the same folder ({@link liveOwnerOf}) is refused
 * even when `owner.lock` was missing and could be taken.
 */
export class OwnerLock {
  private db: Db;
  private file: string;
  private readonly timer: NodeJS.Timeout;
  private closed = false;

  private constructor(
    private readonly options: OwnerLockOptions,
    held: { db: Db; file: string },
  ) {
    this.db = held.db;
    this.file = held.file;
    this.timer = setInterval(() => this.check(), options.checkIntervalMs ?? 1000);
    this.timer.unref();
  }

  /** Takes the lock of `dataDir` and writes `owner.pid`. Throws FAILED_PRECONDITION ("in use by another Chronolog owner") when another owner holds the folder. */
  static take(options: OwnerLockOptions): OwnerLock {
    const { dataDir } = options;
    const other = liveOwnerOf(dataDir);
    if (other !== undefined) {
      const missing = fileIdentity(join(dataDir, lockFileName)) === undefined;
      throw inUse(dataDir, other, missing ? `; its ${lockFileName} is missing: never delete ${lockFileName} while an owner runs` : "");
    }
    const held = lockAt(dataDir);
    if (!held) throw inUse(dataDir, readPid(dataDir), "");
    writePid(dataDir);
    return new OwnerLock(options, held);
  }

  /** Stops the watchdog and releases the lock. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    this.db.close();
  }

  /** The watchdog's tick: is the file at the path still the one locked? */
  private check(): void {
    if (this.closed) return;
    const { dataDir } = this.options;
    if (fileIdentity(join(dataDir, lockFileName)) === this.file) {
      if (readPid(dataDir) !== process.pid) writePid(dataDir);
      return;
    }
    let again: { db: Db; file: string } | undefined;
    let failure = "";
    try {
      again = lockAt(dataDir);
    } catch (e) {
      failure = `: ${e instanceof Error ? e.message : String(e)}`;
    }
    if (again) {
      const old = this.db;
      this.db = again.db;
      this.file = again.file;
      old.close();
      writePid(dataDir);
      this.options.onRetaken?.(
        `${lockFileName} of data folder ${dataDir} was deleted or replaced while this owner ran; it took the lock again (never delete ${lockFileName} while an owner runs)`,
      );
      return;
    }
    this.close();
    const pid = readPid(dataDir);
    const holder =
      failure === "" ? `another Chronolog owner${pidNote(pid === process.pid ? undefined : pid)} holds it now` : `it could not be locked again${failure}`;
    this.options.onLost(
      new ChronologError(
        "failed_precondition",
        `${lockFileName} of data folder ${dataDir} was deleted or replaced while this owner ran and ${holder}; this owner stops so that only one owner writes the folder (never delete ${lockFileName} while an owner runs)`,
      ),
    );
  }
}

function inUse(dataDir: string, pid: number | undefined, note: string): ChronologError {
  return new ChronologError(
    "failed_precondition",
    `data folder ${dataDir} is in use by another Chronolog owner${pidNote(pid, note)}; stop it or choose another --data folder`,
  );
}

function pidNote(pid: number | undefined, note = ""): string {
  return pid === undefined ? "" : ` (pid ${pid}${note})`;
}

/**
 * Locks the file at `dataDir/owner.lock` (created if missing); undefined when
 * another connection holds it. The file's identity is read before and after
 * locking: a file replaced in between is tried again.
 */
function lockAt(dataDir: string): { db: Db; file: string } | undefined {
  const path = join(dataDir, lockFileName);
  for (let attempt = 0; ; attempt++) {
    const before = fileIdentity(path);
    const db = new Database(path);
    try {
      db.pragma("busy_timeout = 0");
      db.pragma("locking_mode = EXCLUSIVE");
      db.exec("BEGIN EXCLUSIVE");
    } catch (e) {
      db.close();
      if ((e as { code?: string }).code === "SQLITE_BUSY") return undefined;
      throw e;
    }
    const after = fileIdentity(path);
    if (after !== undefined && (before === undefined || before === after)) return { db, file: after };
    db.close();
    if (attempt === 2) throw new Error(`${path} keeps being replaced`);
  }
}

/** The device and inode of the file at `path`, or undefined when there is none. */
function fileIdentity(path: string): string | undefined {
  try {
    const stat = statSync(path, { bigint: true });
    return `${stat.dev}:${stat.ino}`;
  } catch {
    return undefined;
  }
}

function readPid(dataDir: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(dataDir, pidFileName), "utf8").trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function writePid(dataDir: string): void {
  writeFileSync(join(dataDir, pidFileName), `${process.pid}\n`);
}

/**
 * The pid in `dataDir/owner.pid` when it names another live process that looks
 * like a Chronolog owner of this folder, else undefined. A heuristic, Linux
 * only (it reads /proc; elsewhere, or when /proc/PID is not readable, the
 * process does not look like an owner): the process holds this folder's
 * `owner.lock` open (also when that file was deleted: "owner.lock (deleted)"),
 * or its command line is a Chronolog serve (an argument `serve` after one
 * ending in `main.ts`, `main.js` or `chronolog`) whose `--data` (default
 * `./data`, relative to the process's working directory) is this folder. A
 * stale `owner.pid` whose pid now belongs to some other program is ignored.
 */
function liveOwnerOf(dataDir: string): number | undefined {
  const pid = readPid(dataDir);
  if (pid === undefined || pid === process.pid) return undefined;
  try {
    process.kill(pid, 0);
  } catch (e) {
    if ((e as { code?: string }).code !== "EPERM") return undefined; // ESRCH: no such process
  }
  let folder: string;
  try {
    folder = realpathSync(dataDir);
  } catch {
    return undefined;
  }
  const lockPath = join(folder, lockFileName);
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      let target = "";
      try {
        target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        continue;
      }
      if (target === lockPath || target === `${lockPath} (deleted)`) return pid;
    }
  } catch {
    /* not Linux, or not ours to read: try the command line */
  }
  try {
    const args = readFileSync(`/proc/${pid}/cmdline`, "utf8")
      .split("\0")
      .filter((a) => a !== "");
    const program = args.findIndex((a) => /(^|\/)main\.[jt]s$/.test(a) || basename(a) === "chronolog");
    const serve = args.indexOf("serve", program + 1);
    if (program < 0 || serve < 0) return undefined;
    let data = "./data";
    for (let i = serve + 1; i < args.length; i++) {
      if (args[i] === "--data" && i + 1 < args.length) data = args[i + 1];
      else if (args[i].startsWith("--data=")) data = args[i].slice("--data=".length);
    }
    const theirs = realpathSync(resolve(readlinkSync(`/proc/${pid}/cwd`), data));
    return theirs === folder ? pid : undefined;
  } catch {
    return undefined;
  }
}
