import type { Logger } from "../logger.js";

/** An archive retention writes events to before it removes them (archive/retention-archive.ts). */
export interface LogArchive {
  /** Events through this seq are archived. */
  readonly archivedSeq: number;
  /** Archives at least through `seq`; rejects when it cannot (then what is past {@link archivedSeq} stays). */
  through(seq: number): Promise<void>;
}

/**
 * Archive before removal, within a retention pass (docs/retention.md, "Archiving what is
 * removed"): brings the archive, if there is one, through the events a unit is about to remove.
 * After a failed write it is not tried again until the next pass ({@link reset}).
 */
export class ArchiveGate {
  /** Why the archive could not be written in this pass. */
  private failure: string | undefined;

  constructor(
    private readonly archive: LogArchive | undefined,
    private readonly logger: Logger,
  ) {}

  /** A new pass: a failed archive is tried again. */
  reset(): void {
    this.failure = undefined;
  }

  /** Events through this seq may be removed (every seq without an archive). */
  get archivedSeq(): number {
    return this.archive?.archivedSeq ?? Number.MAX_SAFE_INTEGER;
  }

  /** Why an event past {@link archivedSeq} stays. */
  get reason(): string {
    return `it is not archived yet (${this.failure ?? "the archive is behind"})`;
  }

  /** Brings the archive through `seq` unless it failed in this pass; true when every event through `seq` is archived (or none need be). */
  async through(seq: number): Promise<boolean> {
    const archive = this.archive;
    if (!archive || seq <= archive.archivedSeq) return true;
    if (this.failure === undefined) {
      try {
        await archive.through(seq);
      } catch (e) {
        this.failure = (e as Error).message;
        this.logger.error({ err: e }, "log archive: events could not be archived; retention keeps them until they are");
      }
    }
    return seq <= archive.archivedSeq;
  }
}
