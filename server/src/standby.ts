import type { DescService } from "@bufbuild/protobuf";
import { Gauge, Registry } from "prom-client";
import { AdminService } from "@chronolog/sdk/gen/chronolog/v1/admin_pb";
import { CollectionService } from "@chronolog/sdk/gen/chronolog/v1/collection_pb";
import { LogService } from "@chronolog/sdk/gen/chronolog/v1/log_pb";
import { PluginService } from "@chronolog/sdk/gen/chronolog/v1/plugin_pb";
import { TimeService } from "@chronolog/sdk/gen/chronolog/v1/time_pb";
import type { Authenticator } from "./auth/tokens.js";
import type { Clock } from "./clock.js";
import { consoleHttpHandler, type ConsoleSettings } from "./console.js";
import { DocumentReader } from "./collections/reads.js";
import { DocumentStores } from "./collections/stores.js";
import { isConnectionLost } from "./errors.js";
import { HeadSignal } from "./log/head.js";
import type { Logger } from "./logger.js";
import { metricsHttpHandler, storeAsyncReadMetrics, storeWaitMetrics, withProcessMetrics } from "./metrics.js";
import { PluginRegistry } from "./plugins/registry.js";
import { storedStatuses } from "./processors/status.js";
import { adminReads } from "./rpc/admin-service.js";
import { collectionReads } from "./rpc/collection-service.js";
import { authInterceptor, errorInterceptor } from "./rpc/interceptors.js";
import { listen, type ListenOptions } from "./rpc/listen.js";
import { logReads } from "./rpc/log-service.js";
import { logRemovalStatements } from "./store/log-removal.js";
import { firstSeqAtMostEvery } from "./log/read.js";
import { ReadAccess } from "./auth/read-access.js";
import { mayWorkUnder } from "./auth/cause-access.js";
import { LiveCauses } from "./log/causes.js";
import { pluginReads } from "./rpc/plugin-service.js";
import { standbyInterceptor, standbyRefusal, standbyRoutes, type Handler, type StandbyServing } from "./rpc/standby.js";
import { streamReleaseInterceptor } from "./rpc/stream-release.js";
import { timeReads } from "./rpc/time-service.js";
import { cursorStatements, failedDeliveryReads, storedCursorReads } from "./store/cursors.js";
import { causeReads } from "./store/cause-reads.js";
import { eventReads, eventStatements, type EventStatements } from "./store/events.js";
import { streamReads } from "./store/streams.js";
import type { PostgresDatabase, ReadStore } from "./store/postgres/open.js";
import { timerRowReads, timerStatements } from "./store/timers.js";
import { TimerReads } from "./time/index.js";

/** Options of {@link serveStandby}. */
export interface StandbyOptions {
  database: PostgresDatabase;
  /** The leader's URL as the lease names it (refusals send clients there). */
  leaderUrl(): string | undefined;
  /** The lease's term as this standby last read it (`chronolog_lease_term`). */
  term(): number;
  /** The owner's port, TLS, CORS and largest request. */
  listen: Pick<ListenOptions, "host" | "port" | "tls" | "corsOrigins" | "loopbackHostsOnly" | "readMaxBytes">;
  services: DescService[];
  /** Principals of the reads (as the leader's), and who may read /metrics. */
  authenticator: Authenticator;
  /** The built console (dist/console/), served under /console/ as the leader serves it, with the config's settings for it. */
  consoleDir: string;
  consoleSettings?: ConsoleSettings;
  clock: Clock;
  logger: Logger;
}

/** A standby serving reads (until {@link close}). */
export interface Standby {
  port: number;
  /** Ends its streams (clients open them again at the new leader), stops serving and closes its connections. */
  close(): Promise<void>;
}

/** How often a standby reads the log's head itself (what its notifications missed), ms. */
const headPollMs = 250;

/**
 * Serves reads as a standby on the owner's port: ReadLog, GetEvent and Watch, GetDocument and
 * FindDocuments (of durable collections: the others live in the leader's memory), ListTimers
 * and GetTimer, ListProcessors and ListFailedDeliveries (the store's view of the processors),
 * ListPlugins and GetPlugin, health, /metrics and the console, with the leader's read code on a read-only
 * connection of its own, and the same principals. Every other call (writes, executors, and
 * ListExecutors: who is connected is known to the leader only) is refused UNAVAILABLE naming the
 * leader. Reads see what is committed; Watch follows the log's head as the leader's commits tell
 * it (LISTEN/NOTIFY, with a poll every {@link headPollMs} for a notification missed), never past it.
 */
export async function serveStandby(options: StandbyOptions): Promise<Standby> {
  const { logger } = options;
  const registry = new Registry();
  const watchers = new Gauge({ name: "chronolog_watchers", help: "Watch streams open now.", registers: [registry] });
  const streams = new Gauge({
    name: "chronolog_streams_open",
    help: "Server streams open now, by method, until the owner released them.",
    labelNames: ["method"],
    registers: [registry],
  });
  const head = new HeadSignal(0);
  let view = new StandbyView(options, head, watchers, () => (view.lost = true));
  head.advance(view.events.head());
  let revisions: number | undefined;
  let reopenFailed = false;
  /** The view's connection broke: a new one, once the follower reaches PostgreSQL again. */
  const reopen = () => {
    try {
      const next = new StandbyView(options, head, watchers, () => (next.lost = true));
      view.close();
      view = next;
      reopenFailed = false;
      logger.info("standby: reading from PostgreSQL again");
    } catch (err) {
      if (!reopenFailed) logger.warn({ err }, "standby: connecting to read failed; its reads go to the leader meanwhile, and it tries again");
      reopenFailed = true;
    }
  };
  const follower = options.database.followHead({
    pollMs: headPollMs,
    timeoutMs: 10_000,
    onHead(seq) {
      if (view.lost) reopen();
      if (seq > head.head) head.advance(seq);
    },
    onPlugins(sum) {
      if (revisions !== undefined && sum !== revisions && !view.lost) {
        try {
          view.plugins.load(); // the leader registered a plugin
        } catch (err) {
          logger.warn({ err }, "standby: reading the plugins failed; trying again at the next poll");
          return;
        }
      }
      revisions = sum;
    },
    onTrouble(err) {
      if (err) logger.warn({ err }, "standby: the log's head cannot be read (PostgreSQL unreachable?); trying again");
      else logger.info("standby: the log's head can be read again");
    },
  });
  const serving: StandbyServing = {
    services: options.services,
    reads() {
      if (view.lost) throw standbyRefusal(options.leaderUrl());
      return view.handlers;
    },
    leaderUrl: options.leaderUrl,
    unreadable: (e) => isConnectionLost(e),
  };
  new Gauge({ name: "chronolog_leader", help: "1 while this owner leads (holds the lease of a PostgreSQL store).", registers: [registry] }).set(0);
  new Gauge({
    name: "chronolog_lease_term",
    help: "The lease's term: the one this owner holds, or, on a standby, the leader's.",
    registers: [registry],
    collect() {
      this.set(options.term());
    },
  });
  new Gauge({
    name: "chronolog_log_head_seq",
    help: "The seq of the last committed event.",
    registers: [registry],
    collect() {
      this.set(head.head);
    },
  });
  storeWaitMetrics(registry, () => view.reads.waits());
  storeAsyncReadMetrics(registry, () => view.reads.asyncReads());
  const metricsHandler = metricsHttpHandler(withProcessMetrics(registry), options.authenticator, logger);
  // The console's pages ask the owner its role (health's headers): a standby's say so and show the read views.
  const consoleHandler = consoleHttpHandler(options.consoleDir, logger, options.consoleSettings);
  const listener = await listen({
    ...options.listen,
    // A call the standby does not serve is refused before the principal's check, as it always was.
    interceptors: [errorInterceptor(logger), streamReleaseInterceptor(streams), standbyInterceptor(serving), authInterceptor(options.authenticator)],
    routes: standbyRoutes(serving),
    extraHttpHandler: (req, res) => metricsHandler(req, res) || consoleHandler(req, res),
  }).catch((e: unknown) => {
    view.close();
    throw e;
  });
  follower.start();
  return {
    port: listener.port,
    async close() {
      follower.close();
      await listener.close();
      view.close();
    },
  };
}

/**
 * What a standby reads through: a read-only connection and the store's statements on it, the
 * plugins as stored (read again when the leader registers one), and the read handlers over them.
 */
class StandbyView {
  readonly reads: ReadStore;
  readonly events: EventStatements;
  readonly plugins: PluginRegistry;
  readonly handlers: Record<string, Record<string, Handler>>;
  /** Its connection broke: calls go to the leader until a new view reads. */
  lost = false;

  /** `head`: the log's head as the leader's commits told it (one for every view). */
  constructor(options: StandbyOptions, head: HeadSignal, watchers: Gauge, onLost: () => void) {
    this.reads = options.database.openReads(onLost);
    try {
      const db = this.reads.db;
      this.events = eventStatements(db);
      const cursors = cursorStatements(db);
      const storedCursors = storedCursorReads(db);
      this.plugins = new PluginRegistry(db);
      const plugins = this.plugins;
      const removal = logRemovalStatements(db);
      const reads = eventReads(db, this.events);
      const log = logReads({
        events: reads,
        causes: causeReads(db),
        head,
        watchers,
        access: new ReadAccess(plugins),
        streams: streamReads(db),
        logStart: { firstSeq: firstSeqAtMostEvery(() => removal.firstSeq(), 1_000), removed: (id) => removal.removed(id) },
      });
      // Reads under a cause are checked against it as at the leader (a standby delivers nothing: every cause is read from the log).
      const causes = new LiveCauses((principal, work) => mayWorkUnder(plugins, principal, work));
      const documents = collectionReads(new DocumentReader(plugins, new DocumentStores(db), this.events, causes));
      // A collection kept in memory (`durable: false`) lives in the leader's process only.
      const durable = (req: { collection: string }) => {
        if (plugins.collection(req.collection)?.durable === false) throw standbyRefusal(options.leaderUrl());
      };
      this.handlers = {
        [LogService.typeName]: log,
        [CollectionService.typeName]: {
          getDocument: (req, ctx) => (durable(req), documents.getDocument(req, ctx)),
          findDocuments: (req, ctx) => (durable(req), documents.findDocuments(req, ctx)),
        },
        [TimeService.typeName]: timeReads(new TimerReads({ reads: timerRowReads(db, timerStatements(db)), clock: options.clock, registry: plugins })),
        [AdminService.typeName]: adminReads({
          statuses: async () => {
            const stored = await storedCursors();
            return storedStatuses(plugins.list(), stored, head.head);
          },
          failed: failedDeliveryReads(db, cursors),
          reads,
        }),
        [PluginService.typeName]: pluginReads(plugins),
      };
    } catch (e) {
      this.reads.close();
      throw e;
    }
  }

  close(): void {
    this.reads.close();
  }
}
