// Who may read which event, through every read path, on a real owner reached over the real
// transport: principals (an admin, the executor of the plugin, the executor of another plugin, a
// plain client, a client the plugin names in `read`, a client of another space) × event kinds (a
// plugin event, one whose type names its readers, processor.failed, action.started and
// action.completed with their input and output, timer.scheduled, a collection's change event,
// a failure carrying a withheld event, a type no plugin declares any more) × ReadLog, GetEvent
// and Watch over gRPC, the console's API (Connect, binary, HTTP/1.1, as the page calls it) and
// the console's cause chain.
//
// @module-tag postgres

import { createClient as createRpcClient, Code, ConnectError, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { causeChain } from "../console/src/cause-chain.js";
import type { Event } from "@chronolog/sdk/gen/chronolog/v1/event_pb";
import { LogService } from "@chronolog/sdk/gen/chronolog/v1/log_pb";
import { BadRequestSchema, ErrorInfoSchema } from "@chronolog/sdk/gen/google/rpc/error_details_pb";
import { createClient, type ChronologClient } from "../sdk/ts/src/client.js";
import { runExecutor, TerminalError } from "../sdk/ts/src/executor.js";
import { definePlugin } from "../sdk/ts/src/plugin.js";
import { startTestOwner } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

const principals = {
  ops: { token: "read-admin-token-0123456789", role: "admin" },
  "shop-worker": { token: "read-shop-worker-token-0123", role: "executor", plugins: ["shop"], assert: { in: ["*"] } },
  "mail-worker": { token: "read-mail-worker-token-0123", role: "executor", plugins: ["mail"], assert: { in: ["*"] } },
  web: { token: "read-web-client-token-0123", role: "client", actor: { in: "space:acme" } },
  auditor: { token: "read-auditor-token-01234567", role: "client", actor: { in: "space:acme" } },
  beta: { token: "read-beta-client-token-0123", role: "client", actor: { in: "space:beta" } },
} as const;
type Name = keyof typeof principals;
const names = Object.keys(principals) as Name[];

/** The events of the matrix, by kind (all in space:acme). */
const kinds = ["placed", "shipped", "audited", "failed", "started", "completed", "scheduled", "cartCreated", "failedAudit", "retired"] as const;
type Kind = (typeof kinds)[number];

type Verdict = "read" | "withheld" | "hidden";
const everything = (v: Verdict) => Object.fromEntries(kinds.map((k) => [k, v])) as Record<Kind, Verdict>;
/** What each principal may make of each kind. */
const expected: Record<Name, Record<Kind, Verdict>> = {
  ops: everything("read"),
  "shop-worker": { ...everything("read"), retired: "withheld" },
  "mail-worker": { ...everything("withheld"), placed: "read", shipped: "read", cartCreated: "read" },
  web: { ...everything("withheld"), placed: "read", shipped: "read", cartCreated: "read" },
  auditor: { ...everything("read"), retired: "withheld" },
  beta: everything("hidden"),
};

const shop = definePlugin({
  name: "shop",
  events: {
    "order.placed": { allow: ["*"] },
    "order.shipped": {},
    "order.audited": { read: ["auditor"] },
    "order.feedback": { allow: ["*"], read: ["auditor"] },
  },
  collections: { cart: { allow: ["*"] } },
  actions: {
    charge: {
      allow: ["*"],
      read: ["auditor"],
      async run(ctx, input) {
        await ctx.emit("order.shipped", { order_id: String(input.order_id) });
        return { charged: Number(input.amount), card: "4242" };
      },
    },
  },
  processors: {
    fulfil: {
      on: "order.placed",
      read: ["auditor"],
      async run(ctx) {
        if (ctx.data.fail) throw new TerminalError("card declined");
        if (ctx.data.skip) return;
        await ctx.call("shop.charge", { order_id: ctx.event.id, amount: Number(ctx.data.amount) });
        await ctx.emit("order.audited", { order_id: ctx.event.id, by: "fulfil" });
      },
    },
    // Its own events are open to every principal, but its failures carry an order.audited.
    audit: {
      on: "order.audited",
      read: ["*"],
      run() {
        throw new TerminalError("audit trail full");
      },
    },
  },
});

describe("read permissions per event type, on every read path", () => {
  let owner: Awaited<ReturnType<typeof startTestOwner>>;
  let executor: ReturnType<typeof runExecutor>;
  const events = {} as Record<Kind, Event>;
  const sdk = (name: Name): ChronologClient => createClient({ url: owner.url, token: principals[name].token });
  /** LogService as the console's page reaches it: Connect, binary, HTTP/1.1, the bearer token. */
  const consoleLog = (name: Name): Client<typeof LogService> => {
    const bearer: Interceptor = (next) => (req) => {
      req.header.set("authorization", `Bearer ${principals[name].token}`);
      return next(req);
    };
    return createRpcClient(LogService, createConnectTransport({ baseUrl: owner.url, httpVersion: "1.1", useBinaryFormat: true, interceptors: [bearer] }));
  };
  const kindOf = (id: string) => kinds.find((k) => events[k].id === id);

  beforeAll(async () => {
    owner = await startTestOwner({ config: { principals: names.map((name) => ({ name, ...principals[name] })) } as never });
    const ops = sdk("ops");
    executor = runExecutor({ url: owner.url, token: principals["shop-worker"].token, plugins: [shop], maxBackoffMs: 50 });
    await executor.ready;
    // A type that no plugin declares any more: registered, emitted, then dropped from the manifest.
    await ops.registerPlugin({ name: "old", events: { "old.thing": { allow: ["*"] } } });
    const { event: retired } = await ops.emit("old.thing", { secret: 1 }, { actor: { in: "space:acme" } });
    await ops.registerPlugin({ name: "old", events: {} });
    const web = sdk("web");
    const { event: placed } = await web.emit("order.placed", { amount: 5 }, { id: "o-1" });
    await web.emit("order.placed", { amount: 7, fail: true }, { id: "o-2" });
    await web.delay("shop.charge", { order_id: "later", amount: 1 }, { intervalMs: 3_600_000 }, "unbounded");
    await web.createDocument("cart", { _id: "c-1", items: 2 });
    const all: Event[] = [];
    await until(async () => {
      all.length = 0;
      for await (const e of ops.read()) all.push(e);
      return (
        all.filter((e) => e.type === "processor.failed").length === 2 &&
        all.some((e) => e.type === "timer.scheduled") &&
        all.some((e) => e.type === "order.shipped")
      );
    }, "the orders' work recorded");
    const one = (what: string, match: (e: Event) => boolean) => all.find(match) ?? expect.fail(`no ${what} in the log`);
    Object.assign(events, {
      placed: placed!,
      shipped: one("order.shipped", (e) => e.type === "order.shipped"),
      audited: one("order.audited", (e) => e.type === "order.audited"),
      failed: one("processor.failed of fulfil", (e) => e.type === "processor.failed" && e.data?.processor === "shop.fulfil"),
      failedAudit: one("processor.failed of audit", (e) => e.type === "processor.failed" && e.data?.processor === "shop.audit"),
      started: one("action.started", (e) => e.type === "action.started"),
      completed: one("action.completed", (e) => e.type === "action.completed"),
      scheduled: one("timer.scheduled", (e) => e.type === "timer.scheduled"),
      cartCreated: one("cart.created", (e) => e.type === "cart.created"),
      retired: retired!,
    });
    for (const k of kinds) expect(events[k].actor?.in, k).toBe("space:acme");
    expect(events.started.data).toMatchObject({ action: "shop.charge", input: { amount: 5 } });
    expect(events.completed.data).toMatchObject({ output: { charged: 5, card: "4242" } });
    expect(events.failed.data).toMatchObject({ error: "card declined", event: { id: "o-2" } });
  });
  afterAll(async () => {
    await executor?.stop(0);
    await owner?.close();
  });

  const readable = (name: Name) => kinds.filter((k) => expected[name][k] === "read").sort();
  const seen = (list: Event[]) => [...new Set(list.map((e) => kindOf(e.id)).filter((k) => k !== undefined))].sort();

  it("a manifest's read lists are checked as allow lists are: a bad entry is INVALID_ARGUMENT naming its field", async () => {
    const refused = await sdk("ops")
      .registerPlugin({
        name: "bad",
        events: { "bad.thing": { read: ["role:boss"] } },
        actions: { go: { read: ["two words"] } },
        processors: { watch: { on: ["bad.thing"], read: ["*", ""] } },
      })
      .catch((e: unknown) => ConnectError.from(e));
    expect(refused).toBeInstanceOf(ConnectError);
    expect((refused as ConnectError).code).toBe(Code.InvalidArgument);
    expect((refused as ConnectError).rawMessage).toContain('events.bad.thing.read: invalid read entry "role:boss"');
    const fields = (refused as ConnectError).findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field);
    expect(fields).toEqual(["events.bad.thing.read", "processors.watch.read", "actions.go.read"]);
  });

  it("a type a client may emit but not read keeps safe retries: the same id, type and data answers the stored event", async () => {
    const web = sdk("web");
    const first = await web.emit("order.feedback", { stars: 4 }, { id: "f-1" });
    const again = await web.emit("order.feedback", { stars: 4 }, { id: "f-1" });
    expect(again.existing).toBe(true);
    expect(again.event!.seq).toBe(first.event!.seq);
    expect(await web.log.getEvent({ id: "f-1" }).catch((e: unknown) => ConnectError.from(e).code)).toBe(Code.PermissionDenied);
    // Other data under its id is a conflict, as for any event; another space's id is one too, and says no more.
    expect(await web.emit("order.feedback", { stars: 1 }, { id: "f-1" }).catch((e: unknown) => ConnectError.from(e).code)).toBe(Code.AlreadyExists);
    const beta = await sdk("beta")
      .emit("order.feedback", { stars: 4 }, { id: "f-1" })
      .catch((e: unknown) => ConnectError.from(e));
    expect((beta as ConnectError).code).toBe(Code.AlreadyExists);
    expect((beta as ConnectError).rawMessage).toBe('event id "f-1" is already in use; choose another id');
  });

  it.each(names)("ReadLog over gRPC as %s: only what it may read, page after page past what it may not", async (name) => {
    const list: Event[] = [];
    for await (const e of sdk(name).read({}, 1)) list.push(e); // a page per event: paging goes on past the ones left out
    expect(seen(list)).toEqual(readable(name));
    // Asking only for the types it may not read: no event, and the page reaches the head (nothing to page through).
    const refused = [...new Set(kinds.filter((k) => expected[name][k] !== "read").map((k) => events[k].type))].filter(
      (type) => !kinds.some((k) => events[k].type === type && expected[name][k] === "read"),
    );
    if (refused.length === 0) return;
    const page = await sdk(name).log.readLog({ types: refused, pageSize: 1 });
    expect(page.events).toEqual([]);
    expect(page.nextPageToken).toBe("");
  });

  it.each(names)("GetEvent over gRPC as %s: the event, PERMISSION_DENIED naming its type (withheld), or NOT_FOUND (another space)", async (name) => {
    for (const k of kinds) {
      const outcome = await sdk(name)
        .log.getEvent({ id: events[k].id })
        .then(
          (r) => r.event,
          (e: unknown) => ConnectError.from(e),
        );
      const verdict = expected[name][k];
      if (verdict === "read") {
        expect(outcome, `${name} ${k}`).not.toBeInstanceOf(ConnectError);
        expect((outcome as Event).data, `${name} ${k}`).toEqual(events[k].data);
        continue;
      }
      expect(outcome, `${name} ${k}`).toBeInstanceOf(ConnectError);
      const err = outcome as ConnectError;
      expect(err.code, `${name} ${k}`).toBe(verdict === "withheld" ? Code.PermissionDenied : Code.NotFound);
      if (verdict === "withheld") {
        expect(err.findDetails(ErrorInfoSchema)[0]?.metadata, `${name} ${k}`).toEqual({ type: events[k].type, cause: events[k].cause });
        expect(err.rawMessage).not.toContain("4242");
      }
    }
  });

  it.each(names)("the console's API (Connect) as %s: ReadLog pages and GetEvent as over gRPC", async (name) => {
    const log = consoleLog(name);
    const list: Event[] = [];
    let pageToken = "";
    do {
      const page = await log.readLog({ pageSize: 2, pageToken });
      list.push(...page.events);
      pageToken = page.nextPageToken;
    } while (pageToken !== "");
    expect(seen(list)).toEqual(readable(name));
    for (const k of kinds) {
      const code = await log.getEvent({ id: events[k].id }).then(
        () => Code.Unknown,
        (e: unknown) => ConnectError.from(e).code,
      );
      expect(code, `${name} ${k}`).toBe({ read: Code.Unknown, withheld: Code.PermissionDenied, hidden: Code.NotFound }[expected[name][k]]);
    }
  });

  it("the console's cause chain shows a link the principal may not read as withheld (its type only) and goes on above it", async () => {
    const chainOf = async (name: Name, id: string) =>
      causeChain(consoleLog(name), id, 20).then(
        (links) => links.map((l) => ("withheld" in l ? `withheld ${l.type}` : (kindOf(l.id) ?? l.id))),
        (e: unknown) => ConnectError.from(e).code,
      );
    // order.shipped ← action.started (of shop.charge) ← order.placed
    expect(events.shipped.cause).toBe(events.started.id);
    expect(events.started.cause).toBe(events.placed.id);
    for (const name of names) {
      const chain = await chainOf(name, events.shipped.id);
      if (name === "beta") expect(chain, name).toBe(Code.NotFound);
      else if (expected[name].started === "read") expect(chain, name).toEqual(["shipped", "started", "placed"]);
      else expect(chain, name).toEqual(["shipped", "withheld action.started", "placed"]);
      // The withheld link carries nothing of the event: no input, no data.
      if (Array.isArray(chain) && chain[1].startsWith("withheld")) {
        const links = await causeChain(consoleLog(name), events.shipped.id, 20);
        expect(links[1]).toEqual({ withheld: true, id: events.started.id, type: "action.started" });
      }
      // A chain opened on an event it may not read is refused as GetEvent is.
      const failedChain = { read: ["failed", "o-2"], withheld: Code.PermissionDenied, hidden: Code.NotFound }[expected[name].failed];
      expect(await chainOf(name, events.failed.id), name).toEqual(failedChain);
    }
  });

  it("Watch over gRPC and over the console's Connect: catch-up and live events alike, only what each may read", async () => {
    const stop = new AbortController();
    const watched = new Map<string, Event[]>();
    const caughtUp = new Set<string>();
    const watches: Promise<void>[] = [];
    for (const name of names) {
      for (const via of ["grpc", "connect"] as const) {
        const key = `${name} ${via}`;
        const list: Event[] = [];
        watched.set(key, list);
        const stream =
          via === "grpc"
            ? sdk(name).watch({}, { signal: stop.signal, onCaughtUp: () => caughtUp.add(key) })
            : (async function* () {
                for await (const item of consoleLog(name).watch({ afterSeq: 0n }, { signal: stop.signal })) {
                  if (item.message.case === "event") yield item.message.value;
                  else if (item.message.case === "caughtUp") caughtUp.add(key);
                }
              })();
        watches.push(
          (async () => {
            try {
              for await (const e of stream) list.push(e);
            } catch (e) {
              if (!stop.signal.aborted) throw e;
            }
          })(),
        );
      }
    }
    await until(() => caughtUp.size === watched.size, "every watch caught up");
    // Live: an order that fails (processor.failed in space:acme), then an unspaced event every principal reads, last.
    const web = sdk("web");
    await web.emit("order.placed", { amount: 9, fail: true }, { id: "o-3" });
    const ops = sdk("ops");
    await until(async () => {
      for await (const e of ops.read({ types: ["processor.failed"], where: { "event.id": "o-3" } })) return e !== undefined;
      return false;
    }, "o-3's failure recorded");
    await ops.registerPlugin({ name: "mail", events: { "mail.sent": { allow: ["*"] } } });
    const { event: last } = await ops.emit("mail.sent", { to: "everyone" });
    await until(() => [...watched.values()].every((list) => list.some((e) => e.id === last!.id)), "every watch saw the last event");
    stop.abort();
    await Promise.all(watches);
    for (const [key, list] of watched) {
      const name = key.split(" ")[0] as Name;
      expect(seen(list), key).toEqual(readable(name));
      const liveFailure = list.some((e) => e.type === "processor.failed" && (e.data?.event as { id?: string } | undefined)?.id === "o-3");
      expect(liveFailure, key).toBe(expected[name].failed === "read");
      expect(
        list.some((e) => e.id === "o-3"),
        key,
      ).toBe(expected[name].placed === "read");
    }
  });
});
