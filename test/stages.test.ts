// The stage histograms' counting (server/src/stages.ts): buckets as /metrics reads them, the tries'
// instants kept in slots (reused, grown past their first size), and what is not observed. The
// stages as the owner observes them, through a real executor: metrics.test.ts.
import { describe, expect, it } from "vitest";
import { deliveryWritten, observeTimerCall, StageHistogram, stageBucketsMs, Stages, TryTimes } from "../server/src/stages.js";

describe("stage histograms", () => {
  it("count each observation in the first bucket whose bound it does not pass; past 10 s in the last; a negative time as 0", () => {
    const h = new StageHistogram();
    h.observe(0.1); // on the first bound: in it
    h.observe(0.1001);
    h.observe(25_000);
    h.observe(-3); // a clock stepped back
    h.observe(2, 3); // three at once (a batch sharing one reading)
    expect(h.counts).toHaveLength(stageBucketsMs.length + 1);
    expect(h.counts[0]).toBe(2);
    expect(h.counts[1]).toBe(1);
    expect(h.counts[stageBucketsMs.indexOf(2)]).toBe(3);
    expect(h.counts[stageBucketsMs.length]).toBe(1);
    expect(h.count).toBe(7);
    expect(h.sumMs).toBeCloseTo(0.1 + 0.1001 + 25_000 + 0 + 6, 9);
  });

  it("time a processor's tries in slots: sent and answered from the commit for a first try only, acked from the write, a dropped try's write not observed", () => {
    const stages = new Stages().processor("shop.bill");
    const times = new TryTimes(stages);
    // 300 tries in flight at once: past the slots it starts with.
    const tries = Array.from({ length: 300 }, (_, i) => ({ slot: times.take(i % 3 === 0 ? Number.NaN : 1_000), times }));
    expect(new Set(tries.map((t) => t.slot)).size).toBe(300);
    for (const t of tries) deliveryWritten(t, 1_004);
    expect(stages.send.count).toBe(200); // the retries (NaN) are not observed
    expect(stages.send.sumMs).toBe(800);
    for (const t of tries) times.answered(t.slot, 1_010);
    expect(stages.ack.count).toBe(300);
    expect(stages.ack.sumMs).toBe(1_800);
    expect(stages.latency.count).toBe(200); // committed → answered, first tries only
    expect(stages.latency.sumMs).toBe(2_000);
    for (const t of tries) times.release(t.slot);
    // Slots are reused, and a try not yet written is not observed when it answers.
    const again = { slot: times.take(2_000), times };
    expect(again.slot).toBeLessThan(300);
    times.answered(again.slot, 2_005);
    expect(stages.ack.count).toBe(300);
    const dropped = { slot: -1, times };
    deliveryWritten(dropped, 3_000);
    expect(stages.send.count).toBe(200);
  });

  it("a call of time's three stages add up to its lateness past the due moment, each counting only what it added", () => {
    const stages = new Stages();
    observeTimerCall(stages.timer, 1_000, 990, 995, 1_012); // claimed and written ahead (lookahead, a holding executor), started 12 ms late
    observeTimerCall(stages.timer, 1_000, 1_050, 1_060, 1_060); // the clock rang 50 ms late; 10 ms to send; started when written
    expect([stages.timer.claim.sumMs, stages.timer.send.sumMs, stages.timer.start.sumMs]).toEqual([50, 10, 12]);
    expect(stages.timer.claim.count + stages.timer.send.count + stages.timer.start.count).toBe(6);
  });
});
