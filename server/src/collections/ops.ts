import { fail, type FieldViolation } from "../errors.js";
import { checkId } from "../log/ids.js";
import type { DocumentRecord } from "../store/documents.js";
import type { CollectionEntry } from "./declaration.js";
import { checkNoOverlap, parsePath, setPath, unsetPath } from "./paths.js";

/**
 * The four writes as pure steps: `parseWrite` checks a request's
 * shape before anything is submitted; `nextDocument` computes the document
 * after the write from the one before (inside the commit unit, so
 * concurrent writes to one document apply one after the other);
 * `checkSchema` checks the result.
 */

/** A write as requested: documents and `set` values are JSON. */
export type WriteInput =
  | { op: "create"; doc: Record<string, unknown> }
  | { op: "replace"; id: string; doc: Record<string, unknown> }
  | { op: "patch"; id: string; set: Record<string, unknown>; unset: string[] }
  | { op: "delete"; id: string };

/** A write whose shape was checked; patch paths are split into segments. */
export type ParsedWrite =
  | { op: "create"; doc: Record<string, unknown>; id: string | undefined }
  | { op: "replace"; id: string; doc: Record<string, unknown> }
  | { op: "patch"; id: string; set: [string[], unknown][]; unset: string[][] }
  | { op: "delete"; id: string };

/** INVALID_ARGUMENT unless `id` is a non-empty string that meets the id rule ({@link checkId}). */
export function checkDocumentId(id: unknown, field: string): string {
  if (typeof id !== "string" || id === "") fail("bad_request", `${field} must be a non-empty string`, [{ field, description: "a non-empty string" }]);
  return checkId(id, field);
}

/**
 * Checks a write's shape against its collection, before any commit:
 * `records` collections take creates only (FAILED_PRECONDITION
 * otherwise); ids are non-empty strings; a replacement's `_id`, when given, is the
 * id replaced; a patch sets or unsets at least one path, paths do not
 * overlap and never touch `_id` (INVALID_ARGUMENT).
 */
export function parseWrite(entry: CollectionEntry, write: WriteInput): ParsedWrite {
  if (entry.records && write.op !== "create") {
    fail("failed_precondition", `collection ${entry.name} is a records ledger: documents are append-only, ${write.op} is not allowed`, [], {
      collection: entry.name,
    });
  }
  switch (write.op) {
    case "create":
      return { op: "create", doc: write.doc, id: write.doc._id === undefined ? undefined : checkDocumentId(write.doc._id, "doc._id") };
    case "replace": {
      const id = checkDocumentId(write.id, "id");
      if (write.doc._id !== undefined && write.doc._id !== id)
        fail("bad_request", `doc._id ${JSON.stringify(write.doc._id)} differs from id ${JSON.stringify(id)}: _id cannot be changed`, [
          { field: "doc._id", description: "differs from id" },
        ]);
      return { op: "replace", id, doc: write.doc };
    }
    case "patch": {
      const id = checkDocumentId(write.id, "id");
      const paths = [...Object.keys(write.set), ...write.unset];
      if (paths.length === 0) fail("bad_request", "a patch needs at least one path in set or unset", [{ field: "set", description: "empty patch" }]);
      checkNoOverlap(paths);
      return {
        op: "patch",
        id,
        set: Object.entries(write.set).map(([path, value]) => [parsePath(path, `set.${path}`), value]),
        unset: write.unset.map((path, i) => parsePath(path, `unset[${i}]`)),
      };
    }
    case "delete":
      return { op: "delete", id: checkDocumentId(write.id, "id") };
  }
}

/**
 * The document after `write`, given the one stored under `id` before it
 * (`before`), or undefined after a delete. ALREADY_EXISTS when a create's
 * `_id` is taken; NOT_FOUND when replace, patch or delete find no document.
 * Never mutates `before`.
 */
export function nextDocument(entry: CollectionEntry, write: ParsedWrite, id: string, before: DocumentRecord | undefined): DocumentRecord | undefined {
  if (write.op === "create") {
    if (before)
      fail("already_exists", `document ${JSON.stringify(id)} already exists in ${entry.name}`, [{ field: "doc._id", description: "already exists" }], {
        collection: entry.name,
        id,
      });
    return withId(id, write.doc);
  }
  if (!before) fail("not_found", `no document ${JSON.stringify(id)} in ${entry.name}`, [], { collection: entry.name, id });
  switch (write.op) {
    case "replace":
      return withId(id, write.doc);
    case "patch": {
      const doc = structuredClone(before);
      for (const [segments, value] of write.set) setPath(doc, segments, value);
      for (const segments of write.unset) unsetPath(doc, segments);
      return doc;
    }
    case "delete":
      return undefined;
  }
}

/**
 * Checks the whole document (`_id` included) against the collection's
 * schema: INVALID_ARGUMENT (schema_violation) with one violation per
 * problem, the field a JSON pointer under `doc` (e.g. `doc/amount`).
 */
export function checkSchema(entry: CollectionEntry, doc: DocumentRecord): void {
  const violations: FieldViolation[] = entry.validate(doc);
  if (violations.length > 0) {
    fail(
      "schema_violation",
      `document of ${entry.name} does not match its schema: ${violations.map((v) => `${v.field}: ${v.description}`).join("; ")}`,
      violations,
      { collection: entry.name },
    );
  }
}

/** `doc` with `_id` set to `id`, as its first field. */
function withId(id: string, doc: Record<string, unknown>): DocumentRecord {
  const { _id: _, ...rest } = doc;
  return { _id: id, ...rest };
}
