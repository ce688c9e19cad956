-- Documents of durable collections. `doc` is the whole JSON
-- object, `_id` included; collection names are global (like event types).
CREATE TABLE documents (
  collection TEXT NOT NULL,
  id         TEXT NOT NULL,
  doc        TEXT NOT NULL,            -- JSON object
  PRIMARY KEY (collection, id)
) STRICT, WITHOUT ROWID;

-- Writes done under a cause in durable collections that write no
-- change event (`events: false`, `records`): the derived write id, so a
-- retried write is answered instead of applied twice. Collections that write
-- events find the id in the log instead.
CREATE TABLE collection_writes (
  id         TEXT    PRIMARY KEY,      -- derivedId(cause, position, {collection, op, id, input})
  collection TEXT    NOT NULL,
  doc_id     TEXT    NOT NULL,         -- the document written
  at         INTEGER NOT NULL          -- commit time, ms since the epoch, UTC
) STRICT;
