import type { NativeClient } from "./pg-db.js";

/** A statement for a pipeline: SQL with `$n` parameters, or a statement prepared on the connection under `name`. */
export interface Command {
  text: string;
  values?: unknown[];
  /** The name the statement is prepared under on the connection (then `text` only names it in errors). */
  name?: string;
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
 * Sends `commands` on `client` in libpq's pipeline mode, each followed by a sync point, and
 * waits for all their answers: one round trip for them all, the calling thread waiting for it
 * (the asynchronous form is pg-native's `pipeline`). A command's failure is its outcome's
 * `error`; a broken connection throws.
 */
export function pipelineSync(client: NativeClient, commands: Command[]): Outcome[] {
  const pq = client.pq as NativeClient["pq"] & PipelinePq;
  pq.setNonBlocking(false); // pg-native's asynchronous pipeline leaves the connection non-blocking
  if (!pq.enterPipelineMode()) throw new Error(`cannot enter pipeline mode: ${pq.errorMessage()}`);
  const outcomes: Outcome[] = [];
  try {
    for (const command of commands) {
      const values = command.values ?? [];
      const sent = command.name ? pq.sendQueryPrepared(command.name, values) : pq.sendQueryParams(command.text, values);
      if (!sent || !pq.pipelineSync()) throw new Error(pq.errorMessage() || "a pipelined statement could not be sent");
    }
    if (pq.flush() !== 0) throw new Error(pq.errorMessage() || "the pipeline could not be sent");
    let current: Outcome = { rows: [], rowCount: 0 };
    let nothing = 0;
    while (outcomes.length < commands.length) {
      if (!pq.getResult()) {
        // Between one command's results and the next; twice in a row: nothing more will come.
        if (++nothing > 1) throw new Error(pq.errorMessage() || "the pipeline's answers ended early");
        continue;
      }
      nothing = 0;
      const status = pq.resultStatus();
      if (status === "PGRES_PIPELINE_SYNC") {
        outcomes.push(current);
        current = { rows: [], rowCount: 0 };
      } else if (status === "PGRES_FATAL_ERROR") {
        const error: Error & { sqlState?: string } = new Error(pq.resultErrorMessage());
        error.sqlState = pq.resultErrorFields()?.sqlState;
        current.error = error;
      } else if (status === "PGRES_PIPELINE_ABORTED") {
        current.error ??= new Error("not run: an earlier statement of the transaction failed");
      } else {
        const result = (client as unknown as ResultReader)._consumeQueryResults(pq);
        current.rows = result.rows;
        current.rowCount = Number.isNaN(result.rowCount) ? 0 : result.rowCount;
      }
    }
  } finally {
    pq.exitPipelineMode();
  }
  return outcomes;
}

/** libpq's calls of the pipeline mode, as the addon names them. */
interface PipelinePq {
  setNonBlocking(on: boolean): boolean;
  enterPipelineMode(): boolean;
  exitPipelineMode(): boolean;
  pipelineSync(): boolean;
  sendQueryParams(text: string, values: unknown[]): boolean;
  sendQueryPrepared(name: string, values: unknown[]): boolean;
  flush(): number;
  getResult(): boolean;
  resultStatus(): string;
  resultErrorMessage(): string;
}
