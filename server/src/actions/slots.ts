import { ChronologError } from "../errors.js";
import type { ActionConcurrency } from "./declaration.js";

interface SlotWaiter {
  key: string | null;
  priority: number;
  resolve(release: () => void): void;
  reject(error: unknown): void;
  timer: NodeJS.Timeout;
  signal: AbortSignal | undefined;
  onAbort(): void;
}

/** One action's calls in flight, in all and per key, and the calls waiting for room. */
interface ActionSlots {
  running: number;
  byKey: Map<string, number>;
  waiting: SlotWaiter[];
}

/**
 * Actions' concurrency limits (`concurrency: {limit, key, total}`): a call holds a slot of its
 * action, and of its key, from before its first attempt looks for an executor until its end, its
 * attempts on other executors after one was lost included. A call past a limit waits for a slot
 * (highest priority first, then first come, first served among the calls that fit) up to its
 * wait, then UNAVAILABLE. The slots live in the owner's memory; a restarted owner takes again
 * the slots of the calls the owner before it left running ({@link hold}, limits-restore.ts).
 */
export class CallSlots {
  private readonly actions = new Map<string, ActionSlots>();
  /** The timers ending the slots held for calls an owner before this one left running. */
  private readonly carried = new Set<NodeJS.Timeout>();
  private stopped = false;

  /**
   * Takes a slot for a call of `action` with `input`; resolves with its release (call once, at
   * the call's end). Rejects with UNAVAILABLE after `waitMs` without room, with `signal.reason`
   * when it aborts, and with UNAVAILABLE when the owner stops.
   */
  acquire(
    action: string,
    limits: ActionConcurrency,
    input: Record<string, unknown>,
    priority: number,
    waitMs: number,
    signal: AbortSignal | undefined,
  ): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.stopped) return Promise.reject(new ChronologError("unavailable", "the owner is stopping; call again when it is back"));
    let slots = this.actions.get(action);
    if (!slots) {
      slots = { running: 0, byKey: new Map(), waiting: [] };
      this.actions.set(action, slots);
    }
    const key = limits.keyOf({ input });
    if (slots.waiting.length === 0 && fits(slots, limits, key)) return Promise.resolve(this.take(action, slots, limits, key));
    if (waitMs <= 0) return Promise.reject(full(action, slots, limits, key, 0));
    const all = slots;
    return new Promise((resolve, reject) => {
      const waiter: SlotWaiter = {
        key,
        priority,
        resolve,
        reject,
        signal,
        timer: setTimeout(() => {
          this.remove(all, waiter);
          reject(full(action, all, limits, key, waitMs));
        }, waitMs),
        onAbort: () => {
          this.remove(all, waiter);
          reject(signal?.reason);
        },
      };
      signal?.addEventListener("abort", waiter.onAbort, { once: true });
      // Highest priority first; in the order they came within one priority.
      let i = all.waiting.length;
      while (i > 0 && all.waiting[i - 1].priority < priority) i--;
      all.waiting.splice(i, 0, waiter);
      this.grant(action, all, limits);
    });
  }

  /**
   * Holds a slot of `action` (and of `key`) for `forMs` without a call of this owner: a call an
   * owner before this one left running, which may still run on its executor. Calls over the
   * limit meanwhile wait as for any slot.
   */
  hold(action: string, limits: ActionConcurrency, key: string | null, forMs: number): void {
    let slots = this.actions.get(action);
    if (!slots) {
      slots = { running: 0, byKey: new Map(), waiting: [] };
      this.actions.set(action, slots);
    }
    const release = this.take(action, slots, limits, key);
    const timer = setTimeout(() => {
      this.carried.delete(timer);
      release();
    }, forMs);
    timer.unref();
    this.carried.add(timer);
  }

  /** Calls of `action` holding a slot now, and waiting for one. */
  held(action: string): { running: number; waiting: number } {
    const slots = this.actions.get(action);
    return { running: slots?.running ?? 0, waiting: slots?.waiting.length ?? 0 };
  }

  /** Rejects every waiting call with UNAVAILABLE and refuses new ones (owner shutdown). */
  stop(): void {
    this.stopped = true;
    for (const timer of this.carried) clearTimeout(timer);
    this.carried.clear();
    for (const slots of this.actions.values())
      for (const waiter of slots.waiting.splice(0)) {
        settle(waiter);
        waiter.reject(new ChronologError("unavailable", "the owner is stopping; call again when it is back"));
      }
  }

  private take(action: string, slots: ActionSlots, limits: ActionConcurrency, key: string | null): () => void {
    slots.running++;
    if (key !== null) slots.byKey.set(key, (slots.byKey.get(key) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      slots.running--;
      if (key !== null) {
        const n = (slots.byKey.get(key) ?? 1) - 1;
        if (n === 0) slots.byKey.delete(key);
        else slots.byKey.set(key, n);
      }
      this.grant(action, slots, limits);
      if (slots.running === 0 && slots.waiting.length === 0) this.actions.delete(action);
    };
  }

  /** Gives free slots to the waiting calls that fit, oldest first (a call of a full key does not hold back another key's). */
  private grant(action: string, slots: ActionSlots, limits: ActionConcurrency): void {
    for (let i = 0; i < slots.waiting.length && slots.running < limits.total; ) {
      const waiter = slots.waiting[i];
      if (!fits(slots, limits, waiter.key)) {
        i++;
        continue;
      }
      slots.waiting.splice(i, 1);
      settle(waiter);
      waiter.resolve(this.take(action, slots, limits, waiter.key));
    }
  }

  private remove(slots: ActionSlots, waiter: SlotWaiter): void {
    settle(waiter);
    const i = slots.waiting.indexOf(waiter);
    if (i >= 0) slots.waiting.splice(i, 1);
  }
}

function fits(slots: ActionSlots, limits: ActionConcurrency, key: string | null): boolean {
  return slots.running < limits.total && (key === null || (slots.byKey.get(key) ?? 0) < limits.limit);
}

function settle(waiter: SlotWaiter): void {
  clearTimeout(waiter.timer);
  waiter.signal?.removeEventListener("abort", waiter.onAbort);
}

/** Why a call found no slot: the action's total is taken, or its key's limit (or others wait before it). */
function full(action: string, slots: ActionSlots, limits: ActionConcurrency, key: string | null, waitedMs: number): ChronologError {
  const waited = waitedMs > 0 ? ` (waited ${waitedMs} ms)` : "";
  const ofKey = key === null ? 0 : (slots.byKey.get(key) ?? 0);
  const why =
    slots.running >= limits.total
      ? `has as many calls in flight as its total allows (${limits.total})`
      : key !== null && ofKey >= limits.limit
        ? `has as many calls of key ${JSON.stringify(key)} in flight as its limit per key allows (${limits.limit})`
        : `has calls waiting for a concurrency slot before this one`;
  return new ChronologError("unavailable", `action ${action} ${why}${waited}`, [], { action });
}
