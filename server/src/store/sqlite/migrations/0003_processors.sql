-- Processor cursors: every event at or below ack_floor is finished.
CREATE TABLE cursors (
  processor  TEXT    PRIMARY KEY,   -- plugin.processor
  ack_floor  INTEGER NOT NULL,
  paused     INTEGER NOT NULL DEFAULT 0,
  updated_at INTEGER NOT NULL       -- ms since the epoch, UTC
) STRICT;

-- Deliveries whose tries ran out, kept for listing and redelivery.
CREATE TABLE failed_deliveries (
  processor  TEXT    NOT NULL,
  seq        INTEGER NOT NULL,      -- the event that failed
  error      TEXT    NOT NULL,
  attempts   INTEGER NOT NULL,
  failed_seq INTEGER NOT NULL,      -- seq of the processor.failed event
  PRIMARY KEY (processor, seq)
) STRICT;
