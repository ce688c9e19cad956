// The SDKs as a user installs them: the TypeScript SDK packed with `npm pack` and installed from
// the tarball into a fresh project outside the repository (plain JavaScript, no tsx, and a
// type check of a TypeScript file against the package's .d.ts), and the Python SDK installed with
// `pip install` into a fresh virtual environment, each running an executor and a client against
// a real owner.

import { execFile, spawn, type ChildProcess } from "node:child_process";
import { cpSync, existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "../sdk/ts/src/client.js";
import { spawnOwner, tempDir, type OwnerProcess } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

const run = promisify(execFile);
const repo = new URL("../", import.meta.url).pathname;
const python3 = "/usr/bin/python3";

/** Starts `command` and resolves once a line of its stderr equals `ready`; rejects if it exits first. */
function startUntilReady(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv, ready: string): Promise<ChildProcess> {
  const child = spawn(command, args, { cwd, env, stdio: ["ignore", "ignore", "pipe"] });
  const output: string[] = [];
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stderr! }).on("line", (line) => {
      output.push(line);
      if (line === ready) resolve(child);
    });
    child.once("exit", (code, signal) => reject(new Error(`${args.join(" ")} exited (${code ?? signal}) before it was ready:\n${output.join("\n")}`)));
  });
}

/** An environment without the repository's paths (no PYTHONPATH, no NODE_OPTIONS loaders). */
function outsideEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.PYTHONPATH;
  delete env.NODE_OPTIONS;
  return env;
}

const executorJs = `
import { definePlugin, runExecutor } from "@chronolog/sdk";

const greeter = definePlugin({
  name: "greeter",
  version: "1",
  events: {
    "visitor.arrived": { allow: ["*"], schema: { type: "object", required: ["name"], properties: { name: { type: "string" } } } },
    "visitor.greeted": { schema: { type: "object", required: ["greeting"] } },
  },
  actions: {
    greet: {
      allow: ["*"],
      inputSchema: { type: "object", required: ["name"] },
      async run(ctx, input) {
        return { greeting: "hello, " + input.name };
      },
    },
  },
  processors: {
    welcome: {
      on: "visitor.arrived",
      key: "data.name",
      async run(ctx) {
        const { output } = await ctx.call("greeter.greet", { name: ctx.data.name });
        await ctx.emit("visitor.greeted", { greeting: output.greeting });
      },
    },
  },
});

const executor = runExecutor({ url: process.argv[2], plugins: [greeter] });
await executor.ready;
console.error("executor ready");
process.once("SIGTERM", () => void executor.stop().then(() => process.exit(0)));
`;

const clientJs = `
import { createClient } from "@chronolog/sdk";

const client = createClient({ url: process.argv[2] });
const { output } = await client.call("greeter.greet", { name: "ana" });
const emitted = await client.emit("visitor.arrived", { name: "bo" }, { id: "visitor-bo" });
console.log(JSON.stringify({ greeting: output.greeting, seq: Number(emitted.event?.seq ?? 0) }));
`;

// Compiled with the repository's tsc against the installed package's .d.ts: a wrong argument
// type must be an error there, so the check is real.
const typedTs = `
import { createClient, type ChronologClient } from "@chronolog/sdk";
import { CollectionService } from "@chronolog/sdk/gen/chronolog/v1/collection_pb";
const client: ChronologClient = createClient({ url: "http://127.0.0.1:1" });
export const service: string = CollectionService.typeName;
export const pending: Promise<unknown> = client.emit("visitor.arrived", { name: "cy" });
`;

describe("the SDK packages, installed outside the repository", () => {
  let owner: OwnerProcess;
  let children: ChildProcess[] = [];

  beforeAll(async () => {
    owner = await spawnOwner(join(tempDir(), "data"));
  });

  afterAll(async () => {
    for (const child of children) child.kill("SIGKILL");
    owner?.child.kill("SIGTERM");
    await owner?.exited;
  });

  it("TypeScript: npm pack, npm install the tarball, an executor and a client in plain JavaScript, and a type check", async () => {
    const packs = tempDir("chronolog-pack-");
    const project = tempDir("chronolog-user-");
    await run("npm", ["pack", "--workspace", "@chronolog/sdk", "--pack-destination", packs, "--silent"], { cwd: repo, timeout: 120_000 });
    const tarball = join(packs, "chronolog-sdk-0.1.0.tgz");
    expect(existsSync(tarball)).toBe(true);
    writeFileSync(join(project, "package.json"), JSON.stringify({ name: "greeter-app", private: true, type: "module" }));
    await run("npm", ["install", tarball, "--no-audit", "--no-fund", "--prefer-offline", "--silent"], { cwd: project, timeout: 180_000 });
    expect(existsSync(join(project, "node_modules/@chronolog/sdk/dist/index.d.ts"))).toBe(true);
    expect(existsSync(join(project, "node_modules/@chronolog/sdk/src"))).toBe(false); // compiled only

    writeFileSync(join(project, "executor.mjs"), executorJs);
    writeFileSync(join(project, "client.mjs"), clientJs);
    const executor = await startUntilReady(process.execPath, ["executor.mjs", owner.url], project, outsideEnv(), "executor ready");
    children.push(executor);
    const { stdout } = await run(process.execPath, ["client.mjs", owner.url], { cwd: project, env: outsideEnv(), timeout: 30_000 });
    const answer = JSON.parse(stdout.trim());
    expect(answer.greeting).toBe("hello, ana");
    expect(answer.seq).toBeGreaterThan(0);

    const client = createClient({ url: owner.url });
    await until(async () => {
      for await (const event of client.read({ types: ["visitor.greeted"] })) if (event.data?.greeting === "hello, bo") return true;
      return false;
    }, "visitor.greeted from the packaged executor's processor", 30_000);

    const tsc = join(repo, "node_modules/typescript/bin/tsc");
    const tsconfig = { compilerOptions: { target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", strict: true, noEmit: true, skipLibCheck: true, types: ["node"], typeRoots: [join(repo, "node_modules/@types")] }, files: ["typed.ts"] };
    writeFileSync(join(project, "tsconfig.json"), JSON.stringify(tsconfig));
    writeFileSync(join(project, "typed.ts"), typedTs);
    await run(process.execPath, [tsc, "-p", "tsconfig.json"], { cwd: project, timeout: 60_000 });
    writeFileSync(join(project, "typed.ts"), typedTs.replace('{ name: "cy" }', '"not an object"'));
    const wrong = await run(process.execPath, [tsc, "-p", "tsconfig.json"], { cwd: project, timeout: 60_000 }).then(() => "", (e: { stdout: string }) => e.stdout);
    expect(wrong).toMatch(/typed\.ts.*not assignable/);
  }, 300_000);

  it.skipIf(!existsSync(python3) && !process.env.CI)("Python: pip install into a fresh venv, the example executor run from outside the repository", async () => {
    const home = tempDir("chronolog-py-");
    const venv = join(home, "venv");
    // A copy of the source, so the build leaves nothing (build/, *.egg-info) in the repository.
    cpSync(join(repo, "sdk/python"), join(home, "sdk"), { recursive: true, filter: (src) => !src.includes("__pycache__") });
    await run(python3, ["-m", "venv", venv], { timeout: 120_000 });
    await run(join(venv, "bin/pip"), ["install", "--quiet", "--disable-pip-version-check", join(home, "sdk")], { timeout: 300_000 });
    const env = { ...outsideEnv(), PYTHONUNBUFFERED: "1" };
    const { stdout } = await run(join(venv, "bin/python"), ["-c", "import chronolog, os; print(os.path.dirname(chronolog.__file__))"], { cwd: home, env });
    expect(stdout.trim().startsWith(venv)).toBe(true); // the installed package, not the repository's folder

    const executor = await startUntilReady(join(venv, "bin/python"), [join(repo, "examples/python/executor.py"), "--url", owner.url], home, env, "executor ready");
    children.push(executor);
    const client = createClient({ url: owner.url });
    await client.emit("cart.submitted", { cart_id: "c-pkg", items: [{ sku: "tea", price: 4.5, qty: 2 }] });
    await until(async () => {
      for await (const event of client.read({ types: ["cart.checked"] })) if (event.data?.cart_id === "c-pkg") return true;
      return false;
    }, "cart.checked from the installed Python executor", 30_000);
  }, 420_000);
});
