import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import type { FieldViolation } from "../errors.js";

// ajv-formats is CommonJS; under NodeNext its default export is the module object.
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

/** Validates a JSON object; returns the violations (empty when valid). */
export type Validator = (data: unknown) => FieldViolation[];

/** Accepts any JSON object (a declaration without a schema). */
export const acceptAny: Validator = () => [];

const options = { allErrors: true, strict: false } as const;
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
 */
export function schemaCompiler(): (schema: Record<string, unknown> | undefined, root: string) => Validator {
  const ajv = addFormats(new Ajv2020({ ...options, validateSchema: false }));
  return (schema, root) => {
    if (schema === undefined) return acceptAny;
    checkSchema(schema);
    const validate: ValidateFunction = ajv.compile(schema);
    return (data) => (validate(data) ? [] : (validate.errors ?? []).map((e) => violation(e, root)));
  };
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
