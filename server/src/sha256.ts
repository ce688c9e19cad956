import { hash } from "node:crypto";

/**
 * SHA-256 of `text` (UTF-8) as 64 lowercase hex characters: the digest behind derived ids, call
 * input hashes and token hashes. One-shot `crypto.hash` (Node >= 20.12): about a third of the
 * cost of a `createHash` object for the short strings hashed here, and no object to collect.
 */
export function sha256Hex(text: string): string {
  return hash("sha256", text, "hex");
}

/** SHA-256 of `text` (UTF-8) as 32 bytes. */
export function sha256Bytes(text: string): Buffer {
  return hash("sha256", text, "buffer");
}
