// The size of retention's removal units by rows (server/src/log/unit-size.ts): as many events as
// hold the owner's thread a few ms at the last unit's pace, at most batch_events.
import { describe, expect, it } from "vitest";
import { UnitSize, unitTargetMs } from "../server/src/log/unit-size.js";

describe("removal unit size", () => {
  it("starts at batch_events and stays there while units are quick", () => {
    const size = new UnitSize(100);
    expect(size.events).toBe(100);
    size.took(100, 1.5);
    expect(size.events).toBe(100);
  });

  it("shrinks at once to what fits in the target after a slow unit, never below ten events", () => {
    const size = new UnitSize(100);
    size.took(100, 20); // 0.2 ms an event: 4 ms hold 20
    expect(size.events).toBe(Math.floor(unitTargetMs / 0.2));
    size.took(20, 400);
    expect(size.events).toBe(10);
  });

  it("grows back by half again a unit, up to batch_events", () => {
    const size = new UnitSize(100);
    size.took(100, 400);
    expect(size.events).toBe(10);
    const seen: number[] = [];
    for (let i = 0; i < 8; i++) {
      size.took(size.events, 0.5);
      seen.push(size.events);
    }
    expect(seen).toEqual([15, 23, 35, 53, 80, 100, 100, 100]);
  });

  it("keeps a batch_events below ten as the limit", () => {
    const size = new UnitSize(5);
    size.took(5, 1_000);
    expect(size.events).toBe(5);
  });
});
