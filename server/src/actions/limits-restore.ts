import type { LimitedCall } from "../store/calls.js";
import type { ActionEntry } from "./declaration.js";
import type { CallRates } from "./rates.js";
import type { CallSlots } from "./slots.js";

/**
 * The keys a call of `entry` with `input` counts against, as its `action_calls` row keeps them
 * (JSON [concurrency key, rate key], each null for the shared key); undefined for an action with
 * neither a concurrency limit nor a rate (its row keeps none).
 */
export function limitKeysOf(entry: ActionEntry, input: Record<string, unknown>): string | undefined {
  if (!entry.concurrency && !entry.rate) return undefined;
  return JSON.stringify([entry.concurrency?.keyOf({ input }) ?? null, entry.rate?.keyOf({ input }) ?? null]);
}

/** How long a call left running by an owner before may still run on its executor: its timeout and grace from its attempt's start (ms). */
function runBoundMs(entry: ActionEntry): number {
  return entry.timeoutMs + entry.timeoutGraceMs;
}

/** How far back a rate's starts still matter: the time its bucket takes to fill from one below empty (ms). */
function refillMs(entry: ActionEntry): number {
  const rate = entry.rate;
  return rate ? Math.ceil(((rate.burst + 1) * rate.periodMs) / rate.limit) : 0;
}

/**
 * Restores the actions' limits at an owner's start from the calls the store has (no write is
 * made for it: a limited call's row keeps its keys, migration 0020):
 *
 * - **slots**: a call an owner before this one left `running` may still run on its executor (the
 *   executor outlives the owner, and nobody can tell it ended): it holds its slot, of its key and
 *   of the action's total, until its action's timeout and grace from its attempt's start have
 *   passed. A call of the same id run again here waits for that slot like any other call.
 * - **rates**: the starts of the action's calls within the time its bucket takes to refill are
 *   taken from its buckets again, in order (an ended call counts at its end, as late as it may
 *   have started: a bucket restored so is never fuller than it was).
 *
 * `read(sinceMs)` lists the limited calls changed since then, oldest first. Returns what it restored.
 */
export function restoreLimits(
  actions: Iterable<ActionEntry>,
  read: (sinceMs: number) => LimitedCall[],
  slots: CallSlots,
  rates: CallRates,
  nowMs: number,
): { slots: number; starts: number } {
  const byName = new Map<string, ActionEntry>();
  let backMs = 0;
  for (const entry of actions) {
    if (!entry.concurrency && !entry.rate) continue;
    byName.set(entry.name, entry);
    backMs = Math.max(backMs, entry.concurrency ? runBoundMs(entry) : 0, refillMs(entry));
  }
  const restored = { slots: 0, starts: 0 };
  if (byName.size === 0) return restored;
  for (const call of read(nowMs - backMs)) {
    const entry = byName.get(call.action);
    if (!entry) continue;
    const [slotKey, rateKey] = JSON.parse(call.limitKeys) as [string | null, string | null];
    const heldUntil = call.updatedAt + runBoundMs(entry);
    if (entry.concurrency && call.state === "running" && heldUntil > nowMs) {
      slots.hold(entry.name, entry.concurrency, slotKey, heldUntil - nowMs);
      restored.slots++;
    }
    if (entry.rate && call.updatedAt >= nowMs - refillMs(entry)) {
      rates.started(entry, rateKey, call.updatedAt);
      restored.starts++;
    }
  }
  return restored;
}
