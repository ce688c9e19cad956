/** What a handler threw, as its ack or action result carries it, and as the executor's log line shows it. */

/** Characters of a handler's error a log line shows at most (the owner keeps more, cut to its message limit). */
const loggedErrorChars = 2_000;

/** The error a handler threw: an Error's message, a string as it is, another value as JSON (else as String gives it). */
export function handlerError(e: unknown): string {
  if (e instanceof Error) return e.message;
  if (typeof e === "string") return e;
  try {
    return JSON.stringify(e) ?? String(e);
  } catch {
    return String(e); // a cycle, a BigInt
  }
}

/** `error` for a log line: its first {@link loggedErrorChars} characters, and how many there were past them. */
export function loggedError(error: string): string {
  return error.length <= loggedErrorChars ? error : `${error.slice(0, loggedErrorChars)}… (${error.length} characters)`;
}
