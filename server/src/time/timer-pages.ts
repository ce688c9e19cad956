import { fail } from "../errors.js";
import type { TimerCursor } from "../store/timers.js";
import type { TimerView } from "./timers.js";

// ListTimers' pages: what one holds, and the page tokens that say where the next one starts.

/** A page of ListTimers. */
export interface TimerPage {
  timers: TimerView[];
  /** "" at the end. */
  nextPageToken: string;
}

/** A ListTimers page token: base64url of `[next due ms, id]`, or in the tail without a next due moment `[null, id, last change ms]`. */
export function encodeToken(cursor: TimerCursor): string {
  return Buffer.from(JSON.stringify(cursor.dueMs === null ? [null, cursor.id, cursor.updatedAt] : [cursor.dueMs, cursor.id])).toString("base64url");
}

/** The cursor of ListTimers page token `token` (see {@link encodeToken}); INVALID_ARGUMENT for one not made here. */
export function decodeToken(token: string): TimerCursor {
  let parts: unknown[] = [];
  try {
    parts = JSON.parse(Buffer.from(token, "base64url").toString("utf8")) as unknown[];
  } catch {
    /* falls through */
  }
  const [dueMs, id, updatedAt] = Array.isArray(parts) ? parts : [];
  if (typeof id === "string" && Number.isSafeInteger(dueMs)) return { dueMs: dueMs as number, id };
  if (typeof id === "string" && dueMs === null && Number.isSafeInteger(updatedAt)) return { dueMs: null, id, updatedAt: updatedAt as number };
  if (typeof id === "string" && dueMs === null && parts.length === 2) {
    fail("bad_request", "page_token was made by an older owner (its tail of spent timers was ordered by id); list again from the start", [
      { field: "page_token", description: "from an older version" },
    ]);
  }
  fail("bad_request", "page_token is not one returned by ListTimers", [{ field: "page_token", description: "malformed" }]);
}
