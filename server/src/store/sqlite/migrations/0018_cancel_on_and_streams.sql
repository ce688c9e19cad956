-- Cancel on an event (time/cancel-on.ts): the events that cancel a pending timer, as the timer
-- declares them (`cancel_on`, JSON; NULL: none), and the index an emit looks them up in: one row
-- per (event type, match key) a timer waits on, the key the canonical JSON of {event path: value}
-- taken from the timer's input. An emit of a type reads only the keys its own data makes, so its
-- cost does not grow with the number of pending timers. `timer_cancel_shapes` lists the sets of
-- paths used per event type (never deleted: a few rows), which the owner keeps in memory.
ALTER TABLE timers ADD COLUMN cancel_on TEXT;
CREATE TABLE timer_cancels (
  event_type TEXT NOT NULL,
  match_key  TEXT NOT NULL,
  timer_id   TEXT NOT NULL,
  PRIMARY KEY (event_type, match_key, timer_id)
) WITHOUT ROWID;
CREATE INDEX timer_cancels_by_timer ON timer_cancels (timer_id);
CREATE TABLE timer_cancel_shapes (
  event_type TEXT NOT NULL,
  paths      TEXT NOT NULL,
  PRIMARY KEY (event_type, paths)
) WITHOUT ROWID;
-- A timer removed (unscheduled, cancelled, swept, a declared schedule dropped) takes its keys along.
CREATE TRIGGER timer_cancels_gone AFTER DELETE ON timers FOR EACH ROW WHEN old.cancel_on IS NOT NULL
BEGIN
  DELETE FROM timer_cancels WHERE timer_id = old.id;
END;

-- Streams (log/streams.ts): an event emitted with a stream name takes the stream's next position
-- (from 0). The primary key serves ReadStream and the expected-version check (the stream's last
-- position); `seq` finds an event's stream and position.
CREATE TABLE event_streams (
  stream   TEXT    NOT NULL,
  position INTEGER NOT NULL,
  seq      INTEGER NOT NULL UNIQUE,
  PRIMARY KEY (stream, position)
) WITHOUT ROWID;
