// The SDKs as a user installs them: the TypeScript SDK packed with `npm pack` and installed from
// the tarball into a plain `npm init -y` project outside the repository, where the README's
// snippets run as written (an ES module client and executor, a CommonJS client), a CommonJS
// script requires it, and TypeScript files of both module systems type-check against its
// .d.ts without @types/node; the Python SDK built into a wheel (`python -m build`) and installed
// with `pip install` into a fresh virtual environment, its example executor run from outside
// the repository. The versions of the owner and both SDKs are one number, said by each.
//
// @module-tag serial
// @module-tag sqlite-only

import { execFile, spawn, type ChildProcess } from "node:child_process";
import { cpSync, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ownerVersion } from "../server/src/version.js";
import { createClient } from "../sdk/ts/src/client.js";
import { sdkVersion } from "../sdk/ts/src/version.js";
import { spawnOwner, tempDir, type OwnerProcess } from "./helpers/owner.js";
import { until } from "./helpers/until.js";

const run = promisify(execFile);
const repo = new URL("../", import.meta.url).pathname;
const python3 = "/usr/bin/python3";
const repoPython = join(repo, ".venv/bin/python");
const tsc = join(repo, "node_modules/typescript/bin/tsc");

/** Starts `command` with its stderr kept in `output`; `exited` rejects the test's waits if it ends first. */
function start(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): { child: ChildProcess; output: string[] } {
  const child = spawn(command, args, { cwd, env, stdio: ["ignore", "ignore", "pipe"] });
  const output: string[] = [];
  child.stderr!.on("data", (chunk: Buffer) => output.push(chunk.toString()));
  return { child, output };
}

/** An environment without the repository's paths (no PYTHONPATH, no NODE_OPTIONS loaders). */
function outsideEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = { ...process.env, ...extra };
  delete env.PYTHONPATH;
  delete env.NODE_OPTIONS;
  return env;
}

/** The `index`-th ```js block of the README section whose heading is `## heading`. */
function readmeSnippet(readme: string, heading: string, index = 0): string {
  const section = readme.split(/^## /m).find((s) => s.startsWith(`${heading}\n`));
  const blocks = [...(section ?? "").matchAll(/^```js\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
  if (blocks[index] === undefined) throw new Error(`no js block ${index} under "## ${heading}" in the SDK's README`);
  return blocks[index];
}

/** The executors the owner lists, as `name sdk version`. */
async function executorsOf(url: string): Promise<string[]> {
  const { executors } = await createClient({ url }).admin.listExecutors({});
  return executors.map((e) => `${e.executor} ${e.sdk} ${e.sdkVersion}`);
}

/** Waits until the owner lists `expected` among its executors; fails with `child`'s stderr if it exits first. */
async function untilListed(url: string, expected: string, started: { child: ChildProcess; output: string[] }): Promise<void> {
  await until(
    async () => {
      if (started.child.exitCode !== null) throw new Error(`the executor exited (${started.child.exitCode}) before it connected:\n${started.output.join("")}`);
      return (await executorsOf(url)).includes(expected);
    },
    `executor "${expected}" listed`,
    30_000,
  );
}

// A CommonJS script (require, no top-level await): calls the README executor's action and
// emits the event its processor reacts to.
const greetCjs = `
const { createClient } = require("@chronolog/sdk");

async function main() {
  const client = createClient({ url: process.env.CHRONOLOG_URL });
  const { output } = await client.call("greeter.greet", { name: "ana" });
  const emitted = await client.emit("visitor.arrived", { name: "bo" }, { id: "visitor-bo" });
  console.log(JSON.stringify({ greeting: output.greeting, seq: Number(emitted.event.seq) }));
}
main().catch((e) => {
  console.error(e);
  process.exit(1);
});
`;

// Type-checked with the repository's tsc in the project's own tsconfig (as \`tsc --init\` writes it:
// module nodenext, exactOptionalPropertyTypes, verbatimModuleSyntax, no types), with no
// @types/node installed and lib checks on: the package's .d.ts for \`import\` (app.mts) and for
// \`require\` (app.cts). A wrong argument type must be an error in each, so the checks are real.
const appMts = `
import { createClient, definePlugin, runExecutor, sdkVersion, type ChronologClient } from "@chronolog/sdk";
import { CollectionService } from "@chronolog/sdk/gen/chronolog/v1/collection_pb";
declare const token: string | undefined; // e.g. process.env.CHRONOLOG_TOKEN
const client: ChronologClient = createClient({ url: "http://127.0.0.1:1", token });
export const service: string = CollectionService.typeName;
export const version: string = sdkVersion;
export const pending: Promise<unknown> = client.emit("visitor.arrived", { name: "cy" });
const greeter = definePlugin({ name: "greeter", actions: { greet: { allow: ["*"], async run(_ctx, input) { return { greeting: String(input.name) }; } } } });
export const executor = runExecutor({ url: "http://127.0.0.1:1", token, plugins: [greeter] });
`;
const appCts = `
import sdk = require("@chronolog/sdk");
import gen = require("@chronolog/sdk/gen/chronolog/v1/collection_pb");
declare const token: string | undefined;
const client: sdk.ChronologClient = sdk.createClient({ url: "http://127.0.0.1:1", token });
const service: string = gen.CollectionService.typeName;
const pending: Promise<unknown> = client.emit("visitor.arrived", { name: "cy" });
export = { service, pending };
`;

describe("one version for the owner and the SDKs", () => {
  it("package.json, the SDKs' manifests and their code say the same version; chronolog --version prints it", async () => {
    const versionOf = (file: string) => JSON.parse(readFileSync(join(repo, file), "utf8")).version;
    expect(versionOf("package.json")).toBe(ownerVersion);
    expect(versionOf("sdk/ts/package.json")).toBe(ownerVersion);
    expect(sdkVersion).toBe(ownerVersion);
    // pyproject.toml reads it from chronolog/version.py (setuptools' dynamic version).
    expect(readFileSync(join(repo, "sdk/python/pyproject.toml"), "utf8")).toMatch(/^version = \{ attr = "chronolog\.version\.__version__" \}$/m);
    expect(readFileSync(join(repo, "sdk/python/chronolog/version.py"), "utf8")).toContain(`__version__ = "${ownerVersion}"`);
    for (const changelog of ["sdk/ts/CHANGELOG.md", "sdk/python/CHANGELOG.md"])
      expect(readFileSync(join(repo, changelog), "utf8")).toContain(`## ${ownerVersion}`);
    const { stdout } = await run(join(repo, "bin/chronolog"), ["--version"], { cwd: repo, timeout: 30_000 });
    expect(stdout.trim()).toBe(ownerVersion);
  });
});

describe("the SDK packages, installed outside the repository", () => {
  let owner: OwnerProcess;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    // The quick start's plugin: the README's client emits its order.placed.
    owner = await spawnOwner(join(tempDir(), "data"), ["--plugins", "examples/quickstart/plugins"]);
  });

  afterAll(async () => {
    for (const child of children) child.kill("SIGKILL");
    owner?.child.kill("SIGTERM");
    await owner?.exited;
  });

  it("TypeScript: npm pack, npm install the tarball into an npm init project; the README's snippets as written (ESM and CommonJS), require from CommonJS, and a type check of both module systems without @types/node", async () => {
    const packs = tempDir("chronolog-pack-");
    const project = tempDir("chronolog-user-");
    await run("npm", ["pack", "--workspace", "@chronolog/sdk", "--pack-destination", packs, "--silent"], { cwd: repo, timeout: 120_000 });
    const tarball = join(packs, `chronolog-sdk-${sdkVersion}.tgz`);
    expect(existsSync(tarball)).toBe(true);
    await run("npm", ["init", "-y"], { cwd: project, timeout: 60_000 });
    await run("npm", ["install", tarball, "--no-audit", "--no-fund", "--prefer-offline", "--silent"], { cwd: project, timeout: 180_000 });
    const installed = join(project, "node_modules/@chronolog/sdk");
    expect(existsSync(join(installed, "dist/index.d.ts"))).toBe(true);
    expect(existsSync(join(installed, "dist/cjs/index.js"))).toBe(true);
    expect(existsSync(join(installed, "src"))).toBe(false); // compiled only
    expect(readdirSync(installed).sort()).toEqual(["CHANGELOG.md", "README.md", "dist", "package.json"]);
    expect(existsSync(join(project, "node_modules/@types"))).toBe(false); // nothing extra came along for the types

    const readme = readFileSync(join(installed, "README.md"), "utf8");
    const env = outsideEnv({ CHRONOLOG_URL: owner.url });
    writeFileSync(join(project, "executor.mjs"), readmeSnippet(readme, "An executor"));
    writeFileSync(join(project, "client.mjs"), readmeSnippet(readme, "A client", 0));
    writeFileSync(join(project, "client.cjs"), readmeSnippet(readme, "A client", 1));
    writeFileSync(join(project, "greet.cjs"), greetCjs);

    const executor = start(process.execPath, ["executor.mjs"], project, env);
    children.push(executor.child);
    await untilListed(owner.url, `greeter typescript ${sdkVersion}`, executor);

    const first = (await run(process.execPath, ["client.mjs"], { cwd: project, env, timeout: 30_000 })).stdout.trim().split("\n");
    const [seq, existing] = first[0].split(" ");
    expect(existing).toBe("false");
    expect(first[1]).toBe(`${seq} order.placed { order_id: 'o-1', amount: 12.5, email: 'ana@example.com' }`);
    const again = (await run(process.execPath, ["client.mjs"], { cwd: project, env, timeout: 30_000 })).stdout.trim().split("\n");
    expect(again[0]).toBe(`${seq} true`); // the same id: the same event
    const cjs = (await run(process.execPath, ["client.cjs"], { cwd: project, env, timeout: 30_000 })).stdout.trim();
    expect(Number(cjs)).toBeGreaterThan(Number(seq));

    const greeted = JSON.parse((await run(process.execPath, ["greet.cjs"], { cwd: project, env, timeout: 30_000 })).stdout.trim());
    expect(greeted.greeting).toBe("hello, ana");
    const client = createClient({ url: owner.url });
    await until(
      async () => {
        for await (const event of client.read({ types: ["visitor.greeted"] })) if (event.data?.greeting === "hello, bo") return true;
        return false;
      },
      "visitor.greeted from the README executor's processor",
      30_000,
    );

    await run(process.execPath, [tsc, "--init"], { cwd: project, timeout: 60_000 });
    writeFileSync(join(project, "app.mts"), appMts);
    writeFileSync(join(project, "app.cts"), appCts);
    const check = () =>
      run(process.execPath, [tsc, "-p", "tsconfig.json", "--noEmit", "--skipLibCheck", "false"], { cwd: project, timeout: 60_000 }).then(
        () => "",
        (e: { stdout: string }) => e.stdout,
      );
    expect(await check()).toBe("");
    writeFileSync(join(project, "app.mts"), appMts.replace('{ name: "cy" }', '"not an object"'));
    writeFileSync(join(project, "app.cts"), appCts.replace('{ name: "cy" }', '"not an object"'));
    const wrong = await check();
    expect(wrong).toMatch(/app\.mts.*not assignable to parameter of type 'JsonObject'/);
    expect(wrong).toMatch(/app\.cts.*not assignable to parameter of type 'JsonObject'/);
  }, 300_000);

  it.skipIf(!existsSync(python3) && !process.env.CI)(
    "Python: python -m build a wheel, pip install it into a fresh venv, import it and run the example executor from outside the repository",
    async () => {
      const hasBuild = await run(repoPython, ["-c", "import build"]).then(
        () => true,
        () => false,
      );
      if (!hasBuild) throw new Error(`${repoPython} has no 'build': pip install -r sdk/python/requirements.txt (as .ci/run does)`);
      const home = tempDir("chronolog-py-");
      const venv = join(home, "venv");
      // A copy of the source, so the build leaves nothing (build/, *.egg-info) in the repository.
      cpSync(join(repo, "sdk/python"), join(home, "sdk"), { recursive: true, filter: (src) => !src.includes("__pycache__") });
      // --no-isolation: the build backend pinned in pyproject.toml, from the development venv, instead of a download.
      await run(repoPython, ["-m", "build", "--wheel", "--no-isolation", "--outdir", join(home, "dist"), join(home, "sdk")], { timeout: 120_000 });
      const wheel = join(home, "dist", `chronolog-${ownerVersion}-py3-none-any.whl`);
      expect(readdirSync(join(home, "dist"))).toEqual([`chronolog-${ownerVersion}-py3-none-any.whl`]);
      await run(python3, ["-m", "venv", venv], { timeout: 120_000 });
      await run(join(venv, "bin/pip"), ["install", "--quiet", "--disable-pip-version-check", wheel], { timeout: 300_000 });
      const env = outsideEnv({ PYTHONUNBUFFERED: "1" });
      const { stdout } = await run(
        join(venv, "bin/python"),
        ["-c", "import chronolog, os; print(chronolog.__version__, os.path.dirname(chronolog.__file__))"],
        { cwd: home, env },
      );
      const [version, where] = stdout.trim().split(" ");
      expect(version).toBe(ownerVersion);
      expect(where.startsWith(venv)).toBe(true); // the installed package, not the repository's folder

      const executor = start(join(venv, "bin/python"), [join(repo, "examples/python/executor.py"), "--url", owner.url], home, env);
      children.push(executor.child);
      await untilListed(owner.url, `pyshop python ${ownerVersion}`, executor);
      const client = createClient({ url: owner.url });
      await client.emit("cart.submitted", { cart_id: "c-pkg", items: [{ sku: "tea", price: 4.5, qty: 2 }] });
      await until(
        async () => {
          for await (const event of client.read({ types: ["cart.checked"] })) if (event.data?.cart_id === "c-pkg") return true;
          return false;
        },
        "cart.checked from the installed Python executor",
        30_000,
      );
    },
    420_000,
  );
});
