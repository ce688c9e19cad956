import type { NativeClient } from "./native-client.js";
import { endNative } from "./pg-db.js";

/** What {@link Lease.tryTake} found. */
export type LeaseState = { leading: true; term: number } | { leading: false; term: number; leaderUrl: string | undefined };

/** How the lease row behaves (lease.ts). */
export interface LeaseOptions {
  /** This owner's instance id: the lease's holder, and its connections' application_name prefix. */
  instanceId: string;
  /** This owner's URL as clients reach it, told to them by standbys. */
  advertiseUrl: string;
  /** How long a lease lasts without renewal, ms: a standby takes over this long after the leader's last renewal. */
  leaseMs: number;
  /** This owner's principals as a fingerprint (absent or "": it requires no token; auth/tokens.ts), written with the lease it takes. */
  auth?: string;
}

/** The lease's row says the owners of this database require tokens, and this owner requires none: it may neither wait nor lead. */
export class LeaseRefusedError extends Error {}

/**
 * The leader's lease on a PostgreSQL store: one row, `chronolog_lease`, whose `term` grows at
 * every takeover. Times are the database's (`clock_timestamp()`), so owners' clocks need not
 * agree. The leader renews it every third of its length (lease-renewer.ts); a standby takes it once it expired:
 * first it ends the old holder's connections (a leader paused inside a transaction holds the
 * row `FOR KEY SHARE`, and would hold the takeover back), then it raises the term in one UPDATE
 * conditioned on the term it read. Every write transaction of the leader checks the term
 * (transactions.ts), so once the term moved the old leader can never commit again.
 *
 * Its queries run on a connection of their own, asynchronously; the leader's renewals run in a
 * thread of their own (lease-renewer.ts), so the owner's work never delays one. A query that gets no answer within the lease's length fails, and after
 * a failed query (PostgreSQL restarted, a takeover ended the connection) the next one connects again.
 */
export class Lease {
  /** The term this owner holds (0 while standby). */
  term = 0;
  /** When the UPDATE that took the lease was sent (process.hrtime.bigint(), ns): it holds at least the lease's length from then. */
  takenAt = 0n;
  /** The owner that took the lease last had principals other than this owner's (both requiring tokens). */
  authDiffers = false;
  /** The last query sent: the next one is sent after its answer. */
  private queue: Promise<unknown> = Promise.resolve();

  private client: NativeClient | undefined;

  constructor(
    /** Makes the lease's connection (again, after one broke). */
    private readonly connect: () => NativeClient,
    private readonly options: LeaseOptions,
  ) {}

  /**
   * Takes the lease when no owner holds it or its holder's expired; else tells who leads.
   * {@link LeaseRefusedError} when the owner that took it last required tokens and this one
   * requires none (an owner started without the pool's config would serve every caller as admin).
   */
  async tryTake(): Promise<LeaseState> {
    const [row] = await this.query("SELECT term, holder, url, auth, expires_at < clock_timestamp() AS expired FROM chronolog_lease WHERE id = 1");
    if (!row) throw new Error("the chronolog_lease row is missing: the database was not made by `chronolog migrate`");
    const term = Number(row.term);
    const auth = this.options.auth ?? "";
    if (row.auth !== "" && auth === "")
      throw new LeaseRefusedError(
        "this database's owners require tokens (the owner that led it last has principals) and this owner has none: start it with the same --config as the others",
      );
    this.authDiffers = row.auth !== "" && row.auth !== auth && row.holder !== this.options.instanceId;
    if (!row.expired && row.holder !== this.options.instanceId) return { leading: false, term, leaderUrl: (row.url as string) || undefined };
    if (row.holder && row.holder !== this.options.instanceId) {
      await this.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE $1 AND pid <> pg_backend_pid()", [
        `chronolog ${row.holder} %`,
      ]);
    }
    const sentAt = process.hrtime.bigint();
    const taken = await this.query(
      `UPDATE chronolog_lease SET term = term + 1, holder = $1, url = $2, expires_at = clock_timestamp() + $3 * interval '1 millisecond', acquired_at = clock_timestamp(), auth = $5
       WHERE id = 1 AND term = $4 RETURNING term`,
      [this.options.instanceId, this.options.advertiseUrl, this.options.leaseMs, term, auth],
    );
    if (taken.length === 0) return this.tryTake(); // another standby took it first: read who
    this.term = Number(taken[0].term);
    this.takenAt = sentAt;
    return { leading: true, term: this.term };
  }

  /** Gives the lease up at a clean stop, so a standby takes over at once. */
  async release(): Promise<void> {
    await this.query("UPDATE chronolog_lease SET expires_at = '-infinity' WHERE id = 1 AND term = $1", [this.term]);
  }

  /** The row as it is: term, holder's URL, age of the lease (ms since its last renewal, by the database's clock). */
  async describe(): Promise<{ term: number; leaderUrl: string | undefined; ageMs: number }> {
    const [row] = await this.query(
      `SELECT term, url, EXTRACT(EPOCH FROM (clock_timestamp() - (expires_at - $1 * interval '1 millisecond'))) * 1000 AS age FROM chronolog_lease WHERE id = 1`,
      [this.options.leaseMs],
    );
    return { term: Number(row.term), leaderUrl: (row.url as string) || undefined, ageMs: Number(row.age) };
  }

  close(): void {
    if (this.client) endNative(this.client);
    this.client = undefined;
  }

  /** Runs `text` once the queries sent before it were answered (a connection runs one at a time). */
  private query(text: string, values: unknown[] = []): Promise<Record<string, unknown>[]> {
    const run = () =>
      new Promise<Record<string, unknown>[]>((resolve, reject) => {
        let client: NativeClient;
        try {
          client = this.client ??= this.connect();
        } catch (error) {
          return reject(error);
        }
        const drop = () => {
          if (this.client === client) this.client = undefined;
          endNative(client);
        };
        const timer = setTimeout(() => {
          drop();
          reject(new Error(`PostgreSQL did not answer a lease query within ${this.options.leaseMs} ms`));
        }, this.options.leaseMs);
        client.query(
          text,
          values.map((v) => (typeof v === "number" ? String(v) : v)),
          (error, rows) => {
            clearTimeout(timer);
            if (!error) return resolve(rows);
            drop(); // whatever went wrong, the next query starts on a new connection
            reject(error);
          },
        );
      });
    const answer = this.queue.then(run, run);
    this.queue = answer.catch(() => undefined);
    return answer;
  }
}
