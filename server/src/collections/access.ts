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

/**
 * Whom the space rule ({@link canReach}) takes code under a cause for: the cause's actor when
 * it has a space (`causeSpace`), so work for one space reads and writes that space's documents
 * and those without one, whatever its token may reach; under a cause without a space, its
 * principal (the token's own spaces).
 */
export function underCauseReader(principal: Principal, causeSpace: string): Principal {
  return causeSpace === "" ? principal : { name: principal.name, role: "client", actor: { in: causeSpace }, assert: {} };
}

/** True when `principal` sees private fields: admins and executors (code). */
export function readsPrivate(principal: Principal): boolean {
  return principal.role === "admin" || principal.role === "executor";
}

/** `doc` as `principal` may see it: private fields removed unless it {@link readsPrivate}. */
export function forReader(principal: Principal, entry: CollectionEntry, doc: DocumentRecord): DocumentRecord {
  return readsPrivate(principal) ? doc : withoutPrivate(doc, entry.privateFields);
}
