import { Context, evalExpr, OpType } from "mingo/core";
import * as accumulatorOperators from "mingo/operators/accumulator";
import * as expressionOperators from "mingo/operators/expression";
import * as queryOperators from "mingo/operators/query";
import { Query } from "mingo/query";
import { resolve } from "mingo/util";
import { RE2JS } from "re2js";
import { fail } from "../errors.js";
import { checkJson } from "../json-limits.js";

/**
 * A compiled MongoDB filter: true when a JSON object matches. False when it does not, and also
 * when the filter cannot be applied to it (e.g. `$divide` by a zero of its data, `$sqrt` of a
 * negative number, or more work than {@link workPerDocument}): it never throws.
 */
export type Filter = (data: Record<string, unknown>) => boolean;

/** Matches everything (an empty or absent filter). */
export const matchAll: Filter = () => true;

/**
 * Steps of work one test of one document may take inside `$expr`: a step is an
 * operator call or one of its operands, an element or key of a value an operator returns or a
 * `$` path reads, 8 characters of a string, or 64 character comparisons of `$trim`. A document
 * the filter needs more for does not match; 100,000 steps take up to about 80 ms.
 */
const workPerDocument = 100_000;

/**
 * Compiles a MongoDB filter with mingo once. An unknown operator, a malformed
 * filter, an operator that is refused (see {@link refused}), a `$regex` that is not valid RE2
 * syntax, or a filter that fails on any document (e.g. `{a: {$in: 5}}`) fails here, at request
 * or registration time, with INVALID_ARGUMENT naming `field` (e.g. `where`).
 *
 * Applying it never throws: a document the filter cannot be applied to (an operator that fails
 * on its data, or more than {@link workPerDocument} steps of work) does not match, so one
 * event's data can never end a reader's stream or stop a processor. Every `$regex` runs on RE2
 * (linear time) and everything inside `$expr` is metered (each array, object and `$` path of an
 * expression is evaluated through `$meter`, which spends what it builds), so no expression can
 * make unbounded work or memory out of a small filter or document; query operators outside
 * `$expr` take time linear in the filter times the document.
 */
export function compileFilter(filter: Record<string, unknown> | undefined, field: string): Filter {
  if (filter === undefined || Object.keys(filter).length === 0) return matchAll;
  checkJson(filter, field); // as deep as any JSON the owner takes, at most
  refuseUnbounded(filter, field, "");
  const prepared = meterQuery(withRe2(filter, field), field) as Record<string, unknown>;
  let query: Query;
  try {
    query = new Query(prepared, { scriptEnabled: false, context });
    refuseFailingOnAny(query, prepared);
  } catch (e) {
    const reason = e instanceof Error ? e.message : String(e);
    fail("invalid_filter", `invalid ${label(field)}: ${reason}`, [{ field, description: reason }]);
  }
  return (data) => {
    try {
      return withBudget(() => query.test(data));
    } catch {
      return false; // the filter cannot be applied to this document: it does not match
    }
  };
}

/**
 * Throws when `query` cannot work on any document: its constants alone take more than the budget,
 * or a query operator's operand is malformed (`{a: {$in: 5}}`), which only surfaces when a
 * document is tested. An expression that fails on the empty document only for want of its data
 * (`$strLenCP` of a missing field) is not refused: such a document simply does not match.
 */
function refuseFailingOnAny(query: Query, prepared: unknown): void {
  try {
    withBudget(() => query.test({}));
  } catch (e) {
    if (e instanceof WorkExceeded) throw e;
    withBudget(() => new Query(withoutExpr(prepared) as Record<string, unknown>, { scriptEnabled: false, context }).test({}));
  }
}

/** A copy of filter `value` without its `$expr` clauses, at any depth (what is left are query operators). */
function withoutExpr(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutExpr);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key]) => key !== "$expr")
      .map(([key, v]) => [key, withoutExpr(v)]),
  );
}

/** How a message names the filter: "where filter", or "filter" when the field is already called so. */
const label = (field: string) => (field === "filter" ? "filter" : `${field} filter`);

const backtracks =
  'runs a JavaScript regex, which can backtrack for hours on a short string: match with the query operator $regex instead (e.g. {"s": {"$regex": "^a+$"}}), which runs on RE2 in linear time';
const script = "runs JavaScript (scripts are disabled)";

/**
 * Operators a filter may not use anywhere, and why: each can turn a small request (or a
 * document's data) into unbounded work, and none can be metered from outside. Scripts
 * (`$where`, `$function`, `$accumulator`); `$range` (an array of any size from two numbers);
 * JavaScript regexes (`$regexMatch`, `$regexFind`, `$regexFindAll`; `$dateFromString`, which
 * makes one of its format); `$convert`, which evaluates the value it converts as an expression,
 * so data could run operators (as `$firstN`, `$lastN`, `$maxN`, `$minN` do with a computed `n`:
 * they need `n` as a number, see {@link countedN}).
 */
const refused: ReadonlyMap<string, string> = new Map([
  ["$where", script],
  ["$function", script],
  ["$accumulator", script],
  ["$range", "makes an array of any size out of two numbers"],
  ["$regexMatch", backtracks],
  ["$regexFind", backtracks],
  ["$regexFindAll", backtracks],
  [
    "$dateFromString",
    "turns its format into a JavaScript regex, which can backtrack for hours on a short string (compare ISO date strings, or use $toDate or $dateFromParts)",
  ],
  [
    "$convert",
    "evaluates the value it converts as an expression, so a document's data could run operators (use $toString, $toInt, $toLong, $toDouble, $toDecimal, $toBool or $toDate)",
  ],
]);

/** Operators whose `n` must be a number in the filter: mingo evaluates a computed `n` again, as an expression. */
const countedN = new Set(["$firstN", "$lastN", "$maxN", "$minN"]);

/** Operators whose operand must be an array, in queries and expressions alike (mingo fails on another with a raw TypeError). */
const arrayOperands = new Set(["$in", "$nin", "$all", "$and", "$or", "$nor"]);

/**
 * Fails with INVALID_ARGUMENT naming `field` when `value` uses a refused operator anywhere (nested
 * objects and arrays included), or gives one of {@link arrayOperands} something else than an array.
 */

function refuseUnbounded(value: unknown, field: string, at: string): void {
  if (Array.isArray(value)) return value.forEach((v, i) => refuseUnbounded(v, field, `${at}[${i}]`));
  if (value === null || typeof value !== "object") return;
  for (const [key, inner] of Object.entries(value)) {
    const path = at === "" ? key : `${at}.${key}`;
    let why = refused.get(key);
    if (why === undefined && countedN.has(key) && !(isPlain(inner) && typeof inner.n === "number")) {
      why = "needs `n` as a number here: mingo evaluates a computed `n` again, as an expression, so a document's data could run operators";
    }
    if (why !== undefined) {
      const description = `${key} is refused: it ${why}`;
      fail("invalid_filter", `invalid ${label(field)}: ${description} (at ${path})`, [{ field, description }]);
    }
    if (arrayOperands.has(key) && !Array.isArray(inner)) {
      const description = `${key} takes an array (got ${inner === null ? "null" : typeof inner})`;
      fail("invalid_filter", `invalid ${label(field)}: ${description} (at ${path})`, [{ field, description }]);
    }
    refuseUnbounded(inner, field, path);
  }
}

// ---- Metering ------------------------------------------------------------------------------

/** Steps left for the document being tested; Infinity outside a test. */
let workLeft = Infinity;
/** What large values already measured in this test cost. */
let measured: WeakMap<object, number> | undefined;

/** Thrown when a document needs more than {@link workPerDocument} steps. */
class WorkExceeded extends Error {
  constructor() {
    super(`the filter needs more than ${workPerDocument} steps of work for one document`);
  }
}

/** Runs one test of a document with a fresh budget. */
function withBudget<T>(test: () => T): T {
  workLeft = workPerDocument;
  measured = undefined;
  try {
    return test();
  } finally {
    workLeft = Infinity;
    measured = undefined;
  }
}

function spend(steps: number): void {
  workLeft -= steps;
  if (workLeft < 0) throw new WorkExceeded();
}

/**
 * Spends the size of `value` (each element and key a step, 8 characters a step), counting a shared
 * part each time it appears; measuring costs no more than it spends, and what a large array or
 * object cost is remembered for the rest of the test, so a value referenced again is spent again
 * without being walked again.
 */
function measure(value: unknown): void {
  if (typeof value === "string") return spend(1 + (value.length >>> 3));
  if (value === null || typeof value !== "object") return spend(1);
  const items = Array.isArray(value) ? value : isPlain(value) ? Object.values(value) : undefined;
  if (items === undefined) return spend(1); // a Date
  const large = items.length >= 16;
  const known = large ? measured?.get(value) : undefined;
  if (known !== undefined) return spend(known);
  const before = workLeft;
  spend(1);
  for (const v of items) measure(v);
  if (large) (measured ??= new WeakMap()).set(value, before - workLeft);
}

/**
 * How many operands an operator's argument lists, down to nested operators (which spend their
 * own): 0 for a single operand, the length of a list, the keys of named operands; cached per argument.
 */
const shapes = new WeakMap<object, number>();
function shapeOf(arg: unknown): number {
  if (arg === null || typeof arg !== "object" || isOperatorExpression(arg)) return 0;
  let n = shapes.get(arg);
  if (n === undefined) {
    n = 0;
    for (const v of Array.isArray(arg) ? arg : Object.values(arg)) n += 1 + shapeOf(v);
    shapes.set(arg, n);
  }
  return n;
}

// Mingo's operators take (document or collection, argument, options).
// biome-ignore lint/suspicious/noExplicitAny: the signature mingo gives its operators
type Op = (obj: any, expr: any, options: any) => unknown;

/** `op`, spending a step and its operands before it runs and the size of what it returns after. */
const metered =
  (op: Op): Op =>
  (obj, expr, options) => {
    spend(1 + shapeOf(expr));
    const out = op(obj, expr, options);
    measure(out);
    return out;
  };

/** Named arguments evaluated, each made a literal again for the operator to evaluate. */
const quoted = (args: Record<string, unknown>) => Object.fromEntries(Object.entries(args).map(([k, v]) => [k, { $literal: v }]));

const expressionOps = expressionOperators as unknown as Record<string, Op>;

/** Operators whose result can be far larger than their operands (or whose work is): their operands are evaluated first and the cost spent before they run. */
const costed: Record<string, Op> = {
  $replaceAll: (obj, expr, options) => {
    if (!isPlain(expr)) return expressionOps.$replaceAll(obj, expr, options);
    const args = evalExpr(obj, expr, options) as Record<string, unknown>;
    const { input, find, replacement } = args;
    if (typeof input === "string" && typeof find === "string" && typeof replacement === "string") {
      const n = occurrences(input, find);
      spend(n + Math.floor((input.length + n * Math.max(0, replacement.length - find.length)) / 8));
    }
    return expressionOps.$replaceAll(obj, quoted(args), options);
  },
  $zip: (obj, expr, options) => {
    if (!isPlain(expr)) return expressionOps.$zip(obj, expr, options);
    const inputs = evalExpr(obj, expr.inputs, options);
    if (Array.isArray(inputs) && inputs.every(Array.isArray)) {
      let rows = expr.useLongestLength === true ? 0 : Infinity;
      for (const a of inputs as unknown[][]) rows = expr.useLongestLength === true ? Math.max(rows, a.length) : Math.min(rows, a.length);
      spend(inputs.length * (Number.isFinite(rows) ? rows : 0));
    }
    return expressionOps.$zip(obj, { ...expr, inputs: { $literal: inputs } }, options);
  },
  // Trimming compares each character with each of `chars`.
  ...Object.fromEntries(
    ["$trim", "$ltrim", "$rtrim"].map((name): [string, Op] => [
      name,
      (obj, expr, options) => {
        if (!isPlain(expr)) return expressionOps[name](obj, expr, options);
        const args = evalExpr(obj, expr, options) as Record<string, unknown>;
        if (typeof args.input === "string" && typeof args.chars === "string") spend(Math.floor((args.input.length * args.chars.length) / 64));
        return expressionOps[name](obj, quoted(args), options);
      },
    ]),
  ),
};

/** How many times `find` occurs in `s` (as `split` counts them). */
function occurrences(s: string, find: string): number {
  if (find === "") return s.length + 1;
  let n = 0;
  for (let i = s.indexOf(find); i !== -1; i = s.indexOf(find, i + find.length)) n++;
  return n;
}

/** `ops` without the refused ones, each metered. */
function meteredOps(ops: Record<string, Op>): Record<string, Op> {
  return Object.fromEntries(
    Object.entries(ops)
      .filter(([name]) => !refused.has(name))
      .map(([name, op]) => [name, metered(costed[name] ?? op)]),
  );
}

/**
 * `$meter`: evaluates its operand (an array, an object or a `$` path of an expression, put there
 * by {@link meterExpression}) as mingo would have, spending what it builds.
 */
const $meter: Op = (obj, expr, options) => evalExpr(obj, expr, options);

// ---- RE2 -------------------------------------------------------------------------------------

/** What `$re2` carries: a pattern and RE2JS flags. */
interface Re2Args {
  pattern: string;
  flags: number;
}

/**
 * `$re2`, the query operator every `$regex` becomes: RE2 semantics (no backtracking, so time
 * linear in the input whatever the pattern: a filter can never stall the owner),
 * searched anywhere in the string like MongoDB's `$regex`; an array matches when one of its
 * strings does.
 */
const $re2 = (selector: string, args: Re2Args) => {
  const re = RE2JS.compile(args.pattern, args.flags);
  const test = (v: unknown) => typeof v === "string" && re.matcher(v).find();
  return (doc: Record<string, unknown>) => {
    const value = resolve(doc, selector);
    return Array.isArray(value) ? value.some(test) : test(value);
  };
};

/**
 * The operators filters run with: mingo's, less the refused ones and its own `$where` and
 * `$regex` (every `$regex` is `$re2`); every expression and accumulator operator metered.
 */
const context = Context.init({
  query: Object.fromEntries([...Object.entries(queryOperators).filter(([name]) => name !== "$where" && name !== "$regex"), ["$re2", $re2]]),
  expression: { ...meteredOps(expressionOps), $meter: metered($meter) },
  accumulator: meteredOps(accumulatorOperators as unknown as Record<string, Op>),
} as unknown as Parameters<typeof Context.init>[0]);

/** Expression operators a filter may name (accumulators are expressions too, over an array). */
const known = (name: string) => context.getOperator(OpType.EXPRESSION, name) !== null || context.getOperator(OpType.ACCUMULATOR, name) !== null;

/** `$options` letters and their RE2JS flags (MongoDB's `x` has no RE2 equivalent). */
const re2Flags: Record<string, number> = { i: RE2JS.CASE_INSENSITIVE, m: RE2JS.MULTILINE, s: RE2JS.DOTALL };

/**
 * A copy of `value` where every `{ $regex, $options }` is `{ $re2 }`, compiled once here so a
 * pattern RE2 cannot run (backreferences, lookaround) or an unknown option fails at request or
 * registration time with INVALID_ARGUMENT naming `field`.
 */
function withRe2(value: unknown, field: string): unknown {
  if (Array.isArray(value)) return value.map((v) => withRe2(v, field));
  if (value === null || typeof value !== "object") return value;
  const out = Object.fromEntries(
    Object.entries(value)
      .filter(([key]) => !(key === "$regex" || (key === "$options" && "$regex" in value)))
      .map(([key, inner]) => [key, withRe2(inner, field)]),
  );
  if (!("$regex" in value)) return out;
  const { $regex: pattern, $options: options = "" } = value as { $regex: unknown; $options?: unknown };
  const bad = (why: string) => fail("invalid_filter", `invalid ${label(field)}: $regex ${JSON.stringify(pattern)} ${why}`, [{ field, description: why }]);
  if (typeof pattern !== "string") bad("must be a string");
  if (typeof options !== "string") bad("$options must be a string");
  let flags = 0;
  for (const letter of options as string) flags |= re2Flags[letter] ?? bad(`$options ${JSON.stringify(letter)} is not supported (i, m, s)`);
  try {
    RE2JS.compile(pattern as string, flags);
  } catch (e) {
    bad(`is not RE2 syntax (no backreferences or lookaround): ${e instanceof Error ? e.message : String(e)}`);
  }
  out.$re2 = { pattern: pattern as string, flags } satisfies Re2Args;
  return out;
}

// ---- Metered expressions ---------------------------------------------------------------------

/** A copy of a query where every `$expr` (at any depth: in `$and`, `$elemMatch`, ...) is metered. */
function meterQuery(value: unknown, field: string): unknown {
  if (Array.isArray(value)) return value.map((v) => meterQuery(v, field));
  if (value === null || typeof value !== "object") return value;
  return mapEntries(value, (key, inner) => (key === "$expr" ? meterExpression(inner, field) : meterQuery(inner, field)));
}

/**
 * An expression evaluated as mingo would, where every array, object and `$` path (but
 * `$$REMOVE`, which `$setField` reads as it is) becomes `{ $meter: ... }`, so what it builds is
 * spent each time it is evaluated (in a `$map`, once per element). An unknown operator fails here.
 */
function meterExpression(e: unknown, field: string): unknown {
  if (typeof e === "string") return e.startsWith("$") && e !== "$$REMOVE" ? { $meter: e } : e;
  if (e === null || typeof e !== "object") return e;
  if (Array.isArray(e)) return { $meter: e.map((v) => meterExpression(v, field)) };
  if (!isOperatorExpression(e)) return { $meter: mapEntries(e, (_, v) => meterExpression(v, field)) };
  return mapEntries(e, (op, arg) => {
    if (isOperatorName(op) && !known(op)) {
      const description = `unknown expression operator ${op}`;
      fail("invalid_filter", `invalid ${label(field)}: ${description}`, [{ field, description }]);
    }
    return meterOperands(op, arg, field);
  });
}

/** Named operands mingo reads as they are (not expressions). */
const rawOperands: Record<string, string[]> = {
  $map: ["as"],
  $filter: ["as", "limit"],
  $zip: ["useLongestLength"],
  $median: ["method"],
  $percentile: ["p", "method"],
};

/** The argument of operator `op` with its operands metered: a list of operands, named operands (`{input, as, in}`) or one operand. */
function meterOperands(op: string, arg: unknown, field: string): unknown {
  if (op === "$literal") return arg;
  const m = (v: unknown) => meterExpression(v, field);
  if (Array.isArray(arg)) return arg.map(m);
  if (!isPlain(arg) || isOperatorExpression(arg)) return m(arg);
  const raw = rawOperands[op] ?? [];
  return mapEntries(arg, (name, v) => {
    if (raw.includes(name)) return v;
    if (op === "$let" && name === "vars" && isPlain(v)) return mapEntries(v, (_, x) => m(x));
    if (op === "$switch" && name === "branches" && Array.isArray(v)) return v.map((b) => (isPlain(b) ? mapEntries(b, (_, x) => m(x)) : b));
    return m(v);
  });
}

/** Mingo's test for an operator name. */
const isOperatorName = (name: string) => /^\$[a-zA-Z0-9_]+$/.test(name);

/** An object mingo evaluates as an operator: its first key is an operator name. */
function isOperatorExpression(v: unknown): boolean {
  if (!isPlain(v)) return false;
  for (const key in v) return isOperatorName(key);
  return false;
}

function isPlain(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== "object" || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** A copy of `o` with each value mapped (own keys only, `__proto__` kept as a key). */
function mapEntries(o: object, f: (key: string, value: unknown) => unknown): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, f(k, v)]));
}
