import type { Db } from "./sql.js";

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
}

/** The documents and collection_writes tables' statements on `db`. */
export function documentStatements(db: Db): DocumentStatements {
  const get = db.prepare("SELECT doc, space FROM documents WHERE collection = ? AND id = ?");
  const insert = db.prepare("INSERT INTO documents (collection, id, doc, space) VALUES (?, ?, ?, ?)");
  const update = db.prepare("UPDATE documents SET doc = ? WHERE collection = ? AND id = ?");
  const remove = db.prepare("DELETE FROM documents WHERE collection = ? AND id = ?");
  const scan = db.prepare("SELECT doc, space FROM documents WHERE collection = ? ORDER BY id");
  const applied = db.prepare("SELECT doc_id FROM collection_writes WHERE id = ?");
  const markApplied = db.prepare("INSERT INTO collection_writes (id, collection, doc_id, at) VALUES (?, ?, ?, ?)");
  return {
    get(collection: string, id: string): StoredDocument | undefined {
      const row = get.get(collection, id) as Row | undefined;
      return row && fromRow(row);
    },
    insert(collection: string, doc: DocumentRecord, space: string): void {
      insert.run(collection, doc._id, JSON.stringify(doc), space);
    },
    update(collection: string, doc: DocumentRecord): void {
      update.run(JSON.stringify(doc), collection, doc._id);
    },
    remove(collection: string, id: string): void {
      remove.run(collection, id);
    },
    *scan(collection: string): Generator<StoredDocument> {
      for (const row of scan.iterate(collection) as Iterable<Row>) yield fromRow(row);
    },
    applied(writeId: string): string | undefined {
      return (applied.get(writeId) as { doc_id: string } | undefined)?.doc_id;
    },
    markApplied(writeId: string, collection: string, docId: string, atMs: number): void {
      markApplied.run(writeId, collection, docId, atMs);
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
