// vitest globalSetup: builds dist/main.js (scripts/build.mjs) unless it was built from the sources
// as they are now, before any test starts an owner or CLI process from it (test/helpers/chronolog.ts).
// It builds the console (dist/console/, which owners serve) when its sources changed, too.
import { buildBundle } from "../../scripts/build.mjs";

export async function setup(): Promise<void> {
  const started = performance.now();
  if (await buildBundle({ onlyIfStale: true })) console.log(`built dist/main.js for the test processes (${Math.round(performance.now() - started)} ms)`);
}
