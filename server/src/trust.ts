/**
 * Whether this owner may act on what it holds now: send deliveries and invocations to executors
 * and answer the callers of its commits. A leader on PostgreSQL whose lease is older than it can
 * trust (frozen past its lease, and maybe replaced meanwhile) holds them until a renewal holds
 * again, or stops when another owner took the lease (leadership.ts); an owner on SQLite always may.
 */
export interface Trust {
  trusted(): boolean;
  /** Resolves once {@link trusted} (at once when it is). */
  whenTrusted(): Promise<void>;
}

/** The trust of an owner that holds no lease (SQLite's: its lock is held for as long as it runs). */
export const alwaysTrusted: Trust = { trusted: () => true, whenTrusted: () => Promise.resolve() };
