-- Retention: the one sanctioned way events leave the log (log/retention.ts, store/log-removal.ts).
--
-- `log_retention.removing` is set to 1 by a removal batch inside its own transaction, around its
-- DELETE, and back to 0 before it commits: the delete trigger lets a DELETE through only then, so
-- an ad-hoc DELETE (the sqlite3 shell, maintenance SQL, a bug) is still refused. Maintenance SQL
-- may not write these tables either (store/sqlite/maintenance.ts).
-- `removed_events` keeps the id and seq of the last removed events (log.retention.removed_ids_kept,
-- the oldest forgotten first), so GetEvent tells a removed event from one that never was;
-- `log_retention.removed_events`/`removed_bytes` count what retention removed.
CREATE TABLE log_retention (
  id             INTEGER PRIMARY KEY CHECK (id = 1),
  removing       INTEGER NOT NULL DEFAULT 0,
  removed_events INTEGER NOT NULL DEFAULT 0,
  removed_bytes  INTEGER NOT NULL DEFAULT 0,
  kept_ids       INTEGER NOT NULL DEFAULT 0  -- rows in removed_events
);
INSERT INTO log_retention (id) VALUES (1);

CREATE TABLE removed_events (
  seq   INTEGER PRIMARY KEY,
  id    TEXT    NOT NULL UNIQUE,
  space TEXT    NOT NULL DEFAULT ''  -- its actor's `in`: who may hear that it was removed
);

-- What a removal checks for each candidate (does a kept event name it as its cause?) is read by
-- the index on causes, events_by_cause (migration 0017 / PostgreSQL 0005).

DROP TRIGGER events_immutable_no_delete;
CREATE TRIGGER events_immutable_no_delete BEFORE DELETE ON events
WHEN (SELECT removing FROM log_retention WHERE id = 1) = 0
BEGIN
  SELECT RAISE(ABORT, 'the log is immutable: events cannot be deleted (retention rules remove old events: docs/retention.md)');
END;
