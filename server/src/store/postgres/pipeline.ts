import type { NativeClient } from "./native-client.js";

/** A statement for a pipeline: SQL with `$n` parameters, or a statement prepared on the connection under `name`. */
export interface Command {
  text: string;
  values?: unknown[];
  /** The name the statement is prepared under on the connection (then `text` only names it in errors). */
  name?: string;
  /** A batch's guard (Db.guardAbsent): its failure is the batch's GuardFailedError. */
  guard?: true;
  /** This command prepares `text` under `name`, with this many parameters (PreparedStatements.withPrepares). */
  prepare?: number;
}

/** What one command of a pipeline answered. */
export interface Outcome {
  rows: Record<string, unknown>[];
  /** Rows it changed (a write) or returned. */
  rowCount: number;
  /** Its error (the first command that failed has the server's; those after it in the same transaction fail as aborted). */
  error?: Error & { sqlState?: string };
}

/** pg-native's reading of a result into rows (typed as the client's other answers). */
type ResultReader = { _consumeQueryResults(pq: unknown): { rows: Record<string, unknown>[]; rowCount: number } };

/**
 * The answers of a pipeline of `count` commands, as libpq gives them: each command's result (or
 * error, or PIPELINE_ABORTED after an earlier error) then a NULL, and after the last one the
 * sync point's PIPELINE_SYNC.
 */
class Answers {
  readonly outcomes: Outcome[] = [];
  /** The sync point's answer was read: every command is answered. */
  synced = false;
  /** A command failed (the connection may be going: see pipelineAsync). */
  failed = false;
  private current: Outcome = { rows: [], rowCount: 0 };

  constructor(
    private readonly client: NativeClient,
    private readonly pq: PipelinePq,
    readonly count: number,
  ) {}

  /** Takes what PQgetResult gave: a result (`got`), or the NULL that ends a command's. */
  take(got: boolean): void {
    if (!got) {
      this.outcomes.push(this.current);
      this.current = { rows: [], rowCount: 0 };
      return;
    }
    const status = this.pq.resultStatus();
    if (status === "PGRES_PIPELINE_SYNC") this.synced = true;
    else if (status === "PGRES_FATAL_ERROR") {
      this.failed = true;
      const error: Error & { sqlState?: string } = new Error(this.pq.resultErrorMessage());
      error.sqlState = this.pq.resultErrorFields()?.sqlState;
      this.current.error = error;
    } else if (status === "PGRES_PIPELINE_ABORTED") {
      this.current.error ??= new Error("not run: an earlier statement of the transaction failed");
    } else {
      const result = (this.client as unknown as ResultReader)._consumeQueryResults(this.pq);
      this.current.rows = result.rows;
      this.current.rowCount = Number.isNaN(result.rowCount) ? 0 : result.rowCount;
    }
  }
}

/**
 * Queues `commands` in pipeline mode, then one sync point after the last: the server answers
 * them all at once (one flush), and after a command fails it runs none of the rest (they are
 * one transaction's anyway). False when libpq refused to queue one.
 */
function send(pq: PipelinePq, commands: Command[]): boolean {
  for (const command of commands) {
    const values = command.values ?? [];
    const queued =
      command.prepare !== undefined
        ? pq.sendPrepare(command.name!, command.text, command.prepare)
        : command.name
          ? pq.sendQueryPrepared(command.name, values)
          : pq.sendQueryParams(command.text, values);
    if (!queued) return false;
  }
  return pq.pipelineSync();
}

/** The error of a connection libpq found gone. */
function gone(pq: PipelinePq): Error {
  return new Error(pq.errorMessage() || "the connection to PostgreSQL is gone");
}

/**
 * Sends `commands` on `client` in libpq's pipeline mode and waits for all their answers: one
 * round trip for them all, the calling thread waiting for it ({@link pipelineAsync} does not). A
 * command's failure is its outcome's `error`; a broken connection throws.
 */
export function pipelineSync(client: NativeClient, commands: Command[]): Outcome[] {
  const pq = client.pq as NativeClient["pq"] & PipelinePq;
  pq.setNonBlocking(false); // an asynchronous pipeline leaves the connection non-blocking
  if (!pq.enterPipelineMode()) throw new Error(`cannot enter pipeline mode: ${pq.errorMessage()}`);
  const answers = new Answers(client, pq, commands.length);
  try {
    if (!send(pq, commands) || pq.flush() !== 0) throw new Error(pq.errorMessage() || "the pipeline could not be sent");
    while (!answers.synced) {
      const got = pq.getResult();
      if (!got && (pq.socket() < 0 || answers.outcomes.length === answers.count)) throw gone(pq);
      answers.take(got);
    }
  } finally {
    pq.exitPipelineMode();
  }
  return answers.outcomes;
}

/** How soon {@link pipelineAsync} reads again after a command failed, ms. */
const recheckMs = 25;

/**
 * {@link pipelineSync} without blocking: resolves with the outcomes once the sync point is
 * answered. Rejects when the connection breaks, including when libpq finds it gone between two
 * answers (its socket closed).
 */
export function pipelineAsync(client: NativeClient, commands: Command[]): Promise<Outcome[]> {
  const pq = client.pq as NativeClient["pq"] & PipelinePq & ReaderPq;
  return new Promise((resolve, reject) => {
    const answers = new Answers(client, pq, commands.length);
    let done = false;
    /** Reads again soon after a failure: a server that ended the connection after its error sends no more, and its end is not always signalled. */
    let recheck: NodeJS.Timeout | undefined;
    const finish = (error?: Error) => {
      if (done) return;
      done = true;
      clearTimeout(recheck);
      pq.stopReader();
      pq.removeListener("readable", read);
      pq.exitPipelineMode();
      if (error) reject(error);
      else resolve(answers.outcomes);
    };
    /** Takes every answer libpq has read; the next 'readable' brings more. */
    function read(): void {
      if (done) return;
      if (!pq.consumeInput()) return finish(gone(pq));
      while (!pq.isBusy()) {
        const got = pq.getResult();
        if (!got && pq.socket() < 0) return finish(gone(pq));
        if (!got && answers.outcomes.length === answers.count) break; // the sync point's answer is not read yet
        answers.take(got);
        if (answers.synced) return finish();
      }
      if (answers.failed) {
        clearTimeout(recheck);
        recheck = setTimeout(read, recheckMs);
      }
    }
    /** Sends what libpq holds, waiting for the socket when it is full; then reads. */
    const drain = (): void => {
      const flushed = pq.flush();
      if (flushed === -1) return finish(gone(pq));
      if (flushed === 1) return void pq.writable(drain);
      pq.on("readable", read);
      pq.startReader();
      read();
    };
    pq.setNonBlocking(true);
    if (!pq.enterPipelineMode()) return reject(new Error(`cannot enter pipeline mode: ${pq.errorMessage()}`));
    if (!send(pq, commands)) return finish(new Error(pq.errorMessage() || "a pipelined statement could not be sent"));
    drain();
  });
}

/** libpq's socket watcher, as the addon exposes it. */
interface ReaderPq {
  consumeInput(): boolean;
  isBusy(): boolean;
  startReader(): void;
  stopReader(): void;
  writable(callback: () => void): void;
  on(event: "readable", listener: () => void): void;
  removeListener(event: "readable", listener: () => void): void;
}

/** libpq's calls of the pipeline mode, as the addon names them. */
interface PipelinePq {
  setNonBlocking(on: boolean): boolean;
  enterPipelineMode(): boolean;
  exitPipelineMode(): boolean;
  pipelineSync(): boolean;
  sendQueryParams(text: string, values: unknown[]): boolean;
  sendQueryPrepared(name: string, values: unknown[]): boolean;
  sendPrepare(name: string, text: string, count: number): boolean;
  flush(): number;
  getResult(): boolean;
  resultStatus(): string;
  resultErrorMessage(): string;
  resultErrorFields(): Record<string, string> | undefined;
  errorMessage(): string;
  socket(): number;
}
