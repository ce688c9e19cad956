// The libpq client as the PostgreSQL store uses it (pg-native's, loaded and connected by
// pg-db.ts), and the tally of the round trips its synchronous calls make the owner's thread wait for.

/** pg-native's client (libpq): synchronous calls block until the server answers; `query` does not. */
export interface NativeClient {
  connectSync(params: string): void;
  querySync(text: string, values?: unknown[]): Record<string, unknown>[];
  prepareSync(name: string, text: string, nParams: number): void;
  executeSync(name: string, values: unknown[]): Record<string, unknown>[] | unknown[][];
  query(text: string, callback: (error: Error | undefined, rows: Record<string, unknown>[]) => void): void;
  query(text: string, values: unknown[], callback: (error: Error | undefined, rows: Record<string, unknown>[]) => void): void;
  end(callback?: () => void): void;
  getTransactionStatus(): "I" | "T" | "E" | null;
  pq: { cmdTuples(): string; resultErrorFields(): Record<string, string> | undefined; errorMessage(): string; socket(): number };
  on(event: "error", listener: (error: Error) => void): void;
}

/** How often, and how long in all, the owner's thread waited for one connection's synchronous calls. */
export interface Waits {
  count: number;
  ms: number;
}
