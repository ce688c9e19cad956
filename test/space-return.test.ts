// When retention returns the data file's free pages to the disk (server/src/log/space-return.ts):
// not while the free pages are a small share of the file (new events reuse them), and once they
// pass a quarter of it, in bounded steps down to an eighth.
import { describe, expect, it } from "vitest";
import { maxStepPages, minStepPages, SpaceReturn, startShare, stepPages, stepTargetMs, stopShare } from "../server/src/log/space-return.js";

/** A data file of `total` pages, `free` of them free; a step returns pages as SQLite's incremental vacuum does. */
function file(total: number, free: number) {
  const state = { total, free };
  const space = new SpaceReturn({ freePages: () => ({ ...state }) });
  const step = () => {
    const pages = space.next();
    const returned = Math.min(pages, state.free);
    state.free -= returned;
    state.total -= returned;
    return pages;
  };
  return { state, space, step };
}

describe("returning free pages", () => {
  it("keeps free pages while they are at most a quarter of the file", () => {
    const { space, state } = file(10_000, Math.floor(startShare * 10_000));
    expect(space.next()).toBe(0);
    state.free = 1; // a removal's pages, reused by the next events
    expect(space.next()).toBe(0);
  });

  it("past a quarter, returns them in bounded steps until an eighth of the file is free, then keeps them again", () => {
    const { state, step } = file(100_000, 90_000);
    const steps: number[] = [];
    for (let pages = step(); pages > 0; pages = step()) steps.push(pages);
    expect(Math.max(...steps)).toBeLessThanOrEqual(stepPages);
    expect(state.free / state.total).toBeLessThanOrEqual(stopShare);
    expect(state.free / state.total).toBeGreaterThan(stopShare - 0.01); // the last step stops near the mark, not at zero
    expect(state.total).toBeLessThan(15_000);
    // Between the marks (after returning, or freed by a removal since): kept until past a quarter again.
    state.free = Math.floor(0.2 * state.total);
    expect(step()).toBe(0);
    state.free = Math.floor(0.3 * state.total);
    expect(step()).toBeGreaterThan(0);
  });

  it("sizes each step by the last one's time: as many pages as fit in the target, smaller at once, at most half again larger, within its bounds", () => {
    const { space } = file(1_000_000, 900_000);
    expect(space.next()).toBe(stepPages);
    space.took(stepPages, stepTargetMs / 4); // four times as fast as the target: half again larger only
    expect(space.next()).toBe(Math.ceil(stepPages * 1.5));
    space.took(48, stepTargetMs * 4); // four times too slow: a quarter of it at once
    expect(space.next()).toBe(minStepPages); // 12 pages would fit: the floor
    for (let i = 0; i < 20; i++) space.took(space.next(), 0.01); // fast steps grow it to the ceiling, no further
    expect(space.next()).toBe(maxStepPages);
    space.took(maxStepPages, stepTargetMs * 2);
    expect(space.next()).toBe(maxStepPages / 2);
    space.took(0, 100); // a step that returned nothing says nothing of the pace
    expect(space.next()).toBe(maxStepPages / 2);
  });

  it("returns nothing on a store whose free pages cannot be returned", () => {
    expect(new SpaceReturn({ freePages: () => undefined }).next()).toBe(0);
  });
});
