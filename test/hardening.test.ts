// Faults found by trying to break the owner as a new user would (kept as tests).
//
// @module-tag postgres
import type { JsonObject } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { execFile } from "node:child_process";
import { request as httpRequest } from "node:http";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { BadRequestSchema } from "@chronolog/sdk/gen/google/rpc/error_details_pb";
import { loadConfig } from "../server/src/config.js";
import { createClient } from "../sdk/ts/src/client.js";
import { runExecutor } from "../sdk/ts/src/executor.js";
import { definePlugin, manifestOf } from "../sdk/ts/src/plugin.js";
import { startTestOwner } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

const repo = new URL("../", import.meta.url).pathname;
const python = join(repo, ".venv/bin/python");
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function owner(options: Parameters<typeof startTestOwner>[0] = {}) {
  const o = await startTestOwner({ shutdownGraceMs: 100, ...options });
  cleanups.push(() => o.close());
  return o;
}

const code = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (e) {
    return ConnectError.from(e);
  }
  return undefined;
};

describe("hardening", () => {
  it("a processor `where` that cannot be applied to an event skips it instead of crashing the owner", async () => {
    const o = await owner();
    const client = createClient({ url: o.url });
    const seen: unknown[] = [];
    const plugin = definePlugin({
      name: "pw",
      events: { "pw.e": { allow: ["*"] } },
      processors: {
        p: { on: "pw.e", where: { $expr: { $sqrt: "$a" } }, run: (ctx) => void seen.push(ctx.data) },
        all: { on: "pw.e", run: (ctx) => void seen.push(ctx.data) },
      },
    });
    await client.registerPlugin(manifestOf(plugin));
    const ex = runExecutor({ url: o.url, plugins: [plugin], onError: () => {} });
    cleanups.push(() => ex.stop(50));
    await ex.ready;
    await client.emit("pw.e", { a: -1 }); // $sqrt of a negative number cannot be evaluated
    await until(() => seen.length === 1, "the other processor's delivery");
    expect((await client.emit("pw.e", { a: 2 })).event?.seq).toBe(2n); // still up
    const read = await client.log.readLog({ where: { $expr: { $sqrt: "$a" } } });
    expect(read.events.map((e) => e.data)).toEqual([{ a: 2 }]); // {a: -1} cannot be applied: it does not match
    const refused = await code(client.registerPlugin({ name: "pw2", processors: { p: { where: { a: { $in: 5 } } } } }));
    expect(refused?.code).toBe(Code.InvalidArgument); // fails on any document: refused at registration
  });

  it("refuses filters that run scripts; runs every $regex in linear time (RE2), so no pattern stalls the owner", async () => {
    const o = await owner();
    const client = createClient({ url: o.url });
    for (const where of [{ $where: "true" }, { $expr: { $function: { body: "function () { return true }", args: [], lang: "js" } } }] as JsonObject[]) {
      expect((await code(client.log.readLog({ where })))?.code, JSON.stringify(where)).toBe(Code.InvalidArgument);
    }
    // Not RE2 (backreference, lookahead) or an unknown option: refused, at request and at registration.
    for (const where of [{ s: { $regex: "(a)\\1" } }, { s: { $regex: "a(?=b)" } }, { s: { $regex: "a", $options: "x" } }] as JsonObject[]) {
      expect((await code(client.log.readLog({ where })))?.code, JSON.stringify(where)).toBe(Code.InvalidArgument);
    }
    const reg = await code(
      client.registerPlugin({ name: "re", events: { "re.e": {} }, processors: { p: { on: ["re.e"], where: { s: { $regex: "(x)\\1" } } } } }),
    );
    expect(reg?.code).toBe(Code.InvalidArgument);
    // Patterns that backtrack exponentially in JavaScript, on the strings that make them do it.
    await client.registerPlugin({ name: "rx", events: { "rx.e": { allow: ["*"] } } });
    await client.emit("rx.e", { s: `${"a".repeat(5_000)}!` });
    await client.emit("rx.e", { s: "aaac", tags: ["x", "ABC"] });
    const started = performance.now();
    for (const pattern of ["^(a+)+$", "^(a|aa)*c$", "(x+x+)+y", "^(a|a?)+$"]) {
      const found = (await client.log.readLog({ where: { s: { $regex: pattern } } })).events.map((e) => e.data?.s);
      expect(found, pattern).toEqual(pattern === "^(a|aa)*c$" ? ["aaac"] : []);
    }
    expect(performance.now() - started).toBeLessThan(5_000); // JavaScript's engine needs hours for these
    // MongoDB's $regex semantics: unanchored search, $options i, arrays match by any element.
    expect((await client.log.readLog({ where: { tags: { $regex: "^abc$", $options: "i" } } })).events).toHaveLength(1);
    expect((await client.log.readLog({ where: { s: { $not: { $regex: "c$" } } } })).events).toHaveLength(1);
  });

  it("does not reveal an event of another space through a reused id", async () => {
    const tokens = { admin: "admin-token-0123456789", web: "web-client-token-0123" };
    const o = await owner({
      config: {
        principals: [
          { name: "ops", token: tokens.admin, role: "admin" },
          { name: "web", token: tokens.web, role: "client", assert: { in: ["space:acme"] } },
        ],
      },
    });
    const admin = createClient({ url: o.url, token: tokens.admin });
    const web = createClient({ url: o.url, token: tokens.web });
    await admin.registerPlugin({ name: "o", events: { "o.placed": { allow: ["*"] } } });
    await admin.emit("o.placed", { secret: 42 }, { id: "secret-id", actor: { in: "space:other" } });
    for (const data of [{ secret: 1 }, { secret: 42 }]) {
      const e = await code(web.emit("o.placed", data, { id: "secret-id", actor: { in: "space:acme" } }));
      expect(e?.code).toBe(Code.AlreadyExists);
      expect(e?.rawMessage).not.toMatch(/seq|o\.placed|42/);
    }
  });

  it("answers an input with 20,000 schema violations with INVALID_ARGUMENT naming the first ones and how many more, over Emit and Publish", async () => {
    const o = await owner();
    await createClient({ url: o.url }).registerPlugin({
      name: "many",
      events: { "many.e": { allow: ["*"], schema: { type: "object", properties: { n: { type: "array", items: { type: "integer" } } } } } },
    });
    for (const emitVia of ["stream", "unary"] as const) {
      const e = await code(createClient({ url: o.url, emitVia }).emit("many.e", { n: Array.from({ length: 20_000 }, () => "x") }));
      expect(e?.code, emitVia).toBe(Code.InvalidArgument);
      expect(e?.rawMessage).toMatch(/^data of many\.e does not match its schema: data\/n\/0: .*… \(cut from \d+ bytes\)$/);
      const violations = e!.findDetails(BadRequestSchema)[0]?.fieldViolations ?? [];
      expect(violations[0].field).toBe("data/n/0");
      expect(violations.at(-1)?.description).toMatch(/^… and \d+ more$/);
      expect(violations.length).toBeLessThan(100);
    }
  });

  it.skipIf(!existsSync(python) && !process.env.CI)(
    "answers a 3 MB action error to the Python client (gRPC's C core, which refuses large trailers) with ABORTED and the error's start",
    { tags: ["serial"] },
    async () => {
      const o = await owner();
      const plugin = definePlugin({
        name: "big",
        actions: { fail: { allow: ["*"], run: () => Promise.reject(new Error(`the backend said: ${"x".repeat(3_000_000)}`)) } },
      });
      const ex = runExecutor({ url: o.url, plugins: [plugin], onError: () => {} });
      cleanups.push(() => ex.stop(50));
      await ex.ready;
      const script = [
        "import sys",
        "from chronolog import Client",
        "try:",
        "    Client(sys.argv[1]).call('big.fail', {})",
        "except Exception as e:",
        "    print(e.code(), str(e)[-40:])",
      ].join("\n");
      const { stdout } = await promisify(execFile)(python, ["-c", script, o.url], {
        env: { ...process.env, PYTHONPATH: join(repo, "sdk/python") },
        timeout: 30_000,
      });
      expect(stdout.trim()).toMatch(/^StatusCode\.ABORTED .*x… \(cut from \d+ bytes\)$/);
    },
  );

  it("registers an identical manifest sent 20 times at once as one revision", async () => {
    const o = await owner();
    const client = createClient({ url: o.url });
    const results = await Promise.all(Array.from({ length: 20 }, () => client.registerPlugin({ name: "same", events: { "same.e": {} } })));
    expect(results.filter((r) => r.changed)).toHaveLength(1);
    expect(new Set(results.map((r) => r.plugin?.revision))).toEqual(new Set([1]));
  });

  it("answers a 20 MB request with RESOURCE_EXHAUSTED and keeps the connection usable", async () => {
    const o = await owner();
    const client = createClient({ url: o.url });
    await client.registerPlugin({ name: "b", events: { "b.e": { allow: ["*"] } } });
    const e = await code(client.emit("b.e", { s: "x".repeat(20 * 1024 * 1024) }));
    expect(e?.code).toBe(Code.ResourceExhausted);
    expect((await client.emit("b.e", { s: "small" })).event?.seq).toBe(1n);
  });

  it("a config without principals (only log retention) keeps every caller the local admin, and still binds loopback only", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "chronolog-config-")), "owner.yaml");
    writeFileSync(path, "log:\n  retention:\n    rules:\n      - { types: 'note.*', max_count: 5 }\n");
    const config = loadConfig(path);
    expect(config.principals).toBeUndefined();
    const o = await owner({ config });
    const client = createClient({ url: o.url });
    await client.registerPlugin({ name: "note", events: { "note.a": { allow: ["*"] } } });
    expect((await client.emit("note.a", {})).event?.seq).toBe(1n);
    expect((await client.admin.listProcessors({})).processors).toEqual([]);
    await expect(owner({ config, host: "0.0.0.0" })).rejects.toThrow(/refusing to bind 0.0.0.0 without principals/);
  });

  it("an owner without principals answers only requests addressed to a loopback name (no DNS rebinding), and refuses CORS origins", async () => {
    const o = await owner();
    const port = new URL(o.url).port;
    // As a page whose DNS name was rebound to 127.0.0.1 would send it (fetch cannot set Host).
    const send = (host: string, path: string, method = "POST") =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = httpRequest(
          { host: "127.0.0.1", port, path, method, headers: { host, origin: `http://${host}`, "content-type": "application/json" } },
          (res) => {
            let body = "";
            res.on("data", (chunk) => (body += chunk));
            res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
          },
        );
        req.on("error", reject);
        req.end(method === "POST" ? "{}" : undefined);
      });
    const listExecutors = "/chronolog.v1.AdminService/ListExecutors";
    const refused = await send(`evil.example:${port}`, listExecutors);
    expect(refused.status).toBe(421);
    expect(refused.body).toMatch(/answers requests addressed to 127.0.0.1, localhost or \[::1\] only/);
    expect((await send(`evil.example:${port}`, "/metrics", "GET")).status).toBe(421);
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`]) expect((await send(host, listExecutors)).status, host).toBe(200);
    expect((await createClient({ url: o.url }).admin.listExecutors({})).executors).toEqual([]); // gRPC over HTTP/2
    await expect(owner({ config: { cors: { origins: ["*"] } } })).rejects.toThrow(/refusing cors.origins without principals/);
  });

  it("a client process whose emit was refused as too large exits by itself once its script ends", async () => {
    const o = await owner();
    const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", join(repo, "test/helpers/oversize-emit.ts"), o.url], {
      cwd: repo,
      timeout: 30_000,
    });
    expect(JSON.parse(stdout)).toEqual({ refused: expect.stringMatching(/resource_exhausted.*larger than configured readMaxBytes/), seq: "1" });
  });

  it("refuses a config where two principals share a token", () => {
    const path = join(mkdtempSync(join(tmpdir(), "chronolog-config-")), "owner.yaml");
    writeFileSync(
      path,
      "principals:\n  - { name: a, token: same-token-0123456789, role: admin }\n  - { name: b, token: same-token-0123456789, role: client }\n",
    );
    expect(() => loadConfig(path)).toThrow(/a and b have the same token/);
  });
});
