// A standby's view of the log's head on PostgreSQL (CHRONOLOG_TEST_STORE=postgres): the leader's
// commits tell it by their notification, one per commit and only once committed; its poll finds a
// head no notification told. The owners' reads and watches on a standby: standby-reads.test.ts.
//
// @module-tag postgres

import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../server/src/clock.js";
import { Committer } from "../server/src/store/committer.js";
import { eventStatements } from "../server/src/store/events.js";
import type { HeadFollower } from "../server/src/store/postgres/head-follower.js";
import { connectPostgres, type PostgresDatabase } from "../server/src/store/postgres/open.js";
import { connectNative, endNative } from "../server/src/store/postgres/pg-db.js";
import { onPostgres, tempDir, testDatabase } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

const opened: { close(): void }[] = [];
afterEach(() => {
  for (const o of opened.splice(0)) o.close();
});

const event = (id: string) => ({ id, type: "test.happened", data: {}, cause: "", actor: null });

/** A leader's store and committer on a new database, and a standby's follower of its head (`pollMs`), started. */
async function leaderAndFollower(pollMs: number): Promise<{ url: string; committer: Committer; heads: number[]; follower: HeadFollower }> {
  const url = testDatabase(tempDir("chronolog-head-"));
  const leading: PostgresDatabase = connectPostgres(url, { instanceId: "lead1", advertiseUrl: "http://127.0.0.1:1", leaseMs: 30_000 });
  opened.push(leading);
  expect(await leading.lease.tryTake()).toMatchObject({ leading: true });
  const store = leading.open(
    () => undefined,
    () => undefined,
  );
  const committer = new Committer(store.db, new ManualClock(Date.UTC(2026, 0, 1)), eventStatements(store.db), { transactions: store.transactions });
  const waiting = connectPostgres(url, { instanceId: "stand1", advertiseUrl: "http://127.0.0.1:2", leaseMs: 30_000 });
  opened.push(waiting);
  const heads: number[] = [];
  const follower = waiting.followHead({
    pollMs,
    timeoutMs: 10_000,
    onHead: (head) => heads.push(head),
    onPlugins: () => undefined,
    onTrouble: () => undefined,
  });
  opened.push(follower);
  follower.start();
  await until(() => heads.length === 1, "the follower's first poll");
  return { url, committer, heads, follower };
}

describe.runIf(onPostgres)("a standby's view of the log's head", () => {
  it("is told each commit's head by the commit's notification: one per commit, none for a batch that wrote nothing", async () => {
    const { committer, heads } = await leaderAndFollower(3_600_000); // no poll after the first: only notifications tell it
    expect(heads).toEqual([0]);
    await Promise.all(["a", "b", "c"].map((id) => committer.submit((tx) => tx.append(event(id)))));
    await until(() => heads.length === 2, "the first commit's notification");
    await Promise.all(["d", "e"].map((id) => committer.submit((tx) => tx.append(event(id)))));
    await until(() => heads.length === 3, "the second commit's notification");
    await committer.submit(() => "nothing written").catch(() => undefined);
    await expect(
      committer.submit(() => {
        throw new Error("undone");
      }),
    ).rejects.toThrow("undone");
    await Promise.all(["f"].map((id) => committer.submit((tx) => tx.append(event(id)))));
    await until(() => heads.length === 4, "the third commit's notification");
    expect(heads).toEqual([0, 3, 5, 6]);
  });

  it("finds by its poll a head no notification told (a commit the leader made without one)", async () => {
    const { url, heads } = await leaderAndFollower(50);
    const other = connectNative(url, "chronolog tests");
    opened.push({ close: () => endNative(other) });
    other.querySync(
      "INSERT INTO events (seq, id, type, data, cause, actor, at) VALUES (1, 'x', 'test.happened', '{}', '', NULL, 0), (2, 'y', 'test.happened', '{}', '', NULL, 0)",
    );
    await until(() => heads.at(-1) === 2, "the poll finding head 2");
    expect(heads.filter((head) => head !== 0 && head !== 2)).toEqual([]);
  });
});
