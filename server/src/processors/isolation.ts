import type { ExecutorSession } from "../executors/session.js";
import type { Attempt, Try } from "./attempt.js";

/**
 * A processor's events tried alone: each was in flight with other work on a stream that died,
 * so any of them may have killed the executor. They go one at a time, each to a session
 * reserved for it (it takes no new work) once nothing else is in flight there, so a try that
 * kills its executor again is known to be the cause, and the others are not charged with it.
 * (Work the owner gave up on, past its timeout and grace, may still hold credits there: it
 * neither delays the try nor makes it "not alone".)
 */
export class Isolation {
  private readonly queue: Attempt[] = [];
  private reserved: ExecutorSession | null = null;
  private running: Try | null = null;

  constructor(
    private readonly processor: string,
    private readonly reserve: (processor: string) => ExecutorSession | undefined,
    private readonly release: (session: ExecutorSession) => void,
  ) {}

  /** Queues an event to be tried alone. */
  push(attempt: Attempt): void {
    this.queue.push(attempt);
  }

  /** Takes a queued event out (it finished meanwhile); a session reserved for nothing more is released. */
  remove(attempt: Attempt): void {
    const i = this.queue.indexOf(attempt);
    if (i >= 0) this.queue.splice(i, 1);
    if (this.queue.length === 0 && !this.running) this.end();
  }

  /** The next event to send alone and the session it goes to, when one is due and its session idle; the caller sends it and calls {@link started}. */
  next(): { attempt: Attempt; session: ExecutorSession } | undefined {
    if (this.running || this.queue.length === 0) return undefined;
    this.reserved ??= this.reserve(this.processor) ?? null;
    if (!this.reserved || this.reserved.live > 0) return undefined; // work given up on (past its grace) does not count
    return { attempt: this.queue.shift()!, session: this.reserved };
  }

  /** The try sent alone. */
  started(t: Try): void {
    this.running = t;
  }

  /** `t` ended or stopped being waited for: if it was the try run alone, its session takes work again. */
  ended(t: Try): void {
    if (this.running === t) this.end();
  }

  /** A session ended: it is no longer reserved. */
  sessionGone(session: ExecutorSession): void {
    if (this.reserved === session) this.reserved = null;
  }

  /** Forgets every queued event and ends the reservation. */
  clear(): void {
    this.queue.length = 0;
    this.end();
  }

  private end(): void {
    const session = this.reserved;
    this.running = null;
    this.reserved = null;
    if (session) this.release(session);
  }
}
