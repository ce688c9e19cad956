import { closeSync, fdatasync, fsyncSync, openSync } from "node:fs";
import { dirname } from "node:path";

/** Makes committed transactions durable; see {@link WalSync}. */
export interface Durability {
  /** Resolves once every transaction committed before the call is on disk; rejects on an I/O error. */
  sync(): Promise<void>;
  /** Releases the file (owner shutdown, after the last commit's sync resolved). */
  close(): void;
}

/**
 * The fsync of the SQLite write-ahead log, off the event loop.
 *
 * SQLite runs with `synchronous=NORMAL`: COMMIT appends the transaction's
 * frames to `<db>-wal` with a plain write() and returns without fsync. Before
 * any caller is answered, the committer asks for `sync()`: one `fdatasync` of
 * the WAL on the libuv thread pool, started after the commit, covers it and
 * every commit before it. The committer holds the next batch until it ends
 * (the batch grows meanwhile), so one fsync serves many callers (group
 * commit) and at most one runs at a time. This is the durability of
 * `synchronous=FULL` (the WAL synced after each commit, before it is
 * acknowledged) without blocking the event loop for it. Checkpoints are
 * unaffected: in NORMAL, SQLite itself syncs the WAL before copying it into
 * the database and the database after.
 *
 * The WAL file is opened on the first sync (it exists once a commit wrote it)
 * and its directory is fsynced once then, so the file's entry is durable too.
 * SQLite only deletes the WAL when its last connection closes, which is the
 * owner's at shutdown, after {@link close}.
 *
 * Failure: an fdatasync error rejects that sync and every later one (after a
 * failed fsync the page cache can no longer be trusted); the owner treats it
 * as fatal.
 */
export class WalSync implements Durability {
  private fd: number | null = null;
  private failure: unknown = null;

  /** `dbPath`: the SQLite database file; its WAL is `${dbPath}-wal`. */
  constructor(private readonly dbPath: string) {}

  async sync(): Promise<void> {
    if (this.failure !== null) throw this.failure;
    try {
      await datasync(this.walFd());
    } catch (error) {
      this.failure = error;
      throw error;
    }
  }

  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }

  private walFd(): number {
    if (this.fd === null) {
      this.fd = openSync(`${this.dbPath}-wal`, "r");
      const dir = openSync(dirname(this.dbPath), "r");
      try {
        fsyncSync(dir);
      } finally {
        closeSync(dir);
      }
    }
    return this.fd;
  }
}

/** `synchronous=NORMAL` chosen by the operator: acknowledged at COMMIT, durable against a process crash only. */
export const noSync: Durability = {
  sync: () => Promise.resolve(),
  close: () => undefined,
};

function datasync(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fdatasync(fd, (error) => (error ? reject(error) : resolve())));
}
