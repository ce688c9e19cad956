-- The highest seq below which no removed id is kept (every kept row has a higher seq): forgetting
-- the oldest kept ids starts its scan there, past the rows the forgetting before it deleted, which
-- the index still holds until a vacuum. Without it each forgetting walked every dead entry since
-- the last vacuum, and grew slower with each batch once the kept ids reached their bound.
ALTER TABLE log_retention ADD COLUMN forgotten_through BIGINT NOT NULL DEFAULT 0;
