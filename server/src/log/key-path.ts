/**
 * A key extractor for a dotted path into an object, e.g. `data._id` into an event or
 * `input.customer_id` into a call: a string as is, another value as its JSON; absent or null: null.
 * An empty path gives null for every object.
 */
export function keyPath(path: string): (from: object) => string | null {
  if (path === "") return () => null;
  const parts = path.split(".");
  return (from) => {
    let value: unknown = from;
    for (const part of parts) {
      if (value === null || typeof value !== "object") return null;
      value = (value as Record<string, unknown>)[part];
    }
    if (value === undefined || value === null) return null;
    return typeof value === "string" ? value : JSON.stringify(value);
  };
}

/** A number extractor for a dotted path (a priority, e.g. `data.priority`): a number as is; absent, not a number, or an empty path: 0. */
export function numberPath(path: string): (from: object) => number {
  if (path === "") return () => 0;
  const parts = path.split(".");
  return (from) => {
    let value: unknown = from;
    for (const part of parts) {
      if (value === null || typeof value !== "object") return 0;
      value = (value as Record<string, unknown>)[part];
    }
    return typeof value === "number" && Number.isFinite(value) ? value : 0;
  };
}
