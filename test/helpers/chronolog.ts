// The chronolog command as tests start it in a process of its own (an owner, a CLI command): the
// bundle dist/main.js, which starts in ~0.3 s where tsx needs ~1.2 s to compile the sources. The
// run's global setup (test/helpers/bundle-global.ts) builds it before any test when it was not
// built from the sources as they are now, so a test never runs a stale bundle. Source maps on: a
// child's stack trace names the .ts files.
import { join } from "node:path";
import { inject } from "vitest";

const repo = new URL("../../", import.meta.url).pathname;

/** The bundle's path. */
export const bundle = join(repo, "dist/main.js");

/** Node's arguments that run the chronolog command; the command's own arguments follow. */
export const chronologArgs = ["--enable-source-maps", bundle];

/**
 * Throws in the fast tier (vitest.config.ts), where files run in parallel: a test that starts
 * `what` (an owner or CLI process) belongs to the serial tier; tag it `{ tags: ["serial"] }`.
 */
export function startingProcess(what: string): void {
  if (inject("tier") === "fast")
    throw new Error(`this test starts ${what} in the fast tier, where files run in parallel: tag it, or its describe, { tags: ["serial"] } (vitest.config.ts)`);
}

declare module "vitest" {
  export interface ProvidedContext {
    /** The tier of the running file: vitest.config.ts provides it to each project. */
    tier: "fast" | "serial";
  }
}
