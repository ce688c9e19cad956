-- Trace context (tracing/): the W3C `traceparent` of the span that made an event, started an action
-- call or set a timer, followed by a space and its `tracestate` when one came. NULL when the owner
-- records no traces (the default) or nothing traced the work. As SQLite's migration 0016.
ALTER TABLE events ADD COLUMN trace TEXT;
ALTER TABLE action_calls ADD COLUMN trace TEXT;
ALTER TABLE timers ADD COLUMN trace TEXT;
