// The log's tail in memory (server/src/log/tail.ts): what a reader at the end of the log takes
// instead of reading the store, and when it must read the store instead.
import { describe, expect, it } from "vitest";
import { LogTail } from "../server/src/log/tail.js";
import type { EventRecord } from "../server/src/store/events.js";

const event = (seq: number, type = "t.a", pad = ""): EventRecord => ({ seq, id: `e${seq}`, type, data: { pad }, cause: "", actor: null, at: 0 });
const seqs = (rows: { events: EventRecord[] } | undefined) => rows?.events.map((e) => e.seq);

describe("the log's tail", () => {
  it("reads what follows a seq it holds, of the types asked, up to a limit or a byte budget; further back it sends the reader to the store", () => {
    const tail = new LogTail();
    expect(tail.readWithin(0, 10, 1 << 20, [])).toBeUndefined(); // empty: read the store
    tail.add([event(5), event(6, "t.b"), event(7)]);
    expect(tail.readWithin(3, 10, 1 << 20, [])).toBeUndefined(); // seq 4 is not in it
    expect(seqs(tail.readWithin(4, 10, 1 << 20, []))).toEqual([5, 6, 7]);
    expect(tail.readWithin(4, 10, 1 << 20, [])?.cut).toBe(false);
    expect(seqs(tail.readWithin(5, 10, 1 << 20, ["t.a"]))).toEqual([7]);
    expect(tail.readWithin(4, 2, 1 << 20, [])).toMatchObject({ cut: true, events: [{ seq: 5 }, { seq: 6 }] });
    expect(seqs(tail.readWithin(4, 10, 1, []))).toEqual([5]); // the event that reaches the budget ends the read
    expect(tail.readWithin(7, 10, 1 << 20, [])).toEqual({ events: [], bytes: 0, cut: false }); // at the end
  });

  it("keeps a bounded run of the latest seqs, and starts again after a gap", () => {
    const tail = new LogTail();
    for (let seq = 1; seq <= 20_000; seq += 100) tail.add(Array.from({ length: 100 }, (_, i) => event(seq + i)));
    expect(tail.readWithin(0, 10, 1 << 20, [])).toBeUndefined(); // the oldest are gone
    expect(seqs(tail.readWithin(19_995, 10, 1 << 20, []))).toEqual([19_996, 19_997, 19_998, 19_999, 20_000]);
    tail.add([event(20_005)]); // seqs 20,001-20,004 never came: only what follows the gap is kept
    expect(tail.readWithin(19_999, 10, 1 << 20, [])).toBeUndefined();
    expect(seqs(tail.readWithin(20_004, 10, 1 << 20, []))).toEqual([20_005]);
    const big = new LogTail();
    big.add([event(1, "t.a", "x".repeat(6 << 20)), event(2, "t.a", "x".repeat(6 << 20))]); // 12 MiB: past the byte bound
    expect(big.readWithin(0, 10, 1 << 30, [])).toBeUndefined();
    expect(seqs(big.readWithin(1, 10, 1 << 30, []))).toEqual([2]);
  });

  it("knows when each event it holds became durable, through its evictions and compactions; none for one it no longer holds", () => {
    const tail = new LogTail();
    for (let chunk = 0; chunk < 40; chunk++)
      tail.add(
        Array.from({ length: 1_000 }, (_, i) => event(chunk * 1_000 + i + 1)),
        chunk + 0.5,
      ); // chunk c's events durable at c + 0.5 ms
    expect(tail.durableAtOf(1)).toBeUndefined(); // long evicted
    const kept = tail.readWithin(40_000 - 16_384, 16_384, 1 << 30, [])!;
    expect(kept.events).toHaveLength(16_384);
    for (const { seq } of kept.events) expect(tail.durableAtOf(seq)).toBe(Math.floor((seq - 1) / 1_000) + 0.5);
    expect(tail.durableAtOf(40_000 - 16_384)).toBeUndefined(); // just before the oldest kept
    expect(tail.durableAtOf(40_001)).toBeUndefined(); // not committed yet
    tail.add([event(40_010)], 99); // after a gap only it is kept
    expect(tail.durableAtOf(40_000)).toBeUndefined();
    expect(tail.durableAtOf(40_010)).toBe(99);
  });
});
