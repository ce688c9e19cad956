// `npm run build`: bundles the owner and CLI (server/src/main.ts) into dist/main.js with
// esbuild (~0.5 s), so `node dist/main.js serve` starts in ~0.35 s instead of ~1.2 s under tsx
// (which compiles ~300 TypeScript modules at every start). `npm run serve` builds, then runs it.
// The tests start their owner and CLI processes from it too: their run calls
// `buildBundle({ onlyIfStale: true })`, which builds unless dist/main.sources holds the digest of
// the sources as they are now (see sourcesDigest).
//
// What a bundle must keep working:
// - better-sqlite3 is a native addon: external, loaded from node_modules.
// - CommonJS dependencies (pino, prom-client, mingo, ...) call require() on Node built-ins:
//   the banner gives the ES module a real `require`.
// - The SQL migrations are found through import.meta.url (`./migrations/` next to the module,
//   server/src/store/sqlite/migrate.ts): copied to dist/migrations/.
// - The checkpoint worker (store/sqlite/checkpointer.ts) and the maintenance reader
//   (store/sqlite/maintenance-read.ts) are inline sources run with eval / `node -e`; they find
//   better-sqlite3 with createRequire(import.meta.url), which resolves from dist/ as well.
// - pino's transports run in worker threads found through __dirname, which a bundle lacks: the
//   owner logs with pino.destination(2) (server/src/logger.ts), no transport.
// - The file is named main.js (ESM: package.json has "type": "module") so the owner lock's
//   command-line check (store/sqlite/owner-lock.ts: an argument ending in main.js) recognises it.
// - The console (console/, Vite) is built into dist/console/ when its sources changed
//   (scripts/build-console.mjs); the owner serves it under /console/.
// Files are overwritten in place (no `rm -rf dist`): a running bundled owner still reads
// dist/migrations/ on its first maintenance statement.
import { build } from "esbuild";
import { createHash } from "node:crypto";
import { cpSync, existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildConsole } from "./build-console.mjs";

const root = fileURLToPath(new URL("../", import.meta.url));
const path = (relative) => join(root, relative);
/** What the bundle is made of: the server's and the SDK's sources (migrations included) and its package's exports, the locked dependencies and their patches, this script. */
const sources = ["server/src", "sdk/ts/src", "sdk/ts/package.json", "package-lock.json", "patches", "scripts/build.mjs"];
const digestFile = path("dist/main.sources");

/** Every file under `relative` (a file or a folder), as paths relative to the repository, sorted. */
function filesOf(relative) {
  if (!existsSync(path(relative))) return [];
  if (!statSync(path(relative)).isDirectory()) return [relative];
  return readdirSync(path(relative))
    .sort()
    .flatMap((name) => filesOf(`${relative}/${name}`));
}

/**
 * A digest of the bundle's sources: every file's path and content. By content, not by time: a
 * source edited while a build ran, or given an older time (a copy, an archive), still differs.
 */
export function sourcesDigest() {
  const hash = createHash("sha256");
  for (const file of sources.flatMap(filesOf))
    hash
      .update(`${file}\0`)
      .update(readFileSync(path(file)))
      .update("\0");
  return hash.digest("hex");
}

/** True when dist/main.js was built from the sources as they are now. */
export function bundleCurrent() {
  return existsSync(path("dist/main.js")) && existsSync(digestFile) && readFileSync(digestFile, "utf8") === sourcesDigest();
}

/** Builds dist/main.js (always, or only when it is not current) and the console when stale; true when the bundle was built. */
export async function buildBundle({ onlyIfStale = false } = {}) {
  const digest = sourcesDigest(); // before the build: an edit made while it runs leaves the bundle stale, as it is
  const current = existsSync(path("dist/main.js")) && existsSync(digestFile) && readFileSync(digestFile, "utf8") === digest;
  if (!(onlyIfStale && current)) {
    rmSync(digestFile, { force: true }); // a build that fails midway leaves no digest: the next check builds again
    const result = await build({
      entryPoints: [path("server/src/main.ts")],
      outdir: path("dist"),
      // serve's modules are a chunk of their own (main.ts imports them only for serve): the client
      // commands start without loading SQLite, schemas and time. Chunks sit next to main.js, so
      // import.meta.url finds migrations/ from either.
      splitting: true,
      chunkNames: "[name]-[hash]",
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node20",
      external: ["better-sqlite3", "pg-native", "pg-types"],
      // The SDK's generated code is imported as "@chronolog/sdk/gen/..."; its package sends the
      // chronolog-source condition to the TypeScript sources (sdk/ts/src/gen/), not to a build of
      // them. "module" is esbuild's default condition, which a list of our own would drop.
      conditions: ["chronolog-source", "module"],
      banner: { js: 'import { createRequire as __chronologRequire } from "node:module"; const require = __chronologRequire(import.meta.url);' },
      sourcemap: "linked", // stack traces map back to the .ts files with `node --enable-source-maps dist/main.js`
      logLevel: "warning",
      metafile: true,
    });
    cpSync(path("server/src/store/sqlite/migrations/"), path("dist/migrations/"), { recursive: true });
    cpSync(path("server/src/store/postgres/pg-migrations/"), path("dist/pg-migrations/"), { recursive: true });
    // Chunks of earlier builds (their names carry a hash) go; a running owner loaded its own at start.
    const outputs = new Set(Object.keys(result.metafile.outputs).map((file) => file.split("/").pop()));
    for (const name of readdirSync(path("dist/"))) if (/\.js(\.map)?$/.test(name) && !outputs.has(name)) rmSync(path(`dist/${name}`));
    writeFileSync(digestFile, digest);
  }
  await buildConsole({ onlyIfStale: true });
  return !(onlyIfStale && current);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await buildBundle();
