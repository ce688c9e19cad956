// This SDK's name and version, sent in an executor's hello; and the comparison with the owner's
// version its welcome gives.

/** This SDK's name in an executor's hello (Hello.sdk). */
export const sdkName = "typescript";

/** This SDK's version (major.minor.patch), the same as its package.json's "version"; sent in an executor's hello. */
export const sdkVersion = "0.1.0";

/**
 * True when `ownerVersion` differs from this SDK's in its major or minor number, or is not a
 * version at all ("" from an owner that does not say its own): the owner and the SDKs are released
 * together, and a patch release changes no message the other side reads, while a minor or major
 * one may.
 */
export function versionsDiffer(ownerVersion: string, ours = sdkVersion): boolean {
  const majorMinor = (v: string) => /^(\d+)\.(\d+)(?:\.|$)/.exec(v)?.slice(1, 3).join(".");
  const theirs = majorMinor(ownerVersion);
  return theirs === undefined || theirs !== majorMinor(ours);
}
