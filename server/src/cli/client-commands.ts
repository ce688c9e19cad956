import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import { fromJson, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { PluginManifestSchema } from "@chronolog/sdk/gen/chronolog/v1/plugin_pb";
import { createClient, type ChronologClient } from "../../../sdk/ts/src/client.js";
import { isHttpUrl } from "../../../sdk/ts/src/options.js";
import { EventSchema } from "@chronolog/sdk/gen/chronolog/v1/event_pb";
import { jsonLine } from "./json.js";
import { jsonProblem } from "../json-limits.js";
import { withConcurrencyShorthand } from "../plugins/flow-limits.js";

/** Flags shared by the client commands. */
export interface ClientFlags {
  url: string;
  token?: string;
  /** Where reads go: to the leader (default), or to any owner of `url` in its order. */
  reads?: "leader" | "any";
}

/** A client for the owners at `flags.url` (calls go to the leader among them; reads to any with `flags.reads`), with `flags.token` or CHRONOLOG_TOKEN. */
export function client(flags: ClientFlags): ChronologClient {
  // One emit per command: a unary Emit (a Publish stream would only add its open and idle close).
  return createClient({ url: urlsOf(flags.url), token: flags.token ?? process.env.CHRONOLOG_TOKEN, emitVia: "unary", reads: flags.reads });
}

/** The owner URLs of `--url`: one, or a comma-separated list (one leads, the others are standbys); an Error naming one that is not an http(s) URL. */
export function urlsOf(flag: string): string[] {
  const urls = flag.split(",").map((url) => url.trim());
  for (const url of urls) {
    if (!isHttpUrl(url)) {
      throw new Error(
        `--url ${JSON.stringify(flag)}${urls.length > 1 ? `: ${JSON.stringify(url)}` : ""} is not an http:// or https:// URL (e.g. http://127.0.0.1:50051${urls.length > 1 ? ", or several separated by commas" : ""})`,
      );
    }
  }
  return urls;
}

/** `text` as a JSON object the owner takes (json-limits.ts: a deeper one would not even encode), or an Error naming `what`. */
export function parseObject(text: string, what: string): JsonObject {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new Error(`${what} is not valid JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new Error(`${what} must be a JSON object`);
  const problem = jsonProblem(value, what);
  if (problem) throw new Error(problem);
  return value as JsonObject;
}

/** `chronolog emit TYPE JSON [--stream S [--expected-version V]]`: prints the stored event as one JSON line (with its stream position). */
export async function emitCommand(
  type: string,
  json: string,
  flags: ClientFlags & { id?: string; stream?: string; expectedVersion?: "noStream" | "any" | number },
): Promise<void> {
  if (flags.stream === "") throw new Error("--stream needs a stream name (1 to 200 characters)");
  if (flags.expectedVersion !== undefined && flags.stream === undefined) throw new Error("--expected-version goes with --stream");
  const data = parseObject(json === "-" ? readFileSync(0, "utf8") : json, "data"); // "-": from stdin (past the shell's argument limit)
  const response = await client(flags).emit(type, data, { id: flags.id, stream: flags.stream, expectedVersion: flags.expectedVersion });
  const extra: JsonObject = { existing: response.existing };
  if (response.streamPosition !== undefined) extra.streamPosition = Number(response.streamPosition);
  console.log(jsonLine(EventSchema, response.event!, extra));
}

/** `chronolog read-stream STREAM [--backwards] [--from N]`: prints the stream's events as JSON lines, each with its position. */
export async function readStreamCommand(stream: string, flags: ClientFlags & { backwards: boolean; from?: number }): Promise<void> {
  for await (const { position, event } of client(flags).readStream(stream, { backwards: flags.backwards, fromPosition: flags.from })) {
    console.log(jsonLine(EventSchema, event, { position: Number(position) }));
  }
}

/** `chronolog tail`'s exit status when the owner stopped or cannot be reached (EX_TEMPFAIL: run it again later). */
export const ownerUnavailableStatus = 75;

/**
 * `chronolog tail`: prints events as JSON lines, following the log unless `--no-follow`. `--from` comes checked
 * (a seq, see parse.ts). When the owner stops (UNAVAILABLE) or cannot be reached, it says so and where to resume,
 * and exits with {@link ownerUnavailableStatus}.
 */
export async function tailCommand(
  flags: ClientFlags & { from?: number; type: string[]; where?: string; cause?: string; descendants?: boolean; fromFirstSeq?: boolean; follow: boolean },
): Promise<void> {
  if (flags.descendants && !flags.cause) throw new Error("--descendants needs --cause (the event or call whose tree to print)");
  const c = client(flags);
  const outOfRange = (why: string) =>
    new Error(`OutOfRange: --from ${flags.from}: ${why}; with --from-first-seq tail starts at the log's first kept seq instead`);
  if (flags.from === 1 && !flags.fromFirstSeq) {
    // after_seq 0 reads from wherever the log starts: a --from 1 given checks that nothing was removed.
    const first = Number((await c.log.readLog({ afterSeq: 0n, pageSize: 1 })).firstSeq);
    if (first > 1) throw outOfRange(`the log starts at seq ${first} (retention removed the events before it)`);
  }
  const query = {
    afterSeq: Math.max(0, (flags.from ?? 1) - 1),
    types: flags.type,
    where: flags.where ? parseObject(flags.where, "--where") : undefined,
    cause: flags.cause,
    descendants: flags.descendants,
    fromFirstSeq: flags.fromFirstSeq ?? false,
  };
  const events = flags.follow ? c.watch(query) : c.read(query);
  let last = query.afterSeq;
  try {
    for await (const event of events) {
      console.log(jsonLine(EventSchema, event));
      last = Number(event.seq);
    }
  } catch (e) {
    if (e instanceof ConnectError && e.code === Code.OutOfRange && !query.fromFirstSeq) throw outOfRange(e.rawMessage);
    if (!(e instanceof ConnectError) || e.code !== Code.Unavailable) throw e;
    const why = e.rawMessage.includes("owner is stopping") ? "the owner is stopping" : `the owner is unavailable (${e.rawMessage})`;
    console.error(`chronolog: ${why}: tail ended after seq ${last}; run it again with --from ${last + 1} once the owner is back`);
    process.exit(ownerUnavailableStatus);
  }
}

/** The manifest in YAML `text` (read from `file`); an Error naming the file when it is not one YAML document. */
function yamlManifest(text: string, file: string): JsonValue {
  try {
    return parseYaml(text);
  } catch (e) {
    throw new Error(`the manifest ${file} is not valid YAML (nothing was sent): ${(e as Error).message}`);
  }
}

/** `chronolog register FILE`: registers a plugin manifest (JSON or YAML) and prints its revision. */
export async function registerCommand(file: string, flags: ClientFlags): Promise<void> {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw new Error(`cannot read the manifest ${file}: ${(e as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (e as Error).message}`);
  }
  const manifest = file.endsWith(".json") ? parseObject(text, file) : yamlManifest(text, file);
  let decoded;
  try {
    decoded = fromJson(PluginManifestSchema, withConcurrencyShorthand(manifest) as JsonValue); // `concurrency: {...}` as the owner reads it
  } catch (e) {
    throw new Error(`the manifest ${file} is not a PluginManifest (nothing was sent): ${(e as Error).message}`);
  }
  const response = await client(flags).registerPlugin(decoded);
  console.log(JSON.stringify({ plugin: response.plugin?.manifest?.name, revision: response.plugin?.revision, changed: response.changed }));
}
