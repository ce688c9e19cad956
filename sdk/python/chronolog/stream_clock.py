"""Maps the owner's stream clock onto this process's monotonic clock (Invocation.written_at_ms)."""

import math

_WINDOW_MS = 5_000.0
"""How long one window of the fastest-transit minimum lasts (ms): the estimate follows clock drift and path changes within two windows."""


class StreamClock:
    """The owner's stream clock (``written_at_ms``: ms since the stream opened, monotonic) on ours.

    Keeps the least offset (receipt − written_at_ms) seen in the last one to two windows: the
    stream's fastest transit plus the clocks' origin difference. A held invocation's hold then
    counts from when the owner wrote it, not from its receipt, so time it spent queued does not
    make the call late. One per stream (the owner's clock restarts with each stream).
    """

    def __init__(self) -> None:
        self._best = math.inf
        self._previous = math.inf
        self._window_ends = -math.inf

    def written_at(self, written_at_ms: float, received_at_ms: float) -> float:
        """Our time (ms, same clock as ``received_at_ms``) at which a message written at ``written_at_ms``
        would have come with the fastest transit seen: never after ``received_at_ms``, which it is
        when ``written_at_ms`` is 0 (not set)."""
        if written_at_ms <= 0:
            return received_at_ms
        if received_at_ms >= self._window_ends:
            # after a quiet spell, older transits no longer count
            self._previous = self._best if received_at_ms < self._window_ends + _WINDOW_MS else math.inf
            self._best = math.inf
            self._window_ends = received_at_ms + _WINDOW_MS
        self._best = min(self._best, received_at_ms - written_at_ms)
        return written_at_ms + min(self._best, self._previous)
