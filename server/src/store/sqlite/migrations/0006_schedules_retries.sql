-- Declared schedules and retries of failed occurrences.
--
-- timers: `disabled` (a declared schedule switched off by its manifest or a
-- patch; next_due_ms is then NULL) and `retry_delays_ms`, the waits between
-- the tries of a failed occurrence (JSON array of ms; default 10 s then 30 s
-- for every kind). A partial index finds the declared schedules when a
-- manifest changes, without scanning the delays.
ALTER TABLE timers ADD COLUMN disabled INTEGER NOT NULL DEFAULT 0;
ALTER TABLE timers ADD COLUMN retry_delays_ms TEXT NOT NULL DEFAULT '[10000,30000]';
CREATE INDEX timers_declared ON timers (plugin, schedule) WHERE kind = 'declared';

-- timer_occurrences gains the `retry_wait` state (a failed call waiting for
-- its next try at next_attempt_ms, on the same armed clock as the timers) and
-- a snapshot of the retry waits taken at the claim. SQLite cannot change a
-- CHECK constraint in place, so the table is rebuilt.
CREATE TABLE timer_occurrences_v6 (
  id              TEXT    PRIMARY KEY,          -- occurrenceId(timer id, due_ms)
  timer_id        TEXT    NOT NULL,
  due_ms          INTEGER NOT NULL,             -- the moment it was due, ms since the epoch, UTC
  action          TEXT    NOT NULL,             -- snapshot of the timer at the claim: what is called...
  input           TEXT    NOT NULL,             -- ...with which input (JSON)...
  actor           TEXT,                         -- ...as whom (JSON; NULL = the system)...
  overdue         TEXT    NOT NULL,             -- ...how late it may be made (JSON, as timers.overdue)...
  retry_delays_ms TEXT    NOT NULL DEFAULT '[10000,30000]', -- ...and the waits between its tries (JSON array of ms)
  status          TEXT    NOT NULL CHECK (status IN ('pending', 'retry_wait', 'completed', 'failed', 'skipped')),
  attempts        INTEGER NOT NULL DEFAULT 0,   -- calls finished for it
  next_attempt_ms INTEGER,                      -- retry_wait: when it is tried again, ms since the epoch; NULL otherwise
  call_id         TEXT    NOT NULL,             -- the action call id (= id)
  lateness_ms     INTEGER,                      -- first call time (or, skipped, claim time) minus due_ms
  error           TEXT    NOT NULL DEFAULT '',  -- why the last call failed, or why it was skipped
  claimed_at      INTEGER NOT NULL,             -- commit time of the claim, ms since the epoch
  updated_at      INTEGER NOT NULL
) STRICT;
INSERT INTO timer_occurrences_v6 (id, timer_id, due_ms, action, input, actor, overdue, status, attempts, call_id, lateness_ms, error, claimed_at, updated_at)
  SELECT id, timer_id, due_ms, action, input, actor, overdue, status, attempts, call_id, lateness_ms, error, claimed_at, updated_at FROM timer_occurrences;
DROP TABLE timer_occurrences;
ALTER TABLE timer_occurrences_v6 RENAME TO timer_occurrences;
CREATE INDEX timer_occurrences_by_timer ON timer_occurrences (timer_id, due_ms);
CREATE INDEX timer_occurrences_pending ON timer_occurrences (status) WHERE status = 'pending';
CREATE INDEX timer_occurrences_retry_wait ON timer_occurrences (next_attempt_ms) WHERE status = 'retry_wait';
