import type { Db } from "./sql.js";

/** A document as stored: a JSON object with its string `_id`. */
export type DocumentRecord = Record<string, unknown> & { _id: string };

/** A document and its space: the `in` of the actor that created it ("" for none). */
export interface StoredDocument {
  doc: DocumentRecord;
  space: string;
}

/**
 * The statements on `documents` and `collection_writes`, one
 * function each. Reads may run anywhere; writes only inside a committer
 * transaction, in the same unit as the change event they go with.
 */
export function documentStatements(db: Db) {
  const get = db.prepare("SELECT doc, space FROM documents WHERE collection = ? AND id = ?");
  const insert = db.prepare("INSERT INTO documents (collection, id, doc, space) VALUES (?, ?, ?, ?)");
  const update = db.prepare("UPDATE documents SET doc = ? WHERE collection = ? AND id = ?");
  const remove = db.prepare("DELETE FROM documents WHERE collection = ? AND id = ?");
  const scan = db.prepare("SELECT doc, space FROM documents WHERE collection = ? ORDER BY id");
  const applied = db.prepare("SELECT doc_id FROM collection_writes WHERE id = ?");
  const markApplied = db.prepare("INSERT INTO collection_writes (id, collection, doc_id, at) VALUES (?, ?, ?, ?)");
  return {
    /** The document `id` of `collection` with its space, or undefined. */
    get(collection: string, id: string): StoredDocument | undefined {
      const row = get.get(collection, id) as Row | undefined;
      return row && fromRow(row);
    },
    /** Inserts a new document in `space`; throws (SQLITE_CONSTRAINT) when its `_id` is taken. */
    insert(collection: string, doc: DocumentRecord, space: string): void {
      insert.run(collection, doc._id, JSON.stringify(doc), space);
    },
    /** Overwrites an existing document, its space unchanged (no-op when absent: check first). */
    update(collection: string, doc: DocumentRecord): void {
      update.run(JSON.stringify(doc), collection, doc._id);
    },
    /** Deletes a document (no-op when absent). */
    remove(collection: string, id: string): void {
      remove.run(collection, id);
    },
    /**
     * Every document of `collection` with its space, in `_id` order, read
     * lazily (one row at a time), so a scan that stops early reads no more.
     * Do not write while iterating.
     */
    *scan(collection: string): Generator<StoredDocument> {
      for (const row of scan.iterate(collection) as Iterable<Row>) yield fromRow(row);
    },
    /** The `_id` of the document written by the write `writeId` under a cause, or undefined when not applied. */
    applied(writeId: string): string | undefined {
      return (applied.get(writeId) as { doc_id: string } | undefined)?.doc_id;
    },
    /** Records that the write `writeId` was applied to `docId` at `atMs` (commit time, ms UTC). */
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

/** The statements of {@link documentStatements}. */
export type DocumentStatements = ReturnType<typeof documentStatements>;
