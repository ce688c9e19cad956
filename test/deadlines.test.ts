// The ack deadlines of a processor's tries under one timer (server/src/processors/deadlines.ts):
// each item is told once, when due, in order; moved or removed ones are not told early or at all;
// an answered item leaves the timer alone. Through the owner and real executors (ack timeouts,
// progress, grace): delivery-timeouts.test.ts.
import { afterEach, describe, expect, it, vi } from "vitest";
import { Deadlines, type DueLinks } from "../server/src/processors/deadlines.js";

interface Item extends DueLinks {
  name: string;
}
const item = (name: string): Item => ({ name, dueAt: 0, prevDue: null, nextDue: null, due: false });

afterEach(() => vi.useRealTimers());

describe("deadlines under one timer", () => {
  it("tell each item once when due, earliest first, whatever the order they were set in; removed ones never", () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
    const told: string[] = [];
    const deadlines = new Deadlines<Item>((i) => told.push(`${i.name}@${Math.round(performance.now())}`));
    const [a, b, c, d] = ["a", "b", "c", "d"].map(item);
    deadlines.set(a, 100);
    deadlines.set(b, 300);
    deadlines.set(c, 50); // before the head: the timer is brought forward
    deadlines.set(d, 200);
    deadlines.remove(b);
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(1_000);
    expect(told).toEqual(["c@50", "a@100", "d@200"]);
    expect([a, b, c, d].some((i) => i.due)).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("move an item set again (a progress) to its new moment; items answered before their deadline leave the timer as it was", () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
    const told: string[] = [];
    const deadlines = new Deadlines<Item>((i) => told.push(`${i.name}@${Math.round(performance.now())}`));
    const items = Array.from({ length: 1_000 }, (_, i) => item(`t${i}`));
    for (const i of items) deadlines.set(i, 100);
    vi.advanceTimersByTime(10);
    deadlines.set(items[0], 500); // extended: now the last
    for (const i of items.slice(1, 999)) deadlines.remove(i); // answered
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(200);
    expect(told).toEqual(["t999@100"]);
    vi.advanceTimersByTime(400);
    expect(told).toEqual(["t999@100", "t0@510"]);
  });

  it("an item told may set others (the next try): they are told at their own moment; clear forgets all and stops the timer", () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
    const told: string[] = [];
    const next = item("next");
    const deadlines = new Deadlines<Item>((i) => {
      told.push(`${i.name}@${Math.round(performance.now())}`);
      if (i.name === "first") deadlines.set(next, 100);
    });
    deadlines.set(item("first"), 100);
    vi.advanceTimersByTime(250);
    expect(told).toEqual(["first@100", "next@200"]);
    deadlines.set(item("late"), 100);
    deadlines.clear();
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(1_000);
    expect(told).toHaveLength(2);
  });
});
