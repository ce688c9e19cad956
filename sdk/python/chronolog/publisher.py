"""The client side of ``LogService.Publish``: the Python SDK's default emit path.

One stream per client, opened on first use. Emits are pipelined on it (many in flight, never
more unacknowledged than the window the owner grants in its welcome; before it, one), each
answered by its ack once the commit holding it is durable. Every emit carries an id (made here
when none was given; under a cause the owner derives it), so after a break (the owner restarted,
the connection dropped) the stream is opened again and the emits not yet acknowledged are sent
again under their ids: the owner answers those it already has from the log (``existing``) and
writes the others once. An owner without Publish (UNIMPLEMENTED) makes it fall back to unary
Emit for good.

Threads: the callers of :meth:`Publisher.publish`; grpc's thread reading the request iterator;
one reader thread per stream answering the futures. Every state change happens under one lock.
"""

from __future__ import annotations

import collections
import json
import os
import queue
import threading
import time
from concurrent.futures import Future
from typing import Any, Callable, Mapping, Optional

import grpc

from chronolog.errors import ChronologError, FieldViolation
from chronolog.json_check import non_finite
from chronolog.tracing import current_trace_headers
from chronolog.gen.chronolog.v1 import event_pb2, log_pb2, log_pb2_grpc

__all__ = ["Publisher", "new_event_id"]

#: Stream errors after which the stream is opened again and the emits in flight are sent again (with their ids).
_RETRYABLE = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN, grpc.StatusCode.ABORTED, grpc.StatusCode.CANCELLED, grpc.StatusCode.DEADLINE_EXCEEDED}
#: A stream message holds emits of at most about this many bytes of data.
_MESSAGE_BYTES = 512 * 1024
#: Data larger than this (JSON bytes) goes by unary Emit: one such event would fill a stream message.
_LARGE_DATA_BYTES = 256 * 1024


def new_event_id() -> str:
    """A fresh event id: a UUIDv7 (time-ordered, as the owner makes them)."""
    ms = time.time_ns() // 1_000_000
    b = bytearray(ms.to_bytes(6, "big") + os.urandom(10))
    b[6] = (b[6] & 0x0F) | 0x70
    b[8] = (b[8] & 0x3F) | 0x80
    h = b.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


class _Item:
    __slots__ = ("ref", "request", "future", "size")

    def __init__(self, ref: int, request: log_pb2.EmitRequest, future: Future, size: int):
        self.ref = ref
        self.request = request
        self.future = future
        self.size = size


class _Stream:
    """One Publish call: its request queue (None ends it) and the call."""

    def __init__(self) -> None:
        self.requests: "queue.SimpleQueue[Optional[log_pb2.PublishRequest]]" = queue.SimpleQueue()
        self.call: Any = None
        self.closed = False

    def iterate(self):
        while True:
            message = self.requests.get()
            if message is None:
                return
            yield message

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.requests.put(None)


class Publisher:
    """Pipelines emits on one Publish stream (see the module's docstring).

    ``unary(request, timeout)`` sends one EmitRequest as a unary Emit (the fallback, and the path
    of large events); ``idle_s``: the stream is closed after that long with nothing in flight
    (the next emit opens another); ``reconnect_for_s``: how long a broken stream is opened again
    without a welcome before its emits fail with the last error.
    """

    def __init__(self, channel: grpc.Channel, unary: Callable[[log_pb2.EmitRequest, Optional[float]], log_pb2.EmitResponse], *, idle_s: float = 0.2, reconnect_for_s: float = 30.0):
        self._stub = log_pb2_grpc.LogServiceStub(channel)
        self._unary = unary
        self._idle_s = idle_s
        self._reconnect_for_s = reconnect_for_s
        self._lock = threading.Lock()
        self._queue: "collections.deque[_Item]" = collections.deque()
        self._in_flight: "collections.deque[_Item]" = collections.deque()
        self._stream: Optional[_Stream] = None
        self._window = 1
        self._next_ref = 1
        self._use_unary = False
        self._broken_since: Optional[float] = None
        self._retry_s = 0.05
        self._idle_timer: Optional[threading.Timer] = None
        self._closed = False

    def publish(
        self,
        type: str,
        data: Optional[Mapping[str, Any]] = None,
        *,
        id: str = "",
        cause: Optional[event_pb2.Cause] = None,
        actor: Optional[event_pb2.Actor] = None,
    ) -> "Future[log_pb2.EmitResponse]":
        """Queues one emit; the future resolves with its EmitResponse once durable (or raises its ChronologError).

        The returned event has its data as JSON text in ``data_json`` (read it with
        ``event_data``), not as a Struct.
        """
        problem = non_finite(data or {}, "data")
        if problem:
            raise ValueError(problem)
        text = json.dumps(dict(data or {}), separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()
        if not id and cause is None:
            id = new_event_id()
        request = log_pb2.EmitRequest(type=type, data_json=text, id=id, cause=cause, actor=actor)
        trace_headers = current_trace_headers()  # the stream is shared by many traces: each emit says its own
        if trace_headers is not None:
            request.traceparent, request.tracestate = trace_headers
        future: Future = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("the client is closed")
            if self._use_unary or len(text) > _LARGE_DATA_BYTES:
                use_unary = True
            else:
                use_unary = False
                self._queue.append(_Item(self._next_ref, request, future, len(text)))
                self._next_ref += 1
                self._cancel_idle()
                self._pump()
        if use_unary:
            self._emit_unary(request, future)
        return future

    def close(self) -> None:
        """Ends the stream (emits not yet acknowledged fail with CANCELLED)."""
        with self._lock:
            self._closed = True
            self._cancel_idle()
            stream, self._stream = self._stream, None
            pending = list(self._in_flight) + list(self._queue)
            self._in_flight.clear()
            self._queue.clear()
        if stream is not None:
            stream.close()
            if stream.call is not None:
                stream.call.cancel()
        for item in pending:
            if not item.future.done():
                item.future.set_exception(_error(grpc.StatusCode.CANCELLED, "the client was closed before the owner acknowledged this emit"))

    # --- under the lock ---------------------------------------------------------------------

    def _pump(self) -> None:
        if not self._queue:
            return
        if self._stream is None:
            self._open()
        room = self._window - len(self._in_flight)
        while room > 0 and self._queue:
            emits = []
            size = 0
            while room > 0 and self._queue and (size == 0 or size + self._queue[0].size <= _MESSAGE_BYTES):
                item = self._queue.popleft()
                self._in_flight.append(item)
                emits.append(log_pb2.PublishEmit(ref=item.ref, event=item.request))
                size += item.size
                room -= 1
            self._stream.requests.put(log_pb2.PublishRequest(emits=emits))

    def _open(self) -> None:
        stream = _Stream()
        self._stream = stream
        self._window = 1  # until the welcome says
        stream.call = self._stub.Publish(stream.iterate())
        threading.Thread(target=self._read, args=(stream,), name="chronolog-publish", daemon=True).start()

    def _cancel_idle(self) -> None:
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None

    # --- the reader thread --------------------------------------------------------------------

    def _read(self, stream: _Stream) -> None:
        error: Optional[grpc.RpcError] = None
        try:
            for response in stream.call:
                kind = response.WhichOneof("message")
                with self._lock:
                    if self._stream is not stream:
                        break
                    if kind == "welcome":
                        self._window = max(1, response.welcome.window)
                        self._broken_since = None
                        self._retry_s = 0.05
                    elif kind == "acks":
                        answered = [(self._in_flight.popleft(), ack) for ack in response.acks.acks if self._in_flight]
                    self._pump()
                    if kind == "acks" and not self._in_flight and not self._queue:
                        self._idle_timer = threading.Timer(self._idle_s, self._idle_close, args=(stream,))
                        self._idle_timer.daemon = True
                        self._idle_timer.start()
                if kind == "acks":
                    for item, ack in answered:
                        _answer(item, ack)
        except grpc.RpcError as e:
            error = e
        self._ended(stream, error)

    def _idle_close(self, stream: _Stream) -> None:
        with self._lock:
            if self._stream is not stream or self._in_flight or self._queue:
                return
            self._stream = None
        stream.close()

    def _ended(self, stream: _Stream, error: Optional[grpc.RpcError]) -> None:
        failed: list = []
        unary: list = []
        with self._lock:
            if self._stream is not stream:
                return
            self._stream = None
            stream.close()
            self._queue.extendleft(reversed(self._in_flight))
            self._in_flight.clear()
            if not self._queue or self._closed:
                return
            code = error.code() if error is not None else grpc.StatusCode.UNAVAILABLE
            if code == grpc.StatusCode.UNIMPLEMENTED:
                self._use_unary = True
                unary = list(self._queue)
                self._queue.clear()
            else:
                now = time.monotonic()
                if self._broken_since is None:
                    self._broken_since = now
                if code not in _RETRYABLE or now - self._broken_since > self._reconnect_for_s:
                    failed = list(self._queue)
                    self._queue.clear()
                    self._broken_since = None
                else:
                    delay, self._retry_s = self._retry_s, min(self._retry_s * 2, 1.0)
                    timer = threading.Timer(delay, self._retry)
                    timer.daemon = True
                    timer.start()
        for item in unary:
            self._emit_unary(item.request, item.future)
        if failed:
            reason = ChronologError.from_rpc_error(error) if error is not None else _error(grpc.StatusCode.UNAVAILABLE, "the owner ended the publish stream with emits unacknowledged")
            for item in failed:
                item.future.set_exception(reason)

    def _retry(self) -> None:
        with self._lock:
            if not self._closed:
                self._pump()

    def _emit_unary(self, request: log_pb2.EmitRequest, future: Future) -> None:
        try:
            future.set_result(self._unary(request, None))
        except Exception as e:  # noqa: BLE001 - handed to the caller
            future.set_exception(e)


def _answer(item: _Item, ack: log_pb2.PublishAck) -> None:
    """Resolves an emit's future from its ack."""
    if ack.HasField("error"):
        e = ack.error
        code = next((c for c in grpc.StatusCode if c.value[0] == e.code), grpc.StatusCode.UNKNOWN)
        item.future.set_exception(ChronologError(code, e.message, e.reason, [FieldViolation(v.field, v.description) for v in e.field_violations]))
        return
    r = item.request
    event = event_pb2.Event(seq=ack.seq, id=ack.id, type=r.type, data_json=r.data_json, cause=r.cause.event_id if r.HasField("cause") else "")
    if ack.HasField("actor"):
        event.actor.CopyFrom(ack.actor)
    if ack.HasField("at"):
        event.at.CopyFrom(ack.at)
    item.future.set_result(log_pb2.EmitResponse(event=event, existing=ack.existing))


def _error(code: grpc.StatusCode, message: str) -> ChronologError:
    return ChronologError(code, message)
