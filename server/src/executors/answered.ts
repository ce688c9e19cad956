import type { ExecutorSession } from "./session.js";

/** Answered work ids each session remembers, the most recent (a duplicate answer comes soon after the first). */
export const answeredMemory = 1_024;

/** A session's last {@link answeredMemory} answered ids: a set to look them up, and a ring in the order they came, to forget the oldest. */
interface Answered {
  ids: Set<string>;
  ring: string[];
  /** The ring's slot of the next id (holding the oldest once the ring is full). */
  next: number;
}

/** Per session, the ids of deliveries and invocations it answered lately. */
const answered = new WeakMap<ExecutorSession, Answered>();

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
    if (!recent) answered.set(session, (recent = { ids: new Set(), ring: [], next: 0 }));
    if (recent.ids.has(id)) return "in-flight"; // sent again under the same id and answered again: remembered already
    if (recent.ring.length === answeredMemory) recent.ids.delete(recent.ring[recent.next]);
    recent.ring[recent.next] = id;
    recent.next = (recent.next + 1) % answeredMemory;
    recent.ids.add(id);
    return "in-flight";
  }
  return recent?.ids.has(id) ? "answered" : "unknown";
}
