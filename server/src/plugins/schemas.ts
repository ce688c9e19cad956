import { Ajv2020, type CodeOptions, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { RE2JS } from "re2js";
import type { FieldViolation } from "../errors.js";

// ajv-formats is CommonJS; under NodeNext its default export is the module object.
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

/** Validates a JSON object; returns the violations (empty when valid). */
export type Validator = (data: unknown) => FieldViolation[];

/** Accepts any JSON object (a declaration without a schema). */
export const acceptAny: Validator = () => [];

/**
 * A JSON Schema `pattern` (or `patternProperties` key) run by RE2 (re2js): no backtracking, so a
 * test takes time linear in the string whatever the pattern (`^(a+)+$` cannot stall the owner).
 * ECMAScript escapes RE2 spells differently (`\uXXXX`, `\u{...}`, `\cX`, `(?<name>`) are
 * translated first. `test` searches anywhere in the string, as JSON Schema's `pattern` does (it
 * is not anchored: `^`/`$` anchor). Throws when RE2 cannot run the pattern (backreferences,
 * lookaround).
 */
class Re2Pattern {
  private readonly re: RE2JS;

  constructor(readonly source: string) {
    this.re = RE2JS.compile(RE2JS.translateRegExp(source));
  }

  /** Whether the pattern matches somewhere in `s`. */
  test(s: string): boolean {
    return this.re.test(s);
  }

  /** ajv keys compiled patterns by this string: one per source. */
  toString(): string {
    return `re2:${this.source}`;
  }
}

/**
 * ajv's `code.regExp`: patterns compile to {@link Re2Pattern} (ajv passes the `u` flag, which
 * RE2 needs not: it always matches code points). `code` only matters for ajv's standalone
 * code, which the owner does not generate.
 */
const re2Engine: NonNullable<CodeOptions["regExp"]> = Object.assign((pattern: string) => re2Pattern(pattern), { code: "re2" });

const options = { allErrors: true, strict: false, code: { regExp: re2Engine } } as const;
let metaChecker: Ajv2020 | undefined;

/**
 * Checks a schema against the draft 2020-12 meta-schema; throws ajv's own "schema is invalid: ..."
 * error. One shared instance: compiling the meta-schema costs ~20-50 ms, once per process
 * instead of once per registration (owner start-up registers every plugin).
 */
function checkSchema(schema: Record<string, unknown>): void {
  metaChecker ??= new Ajv2020(options);
  metaChecker.validateSchema(schema, true);
}

/**
 * A JSON Schema compiler (draft 2020-12 with formats) for one plugin
 * registration. A fresh instance per registration keeps schema `$id`s of a
 * new manifest revision from clashing with the old one; the meta-schema check is shared ({@link checkSchema}).
 * `pattern` and `patternProperties` run on RE2 ({@link Re2Pattern}); a schema with a pattern RE2
 * cannot run is refused here, naming its place (e.g. `#/properties/s/pattern`).
 */
export function schemaCompiler(): (schema: Record<string, unknown> | undefined, root: string) => Validator {
  const ajv = addFormats(new Ajv2020({ ...options, validateSchema: false }));
  return (schema, root) => {
    if (schema === undefined) return acceptAny;
    checkSchema(schema);
    checkPatterns(schema);
    let validate: ValidateFunction;
    try {
      validate = ajv.compile(schema);
    } catch (e) {
      // A pattern checkPatterns did not reach (ajv compiles every one it runs): still refused, without its place.
      if (e instanceof PatternError) throw new Error(`schema is invalid: ${e.message}`);
      throw e;
    }
    return (data) => (validate(data) ? [] : (validate.errors ?? []).map((e) => violation(e, root)));
  };
}

/** A pattern RE2 cannot run. */
class PatternError extends Error {}

/** Compiles `pattern` for RE2; a PatternError saying why when it cannot be run. */
function re2Pattern(pattern: string): Re2Pattern {
  try {
    return new Re2Pattern(pattern);
  } catch (e) {
    throw new PatternError(
      `pattern ${JSON.stringify(pattern)} is not RE2 syntax (no backreferences or lookaround): ${e instanceof Error ? e.message : String(e)}`,
    );
  }
}

/** Keywords whose value is one subschema. */
const subschemaKeywords = [
  "additionalProperties",
  "propertyNames",
  "items",
  "additionalItems",
  "contains",
  "not",
  "if",
  "then",
  "else",
  "unevaluatedItems",
  "unevaluatedProperties",
  "contentSchema",
];
/** Keywords whose value is an array of subschemas (`items` too, in its draft-07 form). */
const subschemaArrayKeywords = ["allOf", "anyOf", "oneOf", "prefixItems", "items"];
/** Keywords whose value maps names to subschemas. */
const subschemaMapKeywords = ["properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"];

/**
 * Compiles every `pattern` and `patternProperties` key of `schema` for RE2 (walking its
 * subschemas only: a `pattern` inside `const`, `enum` or `default` is data), so one RE2 cannot
 * run is refused at registration even where ajv would never run it (an always-true
 * `patternProperties` entry). Throws "schema is invalid: #/path/pattern ...".
 */
function checkPatterns(schema: unknown, at = "#"): void {
  if (schema === null || typeof schema !== "object" || Array.isArray(schema)) return;
  const s = schema as Record<string, unknown>;
  const check = (pattern: string, where: string) => {
    try {
      re2Pattern(pattern);
    } catch (e) {
      throw new Error(`schema is invalid: ${where}: ${(e as Error).message}`);
    }
  };
  if (typeof s.pattern === "string") check(s.pattern, `${at}/pattern`);
  const patternProperties = s.patternProperties;
  if (patternProperties !== null && typeof patternProperties === "object" && !Array.isArray(patternProperties)) {
    for (const key of Object.keys(patternProperties)) check(key, `${at}/patternProperties/${pointerSegment(key)}`);
  }
  for (const keyword of subschemaKeywords) if (keyword in s) checkPatterns(s[keyword], `${at}/${keyword}`);
  for (const keyword of subschemaArrayKeywords) {
    const list = s[keyword];
    if (Array.isArray(list)) list.forEach((sub, i) => checkPatterns(sub, `${at}/${keyword}/${i}`));
  }
  for (const keyword of subschemaMapKeywords) {
    const map = s[keyword];
    if (map === null || typeof map !== "object" || Array.isArray(map)) continue;
    for (const [name, sub] of Object.entries(map)) checkPatterns(sub, `${at}/${keyword}/${pointerSegment(name)}`);
  }
}

/** A JSON pointer segment (RFC 6901: `~` as `~0`, `/` as `~1`). */
function pointerSegment(name: string): string {
  return name.replaceAll("~", "~0").replaceAll("/", "~1");
}

/**
 * One ajv error as a field violation: `field` is `root` plus the JSON
 * pointer of the offending value (for `additionalProperties`, of the extra
 * property; for `required`, of the object that lacks it, since the missing
 * property has no value to point at: `input` with "must have required
 * property 'items'", not `input/items`); `description` names the rule.
 */
function violation(error: ErrorObject, root: string): FieldViolation {
  let pointer = error.instancePath;
  const params = error.params as Record<string, unknown>;
  if (error.keyword === "additionalProperties") pointer += `/${String(params.additionalProperty)}`;
  return { field: `${root}${pointer}`, description: `${error.message ?? "invalid"} (rule: ${error.keyword})` };
}
