import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

/**
 * The renewer's worker (CommonJS, run with `eval`): node-postgres on a connection of its own
 * (libpq's addon loads in one thread of a process only, and the owner's is the main one). It
 * renews every third of the lease, one renewal at a time, and writes in shared memory when the
 * last renewal that held was sent: a renewal extends the lease from the database's clock when
 * the UPDATE runs, which is after it was sent, so the lease holds at least `leaseMs` from then.
 * Its watchdog ends the process once the lease is lost (too old, or taken) while the owner's
 * thread, which steps down itself when it can, has not answered for a second or a third of the
 * lease: stuck in a call to a database that does not answer, it never would.
 */
const workerSource = `
const { parentPort, workerData } = require("node:worker_threads");
const { Client } = require(workerData.driver);
const { url, applicationName, leaseMs, term } = workerData;
const shared = new BigInt64Array(workerData.shared);
let client;
let timer;
let stopped = false;
function drop() {
  const c = client;
  client = undefined;
  if (c) c.end().catch(() => undefined);
}
async function connection() {
  if (client) return client;
  const c = new Client({ connectionString: url, application_name: applicationName, connectionTimeoutMillis: leaseMs, query_timeout: leaseMs });
  c.on("error", () => { if (client === c) client = undefined; });
  await c.connect();
  client = c;
  return c;
}
async function renew() {
  const sentAt = process.hrtime.bigint();
  try {
    const c = await connection();
    if (stopped) return drop();
    const result = await c.query("UPDATE chronolog_lease SET expires_at = clock_timestamp() + $1 * interval '1 millisecond' WHERE id = 1 AND term = $2 RETURNING term", [leaseMs, term]);
    if (result.rowCount === 0) {
      Atomics.store(shared, 1, 1n);
      parentPort.postMessage({ taken: true });
      stopped = true; // renews no more; the watchdog watches until the owner closes it
      return drop();
    }
    Atomics.store(shared, 0, sentAt);
  } catch (error) {
    drop();
    if (!stopped) parentPort.postMessage({ error: String((error && error.message) || error) });
  }
  if (stopped) return drop();
  const spentMs = Number(process.hrtime.bigint() - sentAt) / 1e6;
  timer = setTimeout(renew, Math.max(0, leaseMs / 3 - spentMs));
}
function stop() {
  stopped = true;
  clearTimeout(timer);
  drop();
  parentPort.close();
}
const tickMs = Math.max(50, leaseMs / 6);
let lastBeat = 0n;
let silentMs = 0;
/** How long the whole process was paused (SIGSTOP, a suspended machine) since the owner's thread last answered. */
let pausedMs = 0;
let lastTick = process.hrtime.bigint();
const watchdog = setInterval(() => {
  const now = process.hrtime.bigint();
  const elapsedMs = Number(now - lastTick) / 1e6;
  lastTick = now;
  const beat = Atomics.load(shared, 2);
  if (beat === 0n) return; // the owner's thread does not report: nothing to watch
  if (beat !== lastBeat) {
    lastBeat = beat;
    silentMs = 0;
    pausedMs = 0;
    return;
  }
  // A pause of the whole process (SIGSTOP, a suspended machine) is not the thread's silence: resumed, it gets its time to step down itself.
  if (elapsedMs > 2 * tickMs) pausedMs += elapsedMs;
  else silentMs += elapsedMs;
  const taken = Atomics.load(shared, 1) === 1n;
  const ageMs = Number(now - Atomics.load(shared, 0)) / 1e6;
  if ((taken || ageMs >= leaseMs) && silentMs >= Math.max(1000, leaseMs / 3)) {
    const why = taken ? "another owner took the lease" : "the lease could not be renewed for " + Math.round(ageMs) + " ms (a standby may lead now)";
    const silence = pausedMs > 0
      ? "the process was paused for " + Math.round(pausedMs) + " ms (stopped, or its machine suspended), and its thread has not answered for " + Math.round(silentMs) + " ms since"
      : "the owner's thread has not answered for " + Math.round(silentMs) + " ms (waiting on a database that does not answer?)";
    const line = { level: 60, time: Date.now(), pid: process.pid, msg: "stepping down: " + why + ", and " + silence + ": the process ends" };
    require("node:fs").writeSync(2, JSON.stringify(line) + "\\n");
    process.kill(process.pid, "SIGKILL");
  }
}, tickMs);
parentPort.on("message", (message) => {
  if (message === "close") {
    clearInterval(watchdog);
    stop();
  }
});
timer = setTimeout(renew, leaseMs / 3);
`;

/** How long {@link LeaseRenewer.close} waits for the thread to close its connection, ms. */
const closeGraceMs = 1_000;

/** Options of {@link LeaseRenewer}. */
export interface LeaseRenewerOptions {
  /** The PostgreSQL URL. */
  url: string;
  /** The connection's application_name (`chronolog <instance> lease`: a takeover ends it). */
  applicationName: string;
  leaseMs: number;
  /** The term this owner holds. */
  term: number;
  /** When the UPDATE that took the lease was sent (process.hrtime.bigint(), ns). */
  takenAt: bigint;
  /** Told once another owner holds the lease (this one may not write again). */
  onTaken(): void;
  /** Told when a renewal failed (it is tried again a third of the lease later, on a new connection). */
  onError(message: string): void;
}

/**
 * Renews the leader's lease from a thread of its own, so nothing the owner's event loop does
 * (statements that wait for the database, a burst of work) delays a renewal. The owner reads
 * the lease's age from shared memory ({@link ageMs}) without waiting on the thread.
 */
export class LeaseRenewer {
  private readonly worker: Worker;
  /**
   * [0]: when the last renewal that held was sent (hrtime ns); [1]: 1 once another owner holds the
   * lease; [2]: when the owner's thread last said it is alive ({@link alive}; 0: it does not say).
   */
  private readonly shared = new BigInt64Array(new SharedArrayBuffer(24));
  private closed = false;

  constructor(options: LeaseRenewerOptions) {
    Atomics.store(this.shared, 0, options.takenAt);
    const driver = createRequire(import.meta.url).resolve("pg");
    const { url, applicationName, leaseMs, term } = options;
    this.worker = new Worker(workerSource, { eval: true, workerData: { driver, url, applicationName, leaseMs, term, shared: this.shared.buffer } });
    this.worker.unref();
    this.worker.on("message", (message: { taken?: boolean; error?: string }) => {
      if (message.taken) options.onTaken();
      else if (message.error !== undefined) options.onError(message.error);
    });
    this.worker.on("error", (error) => options.onError(error.message));
  }

  /** Ms since the last renewal that held was sent (or the lease was taken). */
  ageMs(): number {
    return Number(process.hrtime.bigint() - Atomics.load(this.shared, 0)) / 1e6;
  }

  /**
   * The owner's thread is alive: call it at least every sixth of the lease. Once called, the
   * thread's watchdog ends the process when the lease is lost and this is not called for a second
   * or a third of the lease (the owner's thread, alive, would step down itself).
   */
  alive(): void {
    Atomics.store(this.shared, 2, process.hrtime.bigint());
  }

  /** Another owner holds the lease. */
  get taken(): boolean {
    return Atomics.load(this.shared, 1) === 1n;
  }

  /**
   * Stops renewing and closes the thread's connection; a thread still waiting on the database
   * after {@link closeGraceMs} (a connection or renewal under way) is terminated.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const exited = new Promise((resolve) => this.worker.once("exit", resolve));
    this.worker.postMessage("close");
    const grace = setTimeout(() => void this.worker.terminate(), closeGraceMs);
    await exited;
    clearTimeout(grace);
  }
}
