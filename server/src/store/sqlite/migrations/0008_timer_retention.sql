-- Retention of spent timers and ended occurrences (time/retention.ts). The
-- sweep deletes, oldest first and in bounded chunks, the occurrences that
-- ended (completed, failed, skipped) longer ago than the retention, and the
-- spent timers (no next due moment, not paused, not disabled, not declared)
-- unchanged for longer than it that have no occurrence left. Two partial
-- indexes hold exactly those candidates by their last change, so a sweep reads
-- what it deletes and never scans the tables: pending timers and running
-- occurrences are not in them. The sweep's WHERE clauses repeat these
-- conditions word for word (SQLite uses a partial index only then).
CREATE INDEX timer_occurrences_ended ON timer_occurrences (updated_at) WHERE status IN ('completed', 'failed', 'skipped');
CREATE INDEX timers_spent ON timers (updated_at) WHERE next_due_ms IS NULL AND paused IS NULL AND disabled = 0 AND kind <> 'declared';
