import type { JsonObject } from "@bufbuild/protobuf";
import type { DocumentWriteResult } from "../../../sdk/ts/src/client.js";
import { client, parseObject, type ClientFlags } from "./client-commands.js";

/** One write's answer as a JSON line: the document after it (none after a delete) and its change event's seq. */
function printWrite(result: DocumentWriteResult): void {
  console.log(JSON.stringify({ ...(result.doc ? { doc: result.doc } : {}), seq: Number(result.seq) }));
}

/** `chronolog docs create COLLECTION JSON`: `_id` in the JSON, or one the owner makes. */
export async function createDocumentCommand(collection: string, json: string, flags: ClientFlags): Promise<void> {
  printWrite(await client(flags).createDocument(collection, parseObject(json, "the document")));
}

/** `chronolog docs replace COLLECTION ID JSON`. */
export async function replaceDocumentCommand(collection: string, id: string, json: string, flags: ClientFlags): Promise<void> {
  printWrite(await client(flags).replaceDocument(collection, id, parseObject(json, "the document")));
}

/** `chronolog docs patch COLLECTION ID --set JSON --unset PATH...`. */
export async function patchDocumentCommand(collection: string, id: string, flags: ClientFlags & { set?: string; unset: string[] }): Promise<void> {
  if (flags.set === undefined && flags.unset.length === 0) throw new Error("docs patch needs --set JSON, --unset PATH or both");
  const set = flags.set === undefined ? undefined : parseObject(flags.set, "--set");
  printWrite(await client(flags).patchDocument(collection, id, { set, unset: flags.unset }));
}

/** `chronolog docs delete COLLECTION ID`. */
export async function deleteDocumentCommand(collection: string, id: string, flags: ClientFlags): Promise<void> {
  printWrite(await client(flags).deleteDocument(collection, id));
}

/** `chronolog docs get COLLECTION ID`: the document as one JSON line. */
export async function getDocumentCommand(collection: string, id: string, flags: ClientFlags): Promise<void> {
  console.log(JSON.stringify(await client(flags).getDocument(collection, id)));
}

/** `chronolog docs find COLLECTION [--filter JSON] [--sort JSON] [--limit N]`: one JSON line per document. */
export async function findDocumentsCommand(collection: string, flags: ClientFlags & { filter?: string; sort?: string; limit?: number }): Promise<void> {
  const filter: JsonObject | undefined = flags.filter === undefined ? undefined : parseObject(flags.filter, "--filter");
  const sort: JsonObject | undefined = flags.sort === undefined ? undefined : parseObject(flags.sort, "--sort");
  for (const doc of await client(flags).findDocuments(collection, { filter, sort, limit: flags.limit })) console.log(JSON.stringify(doc));
}
