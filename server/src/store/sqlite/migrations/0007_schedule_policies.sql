-- Schedules like Temporal's and per-schedule DST policies.
--
-- timers: `policy`, the schedule policy as JSON (jitter_ms, start_ms, end_ms,
-- max_count, overlap, catch_up, catch_up_window_ms, anchor_ms; '{}' = the default
-- defaults), and `paused`, the pause state as JSON ({note, at_ms,
-- held_due_ms}) or NULL when not paused; a paused timer has next_due_ms NULL
-- (it claims nothing). The DST policy of a cron spec lives in `spec`
-- ({"cron", "zone", "dst_gap"?, "dst_repeated"?}; absent: shift / first).
ALTER TABLE timers ADD COLUMN policy TEXT NOT NULL DEFAULT '{}';
ALTER TABLE timers ADD COLUMN paused TEXT;

-- timer_occurrences gains the `buffered` state (held by overlap policy "buffer
-- one" until the previous occurrence of its timer ends, then `retry_wait` with
-- next_attempt_ms = the release) and `origin`: `schedule` (claimed when due),
-- `trigger` (TriggerTimer) or `backfill` (BackfillTimer). Triggered and
-- backfilled occurrences are written `retry_wait` with attempts 0 and
-- next_attempt_ms = when to make them, so the one clock makes them. SQLite
-- cannot change a CHECK constraint in place, so the table is rebuilt.
CREATE TABLE timer_occurrences_v7 (
  id              TEXT    PRIMARY KEY,          -- occurrenceId(timer id, due_ms), or a triggered occurrence's id
  timer_id        TEXT    NOT NULL,
  due_ms          INTEGER NOT NULL,             -- the moment it was due, ms since the epoch, UTC
  action          TEXT    NOT NULL,             -- snapshot of the timer at the claim: what is called...
  input           TEXT    NOT NULL,             -- ...with which input (JSON)...
  actor           TEXT,                         -- ...as whom (JSON; NULL = the system)...
  overdue         TEXT    NOT NULL,             -- ...how late it may be made (JSON, as timers.overdue)...
  retry_delays_ms TEXT    NOT NULL DEFAULT '[10000,30000]', -- ...and the waits between its tries (JSON array of ms)
  status          TEXT    NOT NULL CHECK (status IN ('pending', 'retry_wait', 'buffered', 'completed', 'failed', 'skipped')),
  attempts        INTEGER NOT NULL DEFAULT 0,   -- calls finished for it
  next_attempt_ms INTEGER,                      -- retry_wait: when it is tried (again), ms since the epoch; NULL otherwise
  call_id         TEXT    NOT NULL,             -- the action call id (= id)
  lateness_ms     INTEGER,                      -- first call time (or, skipped, claim time) minus due_ms
  error           TEXT    NOT NULL DEFAULT '',  -- why the last call failed, or why it was skipped
  claimed_at      INTEGER NOT NULL,             -- commit time of the claim, ms since the epoch
  updated_at      INTEGER NOT NULL,
  origin          TEXT    NOT NULL DEFAULT 'schedule' CHECK (origin IN ('schedule', 'trigger', 'backfill'))
) STRICT;
INSERT INTO timer_occurrences_v7 (id, timer_id, due_ms, action, input, actor, overdue, retry_delays_ms, status, attempts, next_attempt_ms, call_id, lateness_ms, error, claimed_at, updated_at)
  SELECT id, timer_id, due_ms, action, input, actor, overdue, retry_delays_ms, status, attempts, next_attempt_ms, call_id, lateness_ms, error, claimed_at, updated_at FROM timer_occurrences;
DROP TABLE timer_occurrences;
ALTER TABLE timer_occurrences_v7 RENAME TO timer_occurrences;
CREATE INDEX timer_occurrences_by_timer ON timer_occurrences (timer_id, due_ms);
CREATE INDEX timer_occurrences_pending ON timer_occurrences (status) WHERE status = 'pending';
CREATE INDEX timer_occurrences_retry_wait ON timer_occurrences (next_attempt_ms) WHERE status = 'retry_wait';
-- The occurrences of a timer that have not ended (overlap policy).
CREATE INDEX timer_occurrences_active ON timer_occurrences (timer_id, status) WHERE status IN ('pending', 'retry_wait', 'buffered');
