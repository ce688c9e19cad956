import { createHash, randomUUID } from "node:crypto";
import { canonicalJson } from "./canonical.js";

/** Longest id a client may give (characters). */
export const maxIdLength = 256;

/** A fresh random id for an event or call without one. */
export function newId(): string {
  return randomUUID();
}

/**
 * The id of work done under a cause (SPEC E7, X5):
 * `H(cause id, position, H(canonical input))`, as 32 hex characters of
 * SHA-256. A retry that makes the same calls in the same order finds the same ids.
 */
export function derivedId(causeId: string, position: number, input: unknown): string {
  const inputHash = createHash("sha256").update(canonicalJson(input)).digest("hex");
  return createHash("sha256").update(`${causeId}\n${position}\n${inputHash}`).digest("hex").slice(0, 32);
}
