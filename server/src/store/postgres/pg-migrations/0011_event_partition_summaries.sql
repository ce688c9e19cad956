-- The summaries of the events table's full partitions (log/partition-plan.ts, docs/retention.md):
-- of each type in a partition, its events, their stored bytes, the highest seq and commit time,
-- as JSON `{"<type>": [events, bytes, max_seq, max_at]}`. A retention pass reads a full partition
-- once (one GROUP BY over it) and writes its summary here in a unit of its own; an owner reads
-- them all at its first pass, so a restarted owner or a standby taking over does not read every
-- full partition again. A full partition only loses events: a removal by rows deletes the
-- summaries of the partitions it removed from in its own unit (they are read again), and a
-- partition's summary goes with its row in event_partitions when it is dropped.
CREATE TABLE event_partition_summaries (
  from_seq BIGINT PRIMARY KEY REFERENCES event_partitions (from_seq) ON DELETE CASCADE,
  types    TEXT   NOT NULL
);
