import { randomFillSync } from "node:crypto";
import { v7 as uuidv7 } from "uuid";
import { fail } from "../errors.js";
import { canonicalJson } from "./canonical.js";
import { sha256Hex } from "../sha256.js";

/** Longest id a client may give, in characters (Unicode code points, so an emoji counts once). */
const maxIdCodePoints = 256;

/** C0 controls, DEL and controls. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is its purpose
const controlCharacter = /[\u0000-\u001f\u007f-\u009f]/u;

/**
 * The one rule for ids a client gives (event ids, call ids, timer ids, document `_id`s):
 * at most {@link maxIdCodePoints} characters (Unicode code points), no control characters
 * (C0, DEL), not empty and not only whitespace. INVALID_ARGUMENT naming `field`
 * otherwise. Callers where an id is optional (an empty one means "make one") call it only
 * for a non-empty id.
 */
export function checkId(id: string, field: string): string {
  const problem = idProblem(id);
  if (problem) fail("bad_request", `${field} ${problem.message}`, [{ field, description: problem.description }]);
  return id;
}

function idProblem(id: string): { message: string; description: string } | undefined {
  if (id.trim() === "") return { message: id === "" ? "is empty" : "is only whitespace", description: "not empty or only whitespace" };
  const control = controlCharacter.exec(id);
  if (control) {
    const code = `U+${control[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`;
    return {
      message: `contains a control character (${code} at character ${[...id.slice(0, control.index)].length + 1})`,
      description: "no control characters (U+0000-U+001F, U+007F-U+009F)",
    };
  }
  // Counting code points stops at the first one over the limit (an id may be long).
  let count = 0;
  for (const _ of id) if (++count > maxIdCodePoints) break;
  if (count > maxIdCodePoints)
    return { message: `is longer than ${maxIdCodePoints} characters`, description: `at most ${maxIdCodePoints} characters (Unicode code points)` };
  return undefined;
}

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
 * The id of work done under a cause:
 * `H(cause id, position, H(canonical input))`, as 32 hex characters of
 * SHA-256. A retry that makes the same calls in the same order finds the same ids.
 */
export function derivedId(causeId: string, position: number, input: unknown): string {
  return sha256Hex(`${causeId}\n${position}\n${inputHashOf(input)}`).slice(0, 32);
}

/** H(canonical input) of the constant strings the owner derives ids with ("action.started", "timer.failed", ...), each hashed once. */
const stringInputHashes = new Map<string, string>();

/** H(canonical `input`): for a string, from {@link stringInputHashes} (at most 256 kept: they are the owner's own few). */
function inputHashOf(input: unknown): string {
  if (typeof input !== "string") return sha256Hex(canonicalJson(input));
  let hash = stringInputHashes.get(input);
  if (hash === undefined) {
    hash = sha256Hex(canonicalJson(input));
    if (stringInputHashes.size < 256) stringInputHashes.set(input, hash);
  }
  return hash;
}
