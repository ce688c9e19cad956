import { createHash } from "node:crypto";
import { createWriteStream, mkdirSync, readdirSync } from "node:fs";
import { once } from "node:events";
import { open, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGzip, type Gzip } from "node:zlib";
import type { Event } from "@chronolog/sdk/gen/chronolog/v1/event_pb";
import { archivedLine } from "./lines.js";
import { archiveFormat, archiveVersion, fileName, manifestName, type ArchiveFile, type Manifest } from "./manifest.js";

/** What an export reads the log with: the API's ReadLog (as an admin, so no event is left out for its space). */
export type ReadLog = (request: { afterSeq: bigint; pageSize: number; pageToken: string }) => Promise<{
  events: Event[];
  nextPageToken: string;
  headSeq: bigint;
}>;

/** Options of {@link exportArchive}. */
export interface ExportOptions {
  /** First seq to write (inclusive). */
  from: number;
  /** Last seq to write (inclusive); default the log's head when the export starts. */
  to?: number;
  /** A file ends once it holds this many events... */
  fileEvents: number;
  /** ...or this many bytes of NDJSON before compression (it may pass them by one event). */
  fileBytes: number;
  /** Told of each file once it is complete on disk. */
  onFile?: (file: ArchiveFile) => void;
  /** The command's version, recorded in the manifest. */
  writtenBy: string;
}

/** Events asked for per ReadLog page (the API's largest page). */
const pageSize = 1000;
/** Lines held before they go to gzip together, characters. */
const chunkBytes = 256 * 1024;

/**
 * Writes the events of the log from `from` to `to` into `folder` (created if missing; refused
 * when it holds anything) as an archive ({@link Manifest}): files of bounded size, each written
 * under a temporary name, synced and then renamed, and the manifest last. An export that fails
 * leaves files but no manifest, which import refuses.
 */
export async function exportArchive(readLog: ReadLog, folder: string, options: ExportOptions): Promise<Manifest> {
  prepareFolder(folder);
  let to = options.to;
  // The next page is read while this one is written.
  async function* pages(): AsyncGenerator<Event[]> {
    let next: Promise<Awaited<ReturnType<ReadLog>>> | undefined = readLog({ afterSeq: BigInt(options.from - 1), pageSize, pageToken: "" });
    while (next) {
      const page: Awaited<ReturnType<ReadLog>> = await next;
      to ??= Number(page.headSeq);
      const last = page.events[page.events.length - 1];
      next = page.nextPageToken !== "" && (!last || Number(last.seq) < to) ? readLog({ afterSeq: 0n, pageSize, pageToken: page.nextPageToken }) : undefined;
      next?.catch(() => {}); // a failure is thrown where it is awaited, not as unhandled if a write fails first
      yield page.events.filter((e) => Number(e.seq) <= (to as number));
    }
  }
  const files = await writeArchiveFiles(pages(), folder, 0, options);
  const manifest: Manifest = {
    format: archiveFormat,
    version: archiveVersion,
    from: options.from,
    to: Math.max(to ?? 0, options.from - 1),
    events: files.reduce((sum, f) => sum + f.events, 0),
    exportedAt: new Date().toISOString(),
    writtenBy: options.writtenBy,
    files,
  };
  await writeArchiveManifest(folder, manifest);
  return manifest;
}

/**
 * Writes the events of `pages` (in seq order) into archive files in `folder`, a file ending once
 * it holds `fileEvents` events or `fileBytes` bytes of NDJSON, and the last at the pages' end.
 * `firstIndex` numbers the temporary files (the number of files the folder's archive already
 * has). Resolves with the files written, complete on disk; writes no manifest.
 */
export async function writeArchiveFiles(
  pages: AsyncIterable<Event[]>,
  folder: string,
  firstIndex: number,
  options: Pick<ExportOptions, "fileEvents" | "fileBytes" | "onFile">,
): Promise<ArchiveFile[]> {
  const files: ArchiveFile[] = [];
  let writer: FileWriter | undefined;
  try {
    for await (const events of pages) {
      for (const event of events) {
        writer ??= FileWriter.open(folder, firstIndex + files.length);
        await writer.write(event, archivedLine(event));
        if (writer.events >= options.fileEvents || writer.rawBytes >= options.fileBytes) {
          const file = await writer.close();
          writer = undefined;
          files.push(file);
          options.onFile?.(file);
        }
      }
    }
    if (writer) {
      const file = await writer.close();
      writer = undefined;
      files.push(file);
      options.onFile?.(file);
    }
  } catch (e) {
    await writer?.abort();
    throw e;
  }
  return files;
}

/** Writes (or replaces) the folder's manifest durably: under a temporary name, synced, renamed, the folder synced. */
export async function writeArchiveManifest(folder: string, manifest: Manifest): Promise<void> {
  const partial = join(folder, `${manifestName}.partial`);
  await rm(partial, { force: true });
  await writeDurably(partial, `${JSON.stringify(manifest, null, 2)}\n`);
  await rename(partial, join(folder, manifestName));
  await syncFile(folder);
}

/** Creates `folder` when missing; refuses one that holds anything (an archive is never mixed with another's files). */
function prepareFolder(folder: string): void {
  try {
    mkdirSync(folder, { recursive: true });
  } catch (e) {
    throw new Error(`cannot create the archive folder ${folder}: ${(e as Error).message}`);
  }
  let entries: string[];
  try {
    entries = readdirSync(folder);
  } catch (e) {
    throw new Error(`cannot use the archive folder ${folder}: ${(e as Error).message}`);
  }
  if (entries.length > 0) throw new Error(`the archive folder ${folder} is not empty (${entries.length} entries): export into a new or empty folder`);
}

/**
 * One archive file being written: lines through gzip, hashed as compressed, into a temporary file.
 * A failure of the file's stream (a full disk, a missing permission) rejects the write or close
 * under way or the next one, never unhandled.
 */
class FileWriter {
  events = 0;
  /** NDJSON bytes before compression. */
  rawBytes = 0;
  private firstSeq = 0;
  private lastSeq = 0;
  private firstId = "";
  private lastId = "";
  private bytes = 0;
  private pending: string[] = [];
  private pendingBytes = 0;
  private readonly hash = createHash("sha256");
  private readonly gzip: Gzip = createGzip();
  private readonly done: Promise<void>;
  private failure: Error | undefined;

  private constructor(
    private readonly folder: string,
    private readonly partial: string,
  ) {
    const tap = new Transform({
      transform: (chunk: Buffer, _encoding, callback) => {
        this.hash.update(chunk);
        this.bytes += chunk.length;
        callback(null, chunk);
      },
    });
    this.done = pipeline(this.gzip, tap, createWriteStream(partial, { flags: "wx" }));
    // Handled here, so never unhandled; the next flush or close rethrows it.
    this.done.catch((e: Error) => {
      this.failure = e;
    });
  }

  static open(folder: string, index: number): FileWriter {
    return new FileWriter(folder, join(folder, `part-${index}.partial`));
  }

  async write(event: Event, line: string): Promise<void> {
    if (this.events === 0) {
      this.firstSeq = Number(event.seq);
      this.firstId = event.id;
    }
    this.lastSeq = Number(event.seq);
    this.lastId = event.id;
    this.events++;
    this.rawBytes += Buffer.byteLength(line);
    this.pending.push(line);
    this.pendingBytes += line.length;
    if (this.pendingBytes >= chunkBytes) await this.flush();
  }

  /** Hands the lines held to gzip in one write (a write per line cost four times the export's reads), waiting while it is behind. */
  private async flush(): Promise<void> {
    const chunk = this.pending.join("");
    this.pending = [];
    this.pendingBytes = 0;
    if (this.failure) throw this.failure;
    // Waiting for drain ends too when the stream fails (it never drains then).
    if (!this.gzip.write(chunk)) await Promise.race([once(this.gzip, "drain"), this.done]);
  }

  /** Gives the file up after a failure: its stream destroyed, its temporary file removed. */
  async abort(): Promise<void> {
    this.gzip.destroy();
    await this.done.catch(() => {});
    await rm(this.partial, { force: true }).catch(() => {});
  }

  /** Ends the file: flushed, synced, renamed to its name by seqs. */
  async close(): Promise<ArchiveFile> {
    await this.flush();
    this.gzip.end();
    await this.done;
    await syncFile(this.partial);
    const name = fileName(this.firstSeq, this.lastSeq);
    await rename(this.partial, join(this.folder, name));
    return {
      name,
      events: this.events,
      firstSeq: this.firstSeq,
      lastSeq: this.lastSeq,
      firstId: this.firstId,
      lastId: this.lastId,
      bytes: this.bytes,
      sha256: this.hash.digest("hex"),
    };
  }
}

async function writeDurably(path: string, text: string): Promise<void> {
  await writeFile(path, text, { flag: "wx" });
  await syncFile(path);
}

/** Syncs a file's contents, or a folder's entries (the renames into it), to the disk. */
async function syncFile(path: string): Promise<void> {
  const handle = await open(path, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
