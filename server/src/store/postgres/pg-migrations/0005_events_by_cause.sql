-- The events made under a cause (an event id or a call id), in seq order: what ReadLog's `cause`
-- filter and the walk down a cause's tree read (log/cause-tree.ts), by the index, never a scan.
CREATE INDEX IF NOT EXISTS events_by_cause ON events (cause, seq);
