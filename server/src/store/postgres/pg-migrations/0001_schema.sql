-- The owner's schema on PostgreSQL: the tables of the SQLite store, with 64-bit integers.
-- Times are ms since the epoch (UTC), as on SQLite, so both stores read alike.

-- The event log. seq is given by the committer, the single writer: dense, from 1.
CREATE TABLE events (
  seq   BIGINT PRIMARY KEY,
  id    TEXT   NOT NULL UNIQUE,
  type  TEXT   NOT NULL,
  data  TEXT   NOT NULL,         -- JSON object, as the client's JSON was checked and stored
  cause TEXT   NOT NULL DEFAULT '',
  actor TEXT,                    -- JSON {id, for, in, via}; NULL = the system
  at    BIGINT NOT NULL          -- commit time
);
CREATE INDEX events_by_type ON events (type, seq);

-- The log is immutable, whoever connects.
CREATE FUNCTION events_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'the log is immutable: events cannot be %', CASE TG_OP WHEN 'UPDATE' THEN 'updated' ELSE 'deleted' END;
END $$;
CREATE TRIGGER events_immutable BEFORE UPDATE OR DELETE ON events FOR EACH ROW EXECUTE FUNCTION events_immutable();
CREATE TRIGGER events_immutable_truncate BEFORE TRUNCATE ON events FOR EACH STATEMENT EXECUTE FUNCTION events_immutable();

CREATE TABLE plugins (
  name          TEXT   PRIMARY KEY,
  revision      BIGINT NOT NULL,
  manifest      TEXT   NOT NULL, -- canonical JSON of the PluginManifest
  registered_at BIGINT NOT NULL
);

CREATE TABLE plugin_revisions (
  name          TEXT   NOT NULL,
  revision      BIGINT NOT NULL,
  manifest      TEXT   NOT NULL,
  registered_at BIGINT NOT NULL,
  PRIMARY KEY (name, revision)
);

CREATE TABLE documents (
  collection TEXT NOT NULL,
  id         TEXT NOT NULL,
  doc        TEXT NOT NULL,              -- JSON object
  space      TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (collection, id)
);

CREATE TABLE collection_writes (
  id         TEXT   PRIMARY KEY,         -- derivedId(cause, position, {collection, op, id, input})
  collection TEXT   NOT NULL,
  doc_id     TEXT   NOT NULL,
  at         BIGINT NOT NULL
);

CREATE TABLE cursors (
  processor  TEXT   PRIMARY KEY,         -- plugin.processor
  ack_floor  BIGINT NOT NULL,
  paused     BIGINT NOT NULL DEFAULT 0,
  updated_at BIGINT NOT NULL
);

CREATE TABLE failed_deliveries (
  processor  TEXT   NOT NULL,
  seq        BIGINT NOT NULL,
  error      TEXT   NOT NULL,
  attempts   BIGINT NOT NULL,
  failed_seq BIGINT NOT NULL,
  PRIMARY KEY (processor, seq)
);

CREATE TABLE timers (
  id              TEXT   PRIMARY KEY,
  kind            TEXT   NOT NULL CHECK (kind IN ('runtime', 'declared', 'delay')),
  action          TEXT   NOT NULL,
  input           TEXT   NOT NULL,
  spec            TEXT   NOT NULL,
  next_due_ms     BIGINT,
  actor           TEXT,
  plugin          TEXT   NOT NULL DEFAULT '',
  schedule        TEXT   NOT NULL DEFAULT '',
  overdue         TEXT   NOT NULL,
  chain_depth     BIGINT NOT NULL DEFAULT 0,
  occurrences     BIGINT NOT NULL DEFAULT 0,
  region          BIGINT NOT NULL DEFAULT 0,
  created_at      BIGINT NOT NULL,
  updated_at      BIGINT NOT NULL,
  disabled        BIGINT NOT NULL DEFAULT 0,
  retry_delays_ms TEXT   NOT NULL DEFAULT '[10000,30000]',
  policy          TEXT   NOT NULL DEFAULT '{}',
  paused          TEXT
);
CREATE INDEX timers_declared ON timers (plugin, schedule) WHERE kind = 'declared';
CREATE INDEX timers_spent ON timers (updated_at) WHERE next_due_ms IS NULL AND paused IS NULL AND disabled = 0 AND kind <> 'declared';
CREATE INDEX timers_by_due ON timers (next_due_ms, id) WHERE next_due_ms IS NOT NULL;
CREATE INDEX timers_unscheduled ON timers (updated_at, id) WHERE next_due_ms IS NULL;

CREATE TABLE action_calls (
  call_id    TEXT   PRIMARY KEY,
  action     TEXT   NOT NULL,
  input_hash TEXT   NOT NULL,
  actor      TEXT,
  recorded   BIGINT NOT NULL,
  state      TEXT   NOT NULL CHECK (state = 'running' OR state = 'completed' OR state = 'failed'),
  attempt    BIGINT NOT NULL,
  output     TEXT,
  error      TEXT   NOT NULL DEFAULT '',
  updated_at BIGINT NOT NULL
);
CREATE INDEX action_calls_finished ON action_calls (updated_at) WHERE (state = 'completed' OR state = 'failed');

CREATE TABLE timer_occurrences (
  id              TEXT   PRIMARY KEY,
  timer_id        TEXT   NOT NULL,
  due_ms          BIGINT NOT NULL,
  action          TEXT   NOT NULL,
  input           TEXT   NOT NULL,
  actor           TEXT,
  overdue         TEXT   NOT NULL,
  retry_delays_ms TEXT   NOT NULL DEFAULT '[10000,30000]',
  status          TEXT   NOT NULL CHECK (status = 'pending' OR status = 'retry_wait' OR status = 'buffered' OR status = 'completed' OR status = 'failed' OR status = 'skipped'),
  attempts        BIGINT NOT NULL DEFAULT 0,
  next_attempt_ms BIGINT,
  call_id         TEXT   NOT NULL,
  lateness_ms     BIGINT,
  error           TEXT   NOT NULL DEFAULT '',
  claimed_at      BIGINT NOT NULL,
  updated_at      BIGINT NOT NULL,
  origin          TEXT   NOT NULL DEFAULT 'schedule' CHECK (origin = 'schedule' OR origin = 'trigger' OR origin = 'backfill')
);
CREATE INDEX timer_occurrences_pending ON timer_occurrences (status) WHERE status = 'pending';
CREATE INDEX timer_occurrences_retry_wait ON timer_occurrences (next_attempt_ms, id) WHERE status = 'retry_wait';
CREATE INDEX timer_occurrences_active ON timer_occurrences (timer_id, status) WHERE (status = 'pending' OR status = 'retry_wait' OR status = 'buffered');
CREATE INDEX timer_occurrences_ended ON timer_occurrences (updated_at) WHERE (status = 'completed' OR status = 'failed' OR status = 'skipped');

-- The leader's lease: one row. term grows at every takeover; every write transaction of the
-- leader reads it FOR SHARE and stops unless the term is its own (fencing).
CREATE TABLE chronolog_lease (
  id          INTEGER PRIMARY KEY CHECK (id = 1),
  term        BIGINT  NOT NULL,
  holder      TEXT    NOT NULL,           -- the leading owner's instance id (its connections' application_name)
  url         TEXT    NOT NULL DEFAULT '', -- the leader's advertised URL
  expires_at  TIMESTAMPTZ NOT NULL,       -- by the database's clock
  acquired_at TIMESTAMPTZ NOT NULL
);
INSERT INTO chronolog_lease (id, term, holder, expires_at, acquired_at) VALUES (1, 0, '', '-infinity', '-infinity');
