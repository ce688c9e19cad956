-- One scattered index write fewer per fired timer. timer_occurrences_by_timer (every occurrence,
-- by timer) took an entry per occurrence on a page anywhere in the index (one more 4 KiB page in
-- the WAL and a b-tree descent per call); it is dropped. The overlap queries use
-- timer_occurrences_active, and the retention sweep now deletes a spent timer once none of its
-- occurrences is active (ended ones go by their own age), which that index answers too.
DROP INDEX timer_occurrences_by_timer;
