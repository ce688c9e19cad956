// The flow controls in the command line's listings, as real processes against an owner: a
// timer's cancel_on in `chronolog timers`, processors' limits with their rate waits and debounced
// bursts in `chronolog cursors`, actions' slots and rate waits in `chronolog actions`, every declared
// limit in `chronolog limits`.
//
// @module-tag serial
// @module-tag sqlite-only

import { afterEach, describe, expect, it } from "vitest";
import { createClient } from "../sdk/ts/src/client.js";
import { manifestOf } from "../sdk/ts/src/plugin.js";
import { cli } from "./helpers/cli.js";
import { limitsPlugin } from "./helpers/limits-plugin.js";
import { startTestOwner } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/** The table's row whose first cells match `cells` (split on two spaces or more). */
function row(stdout: string, ...cells: string[]): string[] | undefined {
  return stdout
    .trim()
    .split("\n")
    .map((line) => line.split(/ {2,}/))
    .find((r) => cells.every((c, i) => r[i] === c));
}

describe("flow controls in the CLI's listings", () => {
  it("timers shows what cancels a delay; limits and cursors show the declared limits, the rate waits and the debounced bursts", async () => {
    const owner = await startTestOwner();
    cleanups.push(() => owner.close());
    const client = createClient({ url: owner.url });
    await client.registerPlugin(manifestOf(limitsPlugin()));

    const [delay] = await client.delayBatch([
      {
        action: "limits.ping",
        input: { n: 1, order: "o-1" },
        when: { at: Date.now() + 3_600_000 },
        overdue: "unbounded",
        cancelOn: [{ type: "work.queued", match: { "data.order": "input.order" } }],
      },
    ]);
    const timers = await cli(["--url", owner.url, "timers"]);
    expect(timers.code).toBe(0);
    expect(timers.stdout.split("\n")[0]).toMatch(/^ID\s+KIND\s+ACTION\s+WHEN\s+NEXT DUE\s+OCCURRENCES\s+CHAIN\s+CANCEL ON$/);
    expect(row(timers.stdout, delay.delayId)?.at(-1)).toBe("work.queued (data.order = input.order)");

    const limits = await cli(["--url", owner.url, "limits"]);
    expect(limits.code).toBe(0);
    expect(row(limits.stdout, "action", "limits.charge")?.[2]).toBe("1 per input.customer, 3 in all");
    expect(row(limits.stdout, "action", "limits.ping")?.[2]).toBe("rate 3 per 10 s (burst 3)");
    expect(row(limits.stdout, "processor", "limits.settle")?.[2]).toBe("debounce 2 s by data.doc, at most 3 s");
    expect(row(limits.stdout, "processor", "limits.work")?.[2]).toBe("2 per data.customer, 6 in all");

    const actions = await cli(["--url", owner.url, "actions"]);
    expect(actions.code).toBe(0);
    expect(row(actions.stdout, "limits.charge")).toEqual(["limits.charge", "0", "0", "-", "1 per input.customer, 3 in all"]);
    expect(row(actions.stdout, "limits.ping")).toEqual(["limits.ping", "0", "0", "0 (0.0 s), 0 now", "rate 3 per 10 s (burst 3)"]);

    // A burst of 3 changes of one document: held until 2 s of quiet, then one delivery standing for 3.
    await client.emitBatch([1, 2, 3].map((i) => ({ type: "doc.changed", data: { doc: "d", i } })));
    const cursors = () => cli(["--url", owner.url, "cursors"]);
    const held = await cursors();
    expect(held.stdout.split("\n")[0]).toMatch(/PAUSED\s+RATE WAITS\s+DEBOUNCED\s+LIMITS$/);
    // Held, or already delivered when the CLI took longer than the quiet to start (a busy machine).
    expect(row(held.stdout, "limits.settle")?.slice(8)).toEqual([
      "-",
      expect.stringMatching(/^(3 held, 0 for 0|0 held, 1 for 3)$/),
      "debounce 2 s by data.doc, at most 3 s",
    ]);
    let settled: string[] | undefined;
    await until(async () => {
      settled = row((await cursors()).stdout, "limits.settle");
      return settled?.[9] === "0 held, 1 for 3";
    }, "the burst's delivery");
    expect(row((await cursors()).stdout, "limits.work")?.slice(8)).toEqual(["-", "-", "2 per data.customer, 6 in all"]);
  });
});
