import { fail } from "../errors.js";
import { newId } from "../log/ids.js";
import type { Committer } from "../store/committer.js";
import type { CursorStatements, FailedDeliveryRow } from "../store/cursors.js";

/** What dismissing needs: the failed deliveries on record and the committer that forgets them. */
export interface DismissalDeps {
  cursors: CursorStatements;
  /** A processor's failed deliveries on record, read without blocking the event loop. */
  failed(processor: string): Promise<FailedDeliveryRow[]>;
  committer: Committer;
  /** Whether a processor of this name is declared now. */
  declared(processor: string): boolean;
}

/**
 * Dismisses failed deliveries of `processor`: those with these seqs (`seqs` empty and `all`:
 * every one on record), forgotten without being delivered again, in one commit with the
 * `processor.dismissed` event that records who did it. A seq not on record is skipped. Log
 * retention then no longer holds their events. A processor no longer declared may still have
 * failures on record: those can be dismissed too. Resolves with the seqs dismissed (none:
 * nothing recorded). A redelivery already under way that fails again records a new failure.
 */
export async function dismissFailed(deps: DismissalDeps, processor: string, seqs: number[], all: boolean, by: string): Promise<number[]> {
  if (all === seqs.length > 0)
    fail("bad_request", "give the seqs of the failed deliveries to dismiss, or all", [
      { field: "seqs", description: all ? "empty with all" : "required without all" },
    ]);
  const onRecord = await deps.failed(processor);
  if (onRecord.length === 0 && !deps.declared(processor))
    fail("not_found", `no processor named ${JSON.stringify(processor)} with failed deliveries (use plugin.processor)`);
  const asked = new Set(seqs);
  const dismissed = onRecord.filter((f) => all || asked.has(f.seq)).map((f) => f.seq);
  if (dismissed.length === 0) return [];
  await deps.committer.submit((tx) => {
    for (const seq of dismissed) deps.cursors.forgetFailure(processor, seq);
    tx.append({ id: newId(), type: "processor.dismissed", data: { processor, seqs: dismissed, by }, cause: "", actor: null });
  });
  return dismissed;
}
