import { ChronologError } from "../errors.js";
import type { ExecutorSession } from "../executors/session.js";

interface HostWaiter {
  action: string;
  /** Only sessions it accepts may take it (absent: any host of the action). */
  eligible?: (session: ExecutorSession) => boolean;
  workId: string;
  waitMs: number;
  resolve(session: ExecutorSession): void;
  reject(error: unknown): void;
  timer: NodeJS.Timeout;
  signal: AbortSignal | undefined;
  onAbort(): void;
}

/**
 * Finding an executor for an invocation. `acquire` takes a
 * credit of the session hosting the action with the most free credits, at
 * once or, when none has one, as soon as one does (FIFO per action), up to a
 * wait; then UNAVAILABLE. The credit is taken synchronously when granted
 * (`session.inFlight.add(workId)`), so two invocations never share one.
 * `offer` must be called whenever a session opens or frees credits.
 */
export class HostQueue {
  private readonly waiting = new Map<string, HostWaiter[]>();
  private stopped = false;

  constructor(private readonly sessions: () => Iterable<ExecutorSession>) {}

  /**
   * Resolves with a session hosting `action` whose credit is now held by
   * `workId`. Rejects with UNAVAILABLE ("no executor hosts <action>", or
   * that every host is busy) after `waitMs` ms (at once when `waitMs` <= 0),
   * with `signal.reason` when `signal` aborts (none: the work is never abandoned, as for the
   * owner's own calls), and with UNAVAILABLE when the
   * owner stops. `eligible`, when given, narrows the hosts to the sessions
   * it accepts (a pulse's hosts, or one replica's session).
   */
  acquire(
    action: string,
    workId: string,
    waitMs: number,
    signal: AbortSignal | undefined,
    eligible?: (session: ExecutorSession) => boolean,
  ): Promise<ExecutorSession> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.stopped) return Promise.reject(stoppingError());
    const now = this.pick(action, eligible);
    if (now) {
      now.inFlight.add(workId);
      return Promise.resolve(now);
    }
    if (waitMs <= 0) return Promise.reject(this.noHost(action, 0));
    return new Promise((resolve, reject) => {
      const waiter: HostWaiter = {
        action,
        eligible,
        workId,
        waitMs,
        resolve,
        reject,
        signal,
        timer: setTimeout(() => {
          this.remove(waiter);
          reject(this.noHost(action, waitMs));
        }, waitMs),
        onAbort: () => {
          this.remove(waiter);
          reject(signal?.reason);
        },
      };
      signal?.addEventListener("abort", waiter.onAbort, { once: true });
      const queue = this.waiting.get(action);
      if (queue) queue.push(waiter);
      else this.waiting.set(action, [waiter]);
    });
  }

  /** Hands `session`'s free credits to the invocations waiting for the actions it hosts. */
  offer(session: ExecutorSession): void {
    for (const action of session.actions) {
      const queue = this.waiting.get(action);
      for (let i = 0; queue && i < queue.length && session.free > 0; ) {
        const waiter = queue[i];
        if (waiter.eligible && !waiter.eligible(session)) {
          i++;
          continue;
        }
        queue.splice(i, 1);
        this.settle(waiter);
        session.inFlight.add(waiter.workId);
        waiter.resolve(session);
      }
      if (queue?.length === 0) this.waiting.delete(action);
    }
  }

  /** Rejects every waiter with UNAVAILABLE and refuses new ones (owner shutdown). */
  stop(): void {
    this.stopped = true;
    for (const queue of this.waiting.values()) {
      for (const waiter of queue) {
        this.settle(waiter);
        waiter.reject(stoppingError());
      }
    }
    this.waiting.clear();
  }

  /** The session hosting `action` (and accepted by `eligible`) with the most free credits, or undefined. */
  private pick(action: string, eligible?: (session: ExecutorSession) => boolean): ExecutorSession | undefined {
    let best: ExecutorSession | undefined;
    for (const s of this.sessions()) if (s.actions.has(action) && s.free > 0 && (!best || s.free > best.free) && (!eligible || eligible(s))) best = s;
    return best;
  }

  private noHost(action: string, waitedMs: number): ChronologError {
    const hosted = [...this.sessions()].some((s) => s.actions.has(action) && !s.closed);
    const waited = waitedMs > 0 ? ` (waited ${waitedMs} ms)` : "";
    return new ChronologError(
      "unavailable",
      hosted ? `every executor hosting ${action} is busy: no free credit${waited}` : `no executor hosts ${action}${waited}`,
      [],
      { action },
    );
  }

  private remove(waiter: HostWaiter): void {
    this.settle(waiter);
    const queue = this.waiting.get(waiter.action);
    const i = queue?.indexOf(waiter) ?? -1;
    if (queue && i >= 0) queue.splice(i, 1);
    if (queue?.length === 0) this.waiting.delete(waiter.action);
  }

  private settle(waiter: HostWaiter): void {
    clearTimeout(waiter.timer);
    waiter.signal?.removeEventListener("abort", waiter.onAbort);
  }
}

function stoppingError(): ChronologError {
  return new ChronologError("unavailable", "the owner is stopping; call again when it is back");
}
