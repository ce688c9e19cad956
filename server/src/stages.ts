// The stages of an event's way through the owner, and of a call of time's, each timed in a
// histogram: where a delivery's or a call's time goes, so a tail can be laid at one stage's door.
//
//   emit received → committed (durable) → delivery written to the executor's stream → its ack
//   received → the ack floor past it saved (durable);
//   a call of time: due → claimed → written to the executor's stream → started.
//
// Observing costs a few comparisons and no allocation per delivery: times are performance.now()
// readings (the time stages: the owner's clock, as due moments are), one per boundary for what
// crosses it together (a commit's events, the deliveries written at once, an AckBatch), kept in
// arrays of doubles beside what the owner has anyway (the log's tail, the tries in flight: TryTimes,
// the ack floor), and the counts are plain arrays here, read by /metrics (metrics.ts) at scrape time.

/** Upper bounds of every stage histogram's buckets, ms: 0.1 ms to 10 s, about 1.5× apart (a last bucket holds the rest). */
export const stageBucketsMs = [
  0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 7.5, 10, 15, 20, 30, 50, 75, 100, 150, 200, 300, 500, 750, 1_000, 2_500, 5_000, 10_000,
] as const;

/** One stage's histogram: counts per bucket of {@link stageBucketsMs} (and one past the last), their count and sum. */
export class StageHistogram {
  /** Observations per bucket (not cumulative); the last one holds those above 10 s. */
  readonly counts = new Float64Array(stageBucketsMs.length + 1);
  count = 0;
  sumMs = 0;

  /** Records `n` stages (default one) that took `ms` each (a negative time, a clock stepped back, counts as 0). */
  observe(ms: number, n = 1): void {
    const v = Math.max(ms, 0);
    let i = 0;
    while (i < stageBucketsMs.length && v > stageBucketsMs[i]) i++;
    this.counts[i] += n;
    this.count += n;
    this.sumMs += v * n;
  }
}

/** One processor's delivery stages. */
export interface ProcessorStages {
  /** Committed (durable) → the event's first delivery written to an executor's stream. */
  readonly send: StageHistogram;
  /** A delivery written → its ack (or error) received. */
  readonly ack: StageHistogram;
  /** An event finished (acked, or given up on) → the ack floor past it saved (durable). */
  readonly cursor: StageHistogram;
  /** Committed (durable) → its first delivery's ack (or error) received: the send and ack stages of one event together. */
  readonly latency: StageHistogram;
}

/** The stages of time's calls (timers, schedules and delays; first calls): each one's part of the call's lateness. */
export interface TimerStages {
  /** Due → claimed (the claim's commit durable); 0 when claimed ahead of the moment. */
  readonly claim: StageHistogram;
  /** Claimed, or due if later → the invocation written to the executor's stream; 0 when written ahead (to an executor that holds). */
  readonly send: StageHistogram;
  /** Written, or due if later → the action started (for a held invocation: its hold's end plus the executor's reported delay). */
  readonly start: StageHistogram;
}

/**
 * The instants of a processor's tries in flight (performance.now() ms): when the event became
 * durable and when the try was written, two per slot of one Float64Array. A try holds its slot's
 * index, a small integer, so no number is boxed per delivery (an object's fractional field is).
 */
export class TryTimes {
  private times = new Float64Array(256);
  private readonly free: number[] = [];
  private used = 0;

  constructor(private readonly stages: ProcessorStages) {}

  /** A slot for a new try whose event became durable at `committedAt`; NaN: its send stage is not observed (a retry, a redelivery). */
  take(committedAt: number): number {
    const slot = this.free.length > 0 ? this.free.pop()! : this.used++;
    if (2 * slot + 2 > this.times.length) {
      const grown = new Float64Array(this.times.length * 2);
      grown.set(this.times);
      this.times = grown;
    }
    this.times[2 * slot] = committedAt;
    this.times[2 * slot + 1] = Number.NaN;
    return slot;
  }

  /** The try in `slot` was written to its stream at `at`: observed in the send stage when timed. */
  written(slot: number, at: number): void {
    this.times[2 * slot + 1] = at;
    const committedAt = this.times[2 * slot];
    if (!Number.isNaN(committedAt)) this.stages.send.observe(at - committedAt);
  }

  /** The try in `slot` was answered at `at`: observed in the ack stage when it was written, and in the latency when timed from its commit. */
  answered(slot: number, at: number): void {
    const writtenAt = this.times[2 * slot + 1];
    if (Number.isNaN(writtenAt)) return;
    this.stages.ack.observe(at - writtenAt);
    const committedAt = this.times[2 * slot];
    if (!Number.isNaN(committedAt)) this.stages.latency.observe(at - committedAt);
  }

  /** The try in `slot` was dropped: the slot is free again. */
  release(slot: number): void {
    this.free.push(slot);
  }

  /** Every try was forgotten: all slots are free. */
  clear(): void {
    this.free.length = 0;
    this.used = 0;
  }
}

/** A try as the stream that writes it stamps it (the try itself: processors/attempt.ts). */
export interface TimedTry {
  /** Its slot in {@link times}; -1 once dropped (written after that: not observed). */
  slot: number;
  readonly times: TryTimes;
}

/** A delivery was written to its stream at `at` (performance.now() ms). */
export function deliveryWritten(t: TimedTry, at: number): void {
  if (t.slot >= 0) t.times.written(t.slot, at);
}

/**
 * A call of time's stages from its moments on the owner's clock (ms since the epoch): due,
 * claimed, written and started (claimed ≤ written ≤ started). Each stage counts only the time
 * past the due moment it added, so the three sum to the call's lateness.
 */
export function observeTimerCall(stages: TimerStages, dueMs: number, claimedMs: number, writtenMs: number, startedMs: number): void {
  stages.claim.observe(claimedMs - dueMs);
  stages.send.observe(writtenMs - Math.max(dueMs, claimedMs));
  stages.start.observe(startedMs - Math.max(dueMs, writtenMs));
}

/** An owner's stage histograms. */
export class Stages {
  /** An emit received → its event committed (durable), one observation per event answered. */
  readonly emit = new StageHistogram();
  readonly timer: TimerStages = { claim: new StageHistogram(), send: new StageHistogram(), start: new StageHistogram() };
  private readonly byProcessor = new Map<string, ProcessorStages>();

  /** The histograms of processor `name` (made on first use; kept when its declaration changes). */
  processor(name: string): ProcessorStages {
    let stages = this.byProcessor.get(name);
    if (!stages)
      this.byProcessor.set(
        name,
        (stages = { send: new StageHistogram(), ack: new StageHistogram(), cursor: new StageHistogram(), latency: new StageHistogram() }),
      );
    return stages;
  }

  /** Every processor's histograms, by name. */
  processors(): IterableIterator<[string, ProcessorStages]> {
    return this.byProcessor.entries();
  }
}
