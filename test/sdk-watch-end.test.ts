// The TypeScript client's watch ends its stream when the caller's loop ends: a script that breaks
// out of `for await (... of client.watch())` exits by itself, and the owner releases the stream.
// A client made without a usable URL says so.
//
// @module-tag serial
// @module-tag sqlite-only

import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "../sdk/ts/src/client.js";
import { definePlugin, manifestOf } from "../sdk/ts/src/plugin.js";
import { spawnOwner, tempDir, type OwnerProcess } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

const repo = new URL("../", import.meta.url).pathname;

describe("client.watch ends with the caller's loop", () => {
  let owner: OwnerProcess;
  beforeAll(async () => {
    owner = await spawnOwner(join(tempDir(), "data"));
    const client = createClient({ url: owner.url });
    await client.registerPlugin(manifestOf(definePlugin({ name: "visits", events: { "visit.made": { allow: ["*"], schema: { type: "object" } } } })));
    for (let i = 0; i < 3; i++) await client.emit("visit.made", { i });
  });
  afterAll(async () => {
    owner?.child.kill("SIGTERM");
    await owner?.exited;
  });

  const watchers = async () => {
    const text = await (await fetch(`${owner.url}/metrics`)).text();
    return Number(/^chronolog_watchers (\d+)/m.exec(text)?.[1] ?? NaN);
  };

  it("a script that breaks out of the loop exits, and the owner releases its stream", async () => {
    const script = join(tempDir(), "watch-break.mts");
    writeFileSync(
      script,
      `import { createClient } from ${JSON.stringify(join(repo, "sdk/ts/src/client.ts"))};
const client = createClient({ url: process.argv[2] });
let seen = 0;
for await (const event of client.watch({ types: ["visit.made"] })) if (++seen === 2) break;
console.log("broke out after", seen);
`,
    );
    const started = Date.now();
    const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", script, owner.url], { cwd: repo, timeout: 20_000 });
    expect(stdout.trim()).toBe("broke out after 2");
    expect(Date.now() - started).toBeLessThan(15_000); // it exits by itself (it hung until killed before)
    await until(async () => (await watchers()) === 0, "the owner released the watch", 5_000);
  });

  it("a throw in the loop and an abort by the caller end it too", async () => {
    const client = createClient({ url: owner.url });
    await expect(
      (async () => {
        for await (const _ of client.watch({ types: ["visit.made"] })) throw new Error("stop here");
      })(),
    ).rejects.toThrow("stop here");
    await until(async () => (await watchers()) === 0, "the owner released the watch after a throw", 5_000);
    const abort = new AbortController();
    const seen: number[] = [];
    await expect(
      (async () => {
        for await (const e of client.watch({ types: ["visit.made"] }, { signal: abort.signal })) {
          seen.push(Number(e.seq));
          if (seen.length === 1) abort.abort();
        }
      })(),
    ).rejects.toMatchObject({ code: Code.Canceled });
    expect(seen).toHaveLength(1);
    await until(async () => (await watchers()) === 0, "the owner released the aborted watch", 5_000);
  });
});

describe("createClient without a usable URL", () => {
  it("is INVALID_ARGUMENT naming the url, not a raw TypeError", () => {
    for (const url of [undefined, "", "127.0.0.1:50051", "ftp://host", 42]) {
      let error: unknown;
      try {
        createClient({ url } as never);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(ConnectError);
      expect(error).toMatchObject({
        code: Code.InvalidArgument,
        rawMessage: expect.stringMatching(/^url must be an http:\/\/ or https:\/\/ URL, e\.g\. http:\/\/127\.0\.0\.1:50051 \(got /),
      });
    }
  });
});
