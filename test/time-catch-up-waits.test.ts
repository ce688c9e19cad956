// Catch-up claims on PostgreSQL: a timer owing other moments than its next due one (its owner's
// clock jumped ahead, or the owner was stopped while its moments came due) has each owed moment's
// occurrence read ahead with the due timers, so its claim writes them without waiting for a round
// trip (chronolog_store_waits_total), whatever its overlap policy; a moment claimed before is not
// made again, each owed moment is made once, in order, and the log keeps the timers' order.

// @module-tag postgres

import { describe, expect, it } from "vitest";
import { ManualClock } from "../server/src/clock.js";
import { occurrenceId } from "../server/src/time/occurrence-ids.js";
import { onPostgres, ownerRows, queryStore, tempDir } from "./helpers/owner.js";
import { MIN, T0, cleanUpAfterEach, harness, type Harness } from "./helpers/schedule-harness.js";
import { eventsOf } from "./helpers/log-snapshot.js";
import { until } from "./helpers/until.js";

cleanUpAfterEach();

/** The round trips the owner at `url` waited for so far (chronolog_store_waits_total, every connection). */
async function waits(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return [...text.matchAll(/^chronolog_store_waits_total\{[^}]*\} (\d+)$/gm)].reduce((sum, [, n]) => sum + Number(n), 0);
}

/** Each timer of `ids`: its occurrences' due moments (minutes after T0) and statuses, by due moment, as "2:completed,3:skipped". */
async function made(h: Harness, ids: string[]): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const id of ids)
    out[id] = (await ownerRows(h, "SELECT due_ms, status FROM timer_occurrences WHERE timer_id = ? ORDER BY due_ms, id", [id]))
      .map((o) => `${(Number(o.due_ms) - T0) / MIN}:${o.status}`)
      .join();
  return out;
}

const window = { catchUp: "allWithinWindow" as const, catchUpWindowMs: 10 * MIN };

/**
 * Interval schedules every minute of `jobs.run`, catching up all moments within 10 minutes: 6
 * each with overlap "allow", "skip" and "bufferOne"; and 2 catching up the latest moment only.
 */
async function schedules(h: Harness): Promise<{ allow: string[]; skip: string[]; buffer: string[]; latest: string[] }> {
  const named = (prefix: string, n: number) => Array.from({ length: n }, (_, k) => `${prefix}-${k}`);
  const ids = { allow: named("allow", 6), skip: named("skip", 6), buffer: named("buffer", 6), latest: named("latest", 2) };
  for (const id of ids.allow) await h.client.schedule("jobs.run", { id }, { everyMs: MIN }, { timerId: id, policy: window });
  for (const id of ids.skip) await h.client.schedule("jobs.run", { id }, { everyMs: MIN }, { timerId: id, policy: { ...window, overlap: "skip" } });
  for (const id of ids.buffer) await h.client.schedule("jobs.run", { id }, { everyMs: MIN }, { timerId: id, policy: { ...window, overlap: "bufferOne" } });
  for (const id of ids.latest) await h.client.schedule("jobs.run", { id }, { everyMs: MIN }, { timerId: id });
  return ids;
}

/** What each timer holds after its first moment (T0 + 1 min) and a catch-up of moments 2 to 6 (`claimedBefore`: moments made before the catch-up, by timer). */
function expected(ids: Awaited<ReturnType<typeof schedules>>, claimedBefore: Record<string, number> = {}): Record<string, string> {
  const out: Record<string, string> = {};
  const moments = (id: string, statuses: string[]) =>
    ["1:completed", ...[2, 3, 4, 5, 6].map((m, k) => `${m}:${m === claimedBefore[id] ? "completed" : statuses[k]}`)].join();
  for (const id of ids.allow) out[id] = moments(id, ["completed", "completed", "completed", "completed", "completed"]);
  // The first moment claimed runs (a quick action, but still running at the claim): the next ones are skipped, or one buffered.
  for (const id of ids.skip) out[id] = moments(id, ["completed", "skipped", "skipped", "skipped", "skipped"]);
  for (const id of ids.buffer) out[id] = moments(id, ["completed", "completed", "skipped", "skipped", "skipped"]);
  for (const id of ids.latest) out[id] = "1:completed,6:completed";
  return out;
}

describe("catch-up claims on PostgreSQL", () => {
  it.runIf(onPostgres)(
    "a clock fallen five moments behind: 20 schedules of three overlap policies catch up, each moment made once, in order, waiting for no round trip",
    async () => {
      const clock = new ManualClock(T0);
      const h = await harness(clock);
      const ids = await schedules(h);
      const all = Object.values(ids).flat();
      clock.advance(MIN); // the first moment: the statements are prepared
      await until(async () => Object.values(await made(h, all)).every((m) => m === "1:completed"), "the first moments ended");
      const before = await waits(h.owner.url);
      clock.advance(5 * MIN);
      const want = expected(ids);
      await until(async () => JSON.stringify(await made(h, all)) === JSON.stringify(want), "the moments owed made and ended");
      // One a moment each of the 12 skip and bufferOne schedules before (60): the occurrence written answering whether it was new.
      expect(await waits(h.owner.url), "waits for the claims of 112 moments owed").toBeLessThan(before + 10);
      for (const id of ids.allow)
        expect(
          h.calls.filter((c) => c.input.id === id).map((c) => (c.scheduled!.due.getTime() - T0) / MIN),
          `${id}'s calls`,
        ).toEqual([1, 2, 3, 4, 5, 6]);
      // The skips were recorded timer by timer (due, then id), each timer's moments in order.
      const skipped = (await eventsOf(h.client, ["timer.skipped"])).map((e) => `${e.data?.timer_id}@${(Number(e.data?.due_ms) - T0) / MIN}`);
      const byTimer = [...ids.buffer, ...ids.skip].sort().flatMap((id) => (id.startsWith("skip") ? [3, 4, 5, 6] : [4, 5, 6]).map((m) => `${id}@${m}`));
      expect(skipped).toEqual(byTimer);
    },
  );

  it.runIf(onPostgres)(
    "an owner stopped while five moments came due: restarted, it makes each once, in order, not a moment made before, waiting for no round trip more than a start without a catch-up",
    async () => {
      const clock = new ManualClock(T0);
      const dataDir = tempDir();
      let h = await harness(clock, { dataDir });
      const ids = await schedules(h);
      const all = Object.values(ids).flat();
      await h.owner.close();
      // A start with one moment owed (its next due one): what a start and a claim wait for without a catch-up.
      clock.advance(MIN);
      h = await harness(clock, { dataDir });
      await until(async () => Object.values(await made(h, all)).every((m) => m === "1:completed"), "the first moments ended");
      const plain = await waits(h.owner.url);
      await h.owner.close();
      clock.advance(5 * MIN);
      // Moments made before (by a timer of the same id, say): the fourth of allow-0, the third of skip-0.
      const claimedBefore = { "allow-0": 4, "skip-0": 3 };
      for (const [id, m] of Object.entries(claimedBefore)) {
        const due = T0 + m * MIN;
        const oid = occurrenceId(id, due);
        queryStore(
          dataDir,
          `INSERT INTO timer_occurrences (id, timer_id, due_ms, action, input, overdue, status, call_id, claimed_at, updated_at)
           SELECT ?, timer_id, ?, action, input, overdue, 'completed', ?, claimed_at, updated_at FROM timer_occurrences WHERE timer_id = ? LIMIT 1`,
          [oid, due, oid, id],
        );
      }
      h = await harness(clock, { dataDir });
      const want = expected(ids, claimedBefore);
      await until(async () => JSON.stringify(await made(h, all)) === JSON.stringify(want), "the moments owed made and ended");
      // One a moment each of the 12 skip and bufferOne schedules more (about 60): the occurrence written answering whether it was new.
      expect(await waits(h.owner.url), "waits of a start catching up 112 moments").toBeLessThan(plain + 10);
      for (const id of ids.allow)
        expect(
          h.calls.filter((c) => c.input.id === id).map((c) => (c.scheduled!.due.getTime() - T0) / MIN),
          `${id}'s calls after the restart`,
        ).toEqual(id === "allow-0" ? [2, 3, 5, 6] : [2, 3, 4, 5, 6]);
      expect(h.calls.filter((c) => c.input.id === "skip-0").map((c) => (c.scheduled!.due.getTime() - T0) / MIN)).toEqual([2]);
    },
  );
});
