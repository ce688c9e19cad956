// Who reads a timer's input, on a real owner reached over the real transport: a timer's input is
// its action's work and is read as the action's `action.*` and `timer.*` events are (admins, the
// executors that may host its plugin, the principals its `read` names), whoever set the timer.
// Principals (an admin, the plugin's executor, another plugin's executor, the client that set the
// timers, another client of the same space, a client `read` names, a client of another space) ×
// GetTimer, ListTimers, PauseTimer and ResumeTimer over gRPC, and the console's API (Connect,
// binary, HTTP/1.1, as the page calls it).
//
// @module-tag postgres

import { Code, ConnectError, createClient as createRpcClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import type { JsonObject } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TimeService, type Timer } from "@chronolog/sdk/gen/chronolog/v1/time_pb";
import { createClient, type ChronologClient } from "../sdk/ts/src/client.js";
import { startTestOwner } from "./helpers/owner.js";

const principals = {
  ops: { token: "timer-read-admin-token-0123", role: "admin" },
  "shop-worker": { token: "timer-read-shop-worker-0123", role: "executor", plugins: ["shop"], assert: { in: ["*"] } },
  "mail-worker": { token: "timer-read-mail-worker-0123", role: "executor", plugins: ["mail"], assert: { in: ["*"] } },
  web: { token: "timer-read-web-client-01234", role: "client", actor: { in: "space:acme", id: "user:ana" } },
  kiosk: { token: "timer-read-kiosk-client-0123", role: "client", actor: { in: "space:acme", id: "user:ben" } },
  auditor: { token: "timer-read-auditor-token-012", role: "client", actor: { in: "space:acme" } },
  beta: { token: "timer-read-beta-client-01234", role: "client", actor: { in: "space:beta" } },
} as const;
type Name = keyof typeof principals;
const names = Object.keys(principals) as Name[];

/** What each principal reads of a timer of `shop.charge` in space:acme: all of its input, it without `card` (private), none (withheld), or not the timer (another space). */
type Sight = "whole" | "public" | "withheld" | "hidden";
const sight: Record<Name, Sight> = {
  ops: "whole",
  "shop-worker": "whole",
  "mail-worker": "withheld",
  web: "withheld", // it set them: no exception for the timer's actor
  kiosk: "withheld",
  auditor: "public",
  beta: "hidden",
};

const shopManifest = (read: string[]) => ({
  name: "shop",
  actions: { charge: { allow: ["*"], read, privateFields: ["card"] } },
});

const delayInput = { order_id: "o-1", amount: 5, card: "4242" };
const scheduleInput = { order_id: "o-2", amount: 7, card: "4343" };

/** The input `timer` should show to a principal of sight `s`, given the whole input. */
function shown(s: Sight, whole: JsonObject): { input: JsonObject; inputWithheld: boolean } {
  if (s === "withheld") return { input: {}, inputWithheld: true };
  if (s === "public") {
    const { card: _card, ...rest } = whole;
    return { input: rest, inputWithheld: false };
  }
  return { input: whole, inputWithheld: false };
}

describe("a timer's input is read as its action's events are", () => {
  let owner: Awaited<ReturnType<typeof startTestOwner>>;
  let delayId = "";
  const timerId = "weekly-o-2";
  const sdk = (name: Name): ChronologClient => createClient({ url: owner.url, token: principals[name].token });
  /** TimeService as the console's page reaches it: Connect, binary, HTTP/1.1, the bearer token. */
  const consoleTime = (name: Name): Client<typeof TimeService> => {
    const bearer: Interceptor = (next) => (req) => {
      req.header.set("authorization", `Bearer ${principals[name].token}`);
      return next(req);
    };
    return createRpcClient(TimeService, createConnectTransport({ baseUrl: owner.url, httpVersion: "1.1", useBinaryFormat: true, interceptors: [bearer] }));
  };
  const inputOf = (t: Timer) => ({ input: (t.input ?? {}) as JsonObject, inputWithheld: t.inputWithheld });
  const listed = async (name: Name) => {
    const all: Timer[] = [];
    for await (const t of sdk(name).listTimers({ pageSize: 1 })) all.push(t); // a page per timer
    return all;
  };

  beforeAll(async () => {
    owner = await startTestOwner({ config: { principals: names.map((name) => ({ name, ...principals[name] })) } as never });
    await sdk("ops").registerPlugin(shopManifest(["auditor"]));
    const web = sdk("web");
    ({ delayId } = await web.delay("shop.charge", delayInput, { intervalMs: 3_600_000 }, "unbounded"));
    const set = await web.schedule("shop.charge", scheduleInput, { everyMs: 3_600_000 }, { timerId });
    // Schedule answers with the timer as the request set it: the caller's own input.
    expect(inputOf(set)).toEqual({ input: scheduleInput, inputWithheld: false });
  });
  afterAll(async () => {
    await owner?.close();
  });

  it.each(names)("GetTimer over gRPC as %s", async (name) => {
    for (const [id, whole] of [
      [delayId, delayInput],
      [timerId, scheduleInput],
    ] as const) {
      const got = await sdk(name)
        .getTimer(id, { previewCount: 1 })
        .catch((e: unknown) => ConnectError.from(e));
      if (sight[name] === "hidden") {
        expect((got as ConnectError).code, `${name} ${id}`).toBe(Code.NotFound);
        continue;
      }
      expect(got, `${name} ${id}`).not.toBeInstanceOf(ConnectError);
      const timer = got as Timer;
      // The timer itself is there for everyone reaching its space; only its input follows the rule.
      expect(timer.action).toBe("shop.charge");
      expect(timer.actor).toMatchObject({ id: "user:ana", in: "space:acme" });
      expect(timer.nextDue).toBeDefined();
      expect(inputOf(timer), `${name} ${id}`).toEqual(shown(sight[name], whole));
    }
  });

  it.each(names)("ListTimers over gRPC as %s, page after page", async (name) => {
    const all = await listed(name);
    if (sight[name] === "hidden") {
      expect(all).toEqual([]);
      return;
    }
    expect(all.map((t) => t.id).sort()).toEqual([delayId, timerId].sort());
    for (const t of all) expect(inputOf(t), `${name} ${t.id}`).toEqual(shown(sight[name], t.id === delayId ? delayInput : scheduleInput));
  });

  it.each(names)("the console's API (Connect) as %s: ListTimers and GetTimer as over gRPC", async (name) => {
    const time = consoleTime(name);
    const page = await time.listTimers({ pageSize: 10 });
    const got = await time.getTimer({ timerId: delayId }).catch((e: unknown) => ConnectError.from(e));
    if (sight[name] === "hidden") {
      expect(page.timers).toEqual([]);
      expect((got as ConnectError).code).toBe(Code.NotFound);
      return;
    }
    expect(page.timers.map((t) => inputOf(t))).toEqual(page.timers.map((t) => shown(sight[name], t.id === delayId ? delayInput : scheduleInput)));
    expect(page.timers).toHaveLength(2);
    expect(inputOf((got as { timer: Timer }).timer)).toEqual(shown(sight[name], delayInput));
  });

  it("PauseTimer and ResumeTimer answer with the timer as the caller may read it", async () => {
    // Every client of the space may manage the timer (the action's allow is "*"), but reads its input only by the rule.
    for (const name of ["kiosk", "auditor", "ops"] as const) {
      const paused = await sdk(name).pauseTimer(timerId, { note: `by ${name}` });
      expect(paused.timer.paused).toBe(true);
      expect(inputOf(paused.timer), name).toEqual(shown(sight[name], scheduleInput));
      const resumed = await sdk(name).resumeTimer(timerId, { note: `by ${name}` });
      expect(resumed.timer.paused).toBe(false);
      expect(inputOf(resumed.timer), name).toEqual(shown(sight[name], scheduleInput));
    }
  });

  it("the rule reads the manifest as registered now: naming the clients in read lets the one that set a timer read it back", async () => {
    const ops = sdk("ops");
    await ops.registerPlugin(shopManifest(["auditor", "role:client"]));
    try {
      for (const name of ["web", "kiosk"] as const) {
        expect(inputOf(await sdk(name).getTimer(delayId)), name).toEqual(shown("public", delayInput));
      }
      // Another plugin's executor is no client: still withheld.
      expect(inputOf(await sdk("mail-worker").getTimer(delayId))).toEqual(shown("withheld", delayInput));
    } finally {
      await ops.registerPlugin(shopManifest(["auditor"]));
    }
    expect(inputOf(await sdk("web").getTimer(delayId))).toEqual(shown("withheld", delayInput));
  });
});
