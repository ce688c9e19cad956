// Starts an owner as a child process for the benchmarks: a temp folder with the given plugins'
// manifests, `serve` on a free port, resolved once it logs "owner serving".
// entry "tsx": server/src/main.ts under tsx; "bundle": dist/main.js (buildBundle() first) with
// the node flags `npm run serve` uses.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { create, toJson } from "@bufbuild/protobuf";
import { PluginManifestSchema } from "@chronolog/sdk/gen/chronolog/v1/plugin_pb";
import { manifestOf, type PluginDefinition } from "../../sdk/ts/src/plugin.js";
import { storeArgs } from "./postgres.js";

const repo = new URL("../../", import.meta.url).pathname;

/** The node flags of `npm run serve`. */
export const serveFlags = ["--min-semi-space-size=16", "--no-flush-bytecode", "--single-threaded-gc"];

export interface OwnerOptions {
  plugins: PluginDefinition[];
  entry?: "tsx" | "bundle";
  /** Extra node flags (e.g. --cpu-prof). */
  nodeArgs?: string[];
  /** Extra arguments of `serve`. */
  serveArgs?: string[];
  /** An owner stopped with its folder kept (stopOwner's `keep`): this one serves its folder and store (a restart). */
  restarts?: Owner;
}

export interface Owner {
  child: ChildProcess;
  url: string;
  /** The temp folder (data and plugins), removed by stopOwner. */
  dir: string;
  /** Spawn to "owner serving", ms. */
  readyMs: number;
  /** The owner's log lines at warn level or above, as logged (pino's JSON: level, msg, ...), in order. */
  warnings: { level: number; msg: string }[];
  /** The arguments of `serve` naming its store. */
  store: string[];
}

/** Bundles the owner into dist/main.js (scripts/build.mjs). */
export function buildBundle(): void {
  execFileSync(process.execPath, ["scripts/build.mjs"], { cwd: repo, stdio: "inherit" });
}

/** Writes the plugins' manifests into folder `plugins` (made), for `serve --plugins`. */
export function writePlugins(plugins: string, definitions: PluginDefinition[]): void {
  mkdirSync(plugins);
  for (const plugin of definitions) {
    const manifest = create(PluginManifestSchema, manifestOf(plugin));
    writeFileSync(join(plugins, `${manifest.name}.json`), JSON.stringify(toJson(PluginManifestSchema, manifest)));
  }
}

export async function startOwner(options: OwnerOptions): Promise<Owner> {
  const dir = options.restarts?.dir ?? mkdtempSync(join(tmpdir(), "chronolog-bench-"));
  const plugins = join(dir, "plugins");
  if (!options.restarts) writePlugins(plugins, options.plugins);
  const store = options.restarts?.store ?? (await storeArgs(join(dir, "data")));
  const entry = options.entry === "bundle" ? [...serveFlags, "dist/main.js"] : ["--conditions=chronolog-source", "--import", "tsx", "server/src/main.ts"];
  const args = [...(options.nodeArgs ?? []), ...entry, "serve", ...store, "--port", "0", "--plugins", plugins, ...(options.serveArgs ?? [])];
  const t0 = performance.now();
  const child = spawn(process.execPath, args, { cwd: repo, stdio: ["ignore", "ignore", "pipe"] });
  const warnings: Owner["warnings"] = [];
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stderr! }).on("line", (line) => {
      try {
        const entry = JSON.parse(line);
        if (entry.msg?.startsWith("owner serving")) resolve(`http://127.0.0.1:${entry.port}`);
        if (entry.level >= 40) warnings.push({ level: entry.level, msg: String(entry.msg) });
        if (entry.level >= 50) console.error(line);
      } catch {
        /* not JSON */
      }
    });
    child.once("exit", (code) => reject(new Error(`owner exited ${code}`)));
  });
  return { child, url, dir, readyMs: performance.now() - t0, warnings, store };
}

/** Stops the owner (SIGTERM, SIGKILL after 5 s) and removes its folder, unless `keep` (to start it again: OwnerOptions.restarts). */
export async function stopOwner(owner: Owner, signal: NodeJS.Signals = "SIGTERM", keep = false): Promise<void> {
  if (owner.child.exitCode === null && owner.child.signalCode === null) {
    const exited = new Promise((r) => owner.child.once("exit", r));
    owner.child.kill(signal);
    const force = setTimeout(() => owner.child.kill("SIGKILL"), 5_000);
    await exited;
    clearTimeout(force);
  }
  if (!keep) rmSync(owner.dir, { recursive: true, force: true });
}

/** An owner's /metrics (`token`: its bearer token), as the sum of every series of a metric name. */
export async function scrapeMetrics(url: string, token?: string): Promise<(name: string) => number> {
  const text = await (await fetch(`${url}/metrics`, token ? { headers: { authorization: `Bearer ${token}` } } : {})).text();
  return (name) =>
    text
      .split("\n")
      .filter((l) => l.startsWith(name))
      .reduce((s, l) => s + Number(l.split(" ").pop()), 0);
}

/**
 * What the PostgreSQL benches read of an owner's /metrics: its event-loop delay p99 (since the
 * last scrape) and the round trips its thread waited for, with their time.
 */
export async function scrapeStoreWaits(url: string): Promise<{ loopP99Ms: number; waits: number; waitMs: number }> {
  const sum = await scrapeMetrics(url);
  return {
    loopP99Ms: sum("nodejs_eventloop_lag_p99_seconds") * 1000,
    waits: sum("chronolog_store_waits_total"),
    waitMs: sum("chronolog_store_wait_seconds_total") * 1000,
  };
}
