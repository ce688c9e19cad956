// Versions at hello: an executor's hello names its SDK and version, the owner's welcome its own
// version. The owner logs a warning for an SDK whose major or minor version differs from its own
// (and lists each executor's SDK in ListExecutors); the TypeScript and Python executors report
// an owner whose version differs from theirs, once per owner version. The owner here is real
// (its log captured); for the SDKs' side, a fake owner answers with another version.
//
// @module-tag sqlite-only

import { spawn } from "node:child_process";
import { createServer } from "node:http2";
import { join } from "node:path";
import { Writable } from "node:stream";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { createClient as createRpcClient } from "@connectrpc/connect";
import { connectNodeAdapter, createGrpcTransport } from "@connectrpc/connect-node";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { ownerVersion } from "../server/src/version.js";
import { createClient } from "../sdk/ts/src/client.js";
import { runExecutor } from "../sdk/ts/src/executor.js";
import { ExecutorService, type Hello, type SubscribeRequestSchema, type SubscribeResponse } from "@chronolog/sdk/gen/chronolog/v1/executor_pb";
import { definePlugin } from "../sdk/ts/src/plugin.js";
import { sdkVersion } from "../sdk/ts/src/version.js";
import { startTestOwner } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

const repo = new URL("../", import.meta.url).pathname;
const python = join(repo, ".venv/bin/python");
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/** An in-process owner whose log lines (JSON objects) are collected in `lines`. */
async function ownerWithLog() {
  const lines: { level: number; msg: string; executor?: string; sdk?: string; sdkVersion?: string }[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split("\n")) if (line.trim() !== "") lines.push(JSON.parse(line));
      done();
    },
  });
  const owner = await startTestOwner({ logger: pino({ level: "info" }, sink) });
  cleanups.push(() => owner.close());
  return { owner, lines };
}

/** Opens a Subscribe stream with `hello` (executor `name`, hosting nothing) and resolves with the welcome; the stream stays open until the test ends. */
async function subscribe(url: string, hello: { executor: string; sdk: string; sdkVersion: string }): Promise<SubscribeResponse> {
  const abort = new AbortController();
  cleanups.push(() => abort.abort());
  async function* requests(): AsyncGenerator<MessageInitShape<typeof SubscribeRequestSchema>> {
    yield { message: { case: "hello", value: { instanceId: `${hello.executor}-1`, credits: 1, ...hello } } };
    await new Promise((resolve) => abort.signal.addEventListener("abort", resolve));
  }
  const stream = createRpcClient(ExecutorService, createGrpcTransport({ baseUrl: url })).subscribe(requests(), { signal: abort.signal });
  for await (const response of stream) return response;
  throw new Error("the owner ended the stream without a welcome");
}

describe("the owner checks an executor's SDK version at hello", () => {
  it("warns about an SDK whose major or minor version differs, not about a patch release or an executor that gives none; its welcome says the owner's version", async () => {
    const { owner, lines } = await ownerWithLog();
    const [major, minor, patch] = ownerVersion.split(".").map(Number);
    const cases = {
      minor: { sdk: "python", sdkVersion: `${major}.${minor + 1}.0` },
      major: { sdk: "typescript", sdkVersion: `${major + 1}.${minor}.${patch}-beta.1` },
      patch: { sdk: "go", sdkVersion: `${major}.${minor}.${patch + 7}` },
      none: { sdk: "", sdkVersion: "" },
    };
    for (const [name, given] of Object.entries(cases)) {
      const welcome = await subscribe(owner.url, { executor: name, ...given });
      expect(welcome.message.case).toBe("welcome");
      expect(welcome.message.case === "welcome" && welcome.message.value.ownerVersion).toBe(ownerVersion);
    }
    await until(() => lines.filter((l) => l.msg === "executor connected").length === 4, "four executors connected, logged");
    const warnings = lines.filter((l) => l.level === 40 && l.msg.includes("SDK"));
    expect(warnings.map((w) => w.executor).sort()).toEqual(["major", "minor"]);
    const warning = warnings.find((w) => w.executor === "minor")!;
    expect(warning.msg).toBe(
      `executor minor runs the python SDK ${cases.minor.sdkVersion}, this owner is ${ownerVersion}: their major or minor versions differ, so one may send what the other does not understand; upgrade the SDK and the owner together`,
    );
    expect(warning).toMatchObject({ sdk: "python", sdkVersion: cases.minor.sdkVersion });

    const listed = await createClient({ url: owner.url }).admin.listExecutors({});
    expect(Object.fromEntries(listed.executors.map((e) => [e.executor, `${e.sdk}/${e.sdkVersion}`]))).toEqual({
      minor: `python/${cases.minor.sdkVersion}`,
      major: `typescript/${cases.major.sdkVersion}`,
      patch: `go/${cases.patch.sdkVersion}`,
      none: "/",
    });
  });

  it("the SDKs' executors say theirs: the owner lists them with their versions and warns about neither", async () => {
    const { owner, lines } = await ownerWithLog();
    const reported: unknown[] = [];
    const executor = runExecutor({ url: owner.url, executor: "ts-side", plugins: [definePlugin({ name: "tsside" })], onError: (e) => reported.push(e) });
    cleanups.push(() => executor.stop(0));
    await executor.ready;
    const listed = await createClient({ url: owner.url }).admin.listExecutors({});
    expect(listed.executors.map((e) => [e.executor, e.sdk, e.sdkVersion])).toEqual([["ts-side", "typescript", sdkVersion]]);
    expect(sdkVersion).toBe(ownerVersion); // released together
    expect(reported).toEqual([]);
    expect(lines.filter((l) => l.level >= 40)).toEqual([]);
  });
});

/**
 * A fake owner whose welcome says `version`, collecting each hello; `endAfterWelcome` ends
 * every stream right after its welcome, so the executor reconnects.
 */
async function fakeOwner(version: string, endAfterWelcome = false) {
  const hellos: Hello[] = [];
  const server = createServer(
    connectNodeAdapter({
      routes(router) {
        router.service(ExecutorService, {
          async *subscribe(requests) {
            for await (const request of requests) {
              if (request.message.case === "hello") {
                hellos.push(request.message.value);
                yield {
                  message: { case: "welcome", value: { sessionId: `s${hellos.length}`, heartbeatIntervalMs: 60_000, ownerVersion: version } },
                } as SubscribeResponse;
                if (endAfterWelcome) return;
              }
            }
          },
        });
      },
    }),
  );
  server.on("session", (session) => cleanups.push(() => void session.destroy()));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, hellos };
}

describe("the SDKs check the owner's version at its welcome", () => {
  it("TypeScript: reports an owner of another minor version once, however often it reconnects; says its SDK and version in its hello", async () => {
    const fake = await fakeOwner("0.999.0", true);
    const reported: unknown[] = [];
    const executor = runExecutor({ url: fake.url, plugins: [definePlugin({ name: "versioned" })], maxBackoffMs: 50, onError: (e) => reported.push(e) });
    cleanups.push(() => executor.stop(0));
    await until(() => fake.hellos.length >= 3, "three hellos (the fake owner ends each stream after its welcome)");
    expect(fake.hellos.map((h) => [h.sdk, h.sdkVersion])).toContainEqual(["typescript", sdkVersion]);
    const warnings = reported.filter((e) => e instanceof Error && e.message.includes("versions differ"));
    expect(warnings.map((e) => (e as Error).message)).toEqual([
      `the owner is 0.999.0, this SDK (typescript) is ${sdkVersion}: their major or minor versions differ, so one may send what the other does not understand; upgrade them together`,
    ]);
  });

  it("TypeScript: an owner of the same major and minor version (another patch) is not reported", async () => {
    const [major, minor] = sdkVersion.split(".");
    const fake = await fakeOwner(`${major}.${minor}.999`);
    const reported: unknown[] = [];
    const executor = runExecutor({ url: fake.url, plugins: [definePlugin({ name: "patched" })], onError: (e) => reported.push(e) });
    cleanups.push(() => executor.stop(0));
    await executor.ready;
    expect(reported).toEqual([]);
  });

  it("Python: prints the warning on stderr once and says its SDK and version in its hello", { tags: ["serial"] }, async () => {
    const fake = await fakeOwner("7.0.0", true);
    const script = [
      "import sys, time",
      "from chronolog import Plugin, run_executor",
      "executor = run_executor([Plugin('pyversioned')], url=sys.argv[1], max_backoff_s=0.05)",
      "time.sleep(30)",
    ].join("\n");
    const child = spawn(python, ["-c", script, fake.url], {
      env: { ...process.env, PYTHONPATH: join(repo, "sdk/python"), PYTHONUNBUFFERED: "1" },
      stdio: ["ignore", "ignore", "pipe"],
    });
    cleanups.push(() => void child.kill("SIGKILL"));
    let stderr = "";
    child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    await until(() => fake.hellos.length >= 3, "three hellos from the Python executor");
    const version = fake.hellos[0].sdkVersion;
    expect(fake.hellos[0].sdk).toBe("python");
    expect(version).toBe(ownerVersion); // released together
    const warnings = stderr.split("\n").filter((l) => l.includes("versions differ"));
    expect(warnings).toEqual([
      `chronolog executor: the owner is 7.0.0, this SDK (python) is ${version}: their major or minor versions differ, so one may send what the other does not understand; upgrade them together`,
    ]);
  });
});
