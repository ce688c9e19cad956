// The owner's version (the CLI's: `chronolog --version`), as package.json says it; told to
// executors in the welcome and compared with the SDK version their hello gives.

/** This owner's version (major.minor.patch), the same as package.json's "version". */
export const ownerVersion = "0.1.0";

/**
 * True when `sdkVersion` differs from `ownerVersion` in its major or minor number, or is not a
 * version at all: the owner and the SDKs are released together, and a patch release changes no
 * message the other side reads, while a minor or major one may.
 */
export function versionsDiffer(sdkVersion: string, owner = ownerVersion): boolean {
  const majorMinor = (v: string) => /^(\d+)\.(\d+)(?:\.|$)/.exec(v)?.slice(1, 3).join(".");
  const theirs = majorMinor(sdkVersion);
  return theirs === undefined || theirs !== majorMinor(owner);
}
