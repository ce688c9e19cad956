import type { ExecutorSession } from "./session.js";

/** Answered work ids each session remembers, the most recent (a duplicate answer comes soon after the first). */
export const answeredMemory = 1_024;

/** Per session, the ids of deliveries and invocations it answered lately, oldest first. */
const answered = new WeakMap<ExecutorSession, Set<string>>();

/** What an answer to work `id` found on its session. */
export type AnswerMatch =
  /** The work was in flight there: its credit is now free. */
  | "in-flight"
  /** The session answered it already (among its last {@link answeredMemory} answers): a duplicate. */
  | "answered"
  /** Not in flight and not answered lately: never received (or answered long ago). */
  | "unknown";

/**
 * Takes an answer (ack or result) to work `id` off `session`'s work in flight, freeing its credit,
 * and remembers it as answered, so a second answer is told apart from one to work the session
 * never received (STALE_ACK / STALE_RESULT rather than UNKNOWN_*). Bounded: the session's last
 * {@link answeredMemory} answers.
 */
export function takeAnswer(session: ExecutorSession, id: string): AnswerMatch {
  let recent = answered.get(session);
  if (session.inFlight.delete(id)) {
    session.abandoned.delete(id);
    if (!recent) answered.set(session, (recent = new Set()));
    recent.delete(id);
    recent.add(id);
    if (recent.size > answeredMemory) recent.delete(recent.values().next().value!);
    return "in-flight";
  }
  return recent?.has(id) ? "answered" : "unknown";
}
