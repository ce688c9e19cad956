import { ScalarType, toJson, type DescMessage, type JsonObject, type JsonValue, type MessageShape } from "@bufbuild/protobuf";

const int64s = new Set([ScalarType.INT64, ScalarType.UINT64, ScalarType.SINT64, ScalarType.FIXED64, ScalarType.SFIXED64]);

/**
 * `message` as one line of JSON for the command line: the proto3 JSON mapping, except that 64-bit
 * integers (seqs, counts) are numbers rather than the mapping's strings, so `jq '.seq > 5'` and
 * friends work. Values above 2^53 - 1 stay strings (a number would lose digits).
 */
export function jsonLine<Desc extends DescMessage>(schema: Desc, message: MessageShape<Desc>, extra: JsonObject = {}): string {
  return JSON.stringify({ ...(numbered(schema, toJson(schema, message)) as JsonObject), ...extra });
}

function numbered(schema: DescMessage, json: JsonValue): JsonValue {
  if (json === null || typeof json !== "object" || Array.isArray(json)) return json;
  const out: JsonObject = { ...json };
  for (const field of schema.fields) {
    const value = out[field.jsonName];
    if (value === undefined) continue;
    if ((field.fieldKind === "scalar" && int64s.has(field.scalar)) || (field.fieldKind === "list" && field.listKind === "scalar" && int64s.has(field.scalar))) {
      out[field.jsonName] = Array.isArray(value) ? value.map(safeNumber) : safeNumber(value);
    } else if (field.fieldKind === "message" && !field.message.typeName.startsWith("google.protobuf.")) {
      out[field.jsonName] = numbered(field.message, value);
    } else if (field.fieldKind === "list" && field.listKind === "message" && Array.isArray(value)) {
      out[field.jsonName] = value.map((v) => numbered(field.message, v));
    }
  }
  return out;
}

function safeNumber(value: JsonValue): JsonValue {
  return typeof value === "string" && /^-?\d+$/.test(value) && Number.isSafeInteger(Number(value)) ? Number(value) : value;
}
