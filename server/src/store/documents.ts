import type { BatchRead, ReadAhead, ReadAheadKeys } from "./read-ahead.js";
import { defer, type Db } from "./sql.js";

/** A document as stored: a JSON object with its string `_id`. */
export type DocumentRecord = Record<string, unknown> & { _id: string };

/** A document and its space: the `in` of the actor that created it ("" for none). */
export interface StoredDocument {
  doc: DocumentRecord;
  space: string;
}

/**
 * The statements on `documents` (a collection's documents) and `collection_writes` (the writes
 * applied, by id). Reads may run anywhere; writes only inside a committer unit, in the same unit
 * as the change event they go with (a unit that throws undoes them).
 */
export interface DocumentStatements {
  /** The document `id` of `collection` with its space, or undefined. */
  get(collection: string, id: string): StoredDocument | undefined;
  /** Inserts a new document in `space`; throws (a unique constraint) when its `_id` is taken in `collection`. */
  insert(collection: string, doc: DocumentRecord, space: string): void;
  /** Overwrites an existing document, its space unchanged; nothing when it is absent (check first). */
  update(collection: string, doc: DocumentRecord): void;
  /** Deletes a document; nothing when it is absent. */
  remove(collection: string, id: string): void;
  /**
   * Every document of `collection` with its space, in `_id` order, read lazily where the store
   * can (SQLite: one row at a time, so a scan that stops early reads no more). Do not write while
   * iterating.
   */
  scan(collection: string): Generator<StoredDocument>;
  /** The `_id` of the document the write `writeId` was applied to, or undefined when it was not applied. */
  applied(writeId: string): string | undefined;
  /** Records that the write `writeId` was applied to `docId` at `atMs` (commit time, ms UTC); throws when `writeId` is recorded already. */
  markApplied(writeId: string, collection: string, docId: string, atMs: number): void;
  /**
   * PostgreSQL's: what a unit writing document `id` of `collection` reads ahead of its batch
   * (Committer.submit's `readAhead`): the document, so {@link get} needs no round trip, and the
   * write that follows is deferred (an insert of an id known absent, an update or delete of one
   * known present: none can fail but for a fault); with `writeId`, whether that write was applied
   * too ({@link applied}; {@link markApplied} of one known new is deferred). What a unit writes is
   * kept for the batch's later units, undone with a unit that fails. Absent where reads are not
   * round trips (SQLite, memory).
   */
  readAheadOf?(collection: string, id: string, writeId?: string): ReadAheadKeys;
}

/** A document's key as {@link DocumentStatements.readAheadOf} names it (a collection's name has no line break). */
function documentKey(collection: string, id: string): string {
  return `${collection}\n${id}`;
}

/** The key of write `writeId` among a read ahead's keys (no collection is named by the empty string). */
function writeKey(writeId: string): string {
  return documentKey("", writeId);
}

/**
 * PostgreSQL's: the documents of a JSON array of {collection, id} (null doc: none), then the
 * writes of a JSON array of write ids with the document each was applied to (null collection; null
 * doc_id: not applied).
 */
const byKeysSql = `SELECT k.collection, k.id, d.doc, d.space, NULL AS doc_id FROM jsonb_to_recordset(?::jsonb) AS k(collection text, id text)
  LEFT JOIN documents AS d ON d.collection = k.collection AND d.id = k.id
UNION ALL
SELECT NULL, w.id, NULL, NULL, cw.doc_id FROM jsonb_array_elements_text(?::jsonb) AS w(id)
  LEFT JOIN collection_writes AS cw ON cw.id = w.id`;

/** The documents and collection_writes tables' statements on `db`. */
export function documentStatements(db: Db): DocumentStatements {
  const get = db.prepare("SELECT doc, space FROM documents WHERE collection = ? AND id = ?");
  const insert = db.prepare("INSERT INTO documents (collection, id, doc, space) VALUES (?, ?, ?, ?)");
  const update = db.prepare("UPDATE documents SET doc = ? WHERE collection = ? AND id = ?");
  const remove = db.prepare("DELETE FROM documents WHERE collection = ? AND id = ?");
  const scan = db.prepare("SELECT doc, space FROM documents WHERE collection = ? ORDER BY id");
  const applied = db.prepare("SELECT doc_id FROM collection_writes WHERE id = ?");
  const markApplied = db.prepare("INSERT INTO collection_writes (id, collection, doc_id, at) VALUES (?, ?, ?, ?)");
  // PostgreSQL: the documents read for the running batch, and those its units wrote (null: none).
  const readAhead = db.readAhead?.bind(db);
  const ahead = readAhead ? db.readForBatch?.("documents") : undefined;
  const batchRead = (keys: string[]): BatchRead => {
    const pairs: { collection: string; id: string }[] = [];
    const writeIds: string[] = [];
    for (const key of new Set(keys)) {
      const at = key.indexOf("\n");
      if (at === 0) writeIds.push(key.slice(1));
      else pairs.push({ collection: key.slice(0, at), id: key.slice(at + 1) });
    }
    return {
      sql: byKeysSql,
      params: [JSON.stringify(pairs), JSON.stringify(writeIds)],
      take(rows) {
        for (const row of rows as (Row & { collection: string | null; id: string; doc_id: string | null })[])
          if (row.collection === null) ahead?.remember(writeKey(row.id), row.doc_id);
          else ahead?.remember(documentKey(row.collection, row.id), row.doc === null ? null : { doc: row.doc, space: row.space });
      },
    };
  };
  const reads: ReadAhead | undefined =
    readAhead && ahead
      ? {
          batchRead,
          prefetch(keys: string[]) {
            const read = batchRead(keys);
            return readAhead(read.sql, read.params).then(read.take);
          },
        }
      : undefined;
  /** The row kept for the batch (null: none), or undefined when none is kept. */
  const kept = (collection: string, id: string) => ahead?.recalled(documentKey(collection, id)) as Row | null | undefined;
  return {
    ...(reads && {
      readAheadOf: (collection: string, id: string, writeId?: string) => ({
        from: reads,
        keys: writeId === undefined ? [documentKey(collection, id)] : [documentKey(collection, id), writeKey(writeId)],
      }),
    }),
    get(collection: string, id: string): StoredDocument | undefined {
      const row = kept(collection, id);
      if (row !== undefined) return row === null ? undefined : fromRow(row);
      const read = get.get(collection, id) as Row | undefined;
      return read && fromRow(read);
    },
    insert(collection: string, doc: DocumentRecord, space: string): void {
      const text = JSON.stringify(doc);
      if (kept(collection, doc._id) !== null) return void insert.run(collection, doc._id, text, space); // not known absent: may throw
      defer(insert, collection, doc._id, text, space);
      ahead?.remember(documentKey(collection, doc._id), { doc: text, space });
    },
    update(collection: string, doc: DocumentRecord): void {
      const text = JSON.stringify(doc);
      const row = kept(collection, doc._id);
      if (!row) return void update.run(text, collection, doc._id);
      defer(update, text, collection, doc._id);
      ahead?.remember(documentKey(collection, doc._id), { doc: text, space: row.space });
    },
    remove(collection: string, id: string): void {
      if (kept(collection, id) === undefined) return void remove.run(collection, id);
      defer(remove, collection, id);
      ahead?.remember(documentKey(collection, id), null);
    },
    *scan(collection: string): Generator<StoredDocument> {
      for (const row of scan.iterate(collection) as Iterable<Row>) yield fromRow(row);
    },
    applied(writeId: string): string | undefined {
      const docId = ahead?.recalled(writeKey(writeId)) as string | null | undefined;
      if (docId !== undefined) return docId ?? undefined;
      return (applied.get(writeId) as { doc_id: string } | undefined)?.doc_id;
    },
    markApplied(writeId: string, collection: string, docId: string, atMs: number): void {
      if (ahead?.recalled(writeKey(writeId)) !== null) return void markApplied.run(writeId, collection, docId, atMs); // not known new: may throw
      defer(markApplied, writeId, collection, docId, atMs);
      ahead?.remember(writeKey(writeId), docId);
    },
  };
}

interface Row {
  doc: string;
  space: string;
}

function fromRow(row: Row): StoredDocument {
  return { doc: JSON.parse(row.doc), space: row.space };
}

/**
 * The documents as the RPCs read them, outside the committer: on PostgreSQL on a connection of
 * its own without blocking the event loop ({@link Db.readAsync}); on SQLite the statements' reads
 * (a scan one row at a time, so a find that stops early reads no more).
 */
export interface DocumentReads {
  /** As {@link DocumentStatements.get}. */
  get(collection: string, id: string): Promise<StoredDocument | undefined>;
  /** As {@link DocumentStatements.scan}. */
  scan(collection: string): AsyncIterable<StoredDocument> | Iterable<StoredDocument>;
}

/** The documents' reads for RPCs on `db`; `statements` read them where the database's reads are not round trips. */
export function documentReads(db: Db, statements: DocumentStatements): DocumentReads {
  const readAsync = db.readAsync?.bind(db);
  if (!readAsync) return { get: async (collection, id) => statements.get(collection, id), scan: (collection) => statements.scan(collection) };
  return {
    async get(collection, id) {
      const [row] = (await readAsync("SELECT doc, space FROM documents WHERE collection = ? AND id = ?", [collection, id])) as Row[];
      return row && fromRow(row);
    },
    async *scan(collection) {
      for (const row of (await readAsync("SELECT doc, space FROM documents WHERE collection = ? ORDER BY id", [collection])) as Row[]) yield fromRow(row);
    },
  };
}
