import { Counter, Gauge, type Registry } from "prom-client";
import type { Logger } from "./logger.js";
import { roleHeaders } from "./rpc/standby.js";
import type { UpgradeListener } from "./store/store.js";
import type { Db } from "./store/sql.js";
import { LeaseRefusedError } from "./store/postgres/lease.js";
import { connectPostgres, shownUrl, type PostgresDatabase } from "./store/postgres/open.js";
import type { FencedError } from "./store/postgres/transactions.js";
import { LeaseRenewer } from "./store/postgres/lease-renewer.js";
import type { Store } from "./store/store.js";
import type { Trust } from "./trust.js";

/** Default lease length, ms: a standby takes over at most about this long after the leader's last renewal. */
export const defaultLeaseMs = 3_000;

/** Options of {@link awaitLeadership}. */
export interface LeadershipOptions {
  /** The PostgreSQL URL (`--store`). */
  url: string;
  /** This owner's instance id (the lease's holder). */
  instanceId: string;
  /** This owner's URL as clients reach it (told by standbys to clients). */
  advertiseUrl: string;
  leaseMs: number;
  /** This owner's principals as a fingerprint ("": it requires no token): an owner requiring none may not join owners that require tokens. */
  auth: string;
  /**
   * Serves this owner as a standby while it waits (on its own port: standby.ts), given the
   * database, the leader's URL and the term as last read; closed once it leads.
   */
  standby(waiting: { database: PostgresDatabase; leaderUrl(): string | undefined; term(): number }): Promise<{ close(): Promise<void> }>;
  logger: Logger;
  /** Aborted: stop waiting (a standby told to stop). */
  signal?: AbortSignal;
  onUpgrade?: UpgradeListener;
  /** Run on the migrated database before this owner waits or leads (reads only); a throw ends the start. */
  check?: (db: Db) => void;
}

/**
 * Connects to the PostgreSQL store and returns once this owner leads: at once when no owner
 * holds the lease (or its holder's expired), else after serving as a standby on the owner's
 * port (`options.standby`: reads, and writes refused UNAVAILABLE naming the leader) until the
 * leader's lease expires and this owner takes it. Throws when the database cannot be reached or
 * migrated, or when `signal` aborts first.
 */
export async function awaitLeadership(options: LeadershipOptions): Promise<Leadership> {
  const { logger } = options;
  const database = connectPostgres(options.url, options, options.onUpgrade, options.check);
  try {
    let state = await database.lease.tryTake();
    if (database.lease.authDiffers)
      logger.warn(
        "this owner's principals differ from those of the owner that took the lease last: a token one accepts the other may refuse, or take for another principal; give every owner of the database the same principals",
      );
    if (!state.leading) {
      let leaderUrl = state.leaderUrl;
      let seenTerm = state.term;
      const standby = await options.standby({ database, leaderUrl: () => leaderUrl, term: () => seenTerm });
      logger.info(
        { store: shownUrl(options.url), term: state.term, leader: leaderUrl },
        `standby: the owner at ${leaderUrl ?? "(no URL)"} leads (term ${state.term}); this one serves reads and takes over when its lease expires`,
      );
      try {
        let unreachable = false;
        while (!state.leading) {
          await sleep(Math.min(250, options.leaseMs / 10), options.signal);
          try {
            state = await raceAbort(database.lease.tryTake(), options.signal);
          } catch (err) {
            if (options.signal?.aborted || err instanceof LeaseRefusedError) throw err;
            // PostgreSQL restarted or unreachable: a standby keeps waiting and tries again.
            if (!unreachable) logger.warn({ err }, "standby: the lease cannot be read (PostgreSQL unreachable?); trying again");
            unreachable = true;
            continue;
          }
          if (unreachable) logger.info("standby: the lease can be read again");
          unreachable = false;
          seenTerm = state.term;
          if (!state.leading && state.leaderUrl !== leaderUrl) {
            leaderUrl = state.leaderUrl;
            logger.info({ term: state.term, leader: leaderUrl }, `standby: the owner at ${leaderUrl ?? "(no URL)"} leads now (term ${state.term})`);
          }
        }
      } finally {
        await standby.close();
      }
      logger.info({ term: state.term }, `took over the lease (term ${state.term}): this owner leads`);
      return new Leadership(database, options, true);
    }
    logger.info({ store: shownUrl(options.url), term: state.term }, `took the lease (term ${state.term}): this owner leads`);
    return new Leadership(database, options, false);
  } catch (e) {
    database.close();
    throw e;
  }
}

/**
 * How long after its last renewal was sent a leader still acts on its lease: sends deliveries
 * and invocations and answers commits (a sixth of the lease short of it, for the time a renewal's
 * UPDATE took to run and for clock drift). Past it the owner holds them until a renewal holds again:
 * a leader frozen (SIGSTOP, a stalled VM) past its lease may have been replaced meanwhile.
 */
export function trustWindowMs(leaseMs: number): number {
  return (leaseMs * 5) / 6;
}

/** This owner's leadership: its store, the lease's renewals, and the role it reports. */
export class Leadership implements Trust {
  private renewer: LeaseRenewer | undefined;
  private checks: NodeJS.Timeout | undefined;
  private lost = false;
  /** Waiting for the lease to be trusted again ({@link whenTrusted}), and the timer that checks. */
  private trustWaiters: (() => void)[] = [];
  private trustTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly database: PostgresDatabase,
    private readonly options: LeadershipOptions,
    /** This owner took the lease from another one (not from an empty or released lease). */
    readonly tookOver: boolean,
  ) {}

  get term(): number {
    return this.database.lease.term;
  }

  /**
   * Opens the store for this term; `onLost` is told when a write finds another owner leads, or a
   * statement finds its connection to PostgreSQL gone (what the connection last sent may or may
   * not have committed: only a restart, from the store, knows).
   */
  open(onLost: (reason: string) => void): Store {
    return this.database.open(
      (error: FencedError) => this.lose(error.message, onLost),
      (error) =>
        this.lose(
          `the connection to PostgreSQL broke (${error.message.trim().split("\n")[0]}): a standby that took the lease ends the old leader's connections, and so does a restart of PostgreSQL`,
          onLost,
        ),
    );
  }

  /**
   * Renews the lease every third of its length from a thread of its own (lease-renewer.ts);
   * `onLost` is told, once, when another owner holds it or it could not be renewed for a whole
   * lease (a standby may have taken it).
   */
  keep(onLost: (reason: string) => void): void {
    const { leaseMs, logger } = this.options;
    let failing = false;
    const renewer = (this.renewer = new LeaseRenewer({
      url: this.options.url,
      applicationName: `chronolog ${this.options.instanceId} lease`,
      leaseMs,
      term: this.term,
      takenAt: this.database.lease.takenAt,
      onTaken: () => this.lose("another owner took the lease", onLost),
      onError: (message) => {
        if (!failing) logger.warn({ err: message, ageMs: Math.round(renewer.ageMs()) }, "renewing the lease failed; trying again");
        failing = true;
      },
    }));
    renewer.alive();
    this.checks = setInterval(() => {
      renewer.alive();
      this.database.probe(); // a PostgreSQL restart broke the store's connections too: step down now, not at the next call
      const ageMs = renewer.ageMs();
      if (renewer.taken) this.lose("another owner took the lease", onLost);
      else if (ageMs >= leaseMs) this.lose(`the lease could not be renewed for ${Math.round(ageMs)} ms (a standby may lead now)`, onLost);
      else if (failing && ageMs < leaseMs / 2) {
        failing = false;
        logger.info({ ageMs: Math.round(ageMs) }, "the lease is renewed again");
      }
    }, leaseMs / 6);
  }

  /** The lease is younger than the {@link trustWindowMs}: this owner may act on it. */
  trusted(): boolean {
    return !this.lost && (this.renewer === undefined || this.renewer.ageMs() < trustWindowMs(this.options.leaseMs));
  }

  /** Resolves once the lease is trusted again (never, once it is lost: the owner stops). */
  whenTrusted(): Promise<void> {
    if (this.trusted()) return Promise.resolve();
    return new Promise((resolve) => {
      this.trustWaiters.push(resolve);
      this.trustTimer ??= setInterval(() => {
        if (!this.trusted()) return;
        clearInterval(this.trustTimer);
        this.trustTimer = undefined;
        for (const waiter of this.trustWaiters.splice(0)) waiter();
      }, 10);
    });
  }

  /** Response headers of health answers: the role and this owner's URL. */
  headers(): Record<string, string> {
    return roleHeaders("leader", this.options.advertiseUrl);
  }

  /** `chronolog_leader`, `chronolog_lease_term`, `chronolog_lease_age_seconds`, `chronolog_takeovers_total` on `registry`. */
  registerMetrics(registry: Registry): void {
    const lease = this.database.lease;
    const age = () => this.renewer?.ageMs() ?? Number(process.hrtime.bigint() - lease.takenAt) / 1e6;
    new Gauge({
      name: "chronolog_leader",
      help: "1 while this owner leads (holds the lease of a PostgreSQL store).",
      registers: [registry],
      collect: () => undefined,
    }).set(1);
    new Gauge({
      name: "chronolog_lease_term",
      help: "The lease's term: the one this owner holds, or, on a standby, the leader's.",
      registers: [registry],
      collect() {
        this.set(lease.term);
      },
    });
    new Gauge({
      name: "chronolog_lease_age_seconds",
      help: "Time since this owner sent its last renewal of the lease that held.",
      registers: [registry],
      collect() {
        this.set(age() / 1000);
      },
    });
    new Counter({
      name: "chronolog_takeovers_total",
      help: "Takeovers by this owner: leases taken from an owner whose lease expired.",
      registers: [registry],
    }).inc(this.tookOver ? 1 : 0);
  }

  /** Stops renewing and gives the lease up (a clean stop: a standby takes over at once), then closes the connections. */
  async release(): Promise<void> {
    this.stopRenewing();
    await this.renewer?.close();
    if (!this.lost)
      await this.database.lease.release().catch((err) => this.options.logger.warn({ err }, "giving up the lease failed: a standby takes over when it expires"));
    this.database.close();
  }

  /** The reason a commit failed, for the owner's log as it steps down. */
  commitFailed(error: unknown, onLost: (reason: string) => void): void {
    this.lose(`a commit failed (${error instanceof Error ? error.message.trim().split("\n")[0] : String(error)})`, onLost);
  }

  private stopRenewing(): void {
    clearInterval(this.checks);
    clearInterval(this.trustTimer);
  }

  private lose(reason: string, onLost: (reason: string) => void): void {
    if (this.lost) return;
    this.lost = true;
    this.stopRenewing();
    onLost(`${reason} (this owner's term was ${this.term})`);
  }
}

/** `promise`, or a rejection with the signal's reason once it aborts. */
function raceAbort<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  return new Promise<T>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const stop = () => reject(signal.reason);
    signal.addEventListener("abort", stop, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", stop);
        resolve(value);
      },
      (error) => {
        signal.removeEventListener("abort", stop);
        reject(error);
      },
    );
  });
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", stop);
      resolve();
    }, ms);
    const stop = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", stop, { once: true });
  });
}
