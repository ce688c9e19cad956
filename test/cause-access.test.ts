// Work under a cause is checked against the cause: an executor whose token may host only some
// plugins works only under what those plugins' processors and actions are given (an event of a
// type one of its processors is on, a call of one of its actions); and work under a cause in one
// space reaches that space's timers and those without a space, never another space's (as for
// documents): another space's timer is NOT_FOUND to it, and its id taken.
//
// @module-tag postgres

import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, type ChronologClient } from "../sdk/ts/src/client.js";
import { startTestOwner } from "./helpers/owner.js";

const tokens = {
  admin: "cause-admin-token-0123",
  alice: "cause-alice-token-0123",
  bob: "cause-bob-token-012345",
  worker: "cause-worker-token-0123",
  other: "cause-other-token-01234",
};
const later = { everyMs: 600_000 };

/** The code `p` failed with (undefined: it succeeded). */
async function codeOf(p: Promise<unknown>): Promise<Code | undefined> {
  return p.then(
    () => undefined,
    (e: unknown) => (e instanceof ConnectError ? e.code : Promise.reject(e)),
  );
}

describe("work under a cause", () => {
  let owner: Awaited<ReturnType<typeof startTestOwner>>;
  let as: (token: string) => ChronologClient;
  let ping: { eventId: string; position: number };

  beforeAll(async () => {
    owner = await startTestOwner({
      config: {
        principals: [
          { name: "ops", token: tokens.admin, role: "admin" },
          { name: "alice", token: tokens.alice, role: "client", actor: { in: "space:a" } },
          { name: "bob", token: tokens.bob, role: "client", actor: { in: "space:b" } },
          { name: "cz-worker", token: tokens.worker, role: "executor", plugins: ["cz"] },
          { name: "other-worker", token: tokens.other, role: "executor", plugins: ["other"] },
        ],
      },
    });
    as = (token) => createClient({ url: owner.url, token });
    const admin = as(tokens.admin);
    await admin.registerPlugin({
      name: "cz",
      version: "1",
      events: { "cz.ping": { allow: ["*"] }, "cz.pong": {} },
      actions: { work: { allow: ["*"], read: ["bob"] } }, // bob reads back its timers' inputs
      collections: { note: { allow: ["*"] } },
      processors: { p: { on: ["cz.ping"] } },
    });
    await admin.registerPlugin({ name: "other", version: "1", events: { "other.ping": { allow: ["*"] } } });
    const event = (await as(tokens.alice).emit("cz.ping", { n: 1 })).event!;
    expect(event.actor?.in).toBe("space:a");
    ping = { eventId: event.id, position: 0 };
  });
  afterAll(async () => owner?.close());

  it("an executor whose token may not host the plugin a cause is work of does nothing under it: PERMISSION_DENIED", async () => {
    const other = as(tokens.other);
    const at = (position: number) => ({ cause: { ...ping, position } });
    for (const attempt of [
      () => other.log.emit({ type: "cz.pong", data: { n: 1 }, ...at(1) }),
      () => other.log.emit({ type: "other.ping", data: { n: 1 }, ...at(2) }),
      () => other.collections.getDocument({ collection: "note", id: "n-1", cause: at(3).cause }),
      () => other.collections.createDocument({ collection: "note", doc: { n: 1 }, cause: at(4).cause }),
      () => other.schedule("cz.work", {}, later, at(5)),
      () => other.call("cz.work", {}, at(6)),
    ])
      expect(await codeOf(attempt())).toBe(Code.PermissionDenied);
    const refused = await other.log.emit({ type: "cz.pong", data: { n: 1 }, ...at(1) }).catch((e: ConnectError) => e.rawMessage);
    expect(refused).toMatch(/may not work under cause .*: it is the work of no plugin its token may host$/);
    expect(refused).not.toMatch(/cz\.ping/); // nothing of the cause: it may be another space's
    const pongs = [];
    for await (const e of as(tokens.admin).read({ types: ["cz.pong", "other.ping"] })) pongs.push(e);
    expect(pongs).toEqual([]);
    // The plugin's own executor works under it, as the cause's actor.
    const pong = (await as(tokens.worker).log.emit({ type: "cz.pong", data: { n: 2 }, ...at(7) })).event!;
    expect(pong).toMatchObject({ cause: ping.eventId, actor: { in: "space:a" } });
  });

  it("under a cause in one space another space's timer is NOT_FOUND and its id taken; the cause's own space's timers are reached", async () => {
    const bob = as(tokens.bob);
    await bob.schedule("cz.work", { mine: "bob" }, later, { timerId: "b-timer" });
    await bob.delay("cz.work", { mine: "bob" }, { intervalMs: 600_000 }, "unbounded", { delayId: "b-delay" });
    await as(tokens.alice).schedule("cz.work", { mine: "alice" }, later, { timerId: "a-timer" });
    const worker = as(tokens.worker);
    const at = (position: number) => ({ cause: { ...ping, position } });
    expect(await codeOf(worker.unschedule("b-timer", at(10)))).toBe(Code.NotFound);
    expect(await codeOf(worker.cancelDelay("b-delay", at(11)))).toBe(Code.NotFound);
    expect(await codeOf(worker.pauseTimer("b-timer", at(12)))).toBe(Code.NotFound);
    expect(await codeOf(worker.schedule("cz.work", { hijacked: true }, later, { timerId: "b-timer", ...at(13) }))).toBe(Code.AlreadyExists);
    const bobs = (await bob.time.listTimers({})).timers.map((t) => [t.id, t.input]);
    expect(bobs).toEqual(
      expect.arrayContaining([
        ["b-timer", { mine: "bob" }],
        ["b-delay", { mine: "bob" }],
      ]),
    );
    expect(bobs).toHaveLength(2);
    await worker.unschedule("a-timer", at(14));
    expect((await as(tokens.alice).time.listTimers({})).timers.map((t) => t.id)).not.toContain("a-timer");
  });
});
