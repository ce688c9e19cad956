-- The event log. seq is given by the committer: dense, from 1.
CREATE TABLE events (
  seq   INTEGER PRIMARY KEY,
  id    TEXT    NOT NULL UNIQUE,
  type  TEXT    NOT NULL,
  data  TEXT    NOT NULL,        -- JSON object
  cause TEXT    NOT NULL DEFAULT '',
  actor TEXT,                    -- JSON {id, for, in, via}; NULL = the system
  at    INTEGER NOT NULL         -- commit time, ms since the epoch, UTC
) STRICT;
CREATE INDEX events_by_type ON events (type, seq);

-- Registered plugin manifests: the current revision of each plugin...
CREATE TABLE plugins (
  name          TEXT    PRIMARY KEY,
  revision      INTEGER NOT NULL,
  manifest      TEXT    NOT NULL, -- canonical JSON of the PluginManifest
  registered_at INTEGER NOT NULL
) STRICT;

-- ...and every revision ever registered (a changed manifest is recorded).
CREATE TABLE plugin_revisions (
  name          TEXT    NOT NULL,
  revision      INTEGER NOT NULL,
  manifest      TEXT    NOT NULL,
  registered_at INTEGER NOT NULL,
  PRIMARY KEY (name, revision)
) STRICT;
