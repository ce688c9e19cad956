"""The Python SDK's StreamClock: the owner's stream clock (``Invocation.written_at_ms``)
on the executor's monotonic clock, so a held invocation counts its hold from its writing.
Needs no owner:

    PYTHONPATH=sdk/python .venv/bin/python -m unittest -v sdk/python/tests/test_stream_clock.py
"""

import unittest

from chronolog.stream_clock import StreamClock


class StreamClockTest(unittest.TestCase):
    """The least offset (receipt − written_at_ms) of the last one to two 5 s windows."""

    def test_queued_message_counts_from_its_writing(self):
        """Not set: the receipt; a message that queued 30 ms more than the fastest counts from its writing."""
        clock = StreamClock()
        self.assertEqual(clock.written_at(0, 500), 500)
        self.assertEqual(clock.written_at(10, 1_015), 1_015)
        self.assertEqual(clock.written_at(20, 1_022), 1_022)
        self.assertEqual(clock.written_at(30, 1_062), 1_032)

    def test_follows_a_slower_path_within_two_windows(self):
        """An old fast transit stops counting two windows later."""
        clock = StreamClock()
        clock.written_at(0.5, 1)
        self.assertEqual(clock.written_at(4_000, 4_010), 4_000.5)
        self.assertEqual(clock.written_at(6_000, 6_010), 6_000.5)
        self.assertEqual(clock.written_at(12_000, 12_010), 12_010)
        self.assertEqual(clock.written_at(612_000, 612_060), 612_060)


if __name__ == "__main__":
    unittest.main()
