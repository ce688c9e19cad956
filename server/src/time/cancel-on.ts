import { fail, type FieldViolation } from "../errors.js";
import { canonicalJson } from "../log/canonical.js";
import { newId } from "../log/ids.js";
import type { Tx } from "../store/committer.js";
import type { AppendAhead, ReadAheadKeys } from "../store/read-ahead.js";
import type { EventRecord } from "../store/events.js";
import { cancelKeyText, keysPerRead, type CancelKey, type TimerCancelStatements } from "../store/timer-cancels.js";
import type { TimerControlStatements } from "../store/timer-control.js";
import type { CancelOnRecord, TimerRecord } from "../store/timer-records.js";
import type { TimerStatements } from "../store/timers.js";
import { controlEvent, unscheduledEvent } from "./timer-events.js";

// Cancel on an event: a timer or delay names the events that cancel it while it is pending (its
// `cancel_on`: an event type and a match between the event's data and the timer's input). The
// timer's keys are indexed when it is set (store/timer-cancels.ts: one row per event type and
// match key, the key the canonical JSON of {event path: value} with the values taken from the
// input); an appended event of a type some timer waits on makes its own key per set of paths
// (a shape) and reads only the timers under it, so the cost of an emit does not grow with the
// number of pending timers, and events of other types cost a map lookup.
//
// A timer is cancelled only by events of its own space (its actor's `in`): a timer of a space by
// events of that space, a timer of no space (a declared schedule, an admin's delay) by events of
// no space. So no principal cancels or pauses, by emitting, a timer it could not cancel or pause
// by asking.
//
// The cancel runs in the committer unit that appends the event (Committer.afterAppend): the event
// and the cancel commit together or not at all. A runtime timer or delay is removed
// (`timer.unscheduled`, caused by the event, data `cancelled_by`); a declared schedule, which its
// plugin declares again at every start, is paused instead (`timer.paused`, caused by the event,
// resumed with ResumeTimer). A cancellable timer is claimed at its moment, not inside the clock's
// lookahead (fire.ts), so a cancel and the moment race cleanly: the claim commits first (the
// call is made; the event finds the timer spent and cancels nothing) or the event does (the timer
// is gone before its claim: no call is ever made).

/** Most `cancel_on` entries per timer. */
export const maxCancelOn = 10;
/** Most paths per entry's `match`. */
export const maxMatchPaths = 8;
const eventPath = /^data(\.[^.\s]+)+$/;
const inputPath = /^input(\.[^.\s]+)+$/;

/**
 * Checks `cancelOn` of a timer with `input` (INVALID_ARGUMENT under `field`): at most
 * {@link maxCancelOn} entries, each a known event type (`known`) and a match of at most
 * {@link maxMatchPaths} `data.` paths to `input.` paths present in the input.
 */
export function checkCancelOn(cancelOn: CancelOnRecord[], input: Record<string, unknown>, known: (type: string) => boolean, field = "cancel_on"): void {
  const violations = cancelOnViolations(cancelOn, input, known, field);
  if (violations.length > 0) fail("bad_request", `${violations[0].field}: ${violations[0].description}`, violations);
}

/** The problems of `cancelOn` (see {@link checkCancelOn}), each under `field`. */
export function cancelOnViolations(
  cancelOn: CancelOnRecord[],
  input: Record<string, unknown>,
  known: (type: string) => boolean,
  field: string,
): FieldViolation[] {
  const out: FieldViolation[] = [];
  if (cancelOn.length > maxCancelOn) out.push({ field, description: `at most ${maxCancelOn} entries` });
  cancelOn.forEach((c, i) => {
    const at = `${field}[${i}]`;
    if (c.type === "") out.push({ field: `${at}.type`, description: "required" });
    else if (!known(c.type)) out.push({ field: `${at}.type`, description: `event type ${JSON.stringify(c.type)} is not declared` });
    const paths = Object.entries(c.match);
    if (paths.length > maxMatchPaths) out.push({ field: `${at}.match`, description: `at most ${maxMatchPaths} paths` });
    for (const [from, to] of paths) {
      if (!eventPath.test(from)) out.push({ field: `${at}.match`, description: `${JSON.stringify(from)} is not a path in the event's data (data.field)` });
      else if (!inputPath.test(to)) out.push({ field: `${at}.match`, description: `${JSON.stringify(to)} is not a path in the input (input.field)` });
      else if (valueAt(input, to.slice("input.".length)) === undefined)
        out.push({ field: `${at}.match`, description: `${to} is absent from the input: the entry could never match` });
    }
  });
  return out;
}

/** The value at dotted `path` in `object`, or undefined. */
function valueAt(object: unknown, path: string): unknown {
  let at = object;
  for (const part of path.split(".")) {
    if (at === null || typeof at !== "object" || Array.isArray(at)) return undefined;
    at = (at as Record<string, unknown>)[part];
  }
  return at;
}

/** The sorted event paths of `match`, as the index stores a shape. */
function shapeOf(match: Record<string, string>): string[] {
  return Object.keys(match).sort();
}

/** The match key of values `values` (event path → value): canonical JSON, paths sorted. */
function matchKey(values: [string, unknown][]): string {
  return canonicalJson(Object.fromEntries(values));
}

/** The keys timer `timer` waits on, one per `cancel_on` entry. */
function keysOf(timer: Pick<TimerRecord, "cancelOn" | "input">): CancelKey[] {
  return (timer.cancelOn ?? []).map((c) => ({
    eventType: c.type,
    matchKey: matchKey(shapeOf(c.match).map((path) => [path, valueAt(timer.input, c.match[path].slice("input.".length))])),
  }));
}

/**
 * The cancel index and what an appended event does to it (see the module comment). The shapes in
 * use are kept in memory (loaded at open; a shape added by a unit that was undone stays: a
 * lookup that finds nothing).
 */
export class CancelOn {
  /** Event type → its shapes (sorted event paths). */
  private readonly shapes = new Map<string, string[][]>();

  constructor(
    private readonly cancels: TimerCancelStatements,
    private readonly timers: TimerStatements,
    private readonly control: TimerControlStatements,
  ) {
    for (const s of cancels.shapes()) this.remember(s.eventType, JSON.parse(s.paths) as string[]);
  }

  /**
   * `timers` whose {@link TimerStatements.put} also indexes the keys of the timer it sets (in the
   * same unit), replacing those it had.
   */
  indexing(timers: TimerStatements): TimerStatements {
    return {
      ...timers,
      put: (timer, nowMs, how) => {
        timers.put(timer, nowMs, how);
        this.index(timer);
      },
    };
  }

  /** Indexes `timer`'s keys (none: nothing; a replaced timer's stale keys are ignored when read). */
  private index(timer: Pick<TimerRecord, "id" | "cancelOn" | "input">): void {
    const cancelOn = timer.cancelOn ?? [];
    if (cancelOn.length === 0) return;
    for (const c of cancelOn) {
      const paths = shapeOf(c.match);
      if (this.remember(c.type, paths)) this.cancels.addShape({ eventType: c.type, paths: JSON.stringify(paths) });
    }
    this.cancels.setKeys(timer.id, keysOf(timer), true);
  }

  /** Adds a shape to memory; true when it was new here. */
  private remember(type: string, paths: string[]): boolean {
    const known = this.shapes.get(type) ?? [];
    if (known.some((p) => p.length === paths.length && p.every((x, i) => x === paths[i]))) return false;
    known.push(paths);
    this.shapes.set(type, known);
    return true;
  }

  /**
   * What a batch appending `events` reads ahead (Committer.readAheadOfAppends): the timers waiting
   * on their keys, so {@link cancelFor} finds them without a round trip (where the store reads
   * ahead: TimerCancelStatements.readsAhead); undefined when no event is of a type some timer waits on.
   */
  readAheadOf(events: AppendAhead[]): ReadAheadKeys | undefined {
    const keys: string[] = [];
    for (const event of events) for (const key of this.keysOfEvent(event)) keys.push(cancelKeyText(key));
    return keys.length > 0 ? { from: this.cancels, keys } : undefined;
  }

  /** The keys `event` makes, one per shape of its type whose paths are all in its data. */
  private keysOfEvent(event: AppendAhead): CancelKey[] {
    const shapes = this.shapes.get(event.type);
    if (!shapes) return [];
    const keys: CancelKey[] = [];
    for (const paths of shapes) {
      const values: [string, unknown][] = [];
      for (const path of paths) {
        const value = valueAt(event.data, path.slice("data.".length));
        if (value === undefined) break;
        values.push([path, value]);
      }
      if (values.length === paths.length) keys.push({ eventType: event.type, matchKey: matchKey(values) });
    }
    return keys;
  }

  /** In the unit that appended `event`: cancels every pending timer it matches (see the module comment). */
  cancelFor(tx: Tx, event: EventRecord): void {
    for (const key of this.keysOfEvent(event)) {
      for (let ids = this.cancels.timersOn(key); ids.length > 0; ids = ids.length < keysPerRead ? [] : this.cancels.timersOn(key))
        for (const id of ids) this.cancel(tx, id, key, event);
    }
  }

  /** Cancels timer `id` found under `key` for `event` when it still waits on that key and is pending; forgets the keys of a spent one. */
  private cancel(tx: Tx, id: string, key: CancelKey, event: EventRecord): void {
    const timer = this.timers.get(id);
    if (!timer) return; // its keys went with it
    const keys = keysOf(timer);
    const waits = keys.some((k) => k.eventType === key.eventType && k.matchKey === key.matchKey);
    // Its keys were replaced in the running batch, which still named it under this key: its own are right.
    if (!waits && keys.length > 0) return;
    // Replaced by a timer without keys, or spent: nothing to cancel, ever.
    if (!waits || (timer.nextDueMs === null && timer.paused === null && timer.kind !== "declared")) return this.cancels.setKeys(id, [], true);
    const space = timer.actor?.in ?? "";
    if (space !== (event.actor?.in ?? "")) return; // another space's event (or a space's event and a timer of none): never cancels it
    const by = { cancelled_by: { event_id: event.id, type: event.type } };
    if (timer.kind === "declared") {
      if (timer.paused || timer.nextDueMs === null) return; // paused, disabled or another region's: keeps its keys for when it runs again
      this.control.setPaused(timer.id, { note: `cancelled by ${event.type}`, atMs: tx.now, heldDueMs: timer.nextDueMs }, null, tx.now);
      const paused = controlEvent(
        "timer.paused",
        timer,
        { note: `cancelled by ${event.type}`, held_due_ms: timer.nextDueMs, ...by },
        null,
        event.actor,
        newId(),
      );
      tx.append({ ...paused, cause: event.id });
      return;
    }
    this.timers.remove(timer.id);
    const gone = unscheduledEvent(timer, event.id, event.actor);
    tx.append({ ...gone, data: { ...gone.data, ...by } });
  }
}
