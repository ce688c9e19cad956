import { fail } from "../errors.js";
import type { ReadAheadKeys } from "../store/read-ahead.js";
import { eventPositionKey, type StreamStatements } from "../store/streams.js";

// Streams: an event emitted with a stream name (`order-o-1`) takes that stream's next position
// (from 0), recorded with it in its commit (store/streams.ts). An emit may name the version it
// expects the stream at (KurrentDB's expected version, JetStream's expected last subject
// sequence): checked in the committer unit that appends the event, so against every append
// committed before it, those of the same group commit and the same batch included, in order.
// Of several emits expecting the same version of one stream, exactly one is appended.

/** The version an append expects its stream at. */
export type ExpectedVersion = { kind: "any" } | { kind: "noStream" } | { kind: "position"; position: number };

/** Longest stream name. */
export const maxStreamLength = 200;

/** Checks a stream name (INVALID_ARGUMENT under `field`): 1 to {@link maxStreamLength} characters, no control characters. */
export function checkStreamName(stream: string, field: string): void {
  if (stream.length === 0 || stream.length > maxStreamLength)
    fail("bad_request", `${field} must be 1 to ${maxStreamLength} characters`, [{ field, description: `1 to ${maxStreamLength} characters` }]);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\u0000-\u001f\u007f]/.test(stream)) fail("bad_request", `${field} has a control character`, [{ field, description: "control character" }]);
}

/** `version` as messages say it: `no_stream`, `any` or the position. */
function said(version: ExpectedVersion): string {
  return version.kind === "position" ? String(version.position) : version.kind === "noStream" ? "no_stream" : "any";
}

/**
 * Where stream `name` of `space` is kept: each space has streams of its own (one tenant's appends
 * never move another's stream), those of no space under their bare names. A name has no control
 * character, so the separator cannot be part of one.
 */
export function streamKey(space: string, name: string): string {
  return space === "" ? name : `${space}\u001f${name}`;
}

/** The streams of the log, as units of the committer use them. */
export class Streams {
  constructor(private readonly statements: StreamStatements) {}

  /**
   * In the unit about to append an event of `space` to `stream`: the position it takes, once
   * `expected` is checked against the stream's last position (FAILED_PRECONDITION
   * `wrong_expected_version` naming the actual version; nothing of the unit is written then).
   */
  next(space: string, stream: string, expected: ExpectedVersion, field: string): number {
    const last = this.statements.last(streamKey(space, stream));
    const matches = expected.kind === "any" || (expected.kind === "noStream" ? last === null : last === expected.position);
    if (!matches) {
      const actual = last === null ? "no_stream" : String(last);
      fail(
        "wrong_expected_version",
        `stream ${JSON.stringify(stream)} is at ${last === null ? "no_stream (no event yet)" : `position ${last}`}, not at the expected ${said(expected)}; nothing was written`,
        [{ field, description: `the stream is at ${actual}` }],
        { stream, expected_version: said(expected), actual_version: actual },
      );
    }
    return last === null ? 0 : last + 1;
  }

  /**
   * What a unit appending to `streams` (each of a space) reads ahead of its batch (Committer.submit's
   * `readAhead`): their last positions, so {@link next} waits for no round trip, and for each
   * `retried` (the id of an event that may be in the log already: an emit's own id) its position,
   * so {@link positionOf} of it does not either; undefined for none, and where the store reads as
   * it goes (SQLite).
   */
  readAheadOf(streams: { space: string; stream: string; retried?: string }[]): ReadAheadKeys | undefined {
    if (streams.length === 0 || !this.statements.readsAhead) return undefined;
    const keys = streams.map((s) => streamKey(s.space, s.stream));
    for (const s of streams) if (s.retried !== undefined) keys.push(eventPositionKey(s.retried));
    return { from: this.statements, keys };
  }

  /** Whether the store reads streams' positions ahead of a batch ({@link readAheadOf}; PostgreSQL's). */
  get readsAhead(): boolean {
    return this.statements.readsAhead;
  }

  /** In the unit that appended event `seq` of `space` to `stream` at `position`. */
  record(space: string, stream: string, position: number, seq: number): void {
    this.statements.append(streamKey(space, stream), position, seq);
  }

  /** The position of event `seq` in its stream, or undefined when it has none. */
  positionOf(seq: number): number | undefined {
    return this.statements.ofSeq(seq)?.position;
  }
}
