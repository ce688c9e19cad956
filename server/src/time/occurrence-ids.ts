import { sha256Hex } from "../sha256.js";

// The ids of occurrences: a scheduled one's, from its timer and due moment, and a triggered
// one's. Each is also the id of the occurrence's action call.

/**
 * The id of the occurrence of timer `timerId` due at `dueMs`: 32 hex characters, the due
 * moment (12, ms since the epoch) then 20 of SHA-256 over both. It is the occurrence's action
 * call id, so however often the owner calls it (restarts, retries), the log keeps it once.
 * Leading with the moment makes ids sort by due: the claims, made in due order, add to the end
 * of the occurrences' and calls' id indexes instead of to pages all over them (fewer pages
 * written per commit).
 */
export function occurrenceId(timerId: string, dueMs: number): string {
  const moment = Math.max(0, dueMs).toString(16).padStart(12, "0");
  return moment + sha256Hex(`timer-occurrence\n${timerId}\n${dueMs}`).slice(0, 20);
}

/**
 * The id of a triggered occurrence of timer `timerId` (TriggerTimer): 32 hex characters of
 * SHA-256 over the timer id and `key` (derived from the cause under one, else fresh), so it
 * never collides with a scheduled occurrence's.
 */
export function triggeredOccurrenceId(timerId: string, key: string): string {
  return sha256Hex(`timer-trigger\n${timerId}\n${key}`).slice(0, 32);
}
