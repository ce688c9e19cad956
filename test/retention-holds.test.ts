// What holds the log's events back from retention (server/src/log/retention-holds.ts), with the
// holders' sources as the test sets them: a batch reads the processors' cursors, then the failed
// deliveries, each time it is weighed, so a delivery that failed after the pass began holds its
// event (its processor's cursor passes it only once the failure is on record).
import { describe, expect, it } from "vitest";
import { HoldSnapshot, type HoldSources, type ProcessorHold } from "../server/src/log/retention-holds.js";
import type { LogRemovalStatements, ScannedEvent } from "../server/src/store/log-removal.js";

const note = (seq: number): ScannedEvent => ({ seq, id: `n-${seq}`, type: "note.added", cause: "", at: 0, bytes: 100, data: "{}" });

function holders() {
  const processor: ProcessorHold = { name: "notes.tally", on: new Set(["note.added"]), floor: 0 };
  const failed: { processor: string; seq: number }[] = [];
  const sources: HoldSources = { processors: () => [{ ...processor }], failed: () => [...failed], collections: () => [] };
  const statements = {
    failedIn: async (from: number, to: number) => new Map(failed.filter((f) => f.seq >= from && f.seq <= to).map((f) => [f.seq, f.processor])),
    pendingTimers: async () => new Set<string>(),
    runningCalls: async () => new Set<string>(),
    existingDocuments: async () => new Set<string>(),
    effectsOf: async () => new Map<string, number[]>(),
  } as unknown as LogRemovalStatements;
  const snapshot = new HoldSnapshot(sources, statements, async () => new Map());
  return { processor, failed, snapshot };
}

describe("retention holds", () => {
  it("a delivery that failed after the pass began holds its event, as the processor's cursor passes it", async () => {
    const { processor, failed, snapshot } = holders();
    const batch = [note(1), note(2), note(3)];
    expect([...(await snapshot.check(batch)).values()].map((h) => h.holder)).toEqual([
      "processor:notes.tally",
      "processor:notes.tally",
      "processor:notes.tally",
    ]);
    // Meanwhile: note 2 failed (on record), then the cursor passed all three.
    failed.push({ processor: "notes.tally", seq: 2 });
    processor.floor = 3;
    const holds = await snapshot.check(batch);
    expect([...holds.entries()].map(([seq, h]) => [seq, h.holder])).toEqual([[2, "failed_delivery:notes.tally"]]);
    expect(snapshot.failedSeqs()).toEqual([2]);
    // Dismissed: nothing holds it.
    failed.length = 0;
    expect((await snapshot.check(batch)).size).toBe(0);
  });
});
