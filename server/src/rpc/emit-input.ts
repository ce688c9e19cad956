import type { EmitRequest, ExpectedVersion as ExpectedVersionPb } from "@chronolog/sdk/gen/chronolog/v1/log_pb";
import { fail } from "../errors.js";
import type { EmitInput } from "../log/emit.js";
import { checkStreamName, type ExpectedVersion } from "../log/streams.js";
import { actorFromProto, causeFromProto, dataFromJson, dataFromProto } from "./convert.js";

/**
 * One event to emit (Emit, EmitBatch, Publish); `prefix` leads the fields it names (`events[1].`
 * in a batch of several, as the emitter's). Its data comes as a Struct (`data`) or as JSON text
 * (`data_json`), not both.
 */
export function emitInput(
  req: Pick<EmitRequest, "type" | "data" | "dataJson" | "id" | "cause" | "actor"> &
    Partial<Pick<EmitRequest, "stream" | "expectedVersion" | "traceparent" | "tracestate">>,
  prefix = "",
): EmitInput {
  if (req.type === "") fail("bad_request", "type is required", [{ field: "type", description: "required" }]);
  if (req.dataJson.length > 0 && req.data !== undefined)
    fail("bad_request", `set ${prefix}data or ${prefix}data_json, not both`, [{ field: `${prefix}data_json`, description: "data is set too" }]);
  const data = req.dataJson.length > 0 ? dataFromJson(req.dataJson, `${prefix}data_json`, `${prefix}data`) : dataFromProto(req.data, `${prefix}data`);
  const input: EmitInput = { type: req.type, data, id: req.id, cause: causeFromProto(req.cause), actor: actorFromProto(req.actor) };
  if (req.stream) {
    checkStreamName(req.stream, `${prefix}stream`);
    input.stream = { name: req.stream, expected: expectedFromProto(req.expectedVersion, `${prefix}expected_version`) };
  } else if (req.expectedVersion?.version.case !== undefined)
    fail("bad_request", `${prefix}expected_version needs ${prefix}stream`, [{ field: `${prefix}stream`, description: "required with expected_version" }]);
  if (req.traceparent) input.trace = req.tracestate ? `${req.traceparent} ${req.tracestate}` : req.traceparent;
  return input;
}

/** An expected version as streams take it (absent: any). */
function expectedFromProto(version: ExpectedVersionPb | undefined, field: string): ExpectedVersion {
  switch (version?.version.case) {
    case undefined:
    case "any":
      return { kind: "any" };
    case "noStream":
      return { kind: "noStream" };
    case "position":
      if (version.version.value > BigInt(Number.MAX_SAFE_INTEGER)) fail("bad_request", `${field}.position is too large`, [{ field, description: "too large" }]);
      return { kind: "position", position: Number(version.version.value) };
  }
}
