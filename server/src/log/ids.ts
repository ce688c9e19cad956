import { createHash, randomFillSync } from "node:crypto";
import { v7 as uuidv7 } from "uuid";
import { canonicalJson } from "./canonical.js";

/** Longest id a client may give (characters). */
export const maxIdLength = 256;

/**
 * A fresh id for an event or call without one: a UUIDv7, time-ordered, so
 * the log's unique id index takes inserts at its end (about twice the insert
 * rate of random UUIDv4 ids measured here, bench/emit).
 */
export function newId(): string {
  return uuidv7({ rng: pooledRandom });
}

/** Random bytes for ids, drawn from a pool refilled 256 ids at a time (one syscall, not one per id). */
const pool = new Uint8Array(16 * 256);
let poolOffset = pool.length;
function pooledRandom(): Uint8Array {
  if (poolOffset === pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  poolOffset += 16;
  return pool.subarray(poolOffset - 16, poolOffset);
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
