import type { Db } from "./database.js";

/** A document as stored: a JSON object with its string `_id`. */
export type DocumentRecord = Record<string, unknown> & { _id: string };

/**
 * The statements on `documents` and `collection_writes`, one
 * function each. Reads may run anywhere; writes only inside a committer
 * transaction, in the same unit as the change event they go with.
 */
export function documentStatements(db: Db) {
  const get = db.prepare("SELECT doc FROM documents WHERE collection = ? AND id = ?");
  const insert = db.prepare("INSERT INTO documents (collection, id, doc) VALUES (?, ?, ?)");
  const update = db.prepare("UPDATE documents SET doc = ? WHERE collection = ? AND id = ?");
  const remove = db.prepare("DELETE FROM documents WHERE collection = ? AND id = ?");
  const scan = db.prepare("SELECT doc FROM documents WHERE collection = ? ORDER BY id");
  const applied = db.prepare("SELECT doc_id FROM collection_writes WHERE id = ?");
  const markApplied = db.prepare("INSERT INTO collection_writes (id, collection, doc_id, at) VALUES (?, ?, ?, ?)");
  return {
    /** The document `id` of `collection`, or undefined. */
    get(collection: string, id: string): DocumentRecord | undefined {
      const row = get.get(collection, id) as { doc: string } | undefined;
      return row && JSON.parse(row.doc);
    },
    /** Inserts a new document; throws (SQLITE_CONSTRAINT) when its `_id` is taken. */
    insert(collection: string, doc: DocumentRecord): void {
      insert.run(collection, doc._id, JSON.stringify(doc));
    },
    /** Overwrites an existing document (no-op when absent: check first). */
    update(collection: string, doc: DocumentRecord): void {
      update.run(JSON.stringify(doc), collection, doc._id);
    },
    /** Deletes a document (no-op when absent). */
    remove(collection: string, id: string): void {
      remove.run(collection, id);
    },
    /**
     * Every document of `collection` in `_id` order, read lazily (one row at
     * a time), so a scan that stops early reads no more. Do not write while
     * iterating.
     */
    *scan(collection: string): Generator<DocumentRecord> {
      for (const row of scan.iterate(collection) as Iterable<{ doc: string }>) yield JSON.parse(row.doc);
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

/** The statements of {@link documentStatements}. */
export type DocumentStatements = ReturnType<typeof documentStatements>;
