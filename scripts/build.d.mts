// Types of scripts/build.mjs for the TypeScript that imports it (the tests' global setup).
/** A digest of the bundle's sources: every file's path and content. */
export function sourcesDigest(): string;
/** True when dist/main.js was built from the sources as they are now. */
export function bundleCurrent(): boolean;
/** Builds dist/main.js (always, or only when it is not current) and the console when stale; true when the bundle was built. */
export function buildBundle(options?: { onlyIfStale?: boolean }): Promise<boolean>;
