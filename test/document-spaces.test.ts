// Documents are separated by space like events: an owner process with a config of
// tokens, and real clients for four principals (space a, space b, an admin, a client with no
// space) and an executor token limited to space a. Every principal tries get, find, replace,
// patch and delete on documents of every space, and reads the change events: nobody reaches a
// space it may not read, and a document out of reach answers exactly like one that does not exist.
//
// @module-tag serial
// @module-tag postgres

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, type ChronologClient } from "../sdk/ts/src/client.js";
import { runExecutor } from "../sdk/ts/src/executor.js";
import { definePlugin, manifestOf } from "../sdk/ts/src/plugin.js";
import { spawnOwner, tempDir, type OwnerProcess } from "./helpers/owner.js";

const tokens = {
  admin: "spaces-admin-token-0123",
  a: "spaces-a-client-token-0123",
  b: "spaces-b-client-token-0123",
  none: "spaces-none-client-token-0123",
  worker: "spaces-worker-token-0123",
  runner: "spaces-runner-token-0123",
};
type Who = keyof typeof tokens;
const everyone: Who[] = ["admin", "a", "b", "none", "worker", "runner"];

/** The space each principal may read besides unspaced documents ("*": every space). */
const reach: Record<Who, string> = { admin: "*", a: "space:a", b: "space:b", none: "", worker: "space:a", runner: "" };
/** The test's documents: `_id` → the space its creator wrote it in. */
const docs: Record<string, string> = { "d-a": "space:a", "d-b": "space:b", "d-none": "", "d-admin": "", "d-admin-a": "space:a" };
const visible = (who: Who, id: string) => reach[who] === "*" || docs[id] === "" || docs[id] === reach[who];

/** The plugin: its collections, and actions whose results come from a collection (read under their call). */
const plugin = definePlugin({
  name: "memo",
  collections: {
    note: { privateFields: ["secret"], allow: ["*"] },
    scratch: { durable: false, allow: ["*"] },
  },
  actions: {
    list: { allow: ["*"], run: async (ctx) => ({ ids: (await ctx.collections.find("note")).map((d) => d._id as string) }) },
    touch: {
      allow: ["*"],
      run: async (ctx, input) =>
        ctx.collections.patch("note", String(input.id), { set: { touched: true } }).then(
          (r) => ({ written: Number(r.seq) > 0 }),
          (e: unknown) => ({ error: Code[ConnectError.from(e).code] }),
        ),
    },
    peek: {
      allow: ["*"],
      run: async (ctx, input) =>
        ctx.collections.get("note", String(input.id)).then(
          (doc) => ({ doc }),
          (e: unknown) => ({ error: Code[ConnectError.from(e).code] }),
        ),
    },
  },
});

async function codeOf(p: Promise<unknown>): Promise<{ code: string; message: string } | undefined> {
  return p.then(
    () => undefined,
    (e: unknown) => ({ code: Code[ConnectError.from(e).code], message: ConnectError.from(e).rawMessage }),
  );
}

async function eventsOf(client: ChronologClient, types: string[]): Promise<{ type: string; id: string; space: string }[]> {
  const out = [];
  for await (const e of client.read({ types })) out.push({ type: e.type, id: String(e.data?._id), space: e.actor?.in ?? "" });
  return out;
}

describe("documents are separated by space like events", () => {
  let owner: OwnerProcess;
  const as = (who: Who) => createClient({ url: owner.url, token: tokens[who] });

  beforeAll(async () => {
    const dir = tempDir();
    const config = join(dir, "owner.json");
    writeFileSync(
      config,
      JSON.stringify({
        principals: [
          { name: "ops", token: tokens.admin, role: "admin" },
          { name: "web-a", token: tokens.a, role: "client", actor: { in: "space:a" } },
          { name: "web-b", token: tokens.b, role: "client", actor: { in: "space:b" } },
          { name: "web", token: tokens.none, role: "client" },
          { name: "worker", token: tokens.worker, role: "executor", assert: { in: ["space:a"] } },
          { name: "runner", token: tokens.runner, role: "executor" },
        ],
      }),
    );
    owner = await spawnOwner(join(dir, "data"), ["--config", config]);
    await as("admin").registerPlugin(manifestOf(plugin));
    await as("a").createDocument("note", { _id: "d-a", text: "a", secret: "sa" });
    await as("b").createDocument("note", { _id: "d-b", text: "b", secret: "sb" });
    await as("none").createDocument("note", { _id: "d-none", text: "none" });
    await as("admin").createDocument("note", { _id: "d-admin", text: "admin" });
    await as("admin").createDocument("note", { _id: "d-admin-a", text: "admin in a" }, { actor: { in: "space:a" } });
  }, 30_000);
  afterAll(() => {
    owner?.child.kill("SIGKILL");
  });

  it("get and find return only documents in spaces the reader may read; others are NOT_FOUND like missing ones", async () => {
    for (const who of everyone) {
      const client = as(who);
      for (const id of Object.keys(docs)) {
        if (visible(who, id)) {
          expect((await client.getDocument("note", id))._id, `${who} gets ${id}`).toBe(id);
        } else {
          const hidden = await codeOf(client.getDocument("note", id));
          const missing = await codeOf(client.getDocument("note", `${id}-missing`));
          expect(hidden?.code, `${who} gets ${id}`).toBe("NotFound");
          expect(hidden?.message.replace(id, "ID")).toBe(missing?.message.replace(`${id}-missing`, "ID"));
        }
      }
      const expected = Object.keys(docs)
        .filter((id) => visible(who, id))
        .sort();
      expect((await client.findDocuments("note")).map((d) => d._id).sort(), `${who} finds`).toEqual(expected);
      // A filter cannot reach around the rule either.
      expect(
        (await client.findDocuments("note", { filter: { text: "b" } })).map((d) => d._id),
        `${who} finds text b`,
      ).toEqual(visible(who, "d-b") ? ["d-b"] : []);
    }
  });

  it("replace, patch and delete of a document out of reach are NOT_FOUND and change nothing", async () => {
    const admin = as("admin");
    for (const who of everyone) {
      const client = as(who);
      for (const id of Object.keys(docs)) {
        if (visible(who, id)) continue;
        const before = await admin.getDocument("note", id);
        const head = (await admin.log.readLog({ pageSize: 1 })).headSeq;
        for (const attempt of [
          () => client.patchDocument("note", id, { set: { text: "taken" } }),
          () => client.replaceDocument("note", id, { text: "taken" }),
          () => client.deleteDocument("note", id),
        ]) {
          expect((await codeOf(attempt()))?.code, `${who} writes ${id}`).toBe("NotFound"); // one at a time: none is left rejected unawaited
        }
        expect(await admin.getDocument("note", id)).toEqual(before);
        expect((await admin.log.readLog({ pageSize: 1 })).headSeq).toBe(head);
      }
    }
    // Within reach the same writes go through (a patch by a client in space a of its own document).
    expect((await as("a").patchDocument("note", "d-a", { set: { text: "a2" } })).doc).toEqual({ _id: "d-a", text: "a2" });
  });

  it("change events are in their document's space, also when an admin without a space writes it", async () => {
    await as("admin").patchDocument("note", "d-a", { set: { text: "by admin" } });
    await as("admin").patchDocument("note", "d-b", { set: { text: "by admin" } });
    const types = ["note.created", "note.updated", "note.deleted"];
    const all = await eventsOf(as("admin"), types);
    for (const e of all) expect(e.space, `${e.type} of ${e.id}`).toBe(docs[e.id]);
    for (const who of everyone) {
      const seen = await eventsOf(as(who), types);
      expect(seen, `${who} reads change events`).toEqual(all.filter((e) => visible(who, e.id)));
    }
    // Watch follows the same rule.
    const abort = new AbortController();
    const watched: string[] = [];
    let caughtUp = false;
    const watching = (async () => {
      for await (const e of as("b").watch({ types }, { signal: abort.signal, onCaughtUp: () => (caughtUp = true) })) watched.push(String(e.data?._id));
    })().catch(() => undefined);
    while (!caughtUp) await new Promise((r) => setTimeout(r, 20));
    abort.abort();
    await watching;
    expect([...new Set(watched)].sort()).toEqual(["d-admin", "d-b", "d-none"]);
  });

  it("in-memory collections follow the same rule", async () => {
    await as("a").createDocument("scratch", { _id: "m-a", v: 1 });
    expect((await as("a").getDocument("scratch", "m-a"))._id).toBe("m-a");
    expect((await codeOf(as("b").getDocument("scratch", "m-a")))?.code).toBe("NotFound");
    expect(await as("b").findDocuments("scratch")).toEqual([]);
    expect((await codeOf(as("b").patchDocument("scratch", "m-a", { set: { v: 2 } })))?.code).toBe("NotFound");
    expect((await codeOf(as("b").deleteDocument("scratch", "m-a")))?.code).toBe("NotFound");
    expect(await as("admin").getDocument("scratch", "m-a")).toEqual({ _id: "m-a", v: 1 });
  });

  it("an _id taken in another space is ALREADY_EXISTS (ids are unique per collection) and reveals nothing of the document", async () => {
    const taken = await codeOf(as("b").createDocument("note", { _id: "d-a", text: "mine" }));
    expect(taken?.code).toBe("AlreadyExists");
    expect(taken?.message).not.toContain("space:a");
    expect((await as("admin").getDocument("note", "d-a")).text).not.toBe("mine");
  });

  it("an action's result from a collection holds only documents of its caller's space: code reads and writes under its call", async () => {
    // The runner's token may read no space; reads under a call whose actor has a space read that space.
    const executor = runExecutor({ url: owner.url, token: tokens.runner, plugins: [plugin], maxBackoffMs: 200, onError: () => undefined });
    try {
      await executor.ready;
      const listed = async (who: Who) => ((await as(who).call("memo.list", {})).output.ids as string[]).sort();
      expect(await listed("a")).toEqual(["d-a", "d-admin", "d-admin-a", "d-none"]);
      expect(await listed("b")).toEqual(["d-admin", "d-b", "d-none"]);
      expect(await listed("none")).toEqual(["d-admin", "d-none"]); // a call without a space reads as the runner: no space
      expect((await as("b").call("memo.peek", { id: "d-a" })).output).toEqual({ error: "NotFound" });
      expect((await as("a").call("memo.peek", { id: "d-a" })).output).toMatchObject({ doc: { _id: "d-a", secret: "sa" } }); // code reads private fields
      // Writes under the call follow the same rule.
      expect((await as("b").call("memo.touch", { id: "d-a" })).output).toEqual({ error: "NotFound" });
      expect((await as("admin").getDocument("note", "d-a")).touched).toBeUndefined();
      expect((await as("a").call("memo.touch", { id: "d-a" })).output).toEqual({ written: true });
      expect((await as("admin").getDocument("note", "d-a")).touched).toBe(true);
      // A client cannot read under a cause to borrow another's space.
      const started = (
        await as("admin")
          .read({ types: ["action.started"] })
          .next()
      ).value!;
      expect((await codeOf(as("b").collections.getDocument({ collection: "note", id: "d-a", cause: { eventId: started.id, position: 0 } })))?.code).toBe(
        "PermissionDenied",
      );
    } finally {
      await executor.stop(0);
    }
  });
});
