// grpcurl against a real owner: the commands of the
// README's "Debugging with grpcurl" section, with the owner's port and a
// bearer token. grpcurl is a Go program that .ci/run installs, pinned, into
// .tools/ (GOBIN=$PWD/.tools go install github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.4).
// The `buf curl` Watch of that section is checked here too (the other buf
// curl commands are in clients.test.ts).
//
// @module-tag serial
// @module-tag sqlite-only

import { execFile, spawn } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, type ChronologClient } from "../sdk/ts/src/client.js";
import { spawnOwner, tempDir, type OwnerProcess } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

const repo = new URL("../", import.meta.url).pathname;
const GRPCURL = join(repo, ".tools/grpcurl");
const BUF = join(repo, "node_modules/.bin/buf");
const missing = !existsSync(GRPCURL);
if (missing && !process.env.CI) {
  console.warn(
    `grpcurl.test.ts skipped: ${GRPCURL} is missing (install it with: GOBIN=$PWD/.tools go install github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.4, as .ci/run does)`,
  );
}

const tokens = { admin: "grpcurl-admin-token-0123456789", client: "grpcurl-client-token-0123456789" };
const config = {
  principals: [
    { name: "ops", token: tokens.admin, role: "admin" },
    { name: "web", token: tokens.client, role: "client", actor: { via: "app:grpcurl" } },
  ],
};
const auth = ["-H", `authorization: Bearer ${tokens.client}`];

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs grpcurl to its end; never rejects (the exit code is in the result). */
async function grpcurl(...args: string[]): Promise<Run> {
  try {
    const { stdout, stderr } = await promisify(execFile)(GRPCURL, args, { timeout: 20_000 });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const err = e as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof err.code === "number" ? err.code : -1, stdout: err.stdout ?? "", stderr: err.stderr ?? String(e) };
  }
}

/** A streaming command running in the background, its output collected as it comes. */
function stream(command: string, args: string[]) {
  const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
  const out = { stdout: "", stderr: "" };
  child.stdout.on("data", (b: Buffer) => (out.stdout += b.toString()));
  child.stderr.on("data", (b: Buffer) => (out.stderr += b.toString()));
  const exited = new Promise<number | string>((resolve) => child.once("exit", (code, signal) => resolve(code ?? signal ?? -1)));
  return { child, out, exited };
}

describe.skipIf(missing && !process.env.CI)("grpcurl v1.9.4 against a real owner", () => {
  let owner: OwnerProcess;
  let admin: ChronologClient;
  let target: string;

  beforeAll(async () => {
    if (missing)
      throw new Error(`${GRPCURL} is missing: .ci/run installs it (GOBIN=$PWD/.tools go install github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.4)`);
    const dir = tempDir("chronolog-grpcurl-");
    writeFileSync(join(dir, "owner.json"), JSON.stringify(config));
    owner = await spawnOwner(join(dir, "data"), ["--config", join(dir, "owner.json"), "--plugins", join(repo, "examples/quickstart/plugins")]);
    admin = createClient({ url: owner.url, token: tokens.admin });
    target = `127.0.0.1:${owner.port}`;
  });
  afterAll(async () => {
    if (owner) {
      owner.child.kill("SIGTERM");
      await owner.exited;
    }
  });

  it("is the pinned version", async () => {
    const { stdout } = await promisify(execFile)("go", ["version", "-m", GRPCURL]);
    expect(stdout).toMatch(/^\s+mod\s+github\.com\/fullstorydev\/grpcurl\s+v1\.9\.4\s/m);
  });

  it("lists every service through reflection (no token needed), and a service's methods", async () => {
    const services = await grpcurl("-plaintext", target, "list");
    expect(services.code).toBe(0);
    expect(services.stdout.trim().split("\n")).toEqual([
      "chronolog.v1.ActionService",
      "chronolog.v1.AdminService",
      "chronolog.v1.CollectionService",
      "chronolog.v1.ExecutorService",
      "chronolog.v1.LogService",
      "chronolog.v1.PluginService",
      "chronolog.v1.TimeService",
      "grpc.health.v1.Health",
      "grpc.reflection.v1.ServerReflection",
      "grpc.reflection.v1alpha.ServerReflection",
    ]);
    const methods = await grpcurl("-plaintext", target, "list", "chronolog.v1.LogService");
    expect(methods.stdout.trim().split("\n")).toEqual(
      ["Emit", "EmitBatch", "GetEvent", "Publish", "ReadLog", "ReadStream", "Watch"].map((m) => `chronolog.v1.LogService.${m}`),
    );
  });

  it("describes chronolog.v1.LogService.Emit and its request message", async () => {
    const emit = await grpcurl("-plaintext", target, "describe", "chronolog.v1.LogService.Emit");
    expect(emit.code).toBe(0);
    expect(emit.stdout).toBe("chronolog.v1.LogService.Emit is a method:\nrpc Emit ( .chronolog.v1.EmitRequest ) returns ( .chronolog.v1.EmitResponse );\n");
    const request = await grpcurl("-plaintext", target, "describe", "chronolog.v1.EmitRequest");
    expect(request.stdout).toContain("message EmitRequest {");
    expect(request.stdout).toContain(".google.protobuf.Struct data = 2;");
    expect(request.stdout).toContain(".chronolog.v1.Cause cause = 4;");
  });

  it("emits an event with -d (JSON in, JSON out), idempotently with an id", async () => {
    const body = JSON.stringify({ type: "order.placed", id: "from-grpcurl", data: { order_id: "o-4", amount: 1, email: "c@example.com" } });
    const first = await grpcurl("-plaintext", ...auth, "-d", body, target, "chronolog.v1.LogService/Emit");
    expect(first.stderr).toBe("");
    expect(first.code).toBe(0);
    const emitted = JSON.parse(first.stdout);
    expect(emitted.event).toMatchObject({
      id: "from-grpcurl",
      type: "order.placed",
      data: { order_id: "o-4", amount: 1, email: "c@example.com" },
      actor: { via: "app:grpcurl" },
    });
    expect(emitted.existing).toBeUndefined(); // false is a default: grpcurl omits it
    expect(Number(emitted.event.seq)).toBeGreaterThan(0);
    expect((await admin.log.getEvent({ id: "from-grpcurl" })).event?.data).toEqual({ order_id: "o-4", amount: 1, email: "c@example.com" });

    const again = JSON.parse((await grpcurl("-plaintext", ...auth, "-d", body, target, "chronolog.v1.LogService/Emit")).stdout);
    expect(again).toMatchObject({ existing: true, event: { seq: emitted.event.seq } });
  });

  it("shows the owner's errors: code, message, and the ErrorInfo / BadRequest details resolved through reflection", async () => {
    const before = (await admin.log.readLog({ pageSize: 1 })).headSeq;
    const undeclared = await grpcurl("-plaintext", ...auth, "-d", '{"type":"order.shipped","data":{}}', target, "chronolog.v1.LogService/Emit");
    expect(undeclared.code).not.toBe(0);
    expect(undeclared.stderr).toContain("Code: InvalidArgument");
    expect(undeclared.stderr).toContain('Message: event type "order.shipped" is not declared by any plugin');
    expect(undeclared.stderr).toContain('"reason": "UNDECLARED_EVENT_TYPE"');
    expect(undeclared.stderr).not.toContain("is not recognized");

    const schema = await grpcurl(
      "-plaintext",
      ...auth,
      "-d",
      '{"type":"order.placed","data":{"order_id":"o-5","amount":-1,"email":"x"}}',
      target,
      "chronolog.v1.LogService/Emit",
    );
    expect(schema.stderr).toContain("Code: InvalidArgument");
    expect(schema.stderr).toContain('"field": "data/amount"');
    expect(schema.stderr).toContain('"field": "data/email"');

    const anonymous = await grpcurl("-plaintext", "-d", '{"type":"order.placed","data":{}}', target, "chronolog.v1.LogService/Emit");
    expect(anonymous.stderr).toContain("Code: Unauthenticated");
    expect(anonymous.stderr).toContain("missing bearer token");
    expect((await admin.log.readLog({ pageSize: 1 })).headSeq).toBe(before);
  });

  it("reads a Watch stream: the catch-up, caught_up, then a live event, until -max-time ends it", async () => {
    const head = (await admin.log.readLog({ pageSize: 1 })).headSeq;
    const watch = stream(GRPCURL, [
      "-plaintext",
      ...auth,
      "-max-time",
      "4",
      "-d",
      JSON.stringify({ after_seq: String(head - 1n), types: ["order.placed"] }),
      target,
      "chronolog.v1.LogService/Watch",
    ]);
    await until(() => watch.out.stdout.includes('"caughtUp"'), "grpcurl shows caughtUp");
    expect(watch.out.stdout).toContain(`"headSeq": "${head}"`);
    const live = (await admin.emit("order.placed", { order_id: "o-live", amount: 2, email: "d@example.com" })).event!;
    await until(() => watch.out.stdout.includes(live.id), "grpcurl shows the live event");
    expect(watch.out.stdout.indexOf('"caughtUp"')).toBeLessThan(watch.out.stdout.indexOf(live.id));
    expect(watch.out.stdout).toContain('"order_id": "o-live"');
    expect(await watch.exited).not.toBe(0); // -max-time ends the stream
    expect(watch.out.stderr).toContain("Code: DeadlineExceeded");
  });

  it("buf curl reads the same Watch stream (the README's buf curl equivalent)", async () => {
    const head = (await admin.log.readLog({ pageSize: 1 })).headSeq;
    const url = `http://${target}/chronolog.v1.LogService/Watch`;
    const watch = stream(BUF, [
      "curl",
      "--protocol",
      "grpc",
      "--http2-prior-knowledge",
      "-H",
      `authorization: Bearer ${tokens.client}`,
      "-d",
      JSON.stringify({ after_seq: String(head) }),
      url,
    ]);
    try {
      await until(() => watch.out.stdout.includes('"caughtUp"'), "buf curl shows caughtUp");
      const live = (await admin.emit("order.placed", { order_id: "o-buf", amount: 3, email: "e@example.com" })).event!;
      await until(() => watch.out.stdout.includes(live.id), "buf curl shows the live event");
    } finally {
      watch.child.kill("SIGTERM");
      await watch.exited;
    }
  });
});
