// `npm run build`: bundles the owner and CLI (server/src/main.ts) into dist/main.js with
// esbuild (~0.5 s), so `node dist/main.js serve` starts in ~0.35 s instead of ~1.2 s under tsx
// (which compiles ~300 TypeScript modules at every start). `npm run serve` builds, then runs it.
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
import { cpSync, readdirSync, rmSync } from "node:fs";
import { buildConsole } from "./build-console.mjs";

const root = new URL("../", import.meta.url);
const path = (relative) => new URL(relative, root).pathname;

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
await buildConsole({ onlyIfStale: true });
