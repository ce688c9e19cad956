import type { SyncMode } from "../store/database.js";
import { loadConfig } from "../config.js";
import { createLogger } from "../logger.js";
import { startOwner } from "../owner.js";
import { retentionMsOfDays } from "../store/sweep.js";

/** Options of `chronolog serve`. */
export interface ServeFlags {
  data: string;
  host: string;
  port: number;
  config?: string;
  plugins?: string;
  synchronous: string;
  logLevel: string;
  /** overrides the config's `region`. */
  region?: number;
  /** Overrides the config's `timers.lookahead_ms`, ms. */
  timerLookaheadMs?: number;
  /** Overrides the config's `actions.call_retention_days`, days. */
  callRetentionDays?: number;
}

/** `chronolog serve`: runs an owner until SIGINT or SIGTERM, then shuts down cleanly. */
export async function serveCommand(flags: ServeFlags): Promise<void> {
  const logger = createLogger(flags.logLevel);
  const synchronous = flags.synchronous.toUpperCase();
  if (synchronous !== "FULL" && synchronous !== "NORMAL") throw new Error(`--synchronous must be FULL or NORMAL, got ${flags.synchronous}`);
  const owner = await startOwner({
    dataDir: flags.data,
    host: flags.host,
    port: flags.port,
    synchronous: synchronous as SyncMode,
    config: flags.config ? loadConfig(flags.config) : undefined,
    pluginsDir: flags.plugins,
    region: flags.region,
    timerLookaheadMs: flags.timerLookaheadMs,
    callRetentionMs: flags.callRetentionDays === undefined ? undefined : retentionMsOfDays(flags.callRetentionDays, 0),
    logger,
  });
  // The first SIGINT or SIGTERM stops the owner, with its grace; later ones while it stops are
  // logged, not obeyed (a second Ctrl-C used to end the process mid-grace, its callers CANCELLED).
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return logger.warn({ signal }, "owner already stopping: waiting for the grace to end (kill -9 to end it now)");
    stopping = true;
    owner.close().then(
      () => process.exit(0),
      (e) => {
        logger.error({ err: e }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
}
