-- Fewer index writes per timer call (bench/timers: a fired delay wrote five index entries at
-- pages spread over the whole index, each a 4 KiB page in the WAL; now three).
--
-- timers_by_due holds only timers with a next due moment: a spent timer (a fired delay or
-- one-shot, next_due_ms NULL) leaves it instead of moving to its NULL head, where entries sort
-- by id and each landed on a page of its own. Every query on it names `next_due_ms IS NOT NULL`
-- or compares next_due_ms, so SQLite keeps using it; the spent tail of ListTimers reads by id.
DROP INDEX timers_by_due;
CREATE INDEX timers_by_due ON timers (next_due_ms, id) WHERE next_due_ms IS NOT NULL;

-- timer_occurrences_by_timer (every occurrence by timer) is gone: the overlap queries use
-- timer_occurrences_active, and the retention sweep now deletes a spent timer once none of its
-- occurrences is active (ended ones go by their own age), which that index answers too.
DROP INDEX timer_occurrences_by_timer;
