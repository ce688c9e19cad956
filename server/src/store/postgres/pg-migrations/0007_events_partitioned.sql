-- The events table partitioned by seq range (docs/postgres.md, "The log's partitions"): retention
-- drops a whole old partition (its file goes back to the disk at once) instead of deleting its
-- rows one by one, which leaves dead rows for VACUUM and a table that never shrinks.
--
-- Partitions hold `event_partitioning.span` seqs each (1,000,000 unless changed there: a change
-- applies to partitions made after it) and are made ahead of the head by the writer, in the
-- transaction of the batch whose appends come near the last one's end (chronolog_event_room).
-- `event_partitions` lists them.
--
-- PostgreSQL needs the partition key in every unique index of a partitioned table, so the id's
-- uniqueness is no longer an index: every append's id is looked up before it is appended, by the
-- single writer (EventStatements.findById, the batch's prefetch or its guard), and
-- `events_by_id` (one per partition) answers those lookups.
--
-- An existing table is converted here: its rows are copied into the partitioned table in this
-- migration's transaction (about as long as writing the table and its indexes once more, and as
-- much free disk space as the table takes, until the old one is dropped at the end).

CREATE TABLE event_partitioning (
  id   INTEGER PRIMARY KEY CHECK (id = 1),
  span BIGINT  NOT NULL CHECK (span >= 100)
);
INSERT INTO event_partitioning (id, span) VALUES (1, 1000000);

CREATE TABLE event_partitions (
  from_seq BIGINT PRIMARY KEY,    -- its first seq
  to_seq   BIGINT NOT NULL,       -- the first seq of the next one
  name     TEXT   NOT NULL UNIQUE -- events_<from_seq>
);

CREATE TABLE events_partitioned (
  seq   BIGINT NOT NULL,
  id    TEXT   NOT NULL,
  type  TEXT   NOT NULL,
  data  TEXT   NOT NULL,
  cause TEXT   NOT NULL DEFAULT '',
  actor TEXT,
  at    BIGINT NOT NULL,
  trace TEXT
) PARTITION BY RANGE (seq);

-- Makes the partitions that hold every seq through `through` (none when they exist) and returns
-- the first seq past the last partition. A partition is made empty and attached, which locks the
-- parent table SHARE UPDATE EXCLUSIVE: reads and appends go on meanwhile.
CREATE FUNCTION chronolog_event_room(through BIGINT) RETURNS BIGINT LANGUAGE plpgsql AS $$
DECLARE
  upto BIGINT;
  step BIGINT;
  part TEXT;
BEGIN
  SELECT COALESCE(MAX(to_seq), 1) INTO upto FROM event_partitions;
  IF upto > through THEN
    RETURN upto;
  END IF;
  SELECT span INTO step FROM event_partitioning WHERE id = 1;
  WHILE upto <= through LOOP
    part := 'events_' || upto;
    EXECUTE format('CREATE TABLE %I (LIKE events INCLUDING DEFAULTS, CHECK (seq >= %s AND seq < %s))', part, upto, upto + step);
    EXECUTE format('ALTER TABLE events ATTACH PARTITION %I FOR VALUES FROM (%s) TO (%s)', part, upto, upto + step);
    -- TRUNCATE of a partition does not reach the parent's statement trigger: each has its own.
    EXECUTE format('CREATE TRIGGER events_immutable_truncate BEFORE TRUNCATE ON %I FOR EACH STATEMENT EXECUTE FUNCTION events_immutable()', part);
    INSERT INTO event_partitions (from_seq, to_seq, name) VALUES (upto, upto + step, part);
    upto := upto + step;
  END LOOP;
  RETURN upto;
END $$;

-- The rows of the unpartitioned table, copied; then it goes, and the new table takes its name.
DO $$
DECLARE
  head BIGINT;
BEGIN
  SELECT COALESCE(MAX(seq), 0) INTO head FROM events;
  ALTER TABLE events RENAME TO events_unpartitioned;
  ALTER TABLE events_partitioned RENAME TO events;
  PERFORM chronolog_event_room(head + 1);
  INSERT INTO events SELECT seq, id, type, data, cause, actor, at, trace FROM events_unpartitioned ORDER BY seq;
  DROP TABLE events_unpartitioned;
END $$;

ALTER TABLE events ADD PRIMARY KEY (seq);
CREATE INDEX events_by_id ON events (id);
CREATE INDEX events_by_type ON events (type, seq);
CREATE INDEX events_by_cause ON events (cause, seq);

CREATE TRIGGER events_immutable BEFORE UPDATE OR DELETE ON events FOR EACH ROW EXECUTE FUNCTION events_immutable();
CREATE TRIGGER events_immutable_truncate BEFORE TRUNCATE ON events FOR EACH STATEMENT EXECUTE FUNCTION events_immutable();
