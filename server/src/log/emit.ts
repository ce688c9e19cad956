import type { Principal } from "../auth/principal.js";
import { allows, resolveActor } from "../auth/principal.js";
import type { ReadAccess } from "../auth/read-access.js";
import { ChronologError, fail, type FieldViolation } from "../errors.js";
import type { PluginRegistry } from "../plugins/registry.js";
import type { StageHistogram } from "../stages.js";
import { stepEach, type Committer, type Tx } from "../store/committer.js";
import type { AppendAhead, ReadAheadKeys } from "../store/read-ahead.js";
import type { ActorRecord, EventRecord, EventStatements } from "../store/events.js";
import { canonicalJson } from "./canonical.js";
import { causeActor, type CauseRef, type LiveCauses } from "./causes.js";
import { checkId, derivedId, newId } from "./ids.js";
import type { ExpectedVersion, Streams } from "./streams.js";
import { tracing } from "../tracing/tracer.js";
import { emitEachSpans, emitSpans, type EmitSpans } from "../tracing/messaging.js";
import { contextOfTrace } from "../tracing/trace-context.js";

/** One event to emit, as parsed from the request. */
export interface EmitInput {
  type: string;
  data: Record<string, unknown>;
  /** Client-chosen id, or "" for none. */
  id: string;
  cause: CauseRef | null;
  actor: Partial<ActorRecord> | undefined;
  /** The stream it is appended to, and the version expected of it (log/streams.ts); absent: none. */
  stream?: { name: string; expected: ExpectedVersion };
  /** The trace context the caller emits it in, when the event carries its own (EmitRequest.traceparent): its producer span's parent instead of the call's. */
  trace?: string;
}

/** The event as it stands in the log; `existing` when the id was already there. */
export interface EmitResult {
  event: EventRecord;
  existing: boolean;
  /** Its position in its stream, when the emit named one. */
  streamPosition?: number;
}

/** An input checked and ready to commit; `fresh` when its id was made here (so it cannot be in the log yet). */
interface CheckedEmit {
  event: Omit<EventRecord, "seq" | "at">;
  fresh: boolean;
  stream?: EmitInput["stream"];
  /** Leads the fields its errors name (`events[1].`). */
  prefix: string;
}

/** Largest batch accepted by one EmitBatch. */
export const maxBatchSize = 10_000;

/**
 * Appends events.
 *
 * Failure semantics: every check (declared type, allow, schema, actor) runs
 * before anything is written; a batch commits all its events in one
 * transaction or none. An id already in the log with the same type and data
 * answers with the stored event and writes nothing (safe retry); with
 * different type or data it fails with ALREADY_EXISTS and the original
 * stands. Resolves only after the commit is durable. Each event answered is observed in the
 * emit stage (`stage`: the request's start → its commit durable).
 */
export class Emitter {
  constructor(
    private readonly committer: Committer,
    private readonly registry: PluginRegistry,
    /** Who may read which event: an id taken by an event of a space the caller does not reach is not told apart from any taken id. */
    private readonly access: ReadAccess,
    private readonly events: EventStatements,
    /** Running record:false invocations, causes without an event. */
    private readonly live: LiveCauses,
    private readonly stage?: StageHistogram,
    /** Where emits that name a stream are placed; absent: naming one is refused. */
    private readonly streams?: Streams,
  ) {}

  /** Emits `inputs` atomically as `principal`; results in input order. */
  async emit(inputs: EmitInput[], principal: Principal): Promise<EmitResult[]> {
    const received = performance.now();
    if (inputs.length === 0) fail("bad_request", "no events to emit");
    if (inputs.length > maxBatchSize) fail("too_large", `a batch holds at most ${maxBatchSize} events, got ${inputs.length}`);
    const checked = inputs.map((input, i) => this.check(input, principal, inputs.length > 1 ? `events[${i}].` : ""));
    refuseConflictsWithin(checked.map((c) => c.event));
    const spans = tracing.on ? traced(checked.map((c, i) => ({ event: c.event, parent: inputs[i].trace }))) : undefined;
    const results = await endingSpans(
      spans,
      this.committer.submitInSteps(
        (tx) =>
          stepEach(checked, (c) => {
            const e = c.event;
            // An id the owner just made cannot be in the log: skip the lookup.
            const stored = c.fresh ? undefined : tx.events.findById(e.id);
            // Under a cause the id is derived from the cause, position, type and data, so
            // a stored event with it is this work's own earlier try (in the cause's
            // space, which the executor may not read): answer it, as for any retry.
            if (stored && !e.cause && this.access.verdict(principal, stored) === "hidden") hiddenConflict(e.id, c.prefix);
            if (stored) return this.existing(storedOrConflict(stored, e, c.prefix), c);
            return this.append(tx, c);
          }),
        { lookups: lookupsOf(checked), pure: true, ...this.readAheadOf(checked) },
      ),
    );
    this.observe(received, results.length);
    return results;
  }

  /**
   * Emits each of `inputs` on its own, as {@link emit} would one by one (a refused one, or an
   * input that could not be read, given as its error, fails alone with a {@link ChronologError}),
   * all in one unit of the group commit (one savepoint, one promise: the publish stream's
   * messages). Outcomes in input order.
   */
  async emitEach(inputs: (EmitInput | Error)[], principal: Principal): Promise<(EmitResult | ChronologError)[]> {
    const received = performance.now();
    const checked = inputs.map((input) => {
      if (input instanceof Error) return ChronologError.from(input);
      try {
        return this.check(input, principal, "");
      } catch (error) {
        return ChronologError.from(error);
      }
    });
    const toCommit = checked.filter((c): c is CheckedEmit => !(c instanceof ChronologError));
    const spans = tracing.on
      ? traced(
          checked.flatMap((c, i) => (c instanceof ChronologError ? [] : [{ event: c.event, parent: (inputs[i] as EmitInput).trace }])),
          true,
        )
      : undefined;
    const outcomes = await endingSpans(
      spans,
      this.committer.submitInSteps(
        (tx) =>
          stepEach(checked, (c) => {
            if (c instanceof ChronologError) return c;
            const e = c.event;
            const stored = c.fresh ? undefined : tx.events.findById(e.id);
            try {
              if (stored && !e.cause && this.access.verdict(principal, stored) === "hidden") hiddenConflict(e.id, c.prefix);
              if (stored) return this.existing(storedOrConflict(stored, e, c.prefix), c);
              if (c.stream) return this.append(tx, c); // its expected version may refuse it: before anything is written
            } catch (error) {
              return error as ChronologError; // nothing was written for it
            }
            return this.append(tx, c);
          }),
        { lookups: lookupsOf(toCommit), pure: true, ...this.readAheadOf(toCommit) },
      ),
    );
    let answered = 0;
    for (const o of outcomes) if (!(o instanceof ChronologError)) answered++;
    this.observe(received, answered);
    return outcomes;
  }

  /**
   * What the unit committing `checked` reads ahead of its batch: the last positions of the streams
   * they name (and, for an event that may be in the log, where it is), and (`appends`) what their
   * events' types make other modules look up.
   */
  private readAheadOf(checked: CheckedEmit[]): { readAhead?: ReadAheadKeys; appends?: AppendAhead[] } {
    const streams = this.streams?.readsAhead
      ? checked.flatMap((c) => (c.stream ? [{ space: c.event.actor?.in ?? "", stream: c.stream.name, ...(!c.fresh && { retried: c.event.id }) }] : []))
      : [];
    const readAhead = streams.length > 0 ? this.streams?.readAheadOf(streams) : undefined;
    const appends = this.committer.readsAheadOfAppends ? checked.map((c) => c.event) : undefined;
    return { ...(readAhead && { readAhead }), ...(appends && { appends }) };
  }

  /** Appends checked emit `c` in unit `tx`, at its stream's next position when it names one (once its expected version is checked). */
  private append(tx: Tx, c: CheckedEmit): EmitResult {
    if (!c.stream) return { event: tx.append(c.event), existing: false };
    const streams = this.streams as Streams; // checked with the input
    const space = c.event.actor?.in ?? "";
    const position = streams.next(space, c.stream.name, c.stream.expected, `${c.prefix}expected_version`);
    const event = tx.append(c.event);
    streams.record(space, c.stream.name, position, event.seq);
    return { event, existing: false, streamPosition: position };
  }

  /** The answer for an emit whose event is in the log already: as stored, with its stream position when the emit named a stream. */
  private existing(event: EventRecord, c: CheckedEmit): EmitResult {
    const position = c.stream ? this.streams?.positionOf(event.seq) : undefined;
    return position === undefined ? { event, existing: true } : { event, existing: true, streamPosition: position };
  }

  /** `events` emits received at `received` (performance.now() ms) are durable now: observed in the emit stage. */
  private observe(received: number, events: number): void {
    if (events > 0) this.stage?.observe(performance.now() - received, events);
  }

  /** Checks one input. */
  private check(input: EmitInput, principal: Principal, prefix: string): CheckedEmit {
    const declared = this.registry.eventType(input.type);
    if (!declared) {
      fail(
        "undeclared_event_type",
        `${prefix ? `${prefix.slice(0, -1)}: ` : ""}event type ${JSON.stringify(input.type)} is not declared by any plugin`,
        [{ field: `${prefix}type`, description: "undeclared event type" }],
        { type: input.type },
      );
    }
    if (input.id !== "") checkId(input.id, `${prefix}id`); // an empty id: the owner makes or derives one
    const { actor, id, cause } = input.cause ? this.underCause(input, principal) : this.fromOutside(input, principal, declared.allow);
    const violations: FieldViolation[] = declared.validate(input.data).map((v) => ({ ...v, field: prefix + v.field }));
    if (violations.length > 0) {
      fail(
        "schema_violation",
        `data of ${input.type} does not match its schema: ${violations.map((v) => `${v.field}: ${v.description}`).join("; ")}`,
        violations,
        { type: input.type },
      );
    }
    if (input.stream && !this.streams) fail("failed_precondition", "this owner keeps no streams");
    return { event: { id, type: input.type, data: input.data, cause, actor }, fresh: input.id === "" && !input.cause, stream: input.stream, prefix };
  }

  private fromOutside(input: EmitInput, principal: Principal, allow: string[]) {
    if (!allows(allow, principal)) {
      const who = allow.length === 0 ? "only code under a cause may emit it" : `allow: ${allow.join(", ")}`;
      fail("permission_denied", `principal ${principal.name} (role ${principal.role}) may not emit ${input.type} (${who})`, [], { type: input.type });
    }
    return { actor: resolveActor(principal, input.actor), id: input.id || newId(), cause: "" };
  }

  /** Work under a cause: the id is derived and the actor is the cause's. */
  private underCause(input: EmitInput, principal: Principal) {
    const cause = input.cause as CauseRef;
    if (principal.role === "client")
      fail("permission_denied", `principal ${principal.name} (role client) may not emit under a cause; only executors act under a cause`);
    if (input.actor && Object.values(input.actor).some((v) => v)) fail("bad_request", "actor must be empty under a cause: the actor is the cause's");
    const actor = causeActor(cause.eventId, this.events, this.live, principal);
    const id = derivedId(cause.eventId, cause.position, { type: input.type, data: input.data });
    if (input.id && input.id !== id) fail("bad_request", "id must be empty under a cause: it is derived from the cause and position");
    return { actor, id, cause: cause.eventId };
  }
}

/**
 * Starts the producer spans of `events` (under the trace context each carries, else the call's),
 * as one emit or (`each`) as emits of their own, and stores each one's trace context with its event.
 */
function traced(events: { event: { id: string; type: string; trace?: string }; parent: string | undefined }[], each = false): EmitSpans | undefined {
  if (events.length === 0) return undefined;
  const spans = (each ? emitEachSpans : emitSpans)(
    events.map(({ event, parent }) => ({ id: event.id, type: event.type, parent: parent === undefined ? undefined : contextOfTrace(parent) })),
  );
  events.forEach(({ event }, i) => {
    event.trace = spans.traces[i];
  });
  return spans;
}

/** `commit`, ending `spans` (if any) when it is durable or failed; `commit` itself when there are none. */
function endingSpans<T>(spans: EmitSpans | undefined, commit: Promise<T>): Promise<T> {
  if (!spans) return commit;
  return commit.then(
    (result) => {
      spans.end();
      return result;
    },
    (error: unknown) => {
      spans.end(error);
      throw error;
    },
  );
}

/** The ids of `checked` events the commit looks up: those not made by the owner just now. */
function lookupsOf(checked: { event: { id: string }; fresh: boolean }[]): string[] | undefined {
  const ids = checked.filter((c) => !c.fresh).map((c) => c.event.id);
  return ids.length > 0 ? ids : undefined;
}

/**
 * INVALID_ARGUMENT when two events of one batch have the same id but not the same type and data
 * (the same event twice is a retry within the batch: the second answers with the first).
 * Checked before the commit, so the error never names an event the rolled-back batch wrote.
 */
function refuseConflictsWithin(events: Omit<EventRecord, "seq" | "at">[]): void {
  if (events.length < 2) return;
  const first = new Map<string, number>();
  events.forEach((e, i) => {
    const j = first.get(e.id);
    if (j === undefined) return void first.set(e.id, i);
    const other = events[j];
    if (!sameContent(other, e)) {
      fail(
        "bad_request",
        `events[${i}].id ${JSON.stringify(e.id)} repeats events[${j}].id with a different ${other.type === e.type ? "data" : "type"}; nothing was written`,
        [{ field: `events[${i}].id`, description: `repeats events[${j}].id` }],
      );
    }
  });
}

/**
 * An id taken by an event the caller may not read (another space): say
 * only that the id is taken — not its seq, type or data, and never the event.
 */
function hiddenConflict(id: string, prefix: string): never {
  throw new ChronologError(
    "id_conflict",
    `${prefix ? `${prefix.slice(0, -1)}: ` : ""}event id ${JSON.stringify(id)} is already in use; choose another id`,
    [{ field: `${prefix}id`, description: "already in use" }],
    { id },
  );
}

/** Two events with one id are the same event when their type and (canonical) data are. */
function sameContent(a: Pick<EventRecord, "type" | "data">, b: Pick<EventRecord, "type" | "data">): boolean {
  return a.type === b.type && canonicalJson(a.data) === canonicalJson(b.data);
}

/** The stored event when it matches the new one's type and data; ALREADY_EXISTS otherwise. */
function storedOrConflict(stored: EventRecord, fresh: Omit<EventRecord, "seq" | "at">, prefix: string): EventRecord {
  if (sameContent(stored, fresh)) return stored;
  throw new ChronologError(
    "id_conflict",
    `${prefix ? `${prefix.slice(0, -1)}: ` : ""}event id ${JSON.stringify(fresh.id)} is already in the log (seq ${stored.seq}, type ${stored.type}) with different ${stored.type === fresh.type ? "data" : "type"}; the original stands`,
    [{ field: `${prefix}id`, description: "already used by a different event" }],
    { id: fresh.id, seq: String(stored.seq) },
  );
}
