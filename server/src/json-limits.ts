import { fail } from "./errors.js";

/* How deep, and what kind of, JSON the owner takes in anything it keeps or passes on. */

/**
 * The deepest JSON the owner takes in data it keeps or passes on: event data, collection
 * documents (a patch's paths count), action inputs and outputs, timer and delay inputs, the
 * Structs of plugin manifests. Levels are objects and arrays: `{}` and `{"a": 1}` are 1 level,
 * `{"a": [1]}` 2.
 *
 * Why 32: binary protobuf decoders (protobuf-es in the SDK and the owner, grpc-js, grpcurl,
 * Python) stop at 100 nested messages, and each JSON level is two (google.protobuf.Value plus
 * Struct or ListValue), so an Event's data decodes to 49 levels at most, a delivery's (in a
 * DeliveryBatch) to 48. The owner's own events hold such data a level or two deeper
 * (`action.completed`'s output, `<collection>.updated`'s doc, `timer.scheduled`'s input), and the
 * rest of the margin is for clients that wrap events in messages of their own. Connect JSON
 * requests decode to about 98 levels: without this limit one request could write an event that
 * no binary client can read (its every read and watch, and executors' streams, failing).
 */
export const maxJsonDepth = 32;

/**
 * Why `value` cannot be taken as JSON, or undefined when it can: "<field> is nested deeper than
 * 32 levels (at <JSON pointer of the first value past the limit>)" (see {@link maxJsonDepth}), or
 * "<field>/<pointer> is NaN, not a JSON number" for a number JSON cannot hold (a Struct's double may
 * be NaN or ±Infinity; stored as JSON it would become null). `above`: how many levels hold the
 * value where it is put (a patch's `set` path of k segments puts its value k levels down).
 */
export function jsonProblem(value: unknown, field: string, above = 0): string | undefined {
  const found = above > maxJsonDepth ? { path: [], number: undefined } : firstProblem(value, above + 1);
  if (!found) return undefined;
  let at = [field, ...found.path.map((key) => key.replaceAll("~", "~0").replaceAll("/", "~1"))].join("/");
  if (at.length > 200) at = `${at.slice(0, 200)}...`;
  if (found.number !== undefined) return `${at} is ${found.number}, not a JSON number`;
  return `${field} is nested deeper than ${maxJsonDepth} levels (at ${at}): binary gRPC clients could not read it back`;
}

/** INVALID_ARGUMENT naming `field` when `value` cannot be taken as JSON (see {@link jsonProblem}). */
export function checkJson(value: unknown, field: string, above = 0): void {
  const problem = jsonProblem(value, field, above);
  if (problem)
    fail("bad_request", problem, [{ field, description: problem.includes("deeper") ? `nested deeper than ${maxJsonDepth} levels` : "not a JSON number" }]);
}

/**
 * The keys leading from `value` to its first object or array past {@link maxJsonDepth} (`number`
 * undefined), or to its first number that is not finite (`number` set: NaN, Infinity or
 * -Infinity), when `value` sits at `level`; undefined when there is none. Recursion stops at the
 * limit, so it is never deeper than it.
 */
function firstProblem(value: unknown, level: number): { path: string[]; number: string | undefined } | undefined {
  if (typeof value === "number") return Number.isFinite(value) ? undefined : { path: [], number: String(value) };
  if (value === null || typeof value !== "object") return undefined;
  if (level > maxJsonDepth) return { path: [], number: undefined };
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = firstProblem(value[i], level + 1);
      if (found) return { ...found, path: [String(i), ...found.path] };
    }
    return undefined;
  }
  for (const key in value) {
    const found = firstProblem((value as Record<string, unknown>)[key], level + 1);
    if (found) return { ...found, path: [key, ...found.path] };
  }
  return undefined;
}
