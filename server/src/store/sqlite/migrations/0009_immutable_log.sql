-- The log is immutable in the database itself, not only in the owner's code: no
-- statement on any connection (the owner's, maintenance SQL, the sqlite3 shell) may update or
-- delete an event. The owner only ever inserts into events (store/events.ts). DROP TABLE and
-- INSERT OR REPLACE (whose conflict deletes fire no trigger unless recursive_triggers is on)
-- are not stopped here: the owner never issues them, and maintenance SQL refuses them
-- (store/sqlite/maintenance.ts). A trigger is part of the schema: maintenance SQL may not drop it.
CREATE TRIGGER events_immutable_no_update BEFORE UPDATE ON events
BEGIN
  SELECT RAISE(ABORT, 'the log is immutable: events cannot be updated');
END;

CREATE TRIGGER events_immutable_no_delete BEFORE DELETE ON events
BEGIN
  SELECT RAISE(ABORT, 'the log is immutable: events cannot be deleted');
END;
