// Builds the console (console/, Vite) into dist/console/, which the owner serves under /console/
// (server/src/console.ts). Skipped when dist/console/index.html is newer than every source of
// it (console/, the generated clients and the SDK package's exports, package-lock.json), so
// `npm run serve` and `npm test` only pay for it (~3 s) after a change. `node
// scripts/build-console.mjs` builds it alone.
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../", import.meta.url));
const output = join(root, "dist/console/index.html");
// This script is one of them: a build made by an older one is made again.
const sources = ["console", "sdk/ts/src/gen", "sdk/ts/package.json", "package-lock.json", "scripts/build-console.mjs"].map((p) => join(root, p));

function newest(path) {
  const s = statSync(path);
  if (!s.isDirectory()) return s.mtimeMs;
  return Math.max(s.mtimeMs, ...readdirSync(path).map((name) => newest(join(path, name))));
}

/** True when dist/console/ is missing or older than its sources. */
export function consoleStale() {
  if (!existsSync(output)) return true;
  return newest(output) < Math.max(...sources.map(newest));
}

/** Builds dist/console/ (always, or only when stale). */
export async function buildConsole({ onlyIfStale = false } = {}) {
  if (onlyIfStale && !consoleStale()) return false;
  const { build } = await import("vite");
  // Vite builds for process.env.NODE_ENV when it is set, over its production mode: inside a test
  // run (vitest sets it to "test") React would come in its development build.
  const nodeEnv = process.env.NODE_ENV;
  process.env.NODE_ENV = "production";
  try {
    await build({ configFile: join(root, "console/vite.config.ts"), logLevel: "warn" });
  } finally {
    if (nodeEnv === undefined) delete process.env.NODE_ENV;
    else process.env.NODE_ENV = nodeEnv;
  }
  return true;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await buildConsole();
