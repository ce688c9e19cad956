// @module-tag sqlite-only

import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "../sdk/ts/src/client.js";
import { runExecutor } from "../sdk/ts/src/executor.js";
import { definePlugin } from "../sdk/ts/src/plugin.js";
import { startTestOwner } from "./helpers/owner.js";

const tokens = { admin: "admin-token-0123456789", acme: "acme-client-token-0123", beta: "beta-client-token-0123", notesWorker: "notes-executor-token-0123" };

describe("principals", () => {
  let owner: Awaited<ReturnType<typeof startTestOwner>>;
  const as = (token: string) => createClient({ url: owner.url, token });

  beforeAll(async () => {
    owner = await startTestOwner({
      config: {
        principals: [
          { name: "ops", token: tokens.admin, role: "admin" },
          { name: "acme-web", token: tokens.acme, role: "client", actor: { in: "space:acme", via: "app:web" }, assert: { id: ["user:*"] } },
          { name: "beta-web", token: tokens.beta, role: "client", actor: { in: "space:beta" } },
          { name: "notes-worker", token: tokens.notesWorker, role: "executor", plugins: ["notes*"] },
        ],
      },
    });
    await as(tokens.admin).registerPlugin({ name: "notes", events: { "note.added": { allow: ["role:client"] } } });
  });
  afterAll(() => owner.close());

  it("fills unasserted actor fields from the principal and checks asserted ones", async () => {
    const { event } = await as(tokens.acme).emit("note.added", { text: "hi" }, { actor: { id: "user:ana" } });
    expect(event!.actor).toMatchObject({ id: "user:ana", in: "space:acme", via: "app:web", for: "" });
    const denied = await as(tokens.acme)
      .emit("note.added", {}, { actor: { id: "agent:x" } })
      .catch((e) => e);
    expect(ConnectError.from(denied).code).toBe(Code.PermissionDenied);
    expect(ConnectError.from(denied).rawMessage).toContain("actor.id");
    const outOfSpace = await as(tokens.acme)
      .emit("note.added", {}, { actor: { in: "space:beta" } })
      .catch((e) => e);
    expect(ConnectError.from(outOfSpace).code).toBe(Code.PermissionDenied);
  });

  it("lets a client read only its own spaces and unspaced events; admins read all", async () => {
    await as(tokens.beta).emit("note.added", { text: "beta" });
    const seen = async (token: string) => {
      const spaces: string[] = [];
      for await (const e of as(token).read()) spaces.push(e.actor?.in ?? "");
      return [...new Set(spaces)].sort();
    };
    expect(await seen(tokens.acme)).toEqual(["space:acme"]);
    expect(await seen(tokens.beta)).toEqual(["space:beta"]);
    expect(await seen(tokens.admin)).toEqual(["space:acme", "space:beta"]);
  });

  it("rejects plugin registration by a client", async () => {
    const e = await as(tokens.acme)
      .registerPlugin({ name: "x" })
      .catch((err) => err);
    expect(ConnectError.from(e).code).toBe(Code.PermissionDenied);
  });

  it("lets an executor's hello register and host only the plugins its token names (plugins patterns)", async () => {
    const refused = async (plugin: ReturnType<typeof definePlugin>) => {
      const errors: unknown[] = [];
      const executor = runExecutor({ url: owner.url, token: tokens.notesWorker, plugins: [plugin], maxBackoffMs: 50, onError: (e) => errors.push(e) });
      const e = await executor.ready.then(
        () => undefined,
        (err) => err,
      );
      await executor.stop(0);
      return e === undefined ? undefined : ConnectError.from(e);
    };
    // A manifest that would open "notes" to anyone is fine for its own plugin; one for another plugin is refused, and nothing of it is registered.
    const other = await refused(definePlugin({ name: "billing", events: { "invoice.sent": { allow: ["*"] } } }));
    expect(other?.code).toBe(Code.PermissionDenied);
    expect(other?.rawMessage).toContain('plugin "billing"');
    expect((await as(tokens.admin).plugins.listPlugins({})).plugins.map((p) => p.manifest?.name)).not.toContain("billing");
    expect(await refused(definePlugin({ name: "notesx", actions: { ping: { run: () => ({}) } } }))).toBeUndefined(); // "notes*" matches
  });

  it("a request that sets no actor field, from a principal without defaults, came through that principal: never the system", async () => {
    const ops = as(tokens.admin);
    await ops.registerPlugin({ name: "ops", events: { "ops.noted": { allow: ["*"] } }, actions: { ping: { allow: ["*"] } } });
    const { event } = await ops.emit("ops.noted", {});
    expect(event!.actor).toMatchObject({ id: "", for: "", in: "", via: "principal:ops" });
    const { delayId } = await ops.delay("ops.ping", {}, { intervalMs: 3_600_000 }, "unbounded");
    expect((await ops.getTimer(delayId)).actor).toMatchObject({ via: "principal:ops" });
    // A field asserted or defaulted is the actor as it was: nothing is added.
    expect((await ops.emit("ops.noted", {}, { actor: { id: "user:ana" } })).event!.actor).toMatchObject({ id: "user:ana", via: "" });
    expect((await as(tokens.beta).emit("note.added", {})).event!.actor).toMatchObject({ in: "space:beta", via: "" });
  });
});
