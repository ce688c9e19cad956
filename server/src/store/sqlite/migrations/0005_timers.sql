-- Timers: the documents of `sys.timers`. A timer is
-- due when next_due_ms <= now; the owner's one clock is armed for the
-- smallest next_due_ms. NULL next_due_ms: spent (a one-shot that fired)
-- or disabled.
CREATE TABLE timers (
  id          TEXT    PRIMARY KEY,
  kind        TEXT    NOT NULL CHECK (kind IN ('runtime', 'declared', 'delay')),
  action      TEXT    NOT NULL,            -- plugin.action
  input       TEXT    NOT NULL,            -- JSON object, private fields included
  spec        TEXT    NOT NULL,            -- JSON {"at": ms} | {"cron": expr, "zone": iana} | {"every_ms": ms}
  next_due_ms INTEGER,                     -- ms since the epoch, UTC; NULL when spent or disabled
  actor       TEXT,                        -- JSON {id, for, in, via} of whoever set it; NULL = the system
  plugin      TEXT    NOT NULL DEFAULT '', -- declared schedules: the declaring plugin
  schedule    TEXT    NOT NULL DEFAULT '', -- declared schedules: the schedule's name
  overdue     TEXT    NOT NULL,            -- JSON {"unbounded": true} | {"max_lateness_ms": n} | {"on_time_or_never": true}
  chain_depth INTEGER NOT NULL DEFAULT 0,
  occurrences INTEGER NOT NULL DEFAULT 0,  -- occurrences called so far (skipped ones not counted)
  region      INTEGER NOT NULL DEFAULT 0,  -- 0: any
  created_at  INTEGER NOT NULL,            -- commit time of the last Schedule/Delay, ms since the epoch
  updated_at  INTEGER NOT NULL             -- commit time of the last change, ms since the epoch
) STRICT;
CREATE INDEX timers_by_due ON timers (next_due_ms, id);

-- Occurrences: one row per (timer, due instant), written in the
-- commit that claims it. The id is H(timer id, due instant) and is the call
-- id of the action call, so an occurrence is called (and logged) once however
-- often the owner tries. `pending` rows are called again after a restart.
CREATE TABLE timer_occurrences (
  id          TEXT    PRIMARY KEY,          -- occurrenceId(timer id, due_ms)
  timer_id    TEXT    NOT NULL,
  due_ms      INTEGER NOT NULL,             -- the moment it was due, ms since the epoch, UTC
  action      TEXT    NOT NULL,             -- snapshot of the timer at the claim: what is called...
  input       TEXT    NOT NULL,             -- ...with which input (JSON)...
  actor       TEXT,                         -- ...as whom (JSON; NULL = the system)...
  overdue     TEXT    NOT NULL,             -- ...and how late it may be made (JSON, as timers.overdue)
  status      TEXT    NOT NULL CHECK (status IN ('pending', 'completed', 'failed', 'skipped')),
  attempts    INTEGER NOT NULL DEFAULT 0,   -- calls finished for it
  call_id     TEXT    NOT NULL,             -- the action call id (= id)
  lateness_ms INTEGER,                      -- call time (or, skipped, claim time) minus due_ms
  error       TEXT    NOT NULL DEFAULT '',  -- why the last call failed, or why it was skipped
  claimed_at  INTEGER NOT NULL,             -- commit time of the claim, ms since the epoch
  updated_at  INTEGER NOT NULL
) STRICT;
CREATE INDEX timer_occurrences_by_timer ON timer_occurrences (timer_id, due_ms);
CREATE INDEX timer_occurrences_pending ON timer_occurrences (status) WHERE status = 'pending';
