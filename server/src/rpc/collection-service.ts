import type { JsonObject } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import type { Actor, Cause } from "@chronolog/sdk/gen/chronolog/v1/event_pb";
import type { CollectionService } from "@chronolog/sdk/gen/chronolog/v1/collection_pb";
import type { Collections } from "../collections/collections.js";
import type { DocumentReader } from "../collections/reads.js";
import type { WriteInput } from "../collections/ops.js";
import type { WriteRequest, WriteResult } from "../collections/writes.js";
import { fail } from "../errors.js";
import type { DocumentRecord } from "../store/documents.js";
import { principalOf } from "./context.js";
import { checkJson } from "../json-limits.js";
import { actorFromProto, causeFromProto, dataFromProto, objectFromProto } from "./convert.js";

/** CollectionService's reads (GetDocument, FindDocuments): committed documents as the caller may see them. */
export function collectionReads(reader: DocumentReader): Pick<ServiceImpl<typeof CollectionService>, "getDocument" | "findDocuments"> {
  return {
    async getDocument(req, ctx) {
      return { document: documentToProto(await reader.get(collectionName(req.collection), req.id, principalOf(ctx), causeFromProto(req.cause))) };
    },
    async findDocuments(req, ctx) {
      const query = { filter: objectFromProto(req.filter), sort: objectFromProto(req.sort), limit: req.limit };
      return { documents: (await reader.find(collectionName(req.collection), query, principalOf(ctx), causeFromProto(req.cause))).map(documentToProto) };
    },
  };
}

/** CollectionService: translation only; the rules live in collections/. */
export function collectionService(collections: Collections): ServiceImpl<typeof CollectionService> {
  const { writer, reader } = collections;
  return {
    ...collectionReads(reader),
    async createDocument(req, ctx) {
      const result = await writer.write(writeRequest(req, { op: "create", doc: dataFromProto(req.doc, "doc") }), principalOf(ctx));
      return documentResult(result);
    },
    async replaceDocument(req, ctx) {
      const result = await writer.write(writeRequest(req, { op: "replace", id: req.id, doc: dataFromProto(req.doc, "doc") }), principalOf(ctx));
      return documentResult(result);
    },
    async patchDocument(req, ctx) {
      const result = await writer.write(writeRequest(req, { op: "patch", id: req.id, set: patchSet(req.set), unset: req.unset }), principalOf(ctx));
      return documentResult(result);
    },
    async deleteDocument(req, ctx) {
      const result = await writer.write(writeRequest(req, { op: "delete", id: req.id }), principalOf(ctx));
      return { seq: BigInt(result.seq) };
    },
  };
}

/**
 * A patch's `set`: each value lands as many levels down in the document as its path has
 * segments (`a.b` puts it in level 3), so the document stays within maxJsonDepth: INVALID_ARGUMENT
 * naming `set.<path>` otherwise.
 */
function patchSet(set: JsonObject | undefined): Record<string, unknown> {
  const paths = objectFromProto(set);
  for (const [path, value] of Object.entries(paths)) checkJson(value, `set.${path}`, path.split(".").length);
  return paths;
}

function collectionName(name: string): string {
  if (name === "") fail("bad_request", "collection is required", [{ field: "collection", description: "required" }]);
  return name;
}

function writeRequest(req: { collection: string; cause?: Cause; actor?: Actor }, write: WriteInput): WriteRequest {
  return { collection: collectionName(req.collection), write, cause: causeFromProto(req.cause), actor: actorFromProto(req.actor) };
}

function documentToProto(doc: DocumentRecord) {
  return { id: doc._id, doc: doc as JsonObject };
}

function documentResult(result: WriteResult) {
  return { document: result.document ? documentToProto(result.document) : undefined, seq: BigInt(result.seq) };
}
