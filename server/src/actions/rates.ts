import type { Clock } from "../clock.js";
import { ChronologError } from "../errors.js";
import { KeyRates } from "../flow/rate.js";
import type { RateWaits } from "../flow/rate-metrics.js";
import type { ActionEntry } from "./declaration.js";

/**
 * Actions' rates (`rate: {limit, period_ms, key, burst}`): a call books its key's next token
 * before it looks for an executor and waits for it, in the order the calls came. A wait longer
 * than the call's own (the caller's deadline or the action's timeout) is UNAVAILABLE at once, its
 * token given back; a caller that leaves gives its token back too. Nothing else is dropped.
 */
export class CallRates {
  private readonly byAction = new Map<string, { entry: ActionEntry; rates: KeyRates; waiting: { n: number } }>();

  constructor(private readonly clock: Clock) {}

  /** Every action's rate waits so far (for the metrics). */
  *waits(): Generator<RateWaits> {
    for (const [name, { rates, waiting }] of this.byAction) yield { kind: "action", name, waitedMs: rates.waitedMs, waits: rates.waits, waiting: waiting.n };
  }

  /** Waits for a token of the call's key; rejects as in the class comment, or with `signal.reason`. */
  async wait(entry: ActionEntry, input: Record<string, unknown>, waitMs: number, signal: AbortSignal | undefined): Promise<void> {
    const known = this.ratesOf(entry);
    if (!known) return;
    const { rates, waiting } = known;
    const key = rates.spec.keyOf({ input });
    const delayMs = rates.reserve(key);
    if (delayMs === 0) return;
    if (delayMs > waitMs) {
      rates.refund(key);
      const of = key === null ? "" : ` for key ${JSON.stringify(key)}`;
      throw new ChronologError(
        "unavailable",
        `action ${entry.name} is past its rate: its next start${of} is in ${delayMs} ms, longer than the call may wait (${Math.max(0, waitMs)} ms)`,
        [],
        {
          action: entry.name,
        },
      );
    }
    waiting.n++;
    await new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        clearTimeout(timer);
        waiting.n--;
        rates.refund(key);
        reject(signal?.reason);
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener("abort", onAbort);
        waiting.n--;
        rates.waited(delayMs);
        resolve();
      }, delayMs);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Counts a start of a call of `entry` with rate key `key` at `atMs`, before this owner started (limits-restore.ts; in order of time). */
  started(entry: ActionEntry, key: string | null, atMs: number): void {
    this.ratesOf(entry)?.rates.started(key, atMs);
  }

  private ratesOf(entry: ActionEntry): { rates: KeyRates; waiting: { n: number } } | undefined {
    if (!entry.rate) return undefined;
    const known = this.byAction.get(entry.name);
    if (known?.entry === entry) return known;
    const fresh = { entry, rates: new KeyRates(entry.rate, () => this.clock.now()), waiting: { n: 0 } }; // a new declaration: its rate anew
    this.byAction.set(entry.name, fresh);
    return fresh;
  }
}
