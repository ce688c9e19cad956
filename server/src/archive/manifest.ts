import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/**
 * An archive of the log: a folder of gzip-compressed NDJSON files, one event a line in seq order
 * ({@link import("./lines.js")}), each file named by the seqs it holds, and `manifest.json`
 * listing them with their counts, first and last seqs and ids, sizes and SHA-256 checksums.
 * The manifest is written last: a folder without one is an export that did not finish.
 */
export interface Manifest {
  format: typeof archiveFormat;
  version: typeof archiveVersion;
  /** The seqs asked for, both inclusive: events in this range that the log held are in the files. */
  from: number;
  to: number;
  /** Events in all the files. */
  events: number;
  /** When the export finished (RFC 3339). */
  exportedAt: string;
  /** The version of the command that wrote it. */
  writtenBy: string;
  /** The files in seq order; their ranges do not overlap. */
  files: ArchiveFile[];
}

/** One file of an archive. */
export interface ArchiveFile {
  /** `events-<first seq>-<last seq>.ndjson.gz`, seqs as 16 digits ({@link fileName}). */
  name: string;
  /** Its events (lines). */
  events: number;
  firstSeq: number;
  lastSeq: number;
  /** Ids of its first and last events: an import that stopped finds where to go on by them. */
  firstId: string;
  lastId: string;
  /** Size of the compressed file, bytes. */
  bytes: number;
  /** SHA-256 of the compressed file, 64 lowercase hex characters. */
  sha256: string;
}

export const archiveFormat = "chronolog-archive";
export const archiveVersion = 1;
export const manifestName = "manifest.json";

const namePattern = /^events-(\d{16})-(\d{16})\.ndjson\.gz$/;
/** What an interrupted write leaves in an archive folder: a file the manifest does not list yet, a file or the manifest under its temporary name. */
export const leftoverName = /^(events-\d{16}-\d{16}\.ndjson\.gz|part-\d+\.partial|manifest\.json\.partial)$/;

/**
 * The first entry of `folder` that is no part of the archive of `manifest`: neither the manifest,
 * a file it lists, nor what an interrupted write leaves ({@link leftoverName}); undefined when
 * there is none. Import and the owner's archive both refuse a folder holding one.
 */
export function strayEntry(folder: string, manifest: Manifest): string | undefined {
  const listed = new Set(manifest.files.map((f) => f.name));
  return readdirSync(folder)
    .sort()
    .find((entry) => entry !== manifestName && !listed.has(entry) && !leftoverName.test(entry));
}

/** The file name of the events from `firstSeq` to `lastSeq`: padded so that names sort as seqs do. */
export function fileName(firstSeq: number, lastSeq: number): string {
  const pad = (seq: number) => String(seq).padStart(16, "0");
  return `events-${pad(firstSeq)}-${pad(lastSeq)}.ndjson.gz`;
}

/**
 * The manifest of the archive in `folder`, checked: its format and version, every file's fields,
 * names that match their seqs (so no name leads out of the folder), files in seq order that do
 * not overlap, inside `from`-`to`, and counts that add up. An Error saying what is wrong otherwise.
 */
export function readManifest(folder: string): Manifest {
  const path = join(folder, manifestName);
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT")
      throw new Error(`${folder} holds no ${manifestName}: it is not an archive, or its export did not finish (export it again into an empty folder)`);
    throw new Error(`cannot read ${path}: ${(e as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new Error(`${path} is not valid JSON: ${(e as Error).message}`);
  }
  const bad = (what: string): never => {
    throw new Error(`${path} is not a valid archive manifest: ${what}`);
  };
  const m = json as Manifest;
  if (typeof m !== "object" || m === null || Array.isArray(m)) bad("not a JSON object");
  if (m.format !== archiveFormat) bad(`format is ${JSON.stringify(m.format)}, expected ${JSON.stringify(archiveFormat)}`);
  if (m.version !== archiveVersion) bad(`version ${JSON.stringify(m.version)} is not one this command reads (${archiveVersion})`);
  for (const field of ["from", "to", "events"] as const) if (!isCount(m[field])) bad(`${field} is not a whole number`);
  if (m.from < 1 || m.to < m.from - 1) bad(`from ${m.from} and to ${m.to} are not a range of seqs`);
  if (!Array.isArray(m.files)) bad("files is not a list");
  let total = 0;
  let after = m.from - 1;
  m.files.forEach((f, i) => {
    const at = `files[${i}]`;
    if (typeof f !== "object" || f === null) bad(`${at} is not an object`);
    for (const field of ["events", "firstSeq", "lastSeq", "bytes"] as const) if (!isCount(f[field])) bad(`${at}.${field} is not a whole number`);
    for (const field of ["name", "firstId", "lastId", "sha256"] as const) if (typeof f[field] !== "string") bad(`${at}.${field} is not a string`);
    if (f.name !== fileName(f.firstSeq, f.lastSeq) || !namePattern.test(f.name))
      bad(`${at}.name ${JSON.stringify(f.name)} does not name seqs ${f.firstSeq}-${f.lastSeq}`);
    if (!/^[0-9a-f]{64}$/.test(f.sha256)) bad(`${at}.sha256 is not 64 lowercase hex characters`);
    if (f.events < 1 || f.lastSeq < f.firstSeq || f.events > f.lastSeq - f.firstSeq + 1)
      bad(`${at} holds ${f.events} events in seqs ${f.firstSeq}-${f.lastSeq}`);
    if (f.firstSeq <= after) bad(`${at} starts at seq ${f.firstSeq}, not after ${after}`);
    if (f.lastSeq > m.to) bad(`${at} ends at seq ${f.lastSeq}, after to ${m.to}`);
    after = f.lastSeq;
    total += f.events;
  });
  if (total !== m.events) bad(`its files hold ${total} events, not ${m.events}`);
  return m;
}

function isCount(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}
