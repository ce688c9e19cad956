// Ids a client chooses (a call id, a delay id, a timer id) are taken by the actor that used them
// first: another actor using one is refused as a taken id, and learns nothing of what the id names
// (its action, input, state, output or moment); nothing runs as that other actor. The actor that
// used the id keeps its idempotent answers.
//
// @module-tag postgres

import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "../sdk/ts/src/client.js";
import { runExecutor, TerminalError, type Executor } from "../sdk/ts/src/executor.js";
import { definePlugin } from "../sdk/ts/src/plugin.js";
import { startTestOwner } from "./helpers/owner.js";

const tokens = { admin: "admin-token-0123456789", acme: "acme-client-token-0123", beta: "beta-client-token-0123", worker: "ids-executor-token-0123" };

describe("ids a client chooses belong to the actor that used them first", () => {
  let owner: Awaited<ReturnType<typeof startTestOwner>>;
  let executor: Executor;
  const runs: { input: unknown; actor: string }[] = [];
  /** Lets the runs of `{ hold: true }` answer. */
  let release = () => {};
  const held = new Promise<void>((resolve) => (release = resolve));
  const as = (token: string) => createClient({ url: owner.url, token });
  const refusal = async (p: Promise<unknown>) => {
    const e = await p.then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(e).toBeInstanceOf(ConnectError);
    return e as ConnectError;
  };

  beforeAll(async () => {
    owner = await startTestOwner({
      config: {
        principals: [
          { name: "ops", token: tokens.admin, role: "admin" },
          { name: "acme-web", token: tokens.acme, role: "client", actor: { in: "space:acme" }, assert: { id: ["user:*"] } },
          { name: "beta-web", token: tokens.beta, role: "client", actor: { in: "space:beta" } },
          { name: "ids-worker", token: tokens.worker, role: "executor", plugins: ["ids"] },
        ],
      },
    });
    executor = runExecutor({
      url: owner.url,
      token: tokens.worker,
      onError: () => {},
      plugins: [
        definePlugin({
          name: "ids",
          actions: {
            work: {
              allow: ["role:client"],
              run: async (ctx, input) => {
                runs.push({ input, actor: `${ctx.actor?.id ?? ""}@${ctx.actor?.in ?? ""}` });
                if (input.hold) await held;
                if (input.fail) throw new TerminalError("asked to fail");
                return { n: input.n ?? 0, secret: "acme's output" };
              },
            },
          },
        }),
      ],
    });
    await executor.ready;
  });
  afterAll(async () => {
    await executor?.stop(0);
    await owner?.close();
  });

  it("a call id: another actor's use is ALREADY_EXISTS saying nothing of the call, and runs nothing; its own actor gets the recorded output", async () => {
    const ana = as(tokens.acme);
    const first = await ana.call("ids.work", { n: 1 }, { callId: "c-1", actor: { id: "user:ana" } });
    expect(first).toMatchObject({ fromLog: false, output: { n: 1, secret: "acme's output" } });
    for (const other of [
      () => as(tokens.beta).call("ids.work", { n: 1 }, { callId: "c-1" }),
      () => as(tokens.beta).call("ids.work", { n: 2 }, { callId: "c-1" }),
      () => ana.call("ids.work", { n: 1 }, { callId: "c-1", actor: { id: "user:bo" } }),
    ]) {
      const e = await refusal(other());
      expect(e.code).toBe(Code.AlreadyExists);
      expect(e.rawMessage).toBe('call id "c-1" is already in use; choose another id');
    }
    expect(await ana.call("ids.work", { n: 1 }, { callId: "c-1", actor: { id: "user:ana" } })).toMatchObject({ fromLog: true, output: { n: 1 } });
    expect(runs.filter((r) => (r.input as { n?: number }).n === 1)).toEqual([{ input: { n: 1 }, actor: "user:ana@space:acme" }]);
  });

  it("a failed call is not run again as its actor by another one; its own actor may run it again", async () => {
    const ana = as(tokens.acme);
    await refusal(ana.call("ids.work", { fail: true }, { callId: "c-2", actor: { id: "user:ana" } }));
    const before = runs.length;
    const e = await refusal(as(tokens.beta).call("ids.work", { fail: true }, { callId: "c-2" }));
    expect([e.code, e.rawMessage]).toEqual([Code.AlreadyExists, 'call id "c-2" is already in use; choose another id']);
    expect(runs.length).toBe(before);
    await refusal(ana.call("ids.work", { fail: true }, { callId: "c-2", actor: { id: "user:ana" } })); // run again, fails again
    expect(runs.slice(before)).toEqual([{ input: { fail: true }, actor: "user:ana@space:acme" }]);
  });

  it("a delay id: another actor's use is ALREADY_EXISTS whatever its request, saying nothing of the delay; its own actor's repeat is answered", async () => {
    const ana = as(tokens.acme);
    const at = Date.now() + 3_600_000;
    const armed = await ana.delay("ids.work", { n: 3 }, { at }, "unbounded", { delayId: "d-1" });
    for (const other of [
      () => as(tokens.beta).delay("ids.work", { n: 3 }, { at }, "unbounded", { delayId: "d-1" }),
      () => as(tokens.beta).delay("ids.work", { n: 4 }, { intervalMs: 60_000 }, "unbounded", { delayId: "d-1" }),
    ]) {
      const e = await refusal(other());
      expect([e.code, e.rawMessage]).toEqual([Code.AlreadyExists, 'delay_id "d-1" is already in use; choose another delay_id']);
    }
    expect(await ana.delay("ids.work", { n: 3 }, { at }, "unbounded", { delayId: "d-1" })).toEqual(armed);
  });

  it("a timer id: another space's runtime timer is neither replaced nor described", async () => {
    const ana = as(tokens.acme);
    await ana.schedule("ids.work", { n: 5 }, { everyMs: 3_600_000 }, { timerId: "t-1" });
    const e = await refusal(as(tokens.beta).schedule("ids.work", { n: 6 }, { everyMs: 60_000 }, { timerId: "t-1" }));
    expect([e.code, e.rawMessage]).toEqual([Code.AlreadyExists, 'timer_id "t-1" is already in use; choose another timer_id']);
    const { timer } = await as(tokens.admin).time.getTimer({ timerId: "t-1" });
    expect(timer?.actor?.in).toBe("space:acme");
    expect(timer?.input).toEqual({ n: 5 });
  });

  it("a call still running, a DelayBatch, a cancelled delay, a schedule's id: another actor gets the same refusal, and joins, arms and learns nothing", async () => {
    const ana = as(tokens.acme);
    const beta = as(tokens.beta);
    const inUse = (field: string, id: string) => [
      Code.AlreadyExists,
      `${field} ${JSON.stringify(id)} is already in use; choose another ${field === "call id" ? "id" : field}`,
    ];
    const running = ana.call("ids.work", { hold: true }, { callId: "c-running", actor: { id: "user:ana" } });
    const before = runs.length;
    const joined = await refusal(beta.call("ids.work", { hold: true }, { callId: "c-running" }));
    expect([joined.code, joined.rawMessage]).toEqual(inUse("call id", "c-running"));
    release();
    expect((await running).output).toMatchObject({ secret: "acme's output" });
    expect(runs.length).toBe(before + 1); // the other actor's call neither joined nor ran
    const hour = { intervalMs: 3_600_000 };
    await ana.delay("ids.work", { n: 7 }, hour, "unbounded", { delayId: "d-cancelled" });
    await ana.time.cancelDelay({ delayId: "d-cancelled" });
    await ana.schedule("ids.work", { n: 8 }, { everyMs: 3_600_000 }, { timerId: "t-as-delay" });
    for (const id of ["d-cancelled", "t-as-delay"]) {
      const e = await refusal(beta.delay("ids.work", { n: 7 }, hour, "unbounded", { delayId: id }));
      expect([e.code, e.rawMessage], id).toEqual(inUse("delay_id", id));
    }
    const batch = await refusal(
      beta.delayBatch([
        { action: "ids.work", input: {}, when: hour, overdue: "unbounded", delayId: "d-beta" },
        { action: "ids.work", input: { n: 7 }, when: hour, overdue: "unbounded", delayId: "d-cancelled" },
      ]),
    );
    expect([batch.code, batch.rawMessage]).toEqual([Code.AlreadyExists, `delays[1]: ${inUse("delay_id", "d-cancelled")[1]}`]);
    expect((await refusal(beta.time.getTimer({ timerId: "d-beta" }))).code).toBe(Code.NotFound); // the batch armed nothing
  });
});
