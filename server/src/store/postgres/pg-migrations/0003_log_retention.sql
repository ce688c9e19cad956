-- Retention: the one sanctioned way events leave the log (log/retention.ts, store/log-removal.ts).
--
-- A removal batch sets `chronolog.removing` to 'on' for its own transaction (set_config(..., true))
-- around its DELETE, and back to 'off' after it: the trigger lets a DELETE through only then, so
-- an ad-hoc DELETE (psql, a bug) is still refused. TRUNCATE and UPDATE stay refused always.
-- `removed_events` keeps the id and seq of the last removed events (log.retention.removed_ids_kept,
-- the oldest forgotten first), so GetEvent tells a removed event from one that never was;
-- `log_retention` counts what retention removed.
CREATE TABLE log_retention (
  id             INTEGER PRIMARY KEY CHECK (id = 1),
  removed_events BIGINT  NOT NULL DEFAULT 0,
  removed_bytes  BIGINT  NOT NULL DEFAULT 0,
  kept_ids       BIGINT  NOT NULL DEFAULT 0  -- rows in removed_events
);
INSERT INTO log_retention (id) VALUES (1);

CREATE TABLE removed_events (
  seq   BIGINT PRIMARY KEY,
  id    TEXT   NOT NULL UNIQUE,
  space TEXT   NOT NULL DEFAULT ''  -- its actor's `in`: who may hear that it was removed
);

-- What a removal checks for each candidate (does a kept event name it as its cause?) is read by
-- the index on causes, events_by_cause (migration 0017 / PostgreSQL 0005).

CREATE OR REPLACE FUNCTION events_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' AND current_setting('chronolog.removing', true) = 'on' THEN
    RETURN OLD;
  END IF;
  RAISE EXCEPTION 'the log is immutable: events cannot be %', CASE TG_OP WHEN 'UPDATE' THEN 'updated' ELSE 'deleted (retention rules remove old events: docs/retention.md)' END;
END $$;
