-- Cancel on an event and streams: as SQLite's 0018_cancel_on_and_streams.sql says.
ALTER TABLE timers ADD COLUMN cancel_on TEXT;
CREATE TABLE timer_cancels (
  event_type TEXT NOT NULL,
  match_key  TEXT NOT NULL,
  timer_id   TEXT NOT NULL,
  PRIMARY KEY (event_type, match_key, timer_id)
);
CREATE INDEX timer_cancels_by_timer ON timer_cancels (timer_id);
CREATE TABLE timer_cancel_shapes (
  event_type TEXT NOT NULL,
  paths      TEXT NOT NULL,
  PRIMARY KEY (event_type, paths)
);
CREATE FUNCTION timer_cancels_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM timer_cancels WHERE timer_id = OLD.id;
  RETURN NULL;
END $$;
CREATE TRIGGER timer_cancels_gone AFTER DELETE ON timers FOR EACH ROW WHEN (OLD.cancel_on IS NOT NULL) EXECUTE FUNCTION timer_cancels_gone();

CREATE TABLE event_streams (
  stream   TEXT   NOT NULL,
  position BIGINT NOT NULL,
  seq      BIGINT NOT NULL UNIQUE,
  PRIMARY KEY (stream, position)
);
