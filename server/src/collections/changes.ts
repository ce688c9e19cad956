import type { DocumentRecord } from "../store/documents.js";
import type { CollectionEntry } from "./declaration.js";
import { diffPaths } from "./paths.js";

/** A collection write operation. */
export type WriteOp = "create" | "replace" | "patch" | "delete";

/** The type and data of a change event, ready to append. */
export interface ChangeEvent {
  type: string;
  data: Record<string, unknown>;
}

/** `doc` without the collection's private top-level fields. A copy; `doc` is not touched. */
export function withoutPrivate(doc: DocumentRecord, privateFields: readonly string[]): DocumentRecord {
  if (privateFields.length === 0) return doc;
  const copy = { ...doc };
  for (const field of privateFields) delete copy[field];
  return copy;
}

/**
 * The change event of a write:
 * - create: `<name>.created` with `{ _id, doc }`;
 * - replace, patch: `<name>.updated` with `{ _id, doc, changed, removed }`,
 *   the field paths that changed and that were removed (see `diffPaths`);
 * - delete: `<name>.deleted` with `{ _id, doc }`, the document as it was.
 * Private fields are removed from `doc`, and their paths from `changed` and
 * `removed`, so no event carries or names a private value.
 */
export function changeEvent(entry: CollectionEntry, op: WriteOp, before: DocumentRecord | undefined, after: DocumentRecord | undefined): ChangeEvent {
  const isPrivate = (path: string) => entry.privateFields.includes(path.split(".")[0]);
  if (op === "create") return { type: `${entry.name}.created`, data: { _id: after!._id, doc: withoutPrivate(after!, entry.privateFields) } };
  if (op === "delete") return { type: `${entry.name}.deleted`, data: { _id: before!._id, doc: withoutPrivate(before!, entry.privateFields) } };
  const { changed, removed } = diffPaths(before!, after!);
  return {
    type: `${entry.name}.updated`,
    data: {
      _id: after!._id,
      doc: withoutPrivate(after!, entry.privateFields),
      changed: changed.filter((p) => !isPrivate(p)),
      removed: removed.filter((p) => !isPrivate(p)),
    },
  };
}
