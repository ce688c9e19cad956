import { defer, type Db } from "../sql.js";

/**
 * The partitions of the events table made ahead of the appends (migration 0007,
 * docs/postgres.md "The log's partitions"): an append whose seq comes within half a partition's
 * span of the last partition's end queues, in the batch's own transaction, the statement that
 * makes the next one (`chronolog_event_room`: nothing when it exists). Which end is committed is read
 * again, outside the committer, after such a statement was queued; until that read sees the new
 * end, each such append queues it again (a few, the batch's), so a batch or unit that was rolled
 * back with it never leaves an append without its partition.
 */
export interface EventRoom {
  /** Before appending `seq`, inside a committer unit. */
  before(seq: number): void;
}

const extentSql = "SELECT (SELECT COALESCE(MAX(to_seq), 1) FROM event_partitions) AS room, (SELECT span FROM event_partitioning WHERE id = 1) AS span";

/** The events table's partitions on `db` (PostgreSQL). */
export function eventRoom(db: Db): EventRoom {
  const make = db.prepare("SELECT chronolog_event_room(?) AS room");
  const read = (row: unknown) => {
    const { room, span } = row as { room: string | number; span: string | number };
    return { room: Number(room), span: Number(span) };
  };
  let { room, span } = read(db.prepare(extentSql).get());
  let reading = false;
  let again = false;
  const reread = (): void => {
    if (reading || !db.readAsync) {
      again = true;
      return;
    }
    reading = true;
    again = false;
    db.readAsync(extentSql, []).then(
      ([row]) => {
        ({ room, span } = read(row));
        reading = false;
        if (again) reread();
      },
      () => {
        reading = false; // the next append near the end asks again
      },
    );
  };
  return {
    before(seq) {
      if (seq + span / 2 < room) return;
      defer(make, seq + span);
      reread();
    },
  };
}
