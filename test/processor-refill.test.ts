// A processor's reader (server/src/processors/reader.ts) where the log's reads are round trips
// (PostgreSQL): a key past its share of memory is read again without blocking, and the key takes
// what came on a later turn, with what the reader read meanwhile still to come.
import { describe, expect, it } from "vitest";
import type { ProcessorSpec } from "../server/src/processors/declaration.js";
import type { AckFloor } from "../server/src/processors/floor.js";
import { KeyQueues } from "../server/src/processors/key-limits.js";
import { LogReader } from "../server/src/processors/reader.js";
import type { BudgetedRows, EventRecord, EventStatements } from "../server/src/store/events.js";

const event = (seq: number, key: string): EventRecord => ({ seq, id: `e${seq}`, type: "job.queued", data: { key }, cause: "", actor: null, at: 0 });

/** A reader of one processor (key `data.key`, one at a time) over `log`, each read of it answered when `answer` is called. */
function setup() {
  const log: EventRecord[] = [];
  /** Reads sent and not answered, in order: each answers with the log as it was when sent. */
  const out: (() => void)[] = [];
  const queues = new KeyQueues(1, "queue");
  const spec = { name: "jobs.work", on: null, where: () => true, keyOf: (e: EventRecord) => String(e.data.key) } as unknown as ProcessorSpec;
  const reader = new LogReader({
    spec,
    events: {} as EventStatements, // every read goes through readLog
    tail: { readWithin: () => undefined }, // nothing in memory
    floor: { read: () => undefined, pending: 0 } as unknown as AckFloor,
    queues,
    head: () => log.length,
    passed: () => undefined,
    readLog: (afterSeq, limit) => {
      const rows = log.filter((e) => e.seq > afterSeq).slice(0, limit);
      const answer: BudgetedRows = { events: rows, bytes: 0, cut: rows.length === limit };
      return new Promise((resolve) => out.push(() => resolve(answer)));
    },
  });
  /** Answers read `i` of those out (0: the oldest), then lets the reader take it. */
  const answer = async (i = 0) => {
    out.splice(i, 1)[0]();
    await new Promise((r) => setImmediate(r));
    reader.read();
  };
  const delivered: number[] = [];
  /** Takes (and finishes) up to `n` events, in the order the queues hand them out. */
  const take = (n: number) => {
    for (let i = 0; i < n; i++) {
      const next = queues.take();
      if (!next) return;
      delivered.push(next.seq);
      queues.release(queues.takenKey);
      reader.released(next);
    }
  };
  const append = (from: number, to: number) => {
    for (let seq = from; seq <= to; seq++) log.push(event(seq, "hot"));
  };
  return { reader, out, answer, take, append, delivered, queues };
}

describe("a processor's reads again of a key past its share, without blocking", () => {
  it("takes a read again that came after the reader read on, then the events the reader read meanwhile: each once, in order", async () => {
    const { reader, out, answer, take, append, delivered } = setup();
    append(1, 80);
    reader.read();
    await answer(); // 1-64 held, 65-80 left in the log (the key holds 64)
    take(40); // 24 left: the key runs low
    reader.read(); // its read again is sent (65-80: the log as it is now)
    expect(out).toHaveLength(1);
    append(81, 100);
    reader.read(); // the reader reads on: 81-100, the key's, left in the log too
    expect(out).toHaveLength(2);
    reader.read();
    expect(out, "no second read again of a key whose read is out").toHaveLength(2);
    await answer(1); // the reader's own read first: 81-100 left in the log
    await answer(); // then the read again, sent before the reader read on: 65-80 taken, 81-100 still to read again
    for (let round = 0; round < 10 && delivered.length < 100; round++) {
      take(100);
      reader.read();
      while (out.length > 0) await answer();
    }
    expect(delivered).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
  });

  it("drops a read again that was out when the reader was reset", async () => {
    const { reader, out, answer, take, append, delivered, queues } = setup();
    append(1, 80);
    reader.read();
    await answer();
    take(40);
    reader.read();
    expect(out).toHaveLength(1);
    queues.clear();
    reader.reset(40); // as a moved cursor does: read again after seq 40
    reader.read();
    expect(out).toHaveLength(2);
    await answer(1); // 41-80 read anew
    expect(queues.size).toBe(40);
    await answer(); // the read again sent before the reset: dropped, nothing of it held
    expect(queues.size).toBe(40);
    for (let round = 0; round < 10 && delivered.length < 80; round++) {
      take(100);
      reader.read();
      while (out.length > 0) await answer();
    }
    expect(delivered).toEqual(Array.from({ length: 80 }, (_, i) => i + 1));
  });
});
