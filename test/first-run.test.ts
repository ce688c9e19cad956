// What a new user meets first: `serve` failing with words to act on (and leaving no folder behind),
// the example executor's --help, the example config with the commands the README gives for it, and
// the browser example's dev server saying where to go. Real processes throughout.
//
// @module-tag serial
// @module-tag sqlite-only
import { stripVTControlCharacters } from "node:util";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { cli } from "./helpers/cli.js";
import { spawnOwner, tempDir } from "./helpers/owner.js";

const repo = new URL("../", import.meta.url).pathname;
const cleanup: (() => void)[] = [];
afterEach(() => cleanup.splice(0).forEach((c) => c()));

/** Runs `command` in the repository until it exits or `untilOutput` matches its output; then ends it. */
function run(args: string[], untilOutput?: RegExp, env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; output: string; stdout: string }> {
  const child: ChildProcess = spawn(process.execPath, args, { cwd: repo, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  cleanup.push(() => child.kill("SIGKILL"));
  let output = "";
  let stdout = "";
  return new Promise((resolve) => {
    const seen = () => {
      if (untilOutput?.test(output)) {
        child.kill("SIGTERM");
        resolve({ code: null, output, stdout });
      }
    };
    child.stdout!.on("data", (d: Buffer) => ((stdout += d), (output += d), seen()));
    child.stderr!.on("data", (d: Buffer) => ((output += d), seen()));
    child.once("exit", (code) => resolve({ code, output, stdout }));
  });
}

describe("serve: errors a first start meets", () => {
  it("a port in use is named with --port, not a raw listen EADDRINUSE, and the data folder it would have made is not left", async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    cleanup.push(() => taken.close());
    const port = (taken.address() as { port: number }).port;
    const data = join(tempDir(), "new", "data");
    const { code, stderr } = await cli(["serve", "--data", data, "--port", String(port), "--log-level", "silent"]);
    expect(code).toBe(1);
    expect(stderr).toContain(
      `chronolog: port ${port} on 127.0.0.1 is already in use (another owner or program listens there): stop it, or pass another --port`,
    );
    expect(stderr).not.toMatch(/listen EADDRINUSE|\n\s+at /);
    expect(existsSync(join(data, ".."))).toBe(false); // neither the folder nor the parent it made
  });

  it("a missing --plugins folder is named, not a raw ENOENT scandir, and no data folder is made", async () => {
    const dir = tempDir();
    const data = join(dir, "data");
    const { code, stderr } = await cli(["serve", "--data", data, "--port", "0", "--plugins", join(dir, "plugins"), "--log-level", "silent"]);
    expect(code).toBe(1);
    expect(stderr).toContain(`chronolog: no plugins folder ${join(dir, "plugins")} (--plugins): give a folder of plugin manifests (*.json, *.yaml)`);
    expect(stderr).not.toContain("scandir");
    expect(existsSync(data)).toBe(false);
  });

  it("a data folder that already existed stays after a failed start", async () => {
    const data = tempDir();
    const { code } = await cli(["serve", "--data", data, "--port", "0", "--plugins", join(data, "none"), "--log-level", "silent"]);
    expect(code).toBe(1);
    expect(existsSync(data)).toBe(true);
  });
});

describe("examples/bookings/executor.ts", () => {
  it("--help prints its usage and exits 0; an unknown option is a usage error (status 2), no stack trace", async () => {
    const help = await run(["--import", "tsx", "examples/bookings/executor.ts", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^usage: node --import tsx examples\/bookings\/executor\.ts \[URL\] \[--url URL\] \[--token TOKEN\]/);
    const bad = await run(["--import", "tsx", "examples/bookings/executor.ts", "--port", "1"]);
    expect(bad.code).toBe(2);
    expect(bad.output).toContain("bookings executor: Unknown option '--port'");
    expect(bad.output).not.toMatch(/\n\s+at /);
  });
});

describe("examples/config/owner.yaml, with the commands it lists", () => {
  it("an owner on it refuses calls without a token; the admin token works in the CLI, the executor token in the bookings executor", async () => {
    const owner = await spawnOwner(tempDir(), ["--config", "examples/config/owner.yaml", "--plugins", "examples/quickstart/plugins"]);
    cleanup.push(() => owner.child.kill("SIGKILL"));
    const order = '{"order_id":"o-1","amount":1,"email":"a@example.com"}';
    const refused = await cli(["emit", "order.placed", order, "--url", owner.url]);
    expect(refused.stderr).toContain("Unauthenticated: missing bearer token");
    const emitted = await cli(["emit", "order.placed", order, "--url", owner.url, "--token", "an-admin-token-0123"]);
    expect(emitted.code, emitted.stderr).toBe(0);
    const asClient = await cli(["emit", "order.placed", order, "--id", "o-1", "--url", owner.url, "--token", "a-long-random-client-token"]);
    expect(JSON.parse(asClient.stdout).actor).toEqual({ via: "app:web" });
    const executor = await run(["--import", "tsx", "examples/bookings/executor.ts", owner.url, "--token", "an-executor-token-0123"], /connected|stopped/);
    expect(executor.output).toContain(`chronolog executor: connected to ${owner.url} (session `);
  });
});

describe("examples/browser with vite", () => {
  it("the dev server prints its address and the page's address to open, with the owner and a client token", async () => {
    const { output } = await run(
      [join(repo, "node_modules/vite/bin/vite.js"), "--config", "examples/browser/vite.config.ts", "--port", "5191"],
      /Open http:\/\/localhost:5191\/\?owner=[^\n]*\n[^\n]*\n[^\n]*owner\.yaml/,
    );
    // Vite colours its banner when it thinks it runs in CI (the CI variable), even into a pipe.
    expect(stripVTControlCharacters(output)).toContain("Local:   http://localhost:5191/");
    expect(output).toContain("Open http://localhost:5191/?owner=http://127.0.0.1:50051&token=a-long-random-client-token");
    expect(output).toContain("npm run serve -- --config examples/config/owner.yaml --plugins examples/quickstart/plugins");
  });
});
