import type { RateLimit } from "@chronolog/sdk/gen/chronolog/v1/plugin_pb";
import type { FieldViolation } from "../errors.js";
import { keyPath } from "../log/key-path.js";

/** A declared rate, compiled. */
export interface RateSpec {
  /** Starts per period. */
  limit: number;
  periodMs: number;
  /** Tokens a bucket holds at most. */
  burst: number;
  /** The key of a piece of work (an event, or `{input}` of a call); null: the shared key. */
  keyOf: (from: object) => string | null;
}

/** The most starts per period, and the longest period (ms), a rate may declare. */
const maxLimit = 1_000_000;
const maxPeriodMs = 86_400_000;

/** Compiles a declaration's `rate` (undefined when absent). */
export function compileRate(rate: RateLimit | undefined): RateSpec | undefined {
  if (!rate) return undefined;
  return { limit: rate.limit, periodMs: rate.periodMs || 1_000, burst: rate.burst || rate.limit, keyOf: keyPath(rate.key) };
}

/** Problems of a `rate` at `at` (e.g. `processors.sync.rate`); `action`: its key is a path into the call. */
export function rateProblems(at: string, rate: RateLimit | undefined, action: boolean): FieldViolation[] {
  if (!rate) return [];
  const problems: FieldViolation[] = [];
  if (rate.limit < 1 || rate.limit > maxLimit) problems.push({ field: `${at}.limit`, description: `limit must be 1 to ${maxLimit}` });
  if (rate.periodMs > maxPeriodMs) problems.push({ field: `${at}.period_ms`, description: `period_ms must be at most ${maxPeriodMs} (a day)` });
  if (rate.burst > maxLimit) problems.push({ field: `${at}.burst`, description: `burst must be at most ${maxLimit}` });
  if (action && rate.key !== "" && !/^input(\.|$)/.test(rate.key))
    problems.push({
      field: `${at}.key`,
      description: `an action's key is a path into its call starting with input, e.g. input.customer_id, not ${JSON.stringify(rate.key)}`,
    });
  return problems;
}

/** `ms` up to a whole ms, but not for a float's rounding error (1.0000000000000009 is 1). */
function wholeMs(ms: number): number {
  return Math.ceil(ms - 1e-9);
}

interface Bucket {
  tokens: number;
  /** When `tokens` was last brought up to date (the clock's ms). */
  at: number;
}

/** Buckets kept before full ones (as if never used) are forgotten. */
const sweepAt = 10_000;

/**
 * Token buckets per key: `limit` tokens per `periodMs`, at most `burst` held. {@link take} starts
 * work only when a token is there (a processor passes a key over until then); {@link reserve}
 * books the next token, however far ahead, and says how long to wait for it (an action's calls
 * wait in the order they came). Times on `now` (ms), so a test may drive it with a fake clock.
 */
export class KeyRates {
  private readonly buckets = new Map<string, Bucket>();
  /** When every key's bucket was taken to be empty ({@link emptiedAt}); undefined: a key's first bucket is full. */
  private emptied: number | undefined;
  /** Work that waited for a token so far, ms in all, and how many pieces. */
  waitedMs = 0;
  waits = 0;

  constructor(
    readonly spec: RateSpec,
    private readonly now: () => number,
  ) {}

  /** Takes a token of `key` if one is there: 0; else the ms until one is (nothing taken). */
  take(key: string | null): number {
    const bucket = this.bucket(key ?? "");
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.max(1, wholeMs(((1 - bucket.tokens) * this.spec.periodMs) / this.spec.limit));
  }

  /** Books `key`'s next token: the ms to wait for it (0: at once). {@link refund} gives it back. */
  reserve(key: string | null): number {
    const bucket = this.bucket(key ?? "");
    bucket.tokens -= 1;
    return bucket.tokens >= 0 ? 0 : wholeMs((-bucket.tokens * this.spec.periodMs) / this.spec.limit);
  }

  /** Gives back a token booked and not used (the work was abandoned while it waited). */
  refund(key: string | null): void {
    const bucket = this.buckets.get(key ?? "");
    if (bucket) bucket.tokens = Math.min(this.spec.burst, bucket.tokens + 1);
  }

  /**
   * Takes a token of `key` at `atMs`, a past start (an owner restoring its buckets from the starts
   * its store recorded, in order of time): the bucket as that start left it.
   */
  started(key: string | null, atMs: number): void {
    const k = key ?? "";
    let bucket = this.buckets.get(k);
    if (!bucket) {
      bucket = { tokens: this.spec.burst, at: atMs };
      this.buckets.set(k, bucket);
    } else if (atMs > bucket.at) {
      bucket.tokens = Math.min(this.spec.burst, bucket.tokens + ((atMs - bucket.at) * this.spec.limit) / this.spec.periodMs);
      bucket.at = atMs;
    }
    bucket.tokens -= 1;
  }

  /**
   * Takes every key's bucket to have been empty at `atMs` (a restarted owner's processor, whose
   * starts before the restart are not known): each fills from then, so the rate holds across the
   * restart, at the cost of the first start of a key waiting for its first token.
   */
  emptiedAt(atMs: number): void {
    this.emptied = atMs;
    this.buckets.clear();
  }

  /** Counts a wait for a token that ended (for the metrics). */
  waited(ms: number): void {
    this.waitedMs += ms;
    this.waits++;
  }

  private bucket(key: string): Bucket {
    const now = this.now();
    let bucket = this.buckets.get(key);
    if (!bucket) {
      if (this.buckets.size >= sweepAt) this.sweep(now);
      const tokens = this.emptied === undefined ? this.spec.burst : Math.min(this.spec.burst, ((now - this.emptied) * this.spec.limit) / this.spec.periodMs);
      bucket = { tokens: Math.max(0, tokens), at: now };
      this.buckets.set(key, bucket);
      return bucket;
    }
    const elapsed = now - bucket.at;
    if (elapsed > 0) {
      bucket.tokens = Math.min(this.spec.burst, bucket.tokens + (elapsed * this.spec.limit) / this.spec.periodMs);
      bucket.at = now;
    }
    return bucket;
  }

  /** Forgets the buckets that have filled up again: a new one starts full, the same. */
  private sweep(now: number): void {
    for (const [key, bucket] of this.buckets)
      if (bucket.tokens + ((now - bucket.at) * this.spec.limit) / this.spec.periodMs >= this.spec.burst) this.buckets.delete(key);
  }
}
