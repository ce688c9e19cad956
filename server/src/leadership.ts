import type { DescService } from "@bufbuild/protobuf";
import { Counter, Gauge, Registry } from "prom-client";
import type { Authenticator } from "./auth/tokens.js";
import type { Logger } from "./logger.js";
import { metricsHttpHandler } from "./metrics.js";
import { listen, type ListenOptions } from "./rpc/listen.js";
import { roleHeaders, standbyRoutes } from "./rpc/standby.js";
import type { UpgradeListener } from "./store/migrate.js";
import type { Db } from "./store/sql.js";
import { connectPostgres, shownUrl, type PostgresDatabase } from "./store/postgres/open.js";
import type { FencedError } from "./store/postgres/transactions.js";
import type { Store } from "./store/store.js";

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
  /** Where a standby answers while it waits: the owner's own port, TLS and services. */
  listen: Pick<ListenOptions, "host" | "port" | "tls" | "corsOrigins">;
  services: DescService[];
  /** Who may read a standby's /metrics (as the leader's: anyone without principals, admins with them). */
  authenticator: Authenticator;
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
 * port (every call refused UNAVAILABLE naming the leader, rpc/standby.ts) until the leader's
 * lease expires and this owner takes it. Throws when the database cannot be reached or
 * migrated, or when `signal` aborts first.
 */
export async function awaitLeadership(options: LeadershipOptions): Promise<Leadership> {
  const { logger } = options;
  const database = connectPostgres(options.url, options, options.onUpgrade, options.check);
  try {
    let state = await database.lease.tryTake();
    if (!state.leading) {
      let leaderUrl = state.leaderUrl;
      logger.info({ store: shownUrl(options.url), term: state.term, leader: leaderUrl }, `standby: the owner at ${leaderUrl ?? "(no URL)"} leads (term ${state.term}); this one takes over when its lease expires`);
      // A standby's /metrics: its role and the term it sees.
      const registry = new Registry();
      let seenTerm = state.term;
      new Gauge({ name: "chronolog_leader", help: "1 while this owner leads (holds the lease of a PostgreSQL store).", registers: [registry] }).set(0);
      new Gauge({ name: "chronolog_lease_term", help: "The lease's term: the one this owner holds, or, on a standby, the leader's.", registers: [registry], collect() { this.set(seenTerm); } });
      const metrics = { text: () => registry.metrics(), contentType: registry.contentType };
      const listener = await listen({ ...options.listen, routes: standbyRoutes(options.services, () => leaderUrl), extraHttpHandler: metricsHttpHandler(metrics, options.authenticator, logger) });
      try {
        let unreachable = false;
        while (!state.leading) {
          await sleep(Math.min(250, options.leaseMs / 10), options.signal);
          try {
            state = await raceAbort(database.lease.tryTake(), options.signal);
          } catch (err) {
            if (options.signal?.aborted) throw err;
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
        await listener.close();
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

/** This owner's leadership: its store, the lease's renewals, and the role it reports. */
export class Leadership {
  private renewals: NodeJS.Timeout | undefined;
  private lost = false;

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
      (error) => this.lose(`the connection to PostgreSQL broke (${error.message.trim().split("\n")[0]})`, onLost),
    );
  }

  /**
   * Renews the lease every third of its length; `onLost` is told, once, when another owner holds
   * it or it could not be renewed for a whole lease (a standby may have taken it).
   */
  keep(onLost: (reason: string) => void): void {
    const lease = this.database.lease;
    this.renewals = setInterval(() => {
      this.database.probe(); // a PostgreSQL restart broke the store's connections too: step down now, not at the next call
      lease.renew().then(
        (held) => {
          if (!held) this.lose("another owner took the lease", onLost);
        },
        (err) => {
          const sinceMs = performance.now() - lease.renewedAt;
          this.options.logger.warn({ err, sinceMs: Math.round(sinceMs) }, "renewing the lease failed");
          if (sinceMs >= this.options.leaseMs) this.lose(`the lease could not be renewed for ${Math.round(sinceMs)} ms (a standby may lead now)`, onLost);
        },
      );
    }, this.options.leaseMs / 3);
  }

  /** Response headers of health answers: the role and this owner's URL. */
  headers(): Record<string, string> {
    return roleHeaders("leader", this.options.advertiseUrl);
  }

  /** `chronolog_leader`, `chronolog_lease_term`, `chronolog_lease_age_seconds`, `chronolog_takeovers_total` on `registry`. */
  registerMetrics(registry: Registry): void {
    const lease = this.database.lease;
    new Gauge({ name: "chronolog_leader", help: "1 while this owner leads (holds the lease of a PostgreSQL store).", registers: [registry], collect: () => undefined }).set(1);
    new Gauge({ name: "chronolog_lease_term", help: "The lease's term: the one this owner holds, or, on a standby, the leader's.", registers: [registry], collect() { this.set(lease.term); } });
    new Gauge({ name: "chronolog_lease_age_seconds", help: "Time since this owner last renewed its lease.", registers: [registry], collect() { this.set((performance.now() - lease.renewedAt) / 1000); } });
    new Counter({ name: "chronolog_takeovers_total", help: "Takeovers by this owner: leases taken from an owner whose lease expired.", registers: [registry] }).inc(this.tookOver ? 1 : 0);
  }

  /** Stops renewing and gives the lease up (a clean stop: a standby takes over at once), then closes the connections. */
  async release(): Promise<void> {
    clearInterval(this.renewals);
    if (!this.lost) await this.database.lease.release().catch((err) => this.options.logger.warn({ err }, "giving up the lease failed: a standby takes over when it expires"));
    this.database.close();
  }

  /** The reason a commit failed, for the owner's log as it steps down. */
  commitFailed(error: unknown, onLost: (reason: string) => void): void {
    this.lose(`a commit failed (${error instanceof Error ? error.message.trim().split("\n")[0] : String(error)})`, onLost);
  }

  private lose(reason: string, onLost: (reason: string) => void): void {
    if (this.lost) return;
    this.lost = true;
    clearInterval(this.renewals);
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
