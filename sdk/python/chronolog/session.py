"""One Subscribe stream of an executor: its outgoing queue, the work running on it (to cancel),
its clock, and the owner's largest message, which the acks and action results sent on it are
cut to fit. Acks queued together go out as one AckBatch: those that ended while the stream was
writing the message before; action results likewise as one ActionResultBatch, to an owner that
accepts them (its welcome says so).
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Any, Callable, Iterator, Optional, Union

from chronolog.contexts import ActionContext, DeliveryContext
from chronolog.gen.chronolog.v1 import executor_pb2
from chronolog.stream_clock import StreamClock

__all__ = ["Session", "DEFAULT_MAX_MESSAGE_BYTES", "MAX_BATCH_ACKS", "MAX_BATCH_RESULTS", "cut_to_fit", "fitting_result"]

Outcome = executor_pb2.Outcome

#: The owner's largest message when its welcome does not say (older owners): 4 MiB.
DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024
#: Most acks in one AckBatch.
MAX_BATCH_ACKS = 256
#: Most action results in one ActionResultBatch.
MAX_BATCH_RESULTS = 256
#: Nothing held back from the queue (None there ends the stream).
_NOTHING: Any = object()


def cut_to_fit(error: str, max_bytes: int) -> str:
    """``error``, or its start when its UTF-8 could take more than an eighth of the owner's largest
    message (``max_bytes``), saying how long it was: a message the owner cannot read ends the
    stream, and the error would be lost with it."""
    room = max_bytes // 8 // 4  # characters: at most 4 UTF-8 bytes each
    return error if len(error) <= room else f"{error[:room]}… (cut from {len(error)} characters: the owner reads at most {max_bytes} bytes a message)"


def fitting_result(result: executor_pb2.ActionResult, max_bytes: int) -> executor_pb2.ActionResult:
    """``result`` with its error cut to fit (:func:`cut_to_fit`), or, when its output does not fit
    in one message of ``max_bytes`` (the owner's ``Welcome.max_message_bytes``), a TERMINAL_ERROR
    result saying so: the owner would end the stream on it, and the call would run again and again."""
    if result.error:
        result.error = cut_to_fit(result.error, max_bytes)
    size = result.ByteSize()
    if size + 16 <= max_bytes:
        return result
    error = f"the action's output is {size} bytes encoded, more than the owner reads in one message ({max_bytes} bytes): not sent"
    return executor_pb2.ActionResult(invocation_id=result.invocation_id, outcome=Outcome.OUTCOME_TERMINAL_ERROR, error=error, started_late_ms=result.started_late_ms)


class Session:
    """One Subscribe stream: its outgoing queue, the call, and whether it ended."""

    def __init__(self) -> None:
        self._queue: "queue.Queue[Optional[executor_pb2.SubscribeRequest]]" = queue.Queue()
        self.ended = threading.Event()
        self.call: Any = None
        self.last_heard = time.monotonic()
        self.cancels: dict[str, tuple[threading.Event, Union[ActionContext, DeliveryContext]]] = {}
        self.lock = threading.Lock()
        self.clock = StreamClock()
        self.max_message_bytes = DEFAULT_MAX_MESSAGE_BYTES
        # The owner accepts ActionResultBatch (its welcome said so; an older owner does not).
        self.action_result_batches = False
        # Set when the owner answered this executor's `stopping`: no more work is on its way.
        self.stopping_answered = threading.Event()
        # Says what the executor does (Executor's on_log): a handler that failed.
        self.log: Callable[[str], None] = lambda line: None

    def send(self, request: executor_pb2.SubscribeRequest) -> None:
        """Queues a message; dropped once the stream ended (the owner retries that work)."""
        if not self.ended.is_set():
            self._queue.put(request)

    def requests(self) -> Iterator[executor_pb2.SubscribeRequest]:
        """The request stream grpc consumes: the queued messages in order, an ack with the acks
        queued right after it as one AckBatch (up to :data:`MAX_BATCH_ACKS`, within an eighth of
        the owner's largest message), and, to an owner that accepts them, an action result with
        the results queued right after it as one ActionResultBatch (up to
        :data:`MAX_BATCH_RESULTS`, within half of the owner's largest message; a larger result
        goes alone)."""
        held = _NOTHING
        while True:
            item, held = (self._queue.get() if held is _NOTHING else held), _NOTHING
            if item is None:
                return
            kind = item.WhichOneof("message")
            if kind == "ack":
                budget, most = self.max_message_bytes // 8, MAX_BATCH_ACKS
            elif kind == "action_result" and self.action_result_batches:
                budget, most = self.max_message_bytes // 2, MAX_BATCH_RESULTS
            else:
                yield item
                continue
            first = getattr(item, kind)
            items = [first]
            room = budget - first.ByteSize()
            while len(items) < most:
                try:
                    after = self._queue.get_nowait()
                except queue.Empty:
                    break
                # A batch's item takes its bytes and at most 6 more (its tag and length).
                if after is None or after.WhichOneof("message") != kind or getattr(after, kind).ByteSize() + 6 > room:
                    held = after
                    break
                items.append(getattr(after, kind))
                room -= getattr(after, kind).ByteSize() + 6
            if len(items) == 1:
                yield item
            elif kind == "ack":
                yield executor_pb2.SubscribeRequest(acks=executor_pb2.AckBatch(acks=items))
            else:
                yield executor_pb2.SubscribeRequest(action_results=executor_pb2.ActionResultBatch(results=items))

    def close_sends(self) -> None:
        """Half-closes the stream after what is queued (the owner reads it, then ends the stream); later sends are dropped."""
        self._queue.put(None)

    def end(self) -> None:
        """Ends the stream: no more sends, the call is cancelled."""
        if self.ended.is_set():
            return
        self.ended.set()
        self._queue.put(None)
        if self.call is not None:
            self.call.cancel()
