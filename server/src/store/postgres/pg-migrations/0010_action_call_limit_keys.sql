-- Action limits across an owner restart: as SQLite's 0020_action_call_limit_keys.sql says.
ALTER TABLE action_calls ADD COLUMN limit_keys TEXT;
CREATE INDEX action_calls_limited ON action_calls (updated_at) WHERE limit_keys IS NOT NULL;
