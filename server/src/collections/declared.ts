import type { FieldViolation } from "../errors.js";
import type { CompiledManifest } from "../plugins/manifest.js";
import { changeTypes, type CollectionEntry } from "./declaration.js";

/**
 * The declared collections of every registered plugin, by name.
 * Collection names are global, like event types: one plugin owns a name,
 * and its change types `<name>.created|.updated|.deleted` are reserved.
 */
export class CollectionIndex {
  private constructor(private readonly byName: Map<string, CollectionEntry>) {}

  /** The index of the collections declared by `manifests`. */
  static build(manifests: Iterable<CompiledManifest>): CollectionIndex {
    const byName = new Map<string, CollectionEntry>();
    for (const m of manifests) for (const entry of m.collections) byName.set(entry.name, entry);
    return new CollectionIndex(byName);
  }

  /** The declaration of collection `name`, or undefined. */
  get(name: string): CollectionEntry | undefined {
    return this.byName.get(name);
  }
}

/**
 * What stops `incoming` from joining the `others` (every other registered
 * plugin): a collection name another plugin declares, or an event type that
 * is a change type of a collection (its own or another plugin's), in either
 * direction. One violation per clash, on `collections.<name>` or
 * `events.<type>`; empty when it fits. The caller fails with INVALID_ARGUMENT.
 */
export function collectionConflicts(incoming: CompiledManifest, others: CompiledManifest[]): FieldViolation[] {
  const violations: FieldViolation[] = [];
  const plugin = incoming.manifest.name;
  const reserved = new Map<string, { collection: string; plugin: string }>();
  for (const m of [incoming, ...others]) {
    for (const c of m.collections) for (const type of changeTypes(c.name)) reserved.set(type, { collection: c.name, plugin: m.manifest.name });
  }
  for (const c of incoming.collections) {
    const owner = others.find((m) => m.collections.some((o) => o.name === c.name));
    if (owner) violations.push({ field: `collections.${c.name}`, description: `collection ${c.name} is already declared by plugin ${owner.manifest.name}` });
  }
  for (const e of incoming.eventTypes) {
    const r = reserved.get(e.type);
    if (r)
      violations.push({
        field: `events.${e.type}`,
        description: `${e.type} is a change event of collection ${r.collection}${r.plugin === plugin ? "" : ` (plugin ${r.plugin})`}, recorded by the runtime; it cannot be declared`,
      });
  }
  for (const m of others) {
    for (const e of m.eventTypes) {
      const r = reserved.get(e.type);
      if (r && r.plugin === plugin)
        violations.push({
          field: `collections.${r.collection}`,
          description: `plugin ${m.manifest.name} declares event type ${e.type}, a change event of collection ${r.collection}`,
        });
    }
  }
  return violations;
}
