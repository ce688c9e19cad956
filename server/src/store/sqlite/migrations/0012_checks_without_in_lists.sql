-- No `IN (list)` of three or more values in a constraint or partial index on the tables a call
-- writes. SQLite evaluates such a list through an ephemeral b-tree it builds at every execution
-- (OpenEphemeral: a b-tree opened, filled and closed): a fired timer's occurrence insert built 4
-- (the status and origin CHECKs, the active and ended indexes' conditions), its end 5, and each
-- action_calls insert or state change 1. The same conditions as OR chains are plain comparisons
-- (a fired delay's statements in the SQL bed: 67 µs of CPU instead of 94). SQLite cannot change
-- a CHECK constraint in place, so action_calls and timer_occurrences are rebuilt, rowids kept: a
-- one-time pause at the upgrade, ~7 s per million calls on the bench machine.
-- timers keeps its `kind IN (...)` CHECK: it costs one ephemeral per Schedule or Delay, not per
-- call, and the table may hold millions of pending timers to copy.
-- timer_occurrences_retry_wait gains id, the tiebreak of its query's ORDER BY (it was sorted
-- in a temp b-tree at every claim).
CREATE TABLE action_calls_v12 (
  call_id    TEXT    PRIMARY KEY,
  action     TEXT    NOT NULL,              -- plugin.action
  input_hash TEXT    NOT NULL,              -- sha256 of the canonical input: the same id with another input is a conflict
  actor      TEXT,                          -- JSON {id, for, in, via}; NULL = the system. Every attempt runs as it
  recorded   INTEGER NOT NULL,              -- 1: action.* events in the log (output in action.completed); 0: none
  state      TEXT    NOT NULL CHECK (state = 'running' OR state = 'completed' OR state = 'failed'),
  attempt    INTEGER NOT NULL,              -- the last attempt started, from 1
  output     TEXT,                          -- JSON output of a completed call with recorded = 0
  error      TEXT    NOT NULL DEFAULT '',   -- why the last attempt failed
  updated_at INTEGER NOT NULL               -- commit time, ms since the epoch, UTC
) STRICT;
INSERT INTO action_calls_v12 (rowid, call_id, action, input_hash, actor, recorded, state, attempt, output, error, updated_at)
  SELECT rowid, call_id, action, input_hash, actor, recorded, state, attempt, output, error, updated_at FROM action_calls;
DROP TABLE action_calls;
ALTER TABLE action_calls_v12 RENAME TO action_calls;

CREATE TABLE timer_occurrences_v12 (
  id              TEXT    PRIMARY KEY,          -- occurrenceId(timer id, due_ms), or a triggered occurrence's id
  timer_id        TEXT    NOT NULL,
  due_ms          INTEGER NOT NULL,             -- the moment it was due, ms since the epoch, UTC
  action          TEXT    NOT NULL,             -- snapshot of the timer at the claim: what is called...
  input           TEXT    NOT NULL,             -- ...with which input (JSON)...
  actor           TEXT,                         -- ...as whom (JSON; NULL = the system)...
  overdue         TEXT    NOT NULL,             -- ...how late it may be made (JSON, as timers.overdue)...
  retry_delays_ms TEXT    NOT NULL DEFAULT '[10000,30000]', -- ...and the waits between its tries (JSON array of ms)
  status          TEXT    NOT NULL CHECK (status = 'pending' OR status = 'retry_wait' OR status = 'buffered' OR status = 'completed' OR status = 'failed' OR status = 'skipped'),
  attempts        INTEGER NOT NULL DEFAULT 0,   -- calls finished for it
  next_attempt_ms INTEGER,                      -- retry_wait: when it is tried (again), ms since the epoch; NULL otherwise
  call_id         TEXT    NOT NULL,             -- the action call id (= id)
  lateness_ms     INTEGER,                      -- first call time (or, skipped, claim time) minus due_ms
  error           TEXT    NOT NULL DEFAULT '',  -- why the last call failed, or why it was skipped
  claimed_at      INTEGER NOT NULL,             -- commit time of the claim, ms since the epoch
  updated_at      INTEGER NOT NULL,
  origin          TEXT    NOT NULL DEFAULT 'schedule' CHECK (origin = 'schedule' OR origin = 'trigger' OR origin = 'backfill')
) STRICT;
INSERT INTO timer_occurrences_v12 (rowid, id, timer_id, due_ms, action, input, actor, overdue, retry_delays_ms, status, attempts, next_attempt_ms, call_id, lateness_ms, error, claimed_at, updated_at, origin)
  SELECT rowid, id, timer_id, due_ms, action, input, actor, overdue, retry_delays_ms, status, attempts, next_attempt_ms, call_id, lateness_ms, error, claimed_at, updated_at, origin FROM timer_occurrences;
DROP TABLE timer_occurrences;
ALTER TABLE timer_occurrences_v12 RENAME TO timer_occurrences;
CREATE INDEX timer_occurrences_pending ON timer_occurrences (status) WHERE status = 'pending';
CREATE INDEX timer_occurrences_retry_wait ON timer_occurrences (next_attempt_ms, id) WHERE status = 'retry_wait';
-- The occurrences of a timer that have not ended (overlap policy; retention of spent timers).
CREATE INDEX timer_occurrences_active ON timer_occurrences (timer_id, status) WHERE (status = 'pending' OR status = 'retry_wait' OR status = 'buffered');
-- The ended occurrences by last change (retention, 0008).
CREATE INDEX timer_occurrences_ended ON timer_occurrences (updated_at) WHERE (status = 'completed' OR status = 'failed' OR status = 'skipped');
