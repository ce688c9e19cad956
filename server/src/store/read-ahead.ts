import type { EventRecord, EventStatements } from "./events.js";
import type { Db } from "./sql.js";

// What the committer reads ahead of a batch, before its units run (Committer.submit's `lookups`,
// `readAhead` and `appends`): on PostgreSQL each read inside a unit is a round trip the owner's
// thread waits for; read ahead, the batch's reads go on the writer without blocking it.

/**
 * Rows of a table besides the log that units look up by key (TimerStatements): read for a whole
 * batch at once before its units run, as the events of `lookups` are.
 */
export interface ReadAhead {
  /** Reads `keys` for the batch about to run; `assumeAbsent` as EventStatements.prefetch. Undefined when nothing is read. */
  prefetch(keys: string[], assumeAbsent: boolean): Promise<void> | undefined;
  /**
   * The same as one statement (`?` parameters) and what takes its rows, where the database reads
   * ahead (Db.readAheadAll): the committer sends those of a batch's tables together, in one round
   * trip. Undefined when nothing is read; `assumeAbsent` as {@link prefetch}.
   */
  batchRead?(keys: string[], assumeAbsent?: boolean): BatchRead | undefined;
}

/** A read of {@link ReadAhead.batchRead}: its statement, and what keeps its rows for the batch. */
export interface BatchRead {
  sql: string;
  params: unknown[];
  take(rows: unknown[]): void;
}

/** The keys a unit looks up in `from` (Committer.submit's `readAhead`). */
export interface ReadAheadKeys {
  from: ReadAhead;
  keys: string[];
}

/** What a unit says, when it is submitted, of an event it will append (Committer.submit's `appends`). */
export type AppendAhead = Pick<EventRecord, "type" | "data" | "actor">;

/** What of other tables to read ahead of a batch for the events its units will append (Committer.readAheadOfAppends). */
export type AppendsReadAhead = (events: AppendAhead[]) => ReadAheadKeys | undefined;

/** What one unit of a batch says it looks up (Committer.submit's options). */
export interface UnitReads {
  lookups: string[] | undefined;
  readAhead: ReadAheadKeys | ReadAheadKeys[] | undefined;
  appends: AppendAhead[] | undefined;
}

/**
 * Reads the events and other rows the units of a batch look up, at once, before they run
 * (EventStatements.prefetch, ReadAhead.prefetch), one read after the other on the writer; those
 * given as statements (ReadAhead.batchRead) together, in one round trip. `appendsReadAheads` name
 * what to read for the events the units will append. Undefined when nothing is read.
 */
export function readBatchAhead(
  db: Db,
  events: EventStatements,
  units: UnitReads[],
  appendsReadAheads: AppendsReadAhead[],
  assumeAbsent: boolean,
): Promise<void> | undefined {
  const ids: string[] = [];
  const others = new Map<ReadAhead, string[]>();
  const add = (readAhead: ReadAheadKeys) => {
    const keys = others.get(readAhead.from) ?? [];
    for (const key of readAhead.keys) keys.push(key);
    others.set(readAhead.from, keys);
  };
  const appends: AppendAhead[] = [];
  for (const unit of units) {
    if (unit.lookups) for (const id of unit.lookups) ids.push(id);
    if (Array.isArray(unit.readAhead)) unit.readAhead.forEach(add);
    else if (unit.readAhead) add(unit.readAhead);
    if (unit.appends) for (const event of unit.appends) appends.push(event);
  }
  if (appends.length > 0)
    for (const readAhead of appendsReadAheads) {
      const keys = readAhead(appends);
      if (keys) add(keys);
    }
  const reads: (() => Promise<void> | undefined)[] = [];
  if (ids.length > 0) reads.push(() => events.prefetch(ids, assumeAbsent));
  const readAheadAll = db.readAheadAll?.bind(db);
  const together: BatchRead[] = [];
  for (const [from, keys] of others) {
    if (keys.length === 0) continue;
    const read = readAheadAll && from.batchRead?.(keys, assumeAbsent);
    if (read) together.push(read);
    else reads.push(() => from.prefetch(keys, assumeAbsent));
  }
  if (readAheadAll && together.length > 0)
    reads.push(() => readAheadAll(together.map((r) => [r.sql, r.params])).then((rows) => together.forEach((r, i) => r.take(rows[i]))));
  let chain: Promise<void> | undefined;
  for (const read of reads) chain = chain ? chain.then(read) : read();
  return chain;
}
