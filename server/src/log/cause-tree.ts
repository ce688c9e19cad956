import { callEventId } from "../actions/index.js";
import type { CauseReads, TreeRow } from "../store/cause-reads.js";
import { fail } from "../errors.js";
import { storedBytes, type EventRecord } from "../store/events.js";
import { occurrenceId } from "../time/index.js";
import { derivedId } from "./ids.js";
import { matchAll, type Filter } from "./filter.js";
import type { LogPage } from "./read.js";

// What was made under a cause: ReadLog's and Watch's `cause` filter. A cause is an event id or a
// call id; work is made under it as events whose `cause` column names it (an index on it serves
// the reads, store/cause-reads.ts):
// - a processor's work under a delivery names the delivery's event;
// - a call names its cause in its `action.started`; the call's attempts (`action.retried`,
//   `.completed`, `.failed`) and the work its run did name its `action.started`, or, for a
//   `record: false` action (no events), the call id;
// - time: a timer set under a cause records `timer.scheduled` under it, and its occurrence makes a
//   call whose id is the occurrence id (a delay's: derived from the timer id and its moment; a
//   trigger's or a backfill's: named in `timer.triggered` / `timer.backfilled`); that call's
//   `action.started` has no cause, so the walk follows the ids those events name. Occurrences of
//   a recurring schedule are not followed (their moments are not in the log).

/** Events the walk down a cause's tree reads at most, per page of a read. */
export const treeLimit = 10_000;

/** Causes a watch's tree holds at most: past them the watch ends (RESOURCE_EXHAUSTED) rather than grow without bound. */
export const watchedTreeLimit = 100_000;

/** The types whose data names the calls time made for them (read by the walk). */
const linkTypes = ["timer.scheduled", "timer.triggered", "timer.backfilled"];

/** Causes (or ids) per statement of the walk. */
const keysPerRead = 500;

/** The causes under which work made under `cause` is recorded: itself, and were it a call id, its `action.started`. */
export function causeKeys(cause: string): string[] {
  return [cause, callEventId(cause, "started")];
}

/** The call ids (= occurrence ids) time made for a `timer.*` event of {@link linkTypes}, from its data. */
function callsOf(type: string, data: Record<string, unknown> | undefined): string[] {
  if (!data) return [];
  if (type === "timer.triggered") return typeof data.occurrence_id === "string" ? [data.occurrence_id] : [];
  if (type === "timer.backfilled") return Array.isArray(data.occurrence_ids) ? data.occurrence_ids.filter((id) => typeof id === "string") : [];
  const spec = data.spec as { at?: unknown } | undefined;
  return typeof data.timer_id === "string" && typeof spec?.at === "number" ? [occurrenceId(data.timer_id, spec.at)] : [];
}

/** The ids of the events a call of time records without a cause: its `action.started`, and the occurrence's `timer.failed` or `timer.skipped`. */
function recordsOfCall(callId: string): string[] {
  return [callEventId(callId, "started"), derivedId(callId, 0, "timer.failed"), derivedId(callId, 0, "timer.skipped")];
}

/**
 * The members of a cause's tree as found so far: the causes work under them names, and the ids of
 * events of calls of time made in it (which name no cause). {@link admits} an event made under
 * one of them and takes it in: a watch follows the tree as the log grows.
 */
export class CauseTree {
  /** Causes whose work belongs to the tree. */
  readonly causes: Set<string>;
  /** Ids of events that belong to the tree though their cause is not in it (a call of time's records). */
  readonly records = new Set<string>();

  constructor(cause: string) {
    this.causes = new Set(causeKeys(cause));
  }

  /**
   * Whether `event` belongs to the tree; takes it in (its id as a cause, the calls of time it names)
   * when it does. RESOURCE_EXHAUSTED once the tree holds {@link watchedTreeLimit} causes.
   */
  admits(event: { id: string; type: string; cause: string; data: Record<string, unknown> | undefined }): boolean {
    if (!this.causes.has(event.cause) && !this.records.has(event.id)) return false;
    if (this.causes.size >= watchedTreeLimit)
      fail("too_large", `the tree under the watched cause passed ${watchedTreeLimit} events: watch a cause further down, or without descendants`);
    this.add(event);
    return true;
  }

  /** Takes `event` in as a member; returns the ids of the call records it leads to. */
  add(event: { id: string; type: string; data: Record<string, unknown> | undefined }): string[] {
    this.causes.add(event.id);
    if (!linkTypes.includes(event.type)) return [];
    const records: string[] = [];
    for (const call of callsOf(event.type, event.data)) {
      this.causes.add(call); // a record: false call's work names the call id
      for (const id of recordsOfCall(call)) {
        this.records.add(id);
        records.push(id);
      }
    }
    return records;
  }
}

/** The tree under a cause, as walked: its members (no event twice) in seq order, and whether the walk stopped at {@link treeLimit}. */
export interface WalkedTree {
  rows: TreeRow[];
  cut: boolean;
  tree: CauseTree;
}

/**
 * Walks down the tree of `cause` breadth first, by the cause index and by id, up to
 * {@link treeLimit} events at or below `headSeq`, through the events `through` admits only
 * (one it does not is neither returned nor followed).
 */
export async function walkTree(reads: CauseReads, cause: string, headSeq: number, through: (e: Pick<EventRecord, "actor">) => boolean): Promise<WalkedTree> {
  const tree = new CauseTree(cause);
  const found = new Map<string, TreeRow>();
  let causes = [...tree.causes];
  let ids: string[] = [];
  let cut = false;
  const take = (row: TreeRow, next: { causes: string[]; ids: string[] }): void => {
    if (found.has(row.id) || row.seq > headSeq || !through(row)) return;
    if (found.size === treeLimit) {
      cut = true;
      return;
    }
    found.set(row.id, row);
    next.causes.push(row.id);
    for (const id of tree.add(row)) {
      if (!found.has(id)) next.ids.push(id);
    }
    if (linkTypes.includes(row.type)) next.causes.push(...callsOf(row.type, row.data));
  };
  while ((causes.length > 0 || ids.length > 0) && !cut) {
    const next = { causes: [] as string[], ids: [] as string[] };
    for (let from = 0; from < causes.length && !cut; from += keysPerRead) {
      const rows = await reads.treeRows(causes.slice(from, from + keysPerRead), linkTypes, treeLimit - found.size + 1);
      for (const row of rows) take(row, next);
    }
    for (let from = 0; from < ids.length && !cut; from += keysPerRead) {
      for (const event of await reads.byIds(ids.slice(from, from + keysPerRead)))
        take(
          {
            seq: event.seq,
            id: event.id,
            type: event.type,
            cause: event.cause,
            actor: event.actor,
            data: linkTypes.includes(event.type) ? event.data : undefined,
          },
          next,
        );
    }
    causes = next.causes;
    ids = next.ids;
  }
  return { rows: [...found.values()].sort((a, b) => a.seq - b.seq), cut, tree };
}

/** Members fetched whole per step of a tree page. */
const fetchChunk = 256;

/**
 * A page of a cause's tree after `afterSeq` (ReadLog with `descendants`): its members of `types`
 * (empty: all) that `visible` admits and whose data `where` matches, up to `pageSize` and the
 * page's byte budget (`maxBytes`, never before its first event), walked again from the cause
 * (through the events `through` admits) for each page.
 */
export async function readTreePage(
  reads: CauseReads,
  query: {
    cause: string;
    afterSeq: number;
    types: string[];
    where: Filter;
    through: (e: Pick<EventRecord, "actor">) => boolean;
    visible: (e: EventRecord) => boolean;
  },
  pageSize: number,
  maxBytes: number,
  headSeq: number,
): Promise<LogPage & { cut: boolean }> {
  const walked = await walkTree(reads, query.cause, headSeq, query.through);
  const wanted = query.types.length > 0 ? new Set(query.types) : undefined;
  const candidates = walked.rows.filter((r) => r.seq > query.afterSeq && (!wanted || wanted.has(r.type)));
  const events: EventRecord[] = [];
  let bytes = 0;
  let scannedTo = query.afterSeq;
  for (let from = 0; from < candidates.length; from += fetchChunk) {
    for (const event of await reads.byIds(candidates.slice(from, from + fetchChunk).map((r) => r.id))) {
      if (query.visible(event) && (query.where === matchAll || query.where(event.data))) {
        const size = storedBytes(event);
        if (events.length > 0 && bytes + size > maxBytes) return { events, scannedTo, atHead: false, cut: walked.cut };
        events.push(event);
        bytes += size;
      }
      scannedTo = event.seq;
      if (events.length === pageSize) {
        const more = candidates.at(-1)!.seq > event.seq;
        return { events, scannedTo, atHead: !more, cut: walked.cut };
      }
    }
  }
  return { events, scannedTo: Math.max(scannedTo, headSeq), atHead: true, cut: walked.cut };
}
