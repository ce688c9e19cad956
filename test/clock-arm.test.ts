// The owner's one clock (server/src/time/clock-arm.ts) on a ManualClock, with the timer index
// and the ring played by the test: when it arms, for which moment, and how a ring spaces the next.
import { describe, expect, it } from "vitest";
import { ManualClock } from "../server/src/clock.js";
import { createLogger } from "../server/src/logger.js";
import { ClockArm } from "../server/src/time/clock-arm.js";

const T0 = Date.UTC(2026, 2, 1, 9);

/** A clock over an index of due moments the test edits; each ring waits until the test ends it. */
function clockArm(lookaheadMs: number) {
  const clock = new ManualClock(T0);
  const due: number[] = [];
  const rings: (() => void)[] = [];
  const arm = new ClockArm({
    clock,
    timers: clock,
    lookaheadMs,
    earliestDue: () => (due.length === 0 ? null : Math.min(...due)),
    ring: () => new Promise<void>((resolve) => rings.push(resolve)),
    logger: createLogger("silent"),
  });
  /** Ends the ring in progress and lets its re-arm run. */
  const endRing = async () => {
    rings.shift()?.();
    await new Promise((r) => setImmediate(r));
  };
  return { clock, due, rings, arm, endRing };
}

describe("the owner's clock", () => {
  it("arms the lookahead before the earliest due moment, and after a ring spaces the next by a fifth of the lookahead", async () => {
    const { clock, due, rings, arm, endRing } = clockArm(50);
    due.push(T0 + 60_000);
    arm.start();
    expect(clock.armed()).toEqual([{ atMs: T0 + 60_000 - 50, delayMs: 60_000 - 50 }]);
    clock.set(T0 + 60_000 - 50);
    expect(rings).toHaveLength(1);
    due.splice(0, 1, T0 + 60_000 + 5); // the ring claimed the first; the next is already inside the lookahead
    await endRing();
    expect(clock.armed()).toEqual([{ atMs: T0 + 60_000 - 40, delayMs: 10 }]); // spaced: the ring began 10 ms before
  });

  it("a timer set inside the lookahead by a commit of the ring's batch, told after the spaced re-arm read it, is armed at once", async () => {
    const { clock, due, rings, arm, endRing } = clockArm(50);
    due.push(T0 + 60_000);
    arm.start();
    clock.set(T0 + 120_000 - 11); // the armed moment passed (its timer paused meanwhile: the ring claims nothing)
    expect(rings).toHaveLength(1);
    due.splice(0, 1, T0 + 60_000); // resumed in the ring's batch: its missed moment is due again
    await endRing(); // the re-arm reads it and spaces it...
    expect(clock.armed()).toEqual([{ atMs: T0 + 120_000 - 1, delayMs: 10 }]);
    arm.changed(T0 + 60_000); // ...then the resume's commit tells the clock
    expect(clock.armed()).toEqual([{ atMs: T0 + 120_000 - 11, delayMs: 0 }]);
  });

  it("a timer set after a ring, due past the lookahead, leaves the spacing as it is", async () => {
    const { clock, due, arm, endRing } = clockArm(250);
    due.push(T0 + 1_000);
    arm.start();
    clock.set(T0 + 750);
    due.splice(0, 1, T0 + 1_010);
    await endRing();
    expect(clock.armed()).toEqual([{ atMs: T0 + 770, delayMs: 20 }]);
    due.push(T0 + 1_010);
    arm.changed(T0 + 1_010); // 10 ms past the lookahead
    expect(clock.armed()).toEqual([{ atMs: T0 + 770, delayMs: 20 }]);
  });
});
