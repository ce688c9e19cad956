import type { PluginRegistry } from "../plugins/registry.js";
import type { Committer } from "../store/committer.js";
import type { Db } from "../store/sql.js";
import type { LiveCauses } from "../log/causes.js";
import type { EventStatements } from "../store/events.js";
import { DocumentReader } from "./reads.js";
import { DocumentStores } from "./stores.js";
import { DocumentWriter } from "./writes.js";

/** An owner's collections: the writer and the reader over one set of stores. */
export interface Collections {
  writer: DocumentWriter;
  reader: DocumentReader;
}

/**
 * Opens the collections of an owner on its database `db` (SQLite documents)
 * and a fresh in-memory store (`durable: false`, empty at every start).
 * `live`: causes without an event (running record:false invocations) that
 * writes under a cause may name.
 */
export function openCollections(db: Db, committer: Committer, registry: PluginRegistry, events: EventStatements, live: LiveCauses): Collections {
  const stores = new DocumentStores(db);
  return { writer: new DocumentWriter(committer, registry, events, stores, live), reader: new DocumentReader(registry, stores, events, live) };
}
