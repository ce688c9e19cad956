import { allows, canReach, resolveActor, underCauseReader, type Principal } from "../auth/principal.js";
import { tracing } from "../tracing/tracer.js";
import { traceText } from "../tracing/trace-context.js";
import { fail } from "../errors.js";
import { causeActor, type CauseRef, type LiveCauses } from "../log/causes.js";
import { derivedId, newId } from "../log/ids.js";
import type { PluginRegistry } from "../plugins/registry.js";
import type { Committer, Tx } from "../store/committer.js";
import type { DocumentRecord } from "../store/documents.js";
import type { ActorRecord, EventStatements } from "../store/events.js";
import { declaredCollection, forReader } from "./access.js";
import { changeEvent } from "./changes.js";
import { changeTypes, type CollectionEntry } from "./declaration.js";
import { checkSchema, nextDocument, parseWrite, type ParsedWrite, type WriteInput } from "./ops.js";
import type { DocumentStore, DocumentStores } from "./stores.js";

/** One collection write, as parsed from the request. */
export interface WriteRequest {
  collection: string;
  write: WriteInput;
  /** Set when code under a delivery writes; null from outside. */
  cause: CauseRef | null;
  /** Asserted actor fields (from outside only). */
  actor: Partial<ActorRecord> | undefined;
}

/** What a write returns. */
export interface WriteResult {
  /** The document after the write, as the caller may see it; null after a delete. */
  document: DocumentRecord | null;
  /** Seq of the change event, or 0 when the collection writes none. */
  seq: number;
}

/** Who a write runs as and the ids it uses. */
interface WriteContext {
  actor: ActorRecord | null;
  /** The cause event id, or "" from outside. */
  cause: string;
  /** Under a cause: the derived id of the write, also its change event's id. */
  writeId: string | null;
  /** The change event's id. */
  eventId: string;
  /** The `_id` of a create that gives none (derived under a cause, random otherwise). */
  newDocId: string;
  /** Whether the write may reach a document in `space`: the principal's rule, or under a cause {@link underCauseReader}'s. */
  reaches: (space: string) => boolean;
  /** The caller's trace context, stored with the change event (tracing/trace-context.ts); absent: none recorded. */
  trace?: string;
}

/**
 * Writes documents: create, replace, patch,
 * delete.
 *
 * Spaces: a create puts the document in its actor's space (`in`, "" for
 * none); the document keeps it for life, and every change event of it is
 * recorded in it (the event's actor `in` is the document's space, whoever
 * wrote). From outside, replace, patch and delete reach only documents the
 * principal may read ({@link canReach}, the rule of events): another space's
 * document answers NOT_FOUND exactly as a missing one. A create whose `_id`
 * is taken in another space is ALREADY_EXISTS (ids are unique per
 * collection), with nothing of the document. Under a cause whose actor has a
 * space, replace, patch and delete reach that space's documents and those
 * without one, whatever the token may reach; under a cause without a space,
 * the principal's (as reads do: {@link underCauseReader}).
 *
 * From outside (no cause) the collection's `allow` gates the write
 * (PERMISSION_DENIED) and the actor is the principal's (asserted fields
 * checked). Under a cause only admin and executor principals may write
 * (a client gets PERMISSION_DENIED); the actor is the cause event's and the
 * write's id is `derivedId(cause, position, {collection, op, id, input})`,
 * which is also its change event's id and, for a create without `_id`, the
 * seed of the derived `_id`.
 *
 * Failure semantics: the shape, permission, cause and actor checks run
 * before anything is submitted; the existence and schema checks run in the
 * commit unit on the current document, and a failure rolls the unit back, so
 * nothing is written. A durable write commits the document and its change
 * event in one unit and resolves only once durable. A retried write
 * under a cause whose id is already in the log (or, for collections that
 * write no events, in `collection_writes`) is answered with the current
 * document and the original seq, and writes nothing; if the document has
 * since been deleted, the answer is the document as its event recorded it
 * (private fields absent), or just `{ _id }` when there is no event. A write
 * from outside has no idempotency key: a retried create without `_id`
 * creates another document. `durable: false` writes apply in memory at once
 * (no commit, no fsync) and are lost on restart, with their write ids.
 */
export class DocumentWriter {
  constructor(
    private readonly committer: Committer,
    private readonly registry: PluginRegistry,
    private readonly events: EventStatements,
    private readonly stores: DocumentStores,
    /** Running record:false invocations, causes without an event. */
    private readonly live: LiveCauses,
  ) {}

  /** Applies one write as `principal`; errors as described above. */
  async write(req: WriteRequest, principal: Principal): Promise<WriteResult> {
    const entry = declaredCollection(this.registry, req.collection);
    const write = parseWrite(entry, req.write);
    const ctx = req.cause ? this.underCause(entry, req, principal) : this.fromOutside(entry, req, principal);
    if (tracing.on) ctx.trace = traceText();
    const store = this.stores.of(entry);
    const result = entry.durable
      ? await this.committer.submit((tx) => apply(entry, store, write, ctx, tx), readAheadOf(entry, store, write, ctx))
      : apply(entry, store, write, ctx, null);
    return { ...result, document: result.document && forReader(principal, entry, result.document) };
  }

  private fromOutside(entry: CollectionEntry, req: WriteRequest, principal: Principal): WriteContext {
    if (!allows(entry.allow, principal)) {
      const who = entry.allow.length === 0 ? "only code under a cause may write it" : `allow: ${entry.allow.join(", ")}`;
      fail("permission_denied", `principal ${principal.name} (role ${principal.role}) may not write collection ${entry.name} (${who})`, [], {
        collection: entry.name,
      });
    }
    return {
      actor: resolveActor(principal, req.actor),
      cause: "",
      writeId: null,
      eventId: newId(),
      newDocId: newId(),
      reaches: (space) => canReach(principal, space),
    };
  }

  private underCause(entry: CollectionEntry, req: WriteRequest, principal: Principal): WriteContext {
    const cause = req.cause as CauseRef;
    if (principal.role === "client")
      fail("permission_denied", `principal ${principal.name} (role client) may not write under a cause; only executors act under a cause`);
    if (req.actor && Object.values(req.actor).some((v) => v)) fail("bad_request", "actor must be empty under a cause: the actor is the cause's");
    const actor = causeActor(cause.eventId, this.events, this.live, principal);
    const w = req.write;
    const id = w.op === "create" ? (typeof w.doc._id === "string" ? w.doc._id : "") : w.id;
    const input = w.op === "create" || w.op === "replace" ? w.doc : w.op === "patch" ? { set: w.set, unset: w.unset } : null;
    const writeId = derivedId(cause.eventId, cause.position, { collection: entry.name, op: w.op, id, input });
    const reader = underCauseReader(principal, actor?.in ?? "");
    return { actor, cause: cause.eventId, writeId, eventId: writeId, newDocId: derivedId(writeId, 0, "_id"), reaches: (space) => canReach(reader, space) };
  }
}

/**
 * What the unit of a durable write reads ahead of its batch: the document, and under a cause the
 * change event a retry finds (or, in a collection that writes no events, whether the write was applied).
 */
function readAheadOf(entry: CollectionEntry, store: DocumentStore, write: ParsedWrite, ctx: WriteContext) {
  const applied = ctx.writeId !== null && !entry.writesEvents ? ctx.writeId : undefined;
  const readAhead = store.readAheadOf?.(entry.name, docIdOf(write, ctx), applied);
  const lookups = ctx.writeId !== null && entry.writesEvents ? [ctx.writeId] : undefined;
  return { ...(readAhead && { readAhead }), ...(lookups && { lookups }) };
}

/** The id of the document `write` writes. */
function docIdOf(write: ParsedWrite, ctx: WriteContext): string {
  return write.op === "create" ? (write.id ?? ctx.newDocId) : write.id;
}

/**
 * One write inside its commit unit (or at once, in memory, when `tx` is
 * null: `durable: false` collections never write events). Throws to undo.
 */
function apply(entry: CollectionEntry, store: DocumentStore, write: ParsedWrite, ctx: WriteContext, tx: Tx | null): WriteResult {
  if (ctx.writeId !== null) {
    const answer = entry.writesEvents ? answerFromLog(entry, store, ctx.writeId, tx as Tx) : answerFromWrites(store, entry, write, ctx.writeId);
    if (answer) return answer;
  }
  const id = docIdOf(write, ctx);
  const stored = store.get(entry.name, id);
  // Another space's document is, to a write that may not reach it, no document (but a create still finds its _id taken).
  const before = stored && (write.op === "create" || ctx.reaches(stored.space)) ? stored.doc : undefined;
  const after = nextDocument(entry, write, id, before);
  if (after) checkSchema(entry, after);
  const space = write.op === "create" ? (ctx.actor?.in ?? "") : stored!.space;
  // Nothing below throws on a checked write: the memory store stays consistent without a rollback.
  if (write.op === "create") store.insert(entry.name, after as DocumentRecord, space);
  else if (write.op === "delete") store.remove(entry.name, id);
  else store.update(entry.name, after as DocumentRecord);
  if (entry.writesEvents) {
    // writesEvents implies durable, so this runs in a commit unit.
    const change = changeEvent(entry, write.op, before, after);
    const event = (tx as Tx).append({
      id: ctx.eventId,
      type: change.type,
      data: change.data,
      cause: ctx.cause,
      actor: actorIn(ctx.actor, space),
      ...(ctx.trace && { trace: ctx.trace }),
    });
    return { document: after ?? null, seq: event.seq };
  }
  if (ctx.writeId !== null) store.markApplied(ctx.writeId, entry.name, id, tx?.now ?? 0);
  return { document: after ?? null, seq: 0 };
}

/** A write under a cause whose change event is already in the log, or undefined. */
function answerFromLog(entry: CollectionEntry, store: DocumentStore, writeId: string, tx: Tx): WriteResult | undefined {
  const prior = tx.events.findById(writeId);
  if (!prior) return undefined;
  if (!changeTypes(entry.name).includes(prior.type)) {
    fail("id_conflict", `write id ${writeId} is already in the log as a ${prior.type} event (seq ${prior.seq})`, [], { id: writeId, seq: String(prior.seq) });
  }
  if (prior.type === `${entry.name}.deleted`) return { document: null, seq: prior.seq };
  const docId = prior.data._id as string;
  return { document: store.get(entry.name, docId)?.doc ?? (prior.data.doc as DocumentRecord), seq: prior.seq };
}

/** A write under a cause already applied to a collection that writes no events, or undefined. */
function answerFromWrites(store: DocumentStore, entry: CollectionEntry, write: ParsedWrite, writeId: string): WriteResult | undefined {
  const docId = store.applied(writeId);
  if (docId === undefined) return undefined;
  return { document: write.op === "delete" ? null : (store.get(entry.name, docId)?.doc ?? { _id: docId }), seq: 0 };
}

/** The actor a change event records: the writer, in the document's `space` (the system stays null in no space). */
function actorIn(actor: ActorRecord | null, space: string): ActorRecord | null {
  if ((actor?.in ?? "") === space) return actor;
  return { ...(actor ?? { id: "", for: "", in: "", via: "" }), in: space };
}
