import { isConnectionLost } from "../../errors.js";
import type { NativeClient } from "./native-client.js";
import { pipelineAsync, type Command } from "./pipeline.js";

/** A read waiting for its turn on the connection. */
interface Pending {
  command: Command;
  resolve: (rows: Record<string, unknown>[]) => void;
  reject: (error: Error) => void;
}

/**
 * Reads outside the committer on a connection of their own, without blocking the event loop:
 * each read is sent in a libpq pipeline and answered when its rows arrive. One pipeline is in
 * flight at a time; the reads asked for meanwhile go together in the next one (one round trip
 * for all of them). A read that fails fails alone: the reads after it in the same pipeline,
 * which PostgreSQL skipped, are sent again.
 */
export class AsyncReader {
  private queue: Pending[] = [];
  private sending = false;
  /** Reads answered or failed, and the pipelines (round trips) they went in, since it opened. */
  readonly counts = { reads: 0, roundTrips: 0 };
  /** Told when a read finds the connection gone. */
  onLost: ((error: Error) => void) | undefined;

  constructor(readonly client: NativeClient) {}

  /** The rows of the read `text` (`$n` parameters) with `values`. */
  read(text: string, values: unknown[]): Promise<Record<string, unknown>[]> {
    return new Promise((resolve, reject) => {
      this.queue.push({ command: { text, values }, resolve, reject });
      if (!this.sending) void this.send();
    });
  }

  private async send(): Promise<void> {
    this.sending = true;
    try {
      while (this.queue.length > 0) {
        const sent = this.queue;
        this.queue = [];
        let outcomes;
        this.counts.roundTrips++;
        try {
          outcomes = await pipelineAsync(
            this.client,
            sent.map((p) => p.command),
          );
        } catch (error) {
          if (isConnectionLost(error) || this.client.pq.socket() < 0) this.onLost?.(error as Error);
          for (const p of sent) p.reject(error as Error);
          continue;
        }
        const failed = outcomes.findIndex((o) => o.error);
        this.counts.reads += failed < 0 ? sent.length : failed + 1;
        for (let i = 0; i < sent.length; i++) {
          if (failed < 0 || i < failed) sent[i].resolve(outcomes[i].rows);
          else if (i === failed) sent[i].reject(outcomes[i].error!);
        }
        // Skipped after the failed one: sent again, ahead of the reads asked for meanwhile.
        if (failed >= 0) this.queue = [...sent.slice(failed + 1), ...this.queue];
      }
    } finally {
      this.sending = false;
    }
  }
}
