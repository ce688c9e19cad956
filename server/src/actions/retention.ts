import { finishedCallsDeleter } from "../store/calls.js";
import type { Db } from "../store/sql.js";
import { RetentionSweep, type RetentionSweepOptions } from "../store/sweep.js";

/** Default retention of finished action calls: 7 days, in ms. */
export const defaultCallRetentionMs = 7 * 86_400_000;
/** Shortest retention of finished action calls (0 aside): one day, in ms (ActionCalls relies on it: records.ts, callFromLog). */
const minCallRetentionMs = 86_400_000;

/** What {@link CallRetention} needs. */
export interface CallRetentionOptions extends RetentionSweepOptions {
  db: Db;
}

/**
 * Retention of `action_calls`: one row per call id ever started, which answers a retried call
 * id (its output, or a run again after a failure) and refuses one reused with another action or
 * input. Without retention the table grows by a row per call for ever.
 *
 * A sweep deletes, hourly and in bounded chunks ({@link RetentionSweep}), the calls that completed
 * or failed and last changed longer than `retentionMs` ago (default 7 days, at least 1 day, or 0
 * for never); running calls never.
 * What a retried call id finds then:
 * - a recorded call (`record: true`, the default): its `action.*` events, which the log keeps for
 *   ever, answer it as its row did (ActionCalls, callFromLog): a completed call with its output
 *   from `action.completed`, a failed one runs again as its next attempt (`action.retried`), and
 *   another action or input (private fields aside: the log has the input without them) is
 *   ALREADY_EXISTS;
 * - a `record: false` call left nothing else: its id runs as a new call (attempt 1), as if
 *   never made. Callers that retry a call id must do so within the retention.
 */
export class CallRetention extends RetentionSweep<"calls"> {
  constructor(options: CallRetentionOptions) {
    if (options.retentionMs > 0 && options.retentionMs < minCallRetentionMs)
      throw new Error(`action call retention must be 0 (off) or at least ${minCallRetentionMs} ms (a day), got ${options.retentionMs}`);
    super(options, "action call retention", "finished action calls", [{ table: "action_calls", key: "calls", remove: finishedCallsDeleter(options.db) }]);
  }
}
