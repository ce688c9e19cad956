import type { Db } from "../store/sql.js";
import {
  documentReads,
  documentStatements,
  type DocumentReads,
  type DocumentRecord,
  type DocumentStatements,
  type StoredDocument,
} from "../store/documents.js";
import type { CollectionEntry } from "./declaration.js";

/** Where a collection's documents live: SQLite (durable) or memory (`durable: false`). */
export type DocumentStore = DocumentStatements;

/**
 * The documents of `durable: false` collections: in this process's
 * memory only, lost when the owner stops. Same operations as the SQLite
 * statements; documents are copied in and out, so callers never share
 * objects with the store.
 */
export class MemoryDocuments implements DocumentStore {
  private readonly collections = new Map<string, Map<string, StoredDocument>>();
  private readonly writes = new Map<string, string>();

  private of(collection: string): Map<string, StoredDocument> {
    let docs = this.collections.get(collection);
    if (!docs) this.collections.set(collection, (docs = new Map()));
    return docs;
  }

  /** The document `id` with its space, or undefined. */
  get(collection: string, id: string): StoredDocument | undefined {
    const stored = this.collections.get(collection)?.get(id);
    return stored && structuredClone(stored);
  }

  /** Inserts a document in `space`; throws when its `_id` is taken (callers check first). */
  insert(collection: string, doc: DocumentRecord, space: string): void {
    const docs = this.of(collection);
    if (docs.has(doc._id)) throw new Error(`document ${doc._id} already in ${collection}`);
    docs.set(doc._id, { doc: structuredClone(doc), space });
  }

  /** Overwrites an existing document, its space unchanged (no-op when absent). */
  update(collection: string, doc: DocumentRecord): void {
    const stored = this.of(collection).get(doc._id);
    if (stored) stored.doc = structuredClone(doc);
  }

  /** Deletes a document (no-op when absent). */
  remove(collection: string, id: string): void {
    this.collections.get(collection)?.delete(id);
  }

  /** Every document of `collection` with its space, in `_id` order. */
  *scan(collection: string): Generator<StoredDocument> {
    const docs = this.collections.get(collection);
    if (!docs) return;
    for (const id of [...docs.keys()].sort()) {
      const stored = docs.get(id);
      if (stored) yield structuredClone(stored);
    }
  }

  /** The `_id` written by the write `writeId` under a cause, or undefined. */
  applied(writeId: string): string | undefined {
    return this.writes.get(writeId);
  }

  /** Records that the write `writeId` was applied to `docId` (lost on restart, like the documents). */
  markApplied(writeId: string, _collection: string, docId: string): void {
    this.writes.set(writeId, docId);
  }
}

/** The two document stores of an owner, and which one a collection uses. */
export class DocumentStores {
  readonly durable: DocumentStore;
  /** The durable documents as the RPCs read them (on PostgreSQL without blocking the event loop). */
  readonly durableReads: DocumentReads;
  readonly memory = new MemoryDocuments();

  constructor(db: Db) {
    this.durable = documentStatements(db);
    this.durableReads = documentReads(db, this.durable);
  }

  /** The store of `entry`: memory when `durable: false`, SQLite otherwise. */
  of(entry: CollectionEntry): DocumentStore {
    return entry.durable ? this.durable : this.memory;
  }

  /** The reads of `entry`'s store for RPCs: memory's at once, the durable ones as {@link durableReads}. */
  readsOf(
    entry: CollectionEntry,
  ): Pick<DocumentReads, "scan"> & { get(collection: string, id: string): Promise<StoredDocument | undefined> | StoredDocument | undefined } {
    return entry.durable ? this.durableReads : this.memory;
  }
}
