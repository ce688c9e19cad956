-- Documents are separated by space like events: `space` is the `in` of the actor that
-- created the document ('' for none, or for the system). Reads and writes from outside reach a
-- document only when the principal may read events of its space (auth/principal.ts, canReach).
-- A document keeps its space for life; its change events carry it as their actor's `in`.
ALTER TABLE documents ADD COLUMN space TEXT NOT NULL DEFAULT '';

-- Documents written before this migration get the space of the actor of their latest
-- `<collection>.created` event (read through events_by_type, one collection's type at a time).
-- Documents of collections that write no events (`records`, `events: false`) have no such
-- event and stay without a space, as they were: readable by every principal.
UPDATE documents SET space = created.space
FROM (
  SELECT type, json_extract(data, '$._id') AS id, json_extract(actor, '$.in') AS space, max(seq) AS seq
  FROM events
  WHERE type IN (SELECT DISTINCT collection || '.created' FROM documents) AND actor IS NOT NULL
  GROUP BY type, id
) AS created
WHERE created.type = documents.collection || '.created' AND created.id = documents.id AND created.space IS NOT NULL AND created.space <> '';
