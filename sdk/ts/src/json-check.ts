// Plain-JSON checks for what the SDK sends as google.protobuf.Struct (event data, action and
// timer inputs, documents, patches, filters, manifest schemas). protobuf-es converts such a
// JsonObject without complaint: a BigInt or `undefined` becomes null, NaN and ±Infinity become
// null on the owner, a Date, Map or Set becomes `{}`, a lone surrogate U+FFFD, a cycle overflows
// the stack. These checks find such values first, so they are refused instead of altered.

import { ScalarType, type DescField, type DescMessage, type DescMethodStreaming, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, type ContextValues, type Transport } from "@connectrpc/connect";

const STRUCT = "google.protobuf.Struct";
const VALUE = "google.protobuf.Value";
const LIST_VALUE = "google.protobuf.ListValue";

/** A lone (unpaired) UTF-16 surrogate: UTF-8 cannot encode it, protobuf writes U+FFFD instead. */
const LONE_SURROGATE = /\p{Cs}/u;

/** One value met in a walk, with the way to it (paths are only built for a problem). */
interface Step {
  value: unknown;
  parent: Step | undefined;
  key: string | number | undefined;
}

/**
 * Why `value` is not plain JSON, as `"<path>: <what> is not JSON"` naming the first offending
 * value found, e.g. `input.a: a BigInt is not JSON`, `input.list[2]: undefined is not JSON`,
 * `input.self: a cycle (back to input) is not JSON`; undefined when it is plain JSON.
 *
 * Plain JSON: null, booleans, finite numbers, strings without lone surrogates, arrays without
 * empty slots, and plain objects (prototype `Object.prototype` or null, no symbol keys) of
 * these. Anything else is refused: a BigInt, NaN, ±Infinity, undefined (a property value or an
 * array element), a function, a symbol, a Date, Map, Set or other class instance, a cycle.
 * The same object may appear twice (it is sent twice); only a cycle is refused.
 *
 * `path` names `value` itself (e.g. `input`); keys are appended as `.key`, `["odd key"]` or
 * `[index]`. Never throws, except what a getter of `value` throws; deep values do not
 * overflow the stack (the walk is iterative).
 */
export function jsonProblem(value: unknown, path: string): string | undefined {
  const ancestors = new Map<object, Step>();
  const stack: (Step | { leave: object })[] = [{ value, parent: undefined, key: undefined }];
  while (stack.length > 0) {
    const step = stack.pop()!;
    if ("leave" in step) {
      ancestors.delete(step.leave);
      continue;
    }
    const v = step.value;
    if (isPlainLeaf(v)) continue;
    switch (typeof v) {
      case "string":
        return `${pathOf(path, step)}: ${loneSurrogate(v)}`;
      case "number":
        return `${pathOf(path, step)}: ${v} is not JSON`;
      case "object":
        break;
      default:
        return `${pathOf(path, step)}: ${v === HOLE ? "an empty array slot (undefined)" : describe(v)} is not JSON`;
    }
    const container = v as object;
    const loop = ancestors.get(container);
    if (loop) return `${pathOf(path, step)}: a cycle (back to ${pathOf(path, loop)}) is not JSON`;
    const mark = stack.length;
    stack.push({ leave: container });
    // Children are pushed last first, so they are visited in order; plain leaves are not pushed.
    if (Array.isArray(container)) {
      for (let i = container.length - 1; i >= 0; i--) {
        const child: unknown = i in container ? container[i] : HOLE;
        if (!isPlainLeaf(child)) stack.push({ value: child, parent: step, key: i });
      }
    } else {
      if (!isPlainObject(container)) return `${pathOf(path, step)}: ${describe(container)} is not JSON`;
      const symbols = Object.getOwnPropertySymbols(container);
      if (symbols.length > 0) return `${pathOf(path, step)}: a symbol key (${String(symbols[0])}) is not JSON`;
      const keys = Object.keys(container);
      for (let i = keys.length - 1; i >= 0; i--) {
        const key = keys[i];
        if (!wellFormed(key))
          return `${pathOf(path, step)}: the key ${JSON.stringify(key)} has a lone surrogate (${surrogateIn(key)}), which is not JSON (UTF-8 cannot encode it)`;
        const child = (container as Record<string, unknown>)[key];
        if (!isPlainLeaf(child)) stack.push({ value: child, parent: step, key });
      }
    }
    if (stack.length === mark + 1)
      stack.pop(); // nothing below to visit
    else ancestors.set(container, step);
  }
  return undefined;
}

/** Stands for an empty array slot (a hole) in the walk. */
const HOLE = Symbol("hole");

/** True for null, a boolean, a finite number or a well-formed string: JSON with nothing below. */
function isPlainLeaf(v: unknown): boolean {
  switch (typeof v) {
    case "boolean":
      return true;
    case "number":
      return Number.isFinite(v);
    case "string":
      return wellFormed(v);
    case "object":
      return v === null;
    default:
      return false;
  }
}

/** True when `s` has no lone surrogate (String.prototype.isWellFormed where there is one: Node 20). */
const wellFormed: (s: string) => boolean =
  typeof (String.prototype as { isWellFormed?: unknown }).isWellFormed === "function"
    ? (s) => (s as unknown as { isWellFormed(): boolean }).isWellFormed()
    : (s) => !LONE_SURROGATE.test(s);

/**
 * Why `value` is not a plain JSON object (what a google.protobuf.Struct field takes), as
 * `"<path>: ..."` (e.g. `data: an array is not a JSON object`, or a {@link jsonProblem} of a
 * value inside); undefined when it is one.
 */
export function jsonObjectProblem(value: unknown, path: string): string | undefined {
  if (value === null || typeof value !== "object" || Array.isArray(value))
    return `${path}: ${Array.isArray(value) ? "an array" : value === null ? "null" : describe(value)} is not a JSON object`;
  return jsonProblem(value, path);
}

/**
 * Why the message `message` (of type `desc`, a message or its init shape) holds a value that
 * is not plain JSON, naming its path from the message's fields, e.g. `data.a: a BigInt is not
 * JSON`, `events[1].data.when: a Date is not JSON`, `manifest.actions["p.act"].inputSchema.x: ...`;
 * undefined when it holds none. Checked: every google.protobuf.Struct field (a JsonObject in
 * protobuf-es; absent, undefined or null is fine), at any depth, in lists, maps and oneofs, by
 * {@link jsonObjectProblem}; and google.protobuf.Value messages given as such (a non-finite
 * `numberValue`, a `stringValue` with a lone surrogate); and every string field (an id, a name),
 * which may not hold a lone surrogate either. Types without such fields are skipped
 * at no cost beyond a cached lookup.
 */
export function messageJsonProblem(desc: DescMessage, message: unknown, path = ""): string | undefined {
  if (message === null || typeof message !== "object" || !hasCheckedFields(desc)) return undefined;
  const m = message as Record<string, unknown>;
  if (desc.typeName === VALUE) {
    const kind = m.kind as { case?: string; value?: unknown } | undefined;
    if (kind?.case === "numberValue" && typeof kind.value === "number" && !Number.isFinite(kind.value)) return `${path || "value"}: ${kind.value} is not JSON`;
    if (kind?.case === "stringValue" && typeof kind.value === "string" && !wellFormed(kind.value)) return `${path || "value"}: ${loneSurrogate(kind.value)}`;
  }
  for (const member of desc.members) {
    if (member.kind === "oneof") {
      const chosen = m[member.localName] as { case?: string; value?: unknown } | undefined;
      const field = chosen?.case === undefined ? undefined : member.fields.find((f) => f.localName === chosen.case);
      const problem = field && fieldProblem(field, chosen!.value, join(path, field.localName));
      if (problem) return problem;
    } else {
      const problem = fieldProblem(member, m[member.localName], join(path, member.localName));
      if (problem) return problem;
    }
  }
  return undefined;
}

/**
 * `transport`, with every request message checked by {@link messageJsonProblem} before it is
 * sent: a message holding a value that is not plain JSON fails the call with a ConnectError
 * INVALID_ARGUMENT naming its path (nothing is sent). A unary request is checked as the call
 * starts; a server-streaming one (one request message) before the stream is opened; the
 * messages of client and bidi streams as the transport takes them (the stream then fails).
 */
export function jsonCheckingTransport(transport: Transport): Transport {
  return {
    unary(method, signal, timeoutMs, header, input, contextValues) {
      const problem = messageJsonProblem(method.input, input);
      if (problem) return Promise.reject(new ConnectError(problem, Code.InvalidArgument));
      return transport.unary(method, signal, timeoutMs, header, input, contextValues);
    },
    async stream<I extends DescMessage, O extends DescMessage>(
      method: DescMethodStreaming<I, O>,
      signal: AbortSignal | undefined,
      timeoutMs: number | undefined,
      header: HeadersInit | undefined,
      input: AsyncIterable<MessageInitShape<I>>,
      contextValues?: ContextValues,
    ) {
      if (method.methodKind === "server_streaming") {
        const messages: MessageInitShape<I>[] = [];
        for await (const message of input) messages.push(message);
        for (const message of messages) {
          const problem = messageJsonProblem(method.input, message);
          if (problem) throw new ConnectError(problem, Code.InvalidArgument);
        }
        return transport.stream(method, signal, timeoutMs, header, iterate(messages), contextValues);
      }
      return transport.stream(method, signal, timeoutMs, header, checkEach(method.input, input), contextValues);
    },
  };
}

async function* iterate<T>(items: T[]): AsyncIterable<T> {
  yield* items;
}

async function* checkEach<T>(desc: DescMessage, input: AsyncIterable<T>): AsyncIterable<T> {
  for await (const message of input) {
    const problem = messageJsonProblem(desc, message);
    if (problem) throw new ConnectError(problem, Code.InvalidArgument);
    yield message;
  }
}

function fieldProblem(field: DescField, value: unknown, path: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  switch (field.fieldKind) {
    case "scalar":
      return typeof value === "string" ? stringFieldProblem(value, path) : undefined;
    case "message":
      return messageValueProblem(field, field.message, value, path);
    case "list":
      if (field.listKind === "scalar" && Array.isArray(value))
        return value.map((v, i) => (typeof v === "string" ? stringFieldProblem(v, `${path}[${i}]`) : undefined)).find((p) => p !== undefined);
      if (field.listKind !== "message" || !Array.isArray(value)) return undefined;
      for (let i = 0; i < value.length; i++) {
        const problem = messageValueProblem(field, field.message, value[i], `${path}[${i}]`);
        if (problem) return problem;
      }
      return undefined;
    case "map":
      if (field.mapKind !== "message" || typeof value !== "object") return undefined;
      for (const key of Object.keys(value)) {
        const problem = messageValueProblem(field, field.message, (value as Record<string, unknown>)[key], keyPath(path, key));
        if (problem) return problem;
      }
      return undefined;
    default:
      return undefined;
  }
}

/** A string field (an id, a name, a type) with a lone surrogate: protobuf would send U+FFFD instead, so two different ids could arrive as one. */
function stringFieldProblem(value: string, path: string): string | undefined {
  return wellFormed(value)
    ? undefined
    : `${path}: a string with a lone surrogate (${surrogateIn(value)}) cannot be sent (UTF-8 cannot encode it; it would arrive as U+FFFD)`;
}

/** A message-typed value of `field`: a Struct outside a Value is a JsonObject in protobuf-es. */
function messageValueProblem(field: DescField, desc: DescMessage, value: unknown, path: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (desc.typeName === STRUCT && field.parent.typeName !== VALUE) return jsonObjectProblem(value, path);
  return messageJsonProblem(desc, value, path);
}

const checkedCache = new WeakMap<DescMessage, boolean>();

/** True when messages of type `desc` can hold a Struct, a Value or a string field at some depth. */
function hasCheckedFields(desc: DescMessage): boolean {
  let holds = checkedCache.get(desc);
  if (holds === undefined) {
    holds = false;
    const seen = new Set<DescMessage>([desc]);
    const todo = [desc];
    while (todo.length > 0 && !holds) {
      const d = todo.pop()!;
      if (d.typeName === STRUCT || d.typeName === VALUE || d.typeName === LIST_VALUE) holds = true;
      if (d.fields.some((f) => (f.fieldKind === "scalar" || (f.fieldKind === "list" && f.listKind === "scalar")) && f.scalar === ScalarType.STRING))
        holds = true;
      for (const f of d.fields) {
        if (f.message && !seen.has(f.message)) {
          seen.add(f.message);
          todo.push(f.message);
        }
      }
    }
    checkedCache.set(desc, holds);
  }
  return holds;
}

function isPlainObject(v: object): boolean {
  const proto: unknown = Object.getPrototypeOf(v);
  if (proto === Object.prototype || proto === null) return true;
  // An object literal from another realm (a vm context, an iframe): its prototype is that realm's Object.prototype.
  return (
    Object.prototype.toString.call(v) === "[object Object]" &&
    typeof proto === "object" &&
    Object.getPrototypeOf(proto) === null &&
    (proto as { constructor?: { name?: unknown } }).constructor?.name === "Object"
  );
}

/** What a non-JSON value is, for a message: "a BigInt", "undefined", "a Date", "a Map", "an instance of Foo". */
function describe(v: unknown): string {
  switch (typeof v) {
    case "bigint":
      return "a BigInt";
    case "undefined":
      return "undefined";
    case "function":
      return "a function";
    case "symbol":
      return "a symbol";
    case "object": {
      if (v === null) return "null";
      const name: unknown = (Object.getPrototypeOf(v) as { constructor?: { name?: unknown } } | null)?.constructor?.name;
      if (typeof name !== "string" || name === "") return "an object with a prototype (not a plain object)";
      const builtin =
        ["Date", "Map", "Set", "WeakMap", "WeakSet", "RegExp", "Promise", "Error", "ArrayBuffer", "Buffer", "Number", "String", "Boolean", "URL"].includes(
          name,
        ) || name.endsWith("Array");
      return builtin ? `${/^[AEIO]/.test(name) ? "an" : "a"} ${name}` : `an instance of ${name}`;
    }
    default:
      return `a ${typeof v}`;
  }
}

function loneSurrogate(s: string): string {
  return `a string with a lone surrogate (${surrogateIn(s)}) is not JSON (UTF-8 cannot encode it)`;
}

/** The first lone surrogate of `s`, as "U+D800". */
function surrogateIn(s: string): string {
  return `U+${s.charCodeAt(s.search(LONE_SURROGATE)).toString(16).toUpperCase()}`;
}

/** The path of `step` below the value named `root`. */
function pathOf(root: string, step: Step): string {
  const keys: (string | number)[] = [];
  for (let s: Step | undefined = step; s?.key !== undefined; s = s.parent) keys.push(s.key);
  let path = root;
  for (let i = keys.length - 1; i >= 0; i--) {
    const key = keys[i];
    path = typeof key === "number" ? `${path}[${key}]` : keyPath(path, key);
  }
  return path;
}

function keyPath(path: string, key: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(key) ? join(path, key) : `${path}[${JSON.stringify(key)}]`;
}

function join(path: string, name: string): string {
  return path === "" ? name : `${path}.${name}`;
}
