import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import type { FieldViolation } from "../errors.js";

// ajv-formats is CommonJS; under NodeNext its default export is the module object.
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

/** Validates a JSON object; returns the violations (empty when valid). */
export type Validator = (data: unknown) => FieldViolation[];

/** Accepts any JSON object (a declaration without a schema). */
export const acceptAny: Validator = () => [];

/**
 * A JSON Schema compiler (draft 2020-12 with formats) for one plugin
 * registration. A fresh instance per registration keeps schema `$id`s of a
 * new manifest revision from clashing with the old one.
 */
export function schemaCompiler(): (schema: Record<string, unknown> | undefined, root: string) => Validator {
  const ajv = addFormats(new Ajv2020({ allErrors: true, strict: false }));
  return (schema, root) => {
    if (schema === undefined) return acceptAny;
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
