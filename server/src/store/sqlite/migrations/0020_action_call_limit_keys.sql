-- Action limits across an owner restart (actions/limits-restore.ts): a call of an action with a
-- concurrency limit or a rate keeps the keys it counts against, JSON [concurrency key, rate key]
-- (each a string or null: the shared key); NULL for an action with neither. At start the owner
-- reads the limited calls changed recently through this partial index (only limited calls are in
-- it): the running ones hold their slots again, the recent starts refill the rate buckets.
ALTER TABLE action_calls ADD COLUMN limit_keys TEXT;
CREATE INDEX action_calls_limited ON action_calls (updated_at) WHERE limit_keys IS NOT NULL;
