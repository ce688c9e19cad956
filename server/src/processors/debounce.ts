import type { Debounce } from "@chronolog/sdk/gen/chronolog/v1/plugin_pb";
import type { Clock } from "../clock.js";
import type { FieldViolation } from "../errors.js";
import { keyPath } from "../log/key-path.js";
import type { EventRecord } from "../store/events.js";
import { maxTimerMs } from "../actions/declaration.js";

/** A processor's debounce, compiled. */
export interface DebounceSpec {
  keyOf: (event: EventRecord) => string | null;
  periodMs: number;
  /** Infinity: no bound. */
  maxWaitMs: number;
}

/** Compiles a declaration's `debounce` (undefined when absent). */
export function compileDebounce(decl: Debounce | undefined): DebounceSpec | undefined {
  if (!decl) return undefined;
  return { keyOf: keyPath(decl.key), periodMs: decl.periodMs, maxWaitMs: decl.maxWaitMs || Number.POSITIVE_INFINITY };
}

/** Problems of a `debounce` at `at` (e.g. `processors.sync.debounce`). */
export function debounceProblems(at: string, decl: Debounce | undefined): FieldViolation[] {
  if (!decl) return [];
  const problems: FieldViolation[] = [];
  if (decl.periodMs < 1 || decl.periodMs > maxTimerMs) problems.push({ field: `${at}.period_ms`, description: `period_ms must be 1 to ${maxTimerMs}` });
  if (decl.maxWaitMs !== 0 && (decl.maxWaitMs < decl.periodMs || decl.maxWaitMs > maxTimerMs))
    problems.push({ field: `${at}.max_wait_ms`, description: `max_wait_ms must be at least period_ms and at most ${maxTimerMs}` });
  return problems;
}

/** One key's burst: its events so far (their seqs) and the last one. */
interface Burst {
  firstAt: number;
  last: EventRecord;
  seqs: number[];
  timer: NodeJS.Timeout | null;
}

/**
 * A processor's debounce: the events of a key it reads are gathered into a burst, and once the
 * key has been quiet for `periodMs` after its last event, or `maxWaitMs` after its first (times
 * of their commits), the last event is delivered standing for the burst (`released`). The events
 * of a burst stay unfinished until that delivery ends (the engine finishes them with it), so the
 * ack floor never passes a burst not delivered: after a restart the owner reads them again from
 * the log and gathers the same burst, its moment from the stored commit times. Nothing of a burst
 * is kept outside the log and the cursor.
 */
export class Debouncer {
  private readonly bursts = new Map<string, Burst>();
  /** The seqs a delivered last event stands for, by its seq, until its delivery ends. */
  private readonly standing = new Map<number, number[]>();
  /** Events gathered in bursts not yet delivered. */
  held = 0;
  /** Bursts delivered since the owner started, and the events they stood for. */
  deliveries = 0;
  events = 0;

  constructor(
    private readonly spec: DebounceSpec,
    private readonly clock: Clock,
    private readonly released: (event: EventRecord, count: number) => void,
  ) {}

  /** An event read (in seq order): gathered into its key's burst. */
  add(event: EventRecord): void {
    const key = this.spec.keyOf(event) ?? "";
    let burst = this.bursts.get(key);
    if (!burst) {
      burst = { firstAt: event.at, last: event, seqs: [], timer: null };
      this.bursts.set(key, burst);
    }
    burst.last = event;
    burst.seqs.push(event.seq);
    this.held++;
    this.arm(key, burst);
  }

  /** How many events the delivery of `seq` stands for (0: not a burst's). */
  count(seq: number): number {
    return this.standing.get(seq)?.length ?? 0;
  }

  /** The delivery of `seq` ended: the seqs of the events it stood for, besides its own (none when it did not stand for a burst). */
  ended(seq: number): number[] {
    const seqs = this.standing.get(seq);
    this.standing.delete(seq);
    return seqs?.filter((s) => s !== seq) ?? [];
  }

  /** Forgets every burst (the engine stopped, or its cursor moved). */
  clear(): void {
    for (const burst of this.bursts.values()) if (burst.timer) clearTimeout(burst.timer);
    this.bursts.clear();
    this.standing.clear();
    this.held = 0;
  }

  private arm(key: string, burst: Burst): void {
    if (burst.timer) clearTimeout(burst.timer);
    const due = Math.min(burst.last.at + this.spec.periodMs, burst.firstAt + this.spec.maxWaitMs);
    burst.timer = setTimeout(() => this.release(key, burst), Math.max(0, due - this.clock.now()));
  }

  private release(key: string, burst: Burst): void {
    if (this.bursts.get(key) !== burst) return;
    this.bursts.delete(key);
    this.held -= burst.seqs.length;
    this.deliveries++;
    this.events += burst.seqs.length;
    this.standing.set(burst.last.seq, burst.seqs);
    this.released(burst.last, burst.seqs.length);
  }
}
