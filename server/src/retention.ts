import { Counter, Gauge, type Registry } from "prom-client";
import { CallRetention, defaultCallRetentionMs } from "./actions/index.js";
import type { Clock, TimerHost } from "./clock.js";
import type { OwnerConfig } from "./config.js";
import type { LogStats } from "./log/log-stats.js";
import { defaultRemovedIdsKept, defaultRetentionBatchEvents, defaultRetentionIntervalMs, LogRetention, type LogRetentionOptions } from "./log/retention.js";
import { configRetentionRules } from "./log/retention-rules.js";
import type { LogTail } from "./log/tail.js";
import type { Logger } from "./logger.js";
import type { PluginRegistry } from "./plugins/registry.js";
import type { Processors } from "./processors/manager.js";
import { RetentionArchive, retentionArchiveMetrics } from "./archive/retention-archive.js";
import type { Committer } from "./store/committer.js";
import type { CursorStatements } from "./store/cursors.js";
import { eventReads, type EventStatements } from "./store/events.js";
import type { LogRemovalStatements } from "./store/log-removal.js";
import type { Db } from "./store/sql.js";
import { retentionMetrics, retentionMsOfDays } from "./store/sweep.js";
import { defaultTimerRetentionMs, TimerRetention } from "./time/index.js";
import { ownerVersion } from "./version.js";

/** What the owner's retention needs from the owner. */
export interface RetentionDeps {
  db: Db;
  events: EventStatements;
  committer: Committer;
  clock: Clock;
  timers: TimerHost;
  logger: Logger;
  config: OwnerConfig | undefined;
  /** Spent timers and ended occurrences older than this are deleted, ms (default: the config's, else 7 days; 0 keeps them). */
  timerRetentionMs?: number;
  /** Finished action calls older than this are deleted, ms (default: the config's, else 7 days; 0 keeps them). */
  callRetentionMs?: number;
  /** Most rows one chunk of the timers' and calls' sweeps deletes. */
  chunkRows?: number;
  removal: LogRemovalStatements;
  /** The log's events and bytes by type: the count and size limits read them. */
  logStats: LogStats;
  /** The plugins: their retention rules, and the collections that hold events. */
  plugins: PluginRegistry;
  /** The processors: an event a processor has not finished is held. */
  processors: Pick<Processors, "list">;
  /** The failed deliveries: their events are held. */
  cursors: CursorStatements;
  /** The log's in-memory tail: it forgets the events removed. */
  tail: Pick<LogTail, "forgetThrough">;
  /** SQLite's WAL as its checkpoints saw it: removal waits while it is past its bound. */
  wal?: () => { pastBound: boolean };
  /** SQLite's: returns free pages to the disk off the owner's thread (Store.returnPages). */
  returnPages?: LogRetentionOptions["returnPages"];
  /** The owner's metrics: each retention's are registered there. */
  metrics: Registry;
}

/** What the owner keeps for a limited time, and the sweeps that delete the rest. */
export interface OwnerRetention {
  /** The hourly retention sweep of spent timers and ended occurrences. */
  timerRetention: TimerRetention;
  /** The hourly retention sweep of finished action calls. */
  callRetention: CallRetention;
  /** The log's retention (rules of the config and manifests), archiving what it removes when the config says so. */
  logRetention: LogRetention;
  /** Starts the sweeps and the log's retention passes. */
  start(): void;
  /** Stops them; resolves once the ones under way have ended. */
  stop(): Promise<void>;
}

/**
 * Wires the owner's retention: the sweeps of spent timers and finished action calls, and the
 * log's retention with its archive (config `log.retention`), with their metrics. The log's
 * retention follows the plugins' rules as they change.
 */
export function openRetention(deps: RetentionDeps): OwnerRetention {
  const { config, plugins, metrics } = deps;
  const timerRetention = new TimerRetention({
    db: deps.db,
    committer: deps.committer,
    clock: deps.clock,
    timers: deps.timers,
    logger: deps.logger,
    retentionMs: deps.timerRetentionMs ?? retentionMsOfDays(config?.timers?.retention_days, defaultTimerRetentionMs),
    chunkRows: deps.chunkRows,
  });
  const callRetention = new CallRetention({
    db: deps.db,
    committer: deps.committer,
    clock: deps.clock,
    timers: deps.timers,
    logger: deps.logger,
    retentionMs: deps.callRetentionMs ?? retentionMsOfDays(config?.actions?.call_retention_days, defaultCallRetentionMs),
    chunkRows: deps.chunkRows,
  });
  retentionMetrics(metrics, timerRetention, callRetention);
  const retentionConfig = config?.log?.retention;
  const archiveConfig = retentionConfig?.archive;
  const logArchive =
    archiveConfig &&
    new RetentionArchive({
      dir: archiveConfig.dir,
      fileEvents: archiveConfig.file_events ?? 100_000,
      fileBytes: archiveConfig.file_bytes ?? 64 * 1024 * 1024,
      reads: eventReads(deps.db, deps.events),
      removedIdAt: (seq) => deps.removal.removedAt(seq),
      head: () => deps.committer.head,
      logger: deps.logger,
      writtenBy: `chronolog ${ownerVersion}`,
    });
  const logRetention = new LogRetention({
    statements: deps.removal,
    stats: deps.logStats,
    committer: deps.committer,
    clock: deps.clock,
    timers: deps.timers,
    logger: deps.logger,
    configRules: configRetentionRules(retentionConfig),
    ownRules: (type) => plugins.retentionRules(type),
    pluginRules: () => plugins.list().some((p) => p.compiled.retention.length > 0),
    holds: {
      processors: () => deps.processors.list().map((p) => ({ name: p.spec.name, on: p.spec.on, floor: p.floor })),
      failed: () => deps.cursors.failed(),
      collections: () => plugins.eventCollections(),
    },
    onRemoved: (seq) => deps.tail.forgetThrough(seq),
    wal: deps.wal,
    returnPages: deps.returnPages,
    maxBytes: retentionConfig?.max_bytes ?? 0,
    warnBytes: retentionConfig?.warn_bytes ?? Math.floor((retentionConfig?.max_bytes ?? 0) * 0.8),
    intervalMs: retentionConfig?.interval_ms ?? defaultRetentionIntervalMs,
    batchEvents: retentionConfig?.batch_events ?? defaultRetentionBatchEvents,
    removedIdsKept: retentionConfig?.removed_ids_kept ?? defaultRemovedIdsKept,
    archive: logArchive,
  });
  if (logArchive) retentionArchiveMetrics(metrics, logArchive, () => logRetention.held.archive ?? 0);
  plugins.onChange(() => logRetention.sync());
  logRetentionMetrics(metrics, logRetention);
  return {
    timerRetention,
    callRetention,
    logRetention,
    start() {
      timerRetention.start();
      callRetention.start();
      logRetention.start();
    },
    async stop() {
      await Promise.all([timerRetention.stop(), callRetention.stop(), logRetention.stop()]);
    },
  };
}

/** Registers `chronolog_log_retention_held_events{holder}`: events the last pass wanted removed but kept, by what holds them. */
function logRetentionMetrics(registry: Registry, retention: LogRetention): void {
  new Gauge({
    name: "chronolog_log_retention_held_events",
    help: "Events a retention rule lets go that the last pass kept, by holder: processor:<name> (not finished), failed_delivery:<name>, timer, action_call, document, cause (a kept event names it), archive (not archived yet).",
    labelNames: ["holder"] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [holder, n] of Object.entries(retention.held)) this.set({ holder }, n);
    },
  });
  new Counter({
    name: "chronolog_log_partition_summaries_read_total",
    help: "Summaries of the events table's full partitions retention read from their events (one statement over the partition each; PostgreSQL). Each is read once and stored: a restarted owner reads none again.",
    registers: [registry],
    collect() {
      this.reset();
      this.inc(retention.summariesRead);
    },
  });
}
