-- Retention of finished action calls (actions/retention.ts): the sweep deletes, oldest first and
-- in bounded chunks, the calls that completed or failed longer ago than the retention. This
-- partial index holds exactly those candidates by their last change, so a sweep reads what it
-- deletes and never scans the table; running calls are not in it. The sweep's WHERE clause
-- repeats its condition word for word (SQLite uses a partial index only then); an OR chain, not
-- an IN list (see 0012).
CREATE INDEX IF NOT EXISTS action_calls_finished ON action_calls (updated_at) WHERE (state = 'completed' OR state = 'failed');
