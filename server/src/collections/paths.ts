import { fail } from "../errors.js";
import { canonicalJson } from "../log/canonical.js";

/**
 * Dotted field paths into documents: `address.city`, and array
 * elements by index, `items.0.sku`. A key that itself contains a dot cannot
 * be addressed by a path.
 */

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Splits a dotted path into its segments. INVALID_ARGUMENT naming `field`
 * (e.g. `set.a..b`) for an empty path or segment, `__proto__`, and `_id`
 * (a document's `_id` never changes).
 */
export function parsePath(path: string, field: string): string[] {
  const segments = path.split(".");
  if (path === "" || segments.some((s) => s === ""))
    fail("bad_request", `${field}: a field path is dotted names, e.g. address.city`, [{ field, description: "empty field path or segment" }]);
  if (segments.includes("__proto__")) fail("bad_request", `${field}: __proto__ is not a field name`, [{ field, description: "__proto__ is not a field name" }]);
  if (segments[0] === "_id") fail("bad_request", `${field}: _id cannot be changed`, [{ field, description: "_id cannot be changed" }]);
  return segments;
}

/**
 * Checks that no path of a patch is another's prefix (or equal to it):
 * `a` and `a.b` together would conflict, as in MongoDB. INVALID_ARGUMENT
 * names both paths.
 */
export function checkNoOverlap(paths: string[]): void {
  const sorted = [...paths].sort();
  for (let i = 1; i < sorted.length; i++) {
    const [a, b] = [sorted[i - 1], sorted[i]];
    if (a === b || b.startsWith(`${a}.`)) fail("bad_request", `patch paths ${a} and ${b} overlap`, [{ field: b, description: `overlaps ${a}` }]);
  }
}

/**
 * Sets `value` at `segments` in `doc` (mutating it), creating missing
 * objects on the way. Through an array, a segment must be an index of an
 * existing element, or the next index (appends). INVALID_ARGUMENT when the
 * path crosses a value that is neither object nor array.
 */
export function setPath(doc: Json, segments: string[], value: unknown): void {
  let node: unknown = doc;
  for (let i = 0; i < segments.length; i++) {
    const last = i === segments.length - 1;
    const key = segments[i];
    if (Array.isArray(node)) {
      const index = arrayIndex(node, key, segments);
      if (last) node[index] = value;
      else node = index === node.length ? (node[index] = {}) : node[index];
    } else if (isObject(node)) {
      if (last) node[key] = value;
      else node = Object.hasOwn(node, key) ? node[key] : (node[key] = {});
    } else {
      crossesScalar(segments, i);
    }
  }
}

/**
 * Removes the field at `segments` (mutating `doc`); a missing path is a
 * no-op. In an array the element is set to null, as MongoDB's `$unset` does,
 * so later indexes keep their meaning.
 */
export function unsetPath(doc: Json, segments: string[]): void {
  let node: unknown = doc;
  for (let i = 0; i < segments.length; i++) {
    const last = i === segments.length - 1;
    const key = segments[i];
    if (Array.isArray(node)) {
      const index = /^\d+$/.test(key) ? Number(key) : -1;
      if (index < 0 || index >= node.length) return;
      if (last) node[index] = null;
      else node = node[index];
    } else if (isObject(node)) {
      if (!Object.hasOwn(node, key)) return;
      if (last) delete node[key];
      else node = node[key];
    } else {
      return;
    }
  }
}

function arrayIndex(array: unknown[], key: string, segments: string[]): number {
  const index = /^\d+$/.test(key) ? Number(key) : -1;
  if (index < 0 || index > array.length) {
    const path = segments.join(".");
    fail("bad_request", `cannot set ${path}: ${key} is not an index of the array (length ${array.length})`, [
      { field: path, description: "not an array index" },
    ]);
  }
  return index;
}

function crossesScalar(segments: string[], i: number): never {
  const path = segments.join(".");
  const at = segments.slice(0, i).join(".");
  return fail("bad_request", `cannot set ${path}: ${at} is not an object`, [{ field: path, description: `${at} is not an object` }]);
}

/**
 * The field paths an update changed and removed, comparing `before` and
 * `after` through nested objects (arrays and scalars compare as whole
 * values): `changed` lists paths added or given a different value, at the
 * deepest object level; `removed` lists the highest paths that are gone.
 * Both sorted; `_id` never appears.
 */
export function diffPaths(before: Json, after: Json): { changed: string[]; removed: string[] } {
  const changed: string[] = [];
  const removed: string[] = [];
  const walk = (b: Json, a: Json, prefix: string) => {
    for (const key of Object.keys(a)) {
      const path = prefix + key;
      if (!Object.hasOwn(b, key)) changed.push(path);
      else if (isObject(b[key]) && isObject(a[key])) walk(b[key] as Json, a[key] as Json, `${path}.`);
      else if (canonicalJson(b[key]) !== canonicalJson(a[key])) changed.push(path);
    }
    for (const key of Object.keys(b)) if (!Object.hasOwn(a, key)) removed.push(prefix + key);
  };
  walk(before, after, "");
  const notId = (p: string) => p !== "_id";
  return { changed: changed.filter(notId).sort(), removed: removed.filter(notId).sort() };
}
