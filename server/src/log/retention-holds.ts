import type { LogRemovalStatements, ScannedEvent } from "../store/log-removal.js";

/** A processor as retention sees it: the types it takes (null: all) and its cursor (every event at or below it is finished). */
export interface ProcessorHold {
  name: string;
  on: Set<string> | null;
  floor: number;
}

/** What holds the log's events ({@link HoldSnapshot}). */
export interface HoldSources {
  processors(): ProcessorHold[];
  /** Failed deliveries on record (kept until redelivered or dismissed): all of them, for the partitions' plan. */
  failed(): { processor: string; seq: number }[];
  /** Collections whose writes record change events (`<name>.created|.updated|.deleted`). */
  collections(): string[];
}

/** Why a candidate stays: the holder's label in metrics and logs, and the words that say it. */
export interface Hold {
  /** `processor:<name>`, `failed_delivery:<name>`, `timer`, `action_call`, `document` or `cause`. */
  holder: string;
  reason: string;
  /** A `cause` hold's kept effect: the seq of the event that names it as its cause. */
  effect?: number;
}

/** The change type's collection and op, or undefined for another type. */
export function changeOf(type: string, collections: Set<string>): { collection: string; op: string } | undefined {
  const dot = type.lastIndexOf(".");
  const collection = type.slice(0, dot);
  const op = type.slice(dot + 1);
  return collections.has(collection) && (op === "created" || op === "updated" || op === "deleted") ? { collection, op } : undefined;
}

/**
 * The holders of one pass: collections read when it starts; processors' cursors, then failed
 * deliveries, read again for each batch. {@link check} tells which of a batch of candidates must
 * stay and why. The order matters: a processor's cursor passes a failed event only once its
 * failure is on record, so failures read after the cursors include every one below them.
 */
export class HoldSnapshot {
  readonly collections: Set<string>;

  constructor(
    private readonly sources: HoldSources,
    private readonly statements: LogRemovalStatements,
    /** The latest seq of each document's change events, by collection and `_id` (JSON), as far as scanned. */
    private readonly latestChange: (collection: string) => Promise<Map<string, number>>,
  ) {
    this.collections = new Set(sources.collections());
  }

  /**
   * Of `candidates` (in seq order), the holds of those that must stay, by seq: a processor that
   * has not finished one, a failed delivery, a pending timer (`timer.scheduled`), a running
   * action call (`action.started`), a document whose latest change it is, or a kept event that
   * names it as its cause (candidates removed with it do not count).
   */
  async check(candidates: ScannedEvent[]): Promise<Map<number, Hold>> {
    const holds = new Map<number, Hold>();
    const processors = this.sources.processors(); // read for each batch: a cursor moved back counts at once
    const failed =
      candidates.length === 0 ? new Map<number, string>() : await this.statements.failedIn(candidates[0].seq, candidates[candidates.length - 1].seq);
    const timers = new Map<number, string>();
    const calls = new Map<number, string>();
    const documents = new Map<string, { seq: number; id: string; key: string }[]>();
    for (const e of candidates) {
      const hold = ownHold(e, processors, failed);
      if (hold) {
        holds.set(e.seq, hold);
        continue;
      }
      const data =
        e.type === "timer.scheduled" || e.type === "action.started" || changeOf(e.type, this.collections)
          ? (JSON.parse(e.data) as Record<string, unknown>)
          : undefined;
      if (e.type === "timer.scheduled" && typeof data?.timer_id === "string") timers.set(e.seq, data.timer_id);
      if (e.type === "action.started" && typeof data?.call_id === "string") calls.set(e.seq, data.call_id);
      const change = changeOf(e.type, this.collections);
      if (change && change.op !== "deleted" && typeof data?._id === "string") {
        const list = documents.get(change.collection) ?? [];
        list.push({ seq: e.seq, id: data._id, key: JSON.stringify(data._id) });
        documents.set(change.collection, list);
      }
    }
    const pending = await this.statements.pendingTimers([...new Set(timers.values())]);
    for (const [seq, id] of timers) if (pending.has(id)) holds.set(seq, { holder: "timer", reason: `timer ${id} is pending` });
    const running = await this.statements.runningCalls([...new Set(calls.values())]);
    for (const [seq, id] of calls) if (running.has(id)) holds.set(seq, { holder: "action_call", reason: `action call ${id} is running` });
    for (const [collection, changes] of documents) {
      const latest = await this.latestChange(collection);
      const current = changes.filter((c) => latest.get(c.key) === c.seq);
      const existing = await this.statements.existingDocuments(
        collection,
        current.map((c) => c.id),
      );
      for (const c of current)
        if (existing.has(c.id)) holds.set(c.seq, { holder: "document", reason: `it is the latest change of document ${collection}/${c.id}` });
    }
    // Causes last: a candidate held above holds its causes. Effects come after their causes, so
    // deciding from the newest candidate down sees each effect's fate before its cause's.
    const effects = await this.statements.effectsOf(candidates.map((e) => e.id));
    const removing = new Set<number>();
    for (let i = candidates.length - 1; i >= 0; i--) {
      const e = candidates[i];
      if (!holds.has(e.seq)) {
        const kept = (effects.get(e.id) ?? []).find((seq) => !removing.has(seq));
        if (kept === undefined) removing.add(e.seq);
        else holds.set(e.seq, { holder: "cause", reason: `kept event ${kept} names it as its cause`, effect: kept });
      }
    }
    return holds;
  }

  /** The processors as they are now (their cursors read again at each call). */
  processors(): ProcessorHold[] {
    return this.sources.processors();
  }

  /** The seqs of the failed deliveries on record now (read them after {@link processors}: see the class comment). */
  failedSeqs(): number[] {
    return this.sources.failed().map((f) => f.seq);
  }

  /** Whether an event of `type` can be held by something read per event: a pending timer, a running call, a document whose latest change it is. */
  sparselyHeld(type: string): boolean {
    return type === "timer.scheduled" || type === "action.started" || (changeOf(type, this.collections)?.op ?? "deleted") !== "deleted";
  }
}

/** A hold read from what the batch read first: processors and failed deliveries. */
function ownHold(e: ScannedEvent, processors: ProcessorHold[], failed: Map<number, string>): Hold | undefined {
  for (const p of processors)
    if (e.seq > p.floor && (p.on === null || p.on.has(e.type)))
      return { holder: `processor:${p.name}`, reason: `processor ${p.name} has not finished it (its cursor is at ${p.floor})` };
  const processor = failed.get(e.seq);
  if (processor !== undefined)
    return {
      holder: `failed_delivery:${processor}`,
      reason: `its delivery to processor ${processor} failed (redelivered and finished, or dismissed, it can go)`,
    };
  return undefined;
}
