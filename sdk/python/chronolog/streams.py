"""Streams: an emit's stream and expected version, and ReadStream's pages as one sequence."""

from __future__ import annotations

from typing import Callable, Iterator, NamedTuple, Optional, Union

from chronolog.gen.chronolog.v1 import event_pb2, log_pb2

__all__ = ["ExpectedVersion", "StreamEntry", "expected_version", "stream_fields", "read_stream_pages"]

#: The version a stream must be at for an append: ``"no_stream"`` (no event yet), ``"any"``, or the
#: position of its last event (an int, from 0).
ExpectedVersion = Union[str, int]


class StreamEntry(NamedTuple):
    """One event of a stream at its position."""

    position: int
    event: event_pb2.Event


def expected_version(version: ExpectedVersion) -> log_pb2.ExpectedVersion:
    """An ``ExpectedVersion`` from ``"no_stream"``, ``"any"`` or a position."""
    if version == "no_stream":
        return log_pb2.ExpectedVersion(no_stream=True)
    if version == "any":
        return log_pb2.ExpectedVersion(any=True)
    if isinstance(version, int) and not isinstance(version, bool) and version >= 0:
        return log_pb2.ExpectedVersion(position=version)
    raise ValueError(f"expected_version {version!r}: expected 'no_stream', 'any' or a position (an int from 0)")


def stream_fields(stream: Optional[str], version: Optional[ExpectedVersion]) -> dict:
    """The stream fields of an EmitRequest (none without ``stream``)."""
    if stream is None:
        if version is not None:
            raise ValueError("expected_version needs a stream")
        return {}
    fields: dict = {"stream": stream}
    if version is not None:
        fields["expected_version"] = expected_version(version)
    return fields


def read_stream_pages(
    read: Callable[[log_pb2.ReadStreamRequest], log_pb2.ReadStreamResponse], stream: str, from_position: Optional[int], backwards: bool, page_size: int
) -> Iterator[StreamEntry]:
    """Yields the entries of ``stream`` page by page (``read`` makes one ReadStream call)."""
    request = log_pb2.ReadStreamRequest(stream=stream, backwards=backwards, page_size=page_size)
    if from_position is not None:
        request.from_position = from_position
    while True:
        page = read(request)
        for e in page.events:
            yield StreamEntry(e.position, e.event)
        if not page.next_page_token:
            return
        request = log_pb2.ReadStreamRequest(stream=stream, page_size=page_size, page_token=page.next_page_token)
