import type { Principal } from "../auth/principal.js";
import { fail } from "../errors.js";
import type { PluginRegistry } from "../plugins/registry.js";
import type { DocumentRecord } from "../store/documents.js";
import { withoutPrivate } from "./changes.js";
import type { CollectionEntry } from "./declaration.js";

/** The declaration of collection `name`; NOT_FOUND when no plugin declares it. */
export function declaredCollection(registry: PluginRegistry, name: string): CollectionEntry {
  return (
    registry.collection(name) ??
    fail("not_found", `collection ${JSON.stringify(name)} is not declared by any plugin`, [{ field: "collection", description: "undeclared collection" }], {
      collection: name,
    })
  );
}

/** True when `principal` sees private fields: admins and executors (code). */
export function readsPrivate(principal: Principal): boolean {
  return principal.role === "admin" || principal.role === "executor";
}

/** `doc` as `principal` may see it: private fields removed unless it {@link readsPrivate}. */
export function forReader(principal: Principal, entry: CollectionEntry, doc: DocumentRecord): DocumentRecord {
  return readsPrivate(principal) ? doc : withoutPrivate(doc, entry.privateFields);
}
