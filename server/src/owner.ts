import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import type { DescService } from "@bufbuild/protobuf";
import { ActionService } from "@chronolog/sdk/gen/chronolog/v1/action_pb";
import { AdminService } from "@chronolog/sdk/gen/chronolog/v1/admin_pb";
import { CollectionService } from "@chronolog/sdk/gen/chronolog/v1/collection_pb";
import { ExecutorService } from "@chronolog/sdk/gen/chronolog/v1/executor_pb";
import { LogService } from "@chronolog/sdk/gen/chronolog/v1/log_pb";
import { PluginService, type PluginManifest } from "@chronolog/sdk/gen/chronolog/v1/plugin_pb";
import { TimeService } from "@chronolog/sdk/gen/chronolog/v1/time_pb";
import { type CallRetention, openActions } from "./actions/index.js";
import { mayWorkUnder } from "./auth/cause-access.js";
import { localAdmin } from "./auth/principal.js";
import { ReadAccess } from "./auth/read-access.js";
import { Authenticator, principalsFingerprint } from "./auth/tokens.js";
import { openCollections } from "./collections/collections.js";
import { systemClock, systemTimers, type Clock, type TimerHost } from "./clock.js";
import type { OwnerConfig } from "./config.js";
import { LiveCauses } from "./log/causes.js";
import { Emitter } from "./log/emit.js";
import { Streams } from "./log/streams.js";
import { HeadSignal } from "./log/head.js";
import type { Logger } from "./logger.js";
import { consoleHttpHandler, consolePath, defaultConsoleDir } from "./console.js";
import { LogTail, readsWithTail } from "./log/tail.js";
import { metricsHttpHandler, OwnerMetrics, storeAsyncReadMetrics, storeWaitMetrics } from "./metrics.js";
import { loadManifests } from "./plugins/loader.js";
import { PluginRegistry } from "./plugins/registry.js";
import { actionService } from "./rpc/action-service.js";
import { registerHealth } from "./rpc/health.js";
import { collectionService } from "./rpc/collection-service.js";
import { authInterceptor, errorInterceptor } from "./rpc/interceptors.js";
import { traceInterceptor } from "./rpc/trace-interceptor.js";
import { tracing } from "./tracing/tracer.js";
import { streamReleaseInterceptor } from "./rpc/stream-release.js";
import { listen } from "./rpc/listen.js";
import { defaultPublishWindow } from "./log/publish.js";
import { logService } from "./rpc/log-service.js";
import { pluginService } from "./rpc/plugin-service.js";
import { registerReflection } from "./rpc/reflection.js";
import { ExecutorHub } from "./executors/hub.js";
import { Processors, shutdownGraceMs } from "./processors/manager.js";
import { adminService } from "./rpc/admin-service.js";
import { executorService } from "./rpc/executor-service.js";
import { timeService } from "./rpc/time-service.js";
import { awaitLeadership, defaultLeaseMs, type Leadership } from "./leadership.js";
import { serveStandby } from "./standby.js";
import { Committer } from "./store/committer.js";
import { cursorStatements, failedDeliveryReads, failureCountReads } from "./store/cursors.js";
import { openStore, removeCreatedFolder, type SyncMode } from "./store/sqlite/open.js";
import { walMetrics } from "./store/sqlite/wal-metrics.js";
import { shownUrl } from "./store/postgres/open.js";
import type { Store } from "./store/store.js";
import { causeReads } from "./store/cause-reads.js";
import { eventReads, eventStatements } from "./store/events.js";
import { streamReads, streamStatements } from "./store/streams.js";
import { openTime, Pulses, type LatenessHistogram, type TimerRetention } from "./time/index.js";
import { logRemovalStatements } from "./store/log-removal.js";
import { LogStats, logStatsMetrics } from "./log/log-stats.js";
import type { LogRetention } from "./log/retention.js";
import { openRetention } from "./retention.js";
import { Stages } from "./stages.js";

/** Options of {@link startOwner}. */
export interface OwnerOptions {
  /** Data folder (SQLite file and owner lock). */
  dataDir: string;
  host: string;
  /** TCP port; 0 picks a free one. */
  port: number;
  /** Default FULL. */
  synchronous?: SyncMode;
  /** Principals, CORS, TLS, limits; absent: local admin only, loopback only. */
  config?: OwnerConfig;
  /** Folder of plugin manifests registered at start. */
  pluginsDir?: string;
  logger: Logger;
  clock?: Clock;
  /** Where time arms its one timer; default setTimeout. Tests pass their ManualClock. */
  timers?: TimerHost;
  /** Executor heartbeat interval in ms (default 10,000). */
  heartbeatIntervalMs?: number;
  /** Grace for running deliveries and action invocations at shutdown in ms (default 5,000). */
  shutdownGraceMs?: number;
  /** Deepest chain a delay may continue (default 100); a deeper delay is refused and recorded as `timer.chain_exceeded`. */
  maxChainDepth?: number;
  /** This owner's region (default 0): it makes only the declared schedules of this region. */
  region?: number;
  /** Spent timers and ended occurrences older than this are deleted, hourly, ms (default: the config's `timers.retention_days`, else 7 days; 0 keeps them forever). */
  timerRetentionMs?: number;
  /** How far ahead of their moment time claims and starts its calls, ms (default: the config's `timers.lookahead_ms`, else 250). */
  timerLookaheadMs?: number;
  /** Most rows one chunk of the retention sweep deletes (default 5,000). */
  timerRetentionChunkRows?: number;
  /** Finished action calls older than this are deleted, hourly, ms (default: the config's `actions.call_retention_days`, else 7 days; 0 keeps them forever). */
  callRetentionMs?: number;
  /** Folder of the built console served under /console/ (default: dist/console, see console.ts). */
  consoleDir?: string;
  /** A PostgreSQL URL: the owner runs on that database instead of `dataDir`'s SQLite, as its leader or a standby. */
  store?: string;
  /** This owner's URL as clients reach it, told by standbys (default: http(s)://host:port as bound). */
  advertiseUrl?: string;
  /** Lease length on PostgreSQL, ms (default {@link defaultLeaseMs}). */
  leaseMs?: number;
  /** Aborted while this owner waits as a standby: the wait ends and startOwner rejects. */
  signal?: AbortSignal;
}

/** A running owner. */
export interface Owner {
  host: string;
  port: number;
  /** Lateness of the calls time made, in memory. */
  lateness: LatenessHistogram;
  /** The declared pulses being called; tests listen to `onPulse`. */
  pulses: Pulses;
  /** The hourly retention sweep of spent timers and ended occurrences; tests listen to `onSweep`. */
  timerRetention: TimerRetention;
  /** The hourly retention sweep of finished action calls; tests listen to `onSweep`. */
  callRetention: CallRetention;
  /** The log's retention (rules of the config and manifests); tests listen to `onPass`. */
  logRetention: LogRetention;
  /**
   * Resolves once every commit made before the call is durable and its callers have had their
   * answer: what follows a commit in memory (a clock re-armed for a retry, say) has happened. Tests
   * that read the store on a connection of their own, where a commit shows before it is durable,
   * wait for it before asserting that.
   */
  settled(): Promise<void>;
  /** Gives running deliveries and invocations their grace, stops serving, lets the last commit finish, closes the store. */
  close(): Promise<void>;
}

const loopback = new Set(["127.0.0.1", "::1", "localhost"]);
/** The services of the v1 API (a standby serves their reads and refuses the rest). */
const services: DescService[] = [LogService, ExecutorService, ActionService, CollectionService, TimeService, PluginService, AdminService];

function tlsOf(config: OwnerConfig | undefined): { cert: Buffer; key: Buffer } | undefined {
  return config?.tls && { cert: readFileSync(config.tls.cert), key: readFileSync(config.tls.key) };
}

/** `host` as a URL's host: a wildcard address as localhost, IPv6 in brackets. */
function urlHost(host: string): string {
  return host === "0.0.0.0" || host === "::" ? "localhost" : host.includes(":") ? `[${host}]` : host;
}
/** Default largest request message: 4 MiB. */
const defaultMaxMessageBytes = 4 * 1024 * 1024;

/**
 * Starts an owner: opens the data folder (refusing one held by another owner),
 * loads stored and folder plugins, and serves the v1 API on one port.
 * Throws on a bad folder, manifest or bind.
 */
export async function startOwner(options: OwnerOptions): Promise<Owner> {
  const { config, logger } = options;
  if (!config?.principals && !loopback.has(options.host)) {
    throw new Error(`refusing to bind ${options.host} without principals: every caller would be an admin. Pass --config with principals, or bind 127.0.0.1`);
  }
  if (!config?.principals && (config?.cors?.origins.length ?? 0) > 0) {
    throw new Error(
      "refusing cors.origins without principals: every caller is the local admin, so any web page those origins serve could act as it. Add principals, or leave cors out",
    );
  }
  // Manifests are read before the data folder is opened (or made): a missing --plugins folder or a bad file leaves nothing behind.
  const manifests = options.pluginsDir ? loadManifests(options.pluginsDir) : [];
  if (options.store !== undefined) return startOnPostgres(options, options.store, manifests);
  const store = openStore({
    dataDir: options.dataDir,
    synchronous: options.synchronous,
    onUpgrade: ({ from, to, files }) =>
      logger.info(
        { dataDir: options.dataDir, from, to, migrations: files },
        `upgrading the data folder's schema from ${from} to ${to} (a migration that rebuilds a table takes seconds per million rows)`,
      ),
    onCheckpointError: (err) => logger.warn({ err }, "a background WAL checkpoint failed; tried again after the next commit"),
    onLockRetaken: (message) => logger.warn({ dataDir: options.dataDir }, message),
    onLockLost: (err) => {
      // Another owner took the data folder (its owner.lock was deleted): two writers would break the log's dense seqs and fire timers twice. Stop at once.
      logger.fatal({ dataDir: options.dataDir }, err.message);
      process.exit(1);
    },
  });
  try {
    return await serve(options, store, manifests);
  } catch (e) {
    await store.close();
    removeCreatedFolder(store.createdDir); // a folder this failed start made (a port in use, say) is not left behind
    throw e;
  }
}

/**
 * Starts an owner on the PostgreSQL database at `url`: as its leader at once, or after waiting as
 * a standby until the leader's lease expires (leadership.ts). A leader that finds another owner
 * took the lease stops at once (it may not write again).
 */
async function startOnPostgres(options: OwnerOptions, url: string, manifests: PluginManifest[]): Promise<Owner> {
  const { logger } = options;
  const scheme = options.config?.tls ? "https" : "http";
  if (options.advertiseUrl !== undefined && (!URL.canParse(options.advertiseUrl) || !/^https?:$/.test(new URL(options.advertiseUrl).protocol))) {
    throw new Error(
      `--advertise-url must be an http:// or https:// URL clients reach this owner at, e.g. http://owner-1.example:50051 (got ${JSON.stringify(options.advertiseUrl)})`,
    );
  }
  if (options.advertiseUrl === undefined && (options.host === "0.0.0.0" || options.host === "::")) {
    logger.warn(
      { host: options.host },
      `no --advertise-url: standbys will tell clients this owner is at ${scheme}://localhost:${options.port}; give the URL other machines reach it at`,
    );
  }
  const leadership = await awaitLeadership({
    url,
    // The plugin folder is checked against the database's plugins before this owner waits as a
    // standby: one that cannot register must stop this start, not a takeover hours later.
    check: (db) => new PluginRegistry(db).check(manifests),
    instanceId: randomUUID().slice(0, 8),
    advertiseUrl: options.advertiseUrl ?? `${scheme}://${urlHost(options.host)}:${options.port}`,
    leaseMs: options.leaseMs ?? defaultLeaseMs,
    auth: principalsFingerprint(options.config?.principals),
    standby: async (waiting) => {
      const standby = await serveStandby({
        ...waiting,
        listen: {
          host: options.host,
          port: options.port,
          tls: tlsOf(options.config),
          corsOrigins: options.config?.cors?.origins,
          loopbackHostsOnly: !options.config?.principals,
          readMaxBytes: options.config?.limits?.max_message_bytes ?? defaultMaxMessageBytes,
        },
        services,
        authenticator: new Authenticator(options.config?.principals),
        consoleDir: options.consoleDir ?? defaultConsoleDir(),
        consoleSettings: options.config?.console,
        clock: options.clock ?? systemClock,
        logger,
      });
      const consoleUrl = `${scheme}://${urlHost(options.host)}:${standby.port}${consolePath}`;
      logger.info({ console: consoleUrl }, `console at ${consoleUrl} (a standby's: the read views, and a link to the leader's)`);
      return standby;
    },
    logger,
    signal: options.signal,
    onUpgrade: ({ from, to, files }) => logger.info({ from, to, migrations: files }, `upgrading the database's schema from ${from} to ${to}`),
  });
  const stepDown = (reason: string) => {
    logger.fatal({ term: leadership.term }, `stepping down: ${reason}; this owner stops writing and exits (restart it to serve as a standby)`);
    process.exit(1);
  };
  // Renewed from now on: a start slower than the lease must not lose it.
  leadership.keep(stepDown);
  const store = leadership.open(stepDown);
  try {
    return await serve(options, store, manifests, leadership, stepDown);
  } catch (e) {
    await leadership.release();
    throw e;
  }
}

async function serve(
  options: OwnerOptions,
  store: Store,
  manifests: PluginManifest[],
  leadership?: Leadership,
  stepDown?: (reason: string) => void,
): Promise<Owner> {
  const { config, logger } = options;
  const events = eventStatements(store.db);
  const committer = new Committer(store.db, options.clock ?? systemClock, events, {
    transactions: store.transactions,
    trust: leadership,
    onListenerError: (err) => logger.error({ err }, "a commit follower failed"),
    onFatal: (err) => {
      if (leadership && stepDown) return leadership.commitFailed(err, stepDown);
      // After a failed fsync the page cache cannot be trusted (PostgreSQL's "fsyncgate"), and a seq
      // taken by another writer means the in-memory head is wrong: stop at once, restart recovers from disk.
      logger.fatal({ err }, "the log's writer cannot go on (a failed WAL fsync, or another writer on this database); stopping the owner");
      process.exit(1);
    },
  });
  committer.onCommit(() => store.committed());
  const removal = logRemovalStatements(store.db);
  const logStats = new LogStats(removal, committer.head, (err) =>
    logger.warn(
      { err },
      "counting the log's events by type failed: the chronolog_log_* metrics and retention's count and size limits lack part of the log until a restart",
    ),
  );
  committer.onCommit((info) => logStats.appended(info.events));
  const head = new HeadSignal(committer.head);
  const tail = new LogTail();
  committer.onCommit((info) => tail.add(info.events)); // before the processors read it (and when it became durable: the delivery stages count from there)
  const stages = new Stages();
  committer.onCommit((info) => head.advance(info.head));
  const registry = new PluginRegistry(store.db, committer);
  for (const manifest of manifests) {
    const { plugin, changed } = await registry.register(manifest);
    logger.info({ plugin: manifest.name, revision: plugin.revision, changed }, "plugin loaded");
  }
  const liveCauses = new LiveCauses((principal, work) => mayWorkUnder(registry, principal, work));
  const readAccess = new ReadAccess(registry);
  const emitter = new Emitter(committer, registry, readAccess, events, liveCauses, stages.emit, new Streams(streamStatements(store.db)));
  const collections = openCollections(store.db, committer, registry, events, liveCauses);
  const clock = options.clock ?? systemClock;
  const cursors = cursorStatements(store.db);
  const logReads = eventReads(store.db, events);
  const processors = new Processors({
    events,
    tail,
    cursors,
    logReads,
    failedReads: failedDeliveryReads(store.db, cursors),
    committer,
    clock,
    logger,
    head: () => committer.head,
    pickSession: (name) => hub.pickFor(name),
    reserve: (name) => hub.reserveFor(name),
    release: (session) => hub.release(session),
    stages,
    readLog: store.db.readAsync && logReads.readWithin,
    causes: store.db.readAsync && liveCauses,
  });
  const timers = options.timers ?? systemTimers;
  const actions = openActions({ db: store.db, registry, committer, events, logReads, live: liveCauses, clock, timers, logger, sessions: () => hub.list() });
  const maxMessageBytes = config?.limits?.max_message_bytes ?? defaultMaxMessageBytes;
  const hubOptions = { heartbeatIntervalMs: options.heartbeatIntervalMs ?? 10_000, defaultCredits: 16, maxMessageBytes, trust: leadership };
  const hub = new ExecutorHub(registry, processors, clock, logger, hubOptions, actions, {
    checkHosting: (names, hosted) => pulses.checkHosting(names, hosted),
  });
  const time = openTime({
    maxChainDepth: options.maxChainDepth,
    db: store.db,
    registry,
    committer,
    events,
    logReads,
    live: liveCauses,
    actions,
    clock,
    timers,
    lookaheadMs: options.timerLookaheadMs ?? config?.timers?.lookahead_ms,
    region: options.region ?? config?.region ?? 0,
    stages: stages.timer,
    logger,
  });
  const pulses = new Pulses({ registry, sessions: () => hub.list(), actions, clock, timers, lateness: time.lateness, logger });
  registry.onChange(() => pulses.sync());
  committer.onCommit(() => processors.onCommit());
  registry.onChange(() => processors.sync(registry.list()));
  processors.sync(registry.list());
  const authenticator = new Authenticator(config?.principals);
  const metrics = new OwnerMetrics({
    committer,
    processors: () => processors.list(),
    executorsConnected: () => hub.list().length,
    timersPending: () => time.pendingCount(),
    lateness: time.lateness,
    timeCallsSentLate: () => actions.sentLate,
    stages,
    *rateWaits() {
      for (const p of processors.list())
        if (p.rate)
          yield { kind: "processor", name: p.spec.name, waitedMs: p.rate.rates.waitedMs, waits: p.rate.rates.waits, waiting: p.rate.waiting } as const;
      yield* actions.rateWaits();
    },
  });
  const retention = openRetention({
    db: store.db,
    events,
    committer,
    clock,
    timers,
    logger,
    config,
    timerRetentionMs: options.timerRetentionMs,
    callRetentionMs: options.callRetentionMs,
    chunkRows: options.timerRetentionChunkRows,
    removal,
    logStats,
    plugins: registry,
    processors,
    cursors,
    tail,
    wal: store.wal,
    returnPages: store.returnPages,
    metrics: metrics.registry,
  });
  logStatsMetrics(metrics.registry, logStats);
  if (leadership) leadership.registerMetrics(metrics.registry);
  if (store.waits) storeWaitMetrics(metrics.registry, store.waits);
  if (store.asyncReads) storeAsyncReadMetrics(metrics.registry, store.asyncReads);
  if (store.wal) walMetrics(metrics.registry, store.wal);
  const metricsHandler = metricsHttpHandler(metrics, authenticator, logger);
  const consoleHandler = consoleHttpHandler(options.consoleDir ?? defaultConsoleDir(), logger, config?.console);
  const listener = await listen({
    host: options.host,
    port: options.port,
    tls: tlsOf(config),
    corsOrigins: config?.cors?.origins,
    loopbackHostsOnly: !authenticator.required,
    readMaxBytes: maxMessageBytes,
    interceptors: [
      ...(tracing.on ? [traceInterceptor()] : []),
      errorInterceptor(logger),
      streamReleaseInterceptor(metrics.streams),
      authInterceptor(authenticator),
    ],
    // GET /metrics: open like every RPC without principals, an admin token with them.
    // GET /console/: the console's static files (the page then calls the RPCs with its token).
    extraHttpHandler: (req, res) => metricsHandler(req, res) || consoleHandler(req, res),
    routes(router) {
      // Requests in JSON (Connect, gRPC-Web) are strict, as manifests in files are: a misspelt field or enum
      // name is INVALID_ARGUMENT, not dropped (a misspelt `overdue` or overlap policy would quietly change a timer).
      const strict = { jsonOptions: { ignoreUnknownFields: false } };
      router.service(
        LogService,
        logService({
          emitter,
          events: readsWithTail(tail, logReads),
          causes: causeReads(store.db),
          head,
          access: readAccess,
          watchers: metrics.watchers,
          logStart: { firstSeq: async () => logStats.firstSeq, removed: (id) => removal.removed(id) },
          publishWindow: config?.limits?.publish_window ?? defaultPublishWindow,
          logger,
          streams: streamReads(store.db),
        }),
        strict,
      );
      router.service(PluginService, pluginService(registry), strict);
      // Executor streams are written uncompressed whatever the executor accepts: gzipping each full
      // DeliveryBatch (past listen.ts' 64 KiB) took 5-12% of the owner's CPU in a drain, and the
      // executor as much again to inflate it, for a loopback or LAN link.
      router.service(ExecutorService, executorService(hub, logger), { ...strict, compressMinBytes: Number.MAX_SAFE_INTEGER });
      router.service(ActionService, actionService(actions), strict);
      router.service(CollectionService, collectionService(collections), strict);
      router.service(TimeService, timeService(time.timers), strict);
      router.service(
        AdminService,
        adminService({
          processors,
          actions,
          hub,
          committer,
          db: store.db,
          cursors,
          reads: logReads,
          failed: failedDeliveryReads(store.db, cursors),
          failureCounts: failureCountReads(store.db),
          firstSeq: () => logStats.firstSeq,
        }),
        strict,
      );
      registerReflection(router, services);
      registerHealth(
        router,
        services.map((s) => s.typeName),
        leadership && (() => leadership.headers()),
      );
    },
  });
  await time.start();
  pulses.start();
  retention.start();
  logger.info(
    {
      host: options.host,
      port: listener.port,
      store: options.store ? shownUrl(options.store) : options.dataDir,
      term: leadership?.term,
      head: committer.head,
      tls: Boolean(config?.tls),
      auth: authenticator.required ? "tokens" : "none",
    },
    authenticator.required ? "owner serving" : `owner serving without principals: every caller is the local admin (${localAdmin.name}); loopback only`,
  );
  if (config?.principals?.length === 0)
    logger.warn("the config lists no principals (principals: []): no one can call this owner; leave principals out to run as the local admin");
  const consoleUrl = `${config?.tls ? "https" : "http"}://${urlHost(options.host)}:${listener.port}${consolePath}`;
  logger.info({ console: consoleUrl }, `console at ${consoleUrl}${authenticator.required ? " (sign in with a principal's token)" : ""}`);
  return {
    host: options.host,
    port: listener.port,
    lateness: time.lateness,
    pulses,
    timerRetention: retention.timerRetention,
    callRetention: retention.callRetention,
    logRetention: retention.logRetention,
    settled: () => committer.submit(() => undefined),
    async close() {
      time.stop();
      pulses.stop();
      await Promise.all([retention.stop(), logStats.stop()]);
      const graceMs = options.shutdownGraceMs ?? shutdownGraceMs;
      logger.info({ graceMs }, `owner stopping: running deliveries and action calls get up to ${graceMs} ms to finish`);
      // Deliveries and invocations share the grace; executors' streams stay open for their answers meanwhile.
      // Callers still waiting after it are answered UNAVAILABLE before the transport closes: its shutdown aborts
      // every request still open, which a caller would hear as CANCELLED.
      const deliveries = processors.stop(graceMs);
      await Promise.all([deliveries, actions.stop(graceMs, deliveries)]);
      hub.stop();
      await listener.close();
      await committer.stop();
      await store.close();
      await leadership?.release();
      logger.info("owner stopped");
    },
  };
}
