import type { CollectionDeclaration } from "@chronolog/sdk/gen/chronolog/v1/plugin_pb";
import type { FieldViolation } from "../errors.js";
import type { Validator } from "../plugins/schemas.js";

/**
 * A declared collection, ready to check writes against.
 *
 * Modes: `durable: false` keeps documents in memory only; `records` makes an
 * append-only ledger (create only); both, and `events: false`, write no
 * change events. `writesEvents` is the effective answer.
 */
export interface CollectionEntry {
  name: string;
  plugin: string;
  /** Checks the whole document, `_id` included; violations are rooted at `doc` (e.g. `doc/amount`). */
  validate: Validator;
  /** Top-level fields removed from change events and from non-admin, non-executor reads. */
  privateFields: string[];
  /** True when writes record `<name>.created|.updated|.deleted` (events, durable and not records). */
  writesEvents: boolean;
  /** False: in memory only, lost on restart. */
  durable: boolean;
  /** Ledger mode: create only. */
  records: boolean;
  /** Who may write from outside (`*`, `role:X`, principal name); empty: only code under a cause. */
  allow: string[];
}

/** Collection names: lowercase, dots allowed (`booking`, `shop.orders`). */
const collectionName = /^[a-z][a-z0-9_-]*(\.[a-z0-9_-]+)*$/;
/** A private field is a top-level field name. */
const fieldName = /^[^.$\s][^.\s]*$/;

/** The change operations and the event type suffix each records. */
export const changeSuffixes = { create: "created", replace: "updated", patch: "updated", delete: "deleted" } as const;

/** The event types a collection's writes record: `<name>.created`, `.updated`, `.deleted`. */
export function changeTypes(name: string): string[] {
  return [`${name}.created`, `${name}.updated`, `${name}.deleted`];
}

/**
 * Checks and compiles one collection declaration of plugin `plugin`.
 * Returns the entry (absent when the schema does not compile) and the
 * problems found, each as a violation on `collections.<name>[.part]`.
 * `allow` entries are checked by the manifest, with the event types' rule.
 */
export function compileCollection(
  plugin: string,
  name: string,
  decl: CollectionDeclaration,
  compile: (schema: Record<string, unknown> | undefined, root: string) => Validator,
): { entry?: CollectionEntry; violations: FieldViolation[] } {
  const at = `collections.${name}`;
  const violations: FieldViolation[] = [];
  if (!collectionName.test(name))
    violations.push({ field: at, description: "collection name must be lowercase letters, digits, - or _, dots allowed (e.g. booking)" });
  for (const field of decl.privateFields) {
    if (!fieldName.test(field) || field === "_id")
      violations.push({ field: `${at}.private_fields`, description: `invalid private field ${JSON.stringify(field)}: a top-level field name other than _id` });
  }
  let validate: Validator | undefined;
  try {
    validate = compile(decl.schema, "doc");
  } catch (e) {
    violations.push({ field: `${at}.schema`, description: e instanceof Error ? e.message : String(e) });
  }
  if (!validate) return { violations };
  const durable = decl.durable ?? true;
  return {
    entry: {
      name,
      plugin,
      validate,
      privateFields: [...decl.privateFields],
      writesEvents: (decl.events ?? true) && durable && !decl.records,
      durable,
      records: decl.records,
      allow: [...decl.allow],
    },
    violations,
  };
}
