import { existsSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { Event } from "@chronolog/sdk/gen/chronolog/v1/event_pb";
import { Gauge, type Registry } from "prom-client";
import type { Logger } from "../logger.js";
import { eventToProto } from "../proto-values.js";
import type { EventReads } from "../store/events.js";
import { writeArchiveFiles, writeArchiveManifest } from "./export.js";
import { archiveFormat, archiveVersion, manifestName, readManifest, strayEntry, type Manifest } from "./manifest.js";

/** The config's `log.retention.archive` section, as written (snake_case). */
export interface RetentionArchiveConfig {
  /** The archive's folder: created when missing; holds one archive that grows (docs/archives.md). */
  dir: string;
  /** A file ends once it holds this many events (default 100,000); the archive also grows by at least this many at a time. */
  file_events?: number;
  /** ...or this many bytes of NDJSON before compression (default 64 MiB). */
  file_bytes?: number;
}

/** The JSON Schema of the config's `log.retention.archive` (retention-rules.ts's schema holds it). */
export const retentionArchiveSchema = {
  type: "object",
  additionalProperties: false,
  required: ["dir"],
  properties: {
    dir: { type: "string", minLength: 1 },
    file_events: { type: "integer", minimum: 1, maximum: 10_000_000 },
    file_bytes: { type: "integer", minimum: 1024, maximum: 256 * 1024 * 1024 },
  },
};

/** What a {@link RetentionArchive} needs. */
export interface RetentionArchiveOptions {
  dir: string;
  fileEvents: number;
  fileBytes: number;
  /** The log's reads (outside the committer; on PostgreSQL without blocking the event loop). */
  reads: Pick<EventReads, "readWithin">;
  /** The id of the removed event of a seq, as the log recorded it (undefined: none, or forgotten). */
  removedIdAt: (seq: number) => Promise<string | undefined>;
  /** The log's last committed seq: the archive never goes past it. */
  head: () => number;
  logger: Logger;
  /** The owner's version, recorded in the manifest. */
  writtenBy: string;
}

/** Events read per page while archiving, and their data's bytes at most. */
const pageEvents = 1000;
const pageBytes = 4 * 1024 * 1024;

/**
 * The owner's archive of the log for retention (`log.retention.archive`): one archive folder in
 * `chronolog export`'s format that grows in seq order. Before retention removes an event, the
 * archive is brought through its seq ({@link through}): every event of the log from where the
 * archive ended, kept ones too, so the files stay in seq order without gaps but the log's own,
 * and `chronolog import` of the folder gives back the removed events with their seqs and ids.
 *
 * Files are written with gzip's async streams, a page of the log at a time (the event loop is
 * held for one page's lines), each under a temporary name, synced and renamed; then the manifest
 * is replaced (temporary name, sync, rename). What a write left that the manifest does not list
 * (an owner killed between a file and the manifest, a write that failed) is deleted when the
 * owner opens the archive and before the write after a failed one, which goes on from the
 * manifest's `to`. A folder refused is read and checked again at the next write, so it is used
 * once it is fixed.
 */
export class RetentionArchive {
  /** Events through this seq are in the archive, checked as this log's (0: none yet, or not opened). */
  archivedSeq = 0;
  /**
   * The archive's `to` as the folder's manifest last said it (read at start, before the folder is
   * checked, so the gauge does not drop to 0 at a restart); 0 once the folder is refused.
   */
  private manifestSeq = 0;
  private manifest: Manifest | undefined;
  /** The folder being read and checked, until that ends. */
  private opening: Promise<Manifest> | undefined;
  /** A write failed (or is under way): the folder may hold what it left. */
  private unclean = false;

  constructor(private readonly options: RetentionArchiveOptions) {
    try {
      if (existsSync(join(options.dir, manifestName))) this.manifestSeq = readManifest(options.dir).to;
    } catch {
      // An unreadable manifest is refused (and logged) by the first pass that needs the archive.
    }
  }

  /**
   * What `chronolog_log_archived_seq` reports: the archive's `to`, unless the folder was refused
   * or (before it is checked) its manifest goes past the log's head: another log's archive does
   * not say how far this log is archived.
   */
  get reportedSeq(): number {
    return this.manifestSeq <= this.options.head() ? this.manifestSeq : 0;
  }

  /**
   * Brings the archive through at least `seq` (at most the log's head): from where it ended, at
   * least `fileEvents` events at a time, so a file is not written for each removal batch.
   * Rejects when the folder cannot be used or a write fails (the archive stays as before it).
   */
  async through(seq: number): Promise<void> {
    const manifest = (this.manifest ??= await this.open());
    if (seq <= this.archivedSeq) return;
    const { dir, fileEvents, fileBytes, reads, head, logger } = this.options;
    if (this.unclean) removeLeftovers(dir, manifest);
    this.unclean = true;
    const target = Math.min(head(), Math.max(seq, this.archivedSeq + fileEvents));
    const from = this.archivedSeq;
    async function* pages(): AsyncGenerator<Event[]> {
      let after = from;
      while (after < target) {
        const { events } = await reads.readWithin(after, pageEvents, pageBytes);
        const page = events.filter((e) => e.seq <= target);
        if (page.length > 0) yield page.map((e) => eventToProto(e));
        if (events.length === 0 || page.length < events.length) return;
        after = events[events.length - 1].seq;
      }
    }
    const files = await writeArchiveFiles(pages(), dir, manifest.files.length, { fileEvents, fileBytes });
    const next: Manifest = {
      ...manifest,
      to: target,
      events: manifest.events + files.reduce((sum, f) => sum + f.events, 0),
      exportedAt: new Date().toISOString(),
      writtenBy: this.options.writtenBy,
      files: [...manifest.files, ...files],
    };
    await writeArchiveManifest(dir, next);
    this.unclean = false;
    this.manifest = next;
    this.archivedSeq = target;
    this.manifestSeq = target;
    logger.info({ dir, throughSeq: target, files: files.length }, `log archive: events through seq ${target} archived`);
  }

  /** Reads and checks the folder (once at a time; a failure is not kept: the next call reads it again). */
  private open(): Promise<Manifest> {
    this.opening ??= this.readFolder()
      .catch((e: unknown) => {
        this.manifestSeq = 0; // refused (or unreadable): it does not say how far this log is archived
        throw e;
      })
      .finally(() => (this.opening = undefined));
    return this.opening;
  }

  /** The folder's manifest (or a new archive from seq 1), once the archive is known to be this log's. */
  private async readFolder(): Promise<Manifest> {
    const { dir, head } = this.options;
    mkdirSync(dir, { recursive: true });
    const manifest: Manifest = readdirSync(dir).includes(manifestName)
      ? readManifest(dir)
      : { format: archiveFormat, version: archiveVersion, from: 1, to: 0, events: 0, exportedAt: "", writtenBy: this.options.writtenBy, files: [] };
    if (manifest.from !== 1) throw new Error(`the log archive ${dir} starts at seq ${manifest.from}: it was not written by an owner's retention`);
    if (manifest.to > head())
      throw new Error(`the log archive ${dir} holds seqs through ${manifest.to}, past this log's head ${head()}: it is another log's archive`);
    await this.checkLast(manifest);
    removeLeftovers(dir, manifest);
    this.archivedSeq = manifest.to;
    this.manifestSeq = manifest.to;
    return manifest;
  }

  /**
   * Refuses an archive whose last event is not this log's: the log's event of that seq, or the id
   * the log recorded for it when retention removed it, must be the archive's. When neither is
   * known (the event removed and its id forgotten: `removed_ids_kept`), the archive is taken as
   * this log's, with a warning.
   */
  private async checkLast(manifest: Manifest): Promise<void> {
    const last = manifest.files[manifest.files.length - 1];
    if (!last) return;
    const { dir, reads, removedIdAt, logger } = this.options;
    const [event] = (await reads.readWithin(last.lastSeq - 1, 1, pageBytes)).events;
    const id = event?.seq === last.lastSeq ? event.id : await removedIdAt(last.lastSeq);
    if (id === undefined) {
      logger.warn(
        { dir, seq: last.lastSeq },
        `log archive: the log no longer knows the id of seq ${last.lastSeq}, the archive's last event: it cannot be checked as this log's`,
      );
      return;
    }
    if (id !== last.lastId)
      throw new Error(
        `the log archive ${dir} ends with event ${JSON.stringify(last.lastId)} at seq ${last.lastSeq}, where this log has ${JSON.stringify(id)}: it is another log's archive`,
      );
  }
}

/** Deletes what an interrupted or failed write left in the folder; refuses a file that is no part of an archive. */
function removeLeftovers(dir: string, manifest: Manifest): void {
  const stray = strayEntry(dir, manifest);
  if (stray !== undefined) throw new Error(`the log archive ${dir} holds ${stray}, which is not part of an archive: give retention a folder of its own`);
  const listed = new Set(manifest.files.map((f) => f.name));
  for (const entry of readdirSync(dir)) if (entry !== manifestName && !listed.has(entry)) rmSync(join(dir, entry), { force: true });
}

/** Registers `chronolog_log_archived_seq` and `chronolog_log_archive_lag_events` (events retention wanted to remove that were not yet archived, at its last pass). */
export function retentionArchiveMetrics(registry: Registry, archive: RetentionArchive, lag: () => number): void {
  new Gauge({
    name: "chronolog_log_archived_seq",
    help: "The log's automatic archive holds its events through this seq (log.retention.archive).",
    registers: [registry],
    collect() {
      this.set(archive.reportedSeq);
    },
  });
  new Gauge({
    name: "chronolog_log_archive_lag_events",
    help: "Events retention's last pass wanted to remove that were not yet archived (and so stayed).",
    registers: [registry],
    collect() {
      this.set(lag());
    },
  });
}
