-- Action calls: one row per call id, whatever the action's
-- `record` says, so a call id that completed is answered without running and
-- one that failed runs again. Recorded calls also leave action.* events in
-- the log; `record: false` calls leave only this row.
CREATE TABLE action_calls (
  call_id    TEXT    PRIMARY KEY,
  action     TEXT    NOT NULL,              -- plugin.action
  input_hash TEXT    NOT NULL,              -- sha256 of the canonical input: the same id with another input is a conflict
  actor      TEXT,                          -- JSON {id, for, in, via}; NULL = the system. Every attempt runs as it
  recorded   INTEGER NOT NULL,              -- 1: action.* events in the log (output in action.completed); 0: none
  state      TEXT    NOT NULL CHECK (state IN ('running', 'completed', 'failed')),
  attempt    INTEGER NOT NULL,              -- the last attempt started, from 1
  output     TEXT,                          -- JSON output of a completed call with recorded = 0
  error      TEXT    NOT NULL DEFAULT '',   -- why the last attempt failed
  updated_at INTEGER NOT NULL               -- commit time, ms since the epoch, UTC
) STRICT;
