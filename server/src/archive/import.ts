import { hash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import type { ImportedEvent, LogExtent, LogImport } from "../store/log-import.js";
import { parseArchivedLine } from "./lines.js";
import { readManifest, strayEntry, type ArchiveFile, type Manifest } from "./manifest.js";

/** The most NDJSON one file may hold once decompressed (export writes at most --file-bytes, 256 MiB, plus one event). */
const maxFileBytes = 512 * 1024 * 1024;

/** What {@link importArchive} did. */
export interface ImportResult {
  manifest: Manifest;
  /** Files found in the log already: an earlier import of this archive wrote them before it stopped. */
  present: number;
  /** Files written now, and their events. */
  imported: number;
  events: number;
}

/**
 * The manifest of the archive in `folder`, once the folder is checked before anything is opened
 * or written: the manifest, no entry that is no part of the archive (as the owner's archive
 * refuses one: manifest.ts's strayEntry), and every file's size and SHA-256.
 */
export function checkArchive(folder: string): Manifest {
  const manifest = readManifest(folder);
  try {
    const stray = strayEntry(folder, manifest);
    if (stray !== undefined)
      throw new Error(
        `the archive folder ${folder} holds ${stray}, which is not part of an archive (remove it, or import a copy of the manifest and the files it lists)`,
      );
    for (const file of manifest.files) verified(folder, file);
  } catch (e) {
    throw new Error(`${(e as Error).message}; nothing was imported`);
  }
  return manifest;
}

/**
 * Loads the archive in `folder`, checked ({@link checkArchive}: `manifest` is its answer), into
 * the log of `target`, which must be empty, or hold exactly the first files of this archive (an
 * import of it that stopped: it goes on after them). Every file is checked again as it is read
 * for writing; each file is written in one transaction, after all its lines were read and
 * checked, so an import that fails or is killed leaves whole files only.
 */
export async function importArchive(folder: string, manifest: Manifest, target: LogImport, onFile?: (file: ArchiveFile) => void): Promise<ImportResult> {
  const present = filesPresent(manifest, target);
  let after = present === 0 ? 0 : manifest.files[present - 1].lastSeq;
  let events = 0;
  for (const [i, file] of manifest.files.entries()) {
    if (i < present) continue;
    try {
      const rows = eventsOf(file, verified(folder, file), after);
      await target.append(rows, after);
      events += rows.length;
    } catch (e) {
      const before = i === 0 ? "" : ` (the ${i} before it are; run the import again once it is mended: it goes on from it)`;
      throw new Error(`${(e as Error).message}; nothing of ${file.name} was imported${before}`);
    }
    after = file.lastSeq;
    onFile?.(file);
  }
  return { manifest, present, imported: manifest.files.length - present, events };
}

/** The bytes of `file`, once their size and SHA-256 are the manifest's; an Error naming the file otherwise. */
function verified(folder: string, file: ArchiveFile): Buffer {
  let bytes: Buffer;
  try {
    bytes = readFileSync(join(folder, file.name));
  } catch (e) {
    const why = (e as NodeJS.ErrnoException).code === "ENOENT" ? "missing" : (e as Error).message;
    throw new Error(`${file.name}: ${why}`);
  }
  const sha256 = hash("sha256", bytes, "hex");
  if (bytes.length !== file.bytes || sha256 !== file.sha256) {
    throw new Error(`${file.name} is damaged: ${bytes.length} bytes with SHA-256 ${sha256}, the manifest says ${file.bytes} bytes with ${file.sha256}`);
  }
  return bytes;
}

/**
 * How many of the manifest's files the log holds already: 0 when it is empty; else the log must
 * be exactly the first files of this archive (same first and last seq and id, same count), or
 * the import is refused.
 */
function filesPresent(manifest: Manifest, target: LogImport): number {
  const extent = target.extent();
  if (extent.events === 0) return 0;
  let events = 0;
  for (let k = 1; k <= manifest.files.length; k++) {
    const last = manifest.files[k - 1];
    events += last.events;
    if (last.lastSeq < extent.last) continue;
    const first = manifest.files[0];
    if (
      last.lastSeq === extent.last &&
      events === extent.events &&
      first.firstSeq === extent.first &&
      target.idAt(first.firstSeq) === first.firstId &&
      target.idAt(last.lastSeq) === last.lastId
    )
      return k;
    break;
  }
  throw new Error(
    `the log is not empty (${describe(extent)}) and is not an earlier import of this archive that stopped: import into an owner whose log is empty (a new data folder or database)`,
  );
}

function describe(extent: LogExtent): string {
  return `${extent.events} event${extent.events === 1 ? "" : "s"}, seqs ${extent.first} to ${extent.last}`;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** The events of `file` (its verified, compressed bytes), checked against the manifest: their count, seqs in order above `after`, first and last ids. */
function eventsOf(file: ArchiveFile, bytes: Buffer, after: number): ImportedEvent[] {
  let raw: Buffer;
  try {
    raw = gunzipSync(bytes, { maxOutputLength: maxFileBytes });
  } catch (e) {
    throw new Error(`${file.name}: cannot decompress it: ${(e as Error).message}`);
  }
  const events: ImportedEvent[] = [];
  let start = 0;
  let previous = after;
  while (start < raw.length) {
    let end = raw.indexOf(0x0a, start);
    if (end === -1) end = raw.length;
    const where = `${file.name}, line ${events.length + 1}`;
    let text: string;
    try {
      text = utf8.decode(raw.subarray(start, end));
    } catch {
      throw new Error(`${where}: not UTF-8`);
    }
    const event = parseArchivedLine(text, where);
    if (event.seq <= previous) throw new Error(`${where}: seq ${event.seq} does not follow ${previous}`);
    previous = event.seq;
    events.push(event);
    start = end + 1;
  }
  const mismatch =
    events.length !== file.events
      ? `${events.length} events, the manifest says ${file.events}`
      : events[0].seq !== file.firstSeq || events[events.length - 1].seq !== file.lastSeq
        ? `seqs ${events[0].seq} to ${events[events.length - 1].seq}, the manifest says ${file.firstSeq} to ${file.lastSeq}`
        : events[0].id !== file.firstId || events[events.length - 1].id !== file.lastId
          ? "first and last ids other than the manifest's"
          : undefined;
  if (mismatch) throw new Error(`${file.name} holds ${mismatch}`);
  return events;
}
