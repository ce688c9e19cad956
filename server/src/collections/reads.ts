import { find as mingoFind } from "mingo";
import { canReach, underCauseReader, type Principal } from "../auth/principal.js";
import { fail } from "../errors.js";
import { causeActor, type CauseRef, type LiveCauses } from "../log/causes.js";
import { compileFilter } from "../log/filter.js";
import type { EventStatements } from "../store/events.js";
import type { PluginRegistry } from "../plugins/registry.js";
import type { DocumentRecord } from "../store/documents.js";
import { declaredCollection, forReader } from "./access.js";
import { checkDocumentId } from "./ops.js";
import type { DocumentStores } from "./stores.js";

/** A find query as parsed from the request. */
export interface FindQuery {
  /** MongoDB filter (mingo); empty matches all. */
  filter: Record<string, unknown>;
  /** Field path → 1 (ascending) or -1 (descending); empty: `_id` order. */
  sort: Record<string, unknown>;
  /** At most this many documents; 0 means the default (100). */
  limit: number;
}

/** Documents a find returns when the request sets no limit. */
export const defaultFindLimit = 100;
/** Most documents one find returns. */
export const maxFindLimit = 1000;

/**
 * Reads documents: by `_id`, and by a MongoDB filter with sort and
 * limit. Any authenticated principal may read a declared collection, but
 * only its documents in spaces the principal may read ({@link canReach}, the
 * rule of events): admins read every document; others documents without
 * a space and those in their spaces. Another space's document is NOT_FOUND
 * exactly as a missing one, and never matches a find. Code reading under a
 * cause (`cause`; admins and executors only: a client gets PERMISSION_DENIED)
 * whose actor has a space reads as that actor: that space's documents and
 * those without a space, whatever its token may read, so an action called
 * from one space, or a delivery of its event, never reads another space's
 * documents; under a cause without a space it reads as its principal
 * ({@link underCauseReader}; writes follow the same rule). Private fields are
 * removed for principals other than admins and executors. Reads see
 * committed documents only.
 *
 * Find scans the collection's documents (SQLite rows in `_id` order, or
 * memory) and filters them in JS with mingo: fine for the sizes Chronolog
 * targets today, linear in the collection's size. Without a sort the scan
 * stops at `limit` matches; with one, every match is held and sorted
 * (mingo's MongoDB ordering). No indexes on document fields yet.
 */
export class DocumentReader {
  constructor(
    private readonly registry: PluginRegistry,
    private readonly stores: DocumentStores,
    private readonly events: EventStatements,
    /** Running record:false invocations, causes without an event. */
    private readonly live: LiveCauses,
  ) {}

  /** The document `id` of `collection` as `principal` (under `cause`) sees it; NOT_FOUND when absent, out of its reach or undeclared. */
  async get(collection: string, id: string, principal: Principal, cause: CauseRef | null = null): Promise<DocumentRecord> {
    const entry = declaredCollection(this.registry, collection);
    const reader = this.reader(principal, cause);
    const stored = await this.stores.readsOf(entry).get(entry.name, checkDocumentId(id, "id"));
    if (!stored || !canReach(reader, stored.space)) fail("not_found", `no document ${JSON.stringify(id)} in ${entry.name}`, [], { collection: entry.name, id });
    return forReader(principal, entry, stored.doc);
  }

  /**
   * Documents of `collection` matching `query.filter`, sorted, at most
   * `query.limit` (default 100, at most 1000). INVALID_ARGUMENT for a bad
   * filter (`filter`), sort (`sort.<path>`) or limit; NOT_FOUND for an
   * undeclared collection. Filter and sort see the documents as `principal`
   * does: a client cannot probe private fields with a filter. A document the
   * filter cannot be applied to (e.g. `$divide` by its zero) does not match.
   */
  async find(collection: string, query: FindQuery, principal: Principal, cause: CauseRef | null = null): Promise<DocumentRecord[]> {
    const entry = declaredCollection(this.registry, collection);
    const reader = this.reader(principal, cause);
    const matches = compileFilter(query.filter, "filter");
    const sort = parseSort(query.sort);
    const limit = parseLimit(query.limit);
    const found: DocumentRecord[] = [];
    for await (const stored of this.stores.readsOf(entry).scan(entry.name)) {
      if (!canReach(reader, stored.space)) continue;
      const doc = forReader(principal, entry, stored.doc);
      if (!matches(doc)) continue;
      found.push(doc);
      if (!sort && found.length === limit) break;
    }
    return sort ? (mingoFind(found, {}).sort(sort).limit(limit).all() as DocumentRecord[]) : found;
  }

  /** Whom the space rule reads as: under a cause whose actor has a space, that actor (its space only); else the principal. */
  private reader(principal: Principal, cause: CauseRef | null): Principal {
    if (!cause) return principal;
    if (principal.role === "client")
      fail("permission_denied", `principal ${principal.name} (role client) may not read under a cause; only executors act under a cause`);
    return underCauseReader(principal, causeActor(cause.eventId, this.events, this.live, principal)?.in ?? "");
  }
}

function parseSort(sort: Record<string, unknown>): Record<string, 1 | -1> | undefined {
  const entries = Object.entries(sort);
  if (entries.length === 0) return undefined;
  for (const [path, direction] of entries) {
    if (path === "" || path.split(".").some((s) => s === ""))
      fail("bad_request", `sort: invalid field path ${JSON.stringify(path)}`, [{ field: `sort.${path}`, description: "a dotted field path" }]);
    if (direction !== 1 && direction !== -1)
      fail("bad_request", `sort.${path} must be 1 (ascending) or -1 (descending)`, [{ field: `sort.${path}`, description: "1 or -1" }]);
  }
  return sort as Record<string, 1 | -1>;
}

function parseLimit(limit: number): number {
  if (limit === 0) return defaultFindLimit;
  if (!Number.isInteger(limit) || limit < 0 || limit > maxFindLimit)
    fail("bad_request", `limit must be at most ${maxFindLimit}`, [{ field: "limit", description: `1 to ${maxFindLimit}` }]);
  return limit;
}
