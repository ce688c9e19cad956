import type { EventRecord } from "../store/events.js";
import type { IfActive } from "./declaration.js";
import { ReadyKeys } from "./ready-keys.js";

/** One key's state: its events held in memory, in seq order, and its deliveries in flight. */
interface KeyState {
  waiting: EventRecord[];
  running: number;
  /**
   * 0, or the seq from which the key's later events were read but not held (it held
   * {@link KeyQueues.holdPerKey} already): they wait in the log, above the ack floor, and are
   * read again from there as the key's held events run ({@link KeyQueues.refilled}).
   */
  spilledFrom: number;
  /** Deliveries its turn may still start before the next key's turn (weighted turns; 0: no turn going on). */
  turnLeft: number;
}

/** What became of an event handed to {@link KeyQueues.push}. */
export type Pushed =
  /** Held: it waits in memory for its turn. */
  | { kind: "held" }
  /** Not held: its key holds enough already; it is read again from the log later. */
  | { kind: "spilled" }
  /** Finished without a delivery (`skip`, `coalesce`): these events (the pushed one, or the ones it replaced). */
  | { kind: "passed"; events: EventRecord[]; held: boolean };

const noKeys: { key: string; from: number }[] = [];

/** The outcomes of a push that carry nothing of their own, made once. */
const held: Pushed = Object.freeze({ kind: "held" });
const spilled: Pushed = Object.freeze({ kind: "spilled" });

/**
 * Per-key queues with a limit per key, served in turn. An event waits in its key's queue until
 * its key has fewer than `limit` deliveries in flight (limit 1: a lane, one event after the
 * other, in order). Keys ready to run are served round-robin (deficit round-robin, each delivery
 * costing 1, a key's quantum its weight: `weightOf`, 1 unless declared), so a key with a long
 * backlog takes one turn like any other, and a key of weight w starts up to w deliveries in its
 * turn (a turn cut short by the key's limit goes on at its next turn); with a priority, keys whose next event has a higher priority go first (`priorityOf`), keys of one
 * priority in turn. Keys of events without a key are unique per event.
 *
 * Memory is bounded per key: past `holdPerKey` waiting events, a key's later events are not held
 * but left in the log (spilled) and read again when its queue runs low, so the reader can look
 * past one key's backlog for other keys' events.
 */
export class KeyQueues {
  private readonly keys = new Map<string, KeyState>();
  /** Keys with a waiting event and room under their limit, by the priority of that event, in turn order. */
  private readonly ready = new ReadyKeys();
  /** Spilled keys whose queue ran low: to read again from the log. */
  private readonly low = new Set<string>();
  /** Keys passed over until {@link unpark}: their next event must wait (its rate). */
  private readonly parked = new Set<string>();
  /** The shortest wait of the keys parked since the last {@link unpark}, ms. */
  wakeInMs = Number.POSITIVE_INFINITY;
  /** The key of the event {@link take} returned last. */
  takenKey = "";
  private count = 0;
  readonly holdPerKey: number;

  constructor(
    private readonly limit: number,
    private readonly ifActive: IfActive,
    private readonly priorityOf: (event: EventRecord) => number = () => 0,
    private readonly weightOf: (key: string) => number = () => 1,
  ) {
    this.holdPerKey = Math.max(64, 2 * limit);
  }

  /** Events held, waiting (not taken). */
  get size(): number {
    return this.count;
  }

  /** Queues an event read from the log at the tail of its key, as the key's `if_active` says. */
  push(key: string, event: EventRecord): Pushed {
    let state = this.keys.get(key);
    if (!state) {
      state = { waiting: [], running: 0, spilledFrom: 0, turnLeft: 0 };
      this.keys.set(key, state);
    }
    if (this.ifActive === "skip" && state.running > 0) return { kind: "passed", events: [event], held: false };
    if (this.ifActive === "coalesce" && state.waiting.length > 0) {
      const replaced = state.waiting;
      state.waiting = [event];
      this.count += 1 - replaced.length;
      return { kind: "passed", events: replaced, held: true };
    }
    if (state.spilledFrom > 0) return spilled;
    if (state.waiting.length >= this.holdPerKey) {
      state.spilledFrom = event.seq;
      return spilled;
    }
    this.hold(key, state, event);
    return held;
  }

  /** Queues an event whatever its key's state and `if_active` (a redelivery, or a debounced burst's last event). */
  requeue(key: string, event: EventRecord): void {
    let state = this.keys.get(key);
    if (!state) {
      state = { waiting: [], running: 0, spilledFrom: 0, turnLeft: 0 };
      this.keys.set(key, state);
    }
    this.hold(key, state, event);
  }

  /**
   * Takes the next event of the key whose turn it is and counts it in flight ({@link takenKey}: its
   * key); undefined when no key may run. `admit`, when given, may hold an event back: it answers
   * the ms to wait (0: go), and its key is passed over (parked) until {@link unpark}.
   */
  take(admit?: (event: EventRecord) => number): EventRecord | undefined {
    for (let key = this.ready.first(); key !== undefined; key = this.ready.first()) {
      const state = this.keys.get(key)!;
      const waitMs = admit ? admit(state.waiting[0]) : 0;
      if (waitMs > 0) {
        this.ready.delete(key);
        state.turnLeft = 0;
        this.parked.add(key);
        this.wakeInMs = Math.min(this.wakeInMs, waitMs);
        continue;
      }
      if (state.turnLeft === 0) state.turnLeft = this.weightOf(key);
      state.turnLeft--;
      const taken = this.takeHead(state);
      // The key keeps its place while its turn goes on (weight left, an event waiting at the same priority, room under its limit).
      const goesOn =
        state.turnLeft > 0 && state.waiting.length > 0 && state.running < this.limit && this.priorityOf(state.waiting[0]) === this.priorityOf(taken);
      if (!goesOn) {
        this.ready.delete(key);
        if (state.waiting.length === 0 || state.turnLeft === 0) state.turnLeft = 0; // a turn cut short by the limit goes on at the next
        if (state.waiting.length > 0 && state.running < this.limit) this.ready.add(key, this.priorityOf(state.waiting[0])); // its next turn: after the others'
      }
      if (state.spilledFrom > 0 && state.waiting.length <= this.holdPerKey / 2) this.low.add(key);
      this.takenKey = key;
      return taken;
    }
    return undefined;
  }

  /** Keys passed over by `take`'s `admit`. */
  get parkedKeys(): number {
    return this.parked.size;
  }

  /** Parked keys take turns again (their events are asked about anew). */
  unpark(): void {
    for (const key of this.parked) {
      const state = this.keys.get(key);
      if (state && state.waiting.length > 0 && state.running < this.limit) this.ready.add(key, this.priorityOf(state.waiting[0]));
    }
    this.parked.clear();
    this.wakeInMs = Number.POSITIVE_INFINITY;
  }

  private takeHead(state: KeyState): EventRecord {
    const event = state.waiting.shift()!;
    this.count--;
    state.running++;
    return event;
  }

  /** A delivery of `key` ended: its key may run its next event. */
  release(key: string): void {
    const state = this.keys.get(key);
    if (!state) return;
    state.running = Math.max(0, state.running - 1);
    if (state.waiting.length > 0) {
      if (!this.parked.has(key)) this.ready.add(key, this.priorityOf(state.waiting[0]));
    } else if (state.running === 0 && state.spilledFrom === 0) this.keys.delete(key);
  }

  /** Spilled keys whose queues ran low, with the seq to read them again from; taken (asked once). */
  lowKeys(): { key: string; from: number }[] {
    if (this.low.size === 0) return noKeys;
    const out: { key: string; from: number }[] = [];
    for (const key of this.low) {
      const state = this.keys.get(key);
      if (state && state.spilledFrom > 0) out.push({ key, from: state.spilledFrom });
    }
    this.low.clear();
    return out;
  }

  /** Room in `key`'s queue for events read again. */
  room(key: string): number {
    const state = this.keys.get(key);
    return state ? this.holdPerKey - state.waiting.length : 0;
  }

  /**
   * Events of a spilled key read again from the log, in seq order; `next`: the seq to read on from
   * (0: every spilled event of the key was read again, its later events are held as they come).
   */
  refilled(key: string, events: EventRecord[], next: number): void {
    const state = this.keys.get(key);
    if (!state) return;
    for (const event of events) this.hold(key, state, event);
    state.spilledFrom = next;
    if (next > 0 && state.waiting.length <= this.holdPerKey / 2) this.low.add(key);
  }

  /** Drops every waiting event (the processor was removed or moved). */
  clear(): void {
    this.keys.clear();
    this.ready.clear();
    this.low.clear();
    this.parked.clear();
    this.wakeInMs = Number.POSITIVE_INFINITY;
    this.count = 0;
  }

  private hold(key: string, state: KeyState, event: EventRecord): void {
    state.waiting.push(event);
    this.count++;
    if (state.running < this.limit && !this.parked.has(key)) this.ready.add(key, this.priorityOf(state.waiting[0]));
  }
}
