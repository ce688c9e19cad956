import type { NativeClient } from "./native-client.js";
import { endNative } from "./pg-db.js";

/** The channel on which the leader's commits tell the log's head ({@link notifyHead}) and standbys listen. */
export const headChannel = "chronolog_head";

/**
 * Sent in each write transaction of the leader with its COMMIT (transactions.ts): PostgreSQL
 * delivers a notification once its transaction committed (so what it names is visible then),
 * never one of a transaction rolled back, and one per transaction; its payload is the log's head.
 */
export const notifyHead = `SELECT pg_notify('${headChannel}', (SELECT COALESCE(MAX(seq), 0) FROM events)::text)`;

/** The poll: the log's head, and the sum of the plugins' revisions (it grows with every registration). */
const pollSql = "SELECT (SELECT COALESCE(MAX(seq), 0) FROM events) AS head, (SELECT COALESCE(SUM(revision), 0) FROM plugins) AS plugins";

/** What a {@link HeadFollower} does. */
export interface HeadFollowerOptions {
  /** Makes its connection (again, after one broke). */
  connect(): NativeClient;
  /** How often it reads the head itself, ms: what a notification missed (none is sent while its connection is down) is found then. */
  pollMs: number;
  /** A poll not answered within this, ms, drops the connection (the next poll connects again). */
  timeoutMs: number;
  /** The log's head as committed (the same or a later one than told before, but for a database restored from a backup). */
  onHead(head: number): void;
  /** The plugins' revisions, summed, at each poll: a change means the leader registered a plugin. */
  onPlugins(revisions: number): void;
  /** Connecting or a poll failed (the next poll tries again); `undefined` once one succeeds again. */
  onTrouble(error: Error | undefined): void;
}

/**
 * A standby's view of the leader's commits: it LISTENs on {@link headChannel} on a connection
 * of its own, and polls the head every `pollMs` on it too, the correctness path when a
 * notification is missed (its connection broke and was made again, say). Nothing it runs
 * blocks the event loop but connecting.
 */
export class HeadFollower {
  private client: NativeClient | undefined;
  private timer: NodeJS.Timeout | undefined;
  private polling = false;
  private failing = false;
  private closed = false;

  constructor(private readonly options: HeadFollowerOptions) {}

  /** Listens and polls until {@link close}. */
  start(): void {
    this.poll();
    this.timer = setInterval(() => this.poll(), this.options.pollMs);
  }

  close(): void {
    this.closed = true;
    clearInterval(this.timer);
    this.drop();
  }

  private poll(): void {
    if (this.polling || this.closed) return;
    let client: NativeClient;
    try {
      client = this.client ??= this.listen();
    } catch (error) {
      return this.trouble(error as Error);
    }
    this.polling = true;
    const timeout = setTimeout(() => {
      this.polling = false;
      this.drop();
      this.trouble(new Error(`PostgreSQL did not answer a poll of the log's head within ${this.options.timeoutMs} ms`));
    }, this.options.timeoutMs);
    client.query(pollSql, (error, rows) => {
      clearTimeout(timeout);
      if (this.client !== client) return; // dropped meanwhile
      this.polling = false;
      if (this.closed) return;
      if (error) {
        this.drop();
        return this.trouble(error);
      }
      if (this.failing) this.options.onTrouble(undefined);
      this.failing = false;
      this.options.onHead(Number(rows[0].head));
      this.options.onPlugins(Number(rows[0].plugins));
    });
  }

  private listen(): NativeClient {
    const client = this.options.connect();
    try {
      client.querySync(`LISTEN ${headChannel}`);
    } catch (error) {
      endNative(client);
      throw error;
    }
    (client as unknown as NotifyingClient).on("notification", (message) => {
      const head = Number(message.extra);
      if (this.client === client && Number.isSafeInteger(head)) this.options.onHead(head);
    });
    return client;
  }

  private trouble(error: Error): void {
    this.failing = true;
    this.options.onTrouble(error);
  }

  private drop(): void {
    if (this.client) endNative(this.client);
    this.client = undefined;
  }
}

/** pg-native's client as it tells notifications (its reader starts with the first listener). */
interface NotifyingClient {
  on(event: "notification", listener: (message: { relname: string; extra: string }) => void): void;
}
