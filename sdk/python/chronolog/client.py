"""A small Chronolog client for Python: the generated service stubs on a channel to the owners
(:func:`chronolog.channel.connect`), and helpers for the calls most code makes (emit, call,
read, watch, register a plugin, collection documents, timers and delays).

Errors are raised as :class:`ChronologError`, a :class:`grpc.RpcError` that
also carries what the owner put in the status details: the stable
``google.rpc.ErrorInfo`` reason (e.g. ``UNDECLARED_EVENT_TYPE``) and the
``google.rpc.BadRequest`` field violations (JSON pointers such as
``data/amount``).

Proto field names that are Python keywords (``Actor.for`` and ``Actor.in``)
are reached with ``getattr(actor, "for")``; :func:`chronolog.values.actor_to_dict` does that.
"""

from __future__ import annotations

from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeoutError
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Iterator, Mapping, Optional, Sequence, Union

import grpc
from google.protobuf import json_format

from chronolog.channel import DEFAULT_URL, connect
from chronolog.errors import ChronologError
from chronolog.owners import DEFAULT_FAILOVER_TIMEOUT_S, Reopening, owners_of
from chronolog.publisher import Publisher
from chronolog.streams import ExpectedVersion, StreamEntry, read_stream_pages, stream_fields
from chronolog.time_requests import DELAY_KEYS, TIMER_KINDS, cancel_on_entries, delay_request, overdue_bound, timer_spec
from chronolog.values import actor_from_dict, from_struct, to_struct
from chronolog.gen.chronolog.v1 import (
    action_pb2,
    action_pb2_grpc,
    admin_pb2_grpc,
    collection_pb2,
    collection_pb2_grpc,
    event_pb2,
    log_pb2,
    log_pb2_grpc,
    plugin_pb2,
    plugin_pb2_grpc,
    time_pb2,
    time_pb2_grpc,
)

__all__ = ["CallResult", "DocumentWriteResult", "DelayResult", "Client"]


@dataclass
class CallResult:
    """The result of an action call: its call id, the output and whether it was answered from the log."""

    call_id: str
    output: dict = field(default_factory=dict)
    from_log: bool = False


@dataclass
class DocumentWriteResult:
    """A document write's outcome: the document after it (None after a delete) and the seq of its change event (0 when the collection writes none)."""

    doc: Optional[dict]
    seq: int


@dataclass
class DelayResult:
    """An armed delay: the id that cancels it and when it is due (UTC)."""

    delay_id: str
    due: Optional[datetime]


class Client:
    """A client of one owner, or of the leader among several (see :func:`connect`): the
    generated stubs (``log``, ``actions``, ``plugins``, ``collections``, ``time``, ``admin``) plus helpers: emit,
    call, read, watch, register_plugin; create/replace/patch/delete/get/find
    documents; schedule, unschedule, delay, cancel_delay, list_timers,
    get_timer.

    Every helper raises :class:`ChronologError` when the owner refuses.
    Use it as a context manager, or call :meth:`close`.
    """

    def __init__(
        self,
        url: Union[str, Sequence[str]] = DEFAULT_URL,
        token: Optional[str] = None,
        *,
        root_certificates: Optional[bytes] = None,
        channel: Optional[grpc.Channel] = None,
        emit_via: str = "stream",
        failover_timeout_s: float = DEFAULT_FAILOVER_TIMEOUT_S,
        reads: str = "leader",
    ):
        """Connects to ``url`` with ``token`` (see :func:`connect`: one owner, or the leader among
        several given as a comma-separated list or a list, with ``failover_timeout_s``; ``reads="any"``
        sends reads to any of them, a standby included), or wraps an existing ``channel``.

        ``emit_via``: ``"stream"`` (default) sends emits on one Publish stream (see
        :class:`chronolog.publisher.Publisher`: many in flight share the owner's commits; each
        gets an id here when none is given, so one sent again after a break is written once);
        ``"unary"`` sends one Emit call each.
        """
        if emit_via not in ("stream", "unary"):
            raise ValueError(f"emit_via {emit_via!r}: expected 'stream' or 'unary'")
        self.channel = channel if channel is not None else connect(url, token, root_certificates, failover_timeout_s=failover_timeout_s, reads=reads)
        self._owns_channel = channel is None
        self.log = log_pb2_grpc.LogServiceStub(self.channel)
        self.actions = action_pb2_grpc.ActionServiceStub(self.channel)
        self.plugins = plugin_pb2_grpc.PluginServiceStub(self.channel)
        self.collections = collection_pb2_grpc.CollectionServiceStub(self.channel)
        self.time = time_pb2_grpc.TimeServiceStub(self.channel)
        self.admin = admin_pb2_grpc.AdminServiceStub(self.channel)
        self.publisher = Publisher(self.channel, lambda request, timeout: self._unary(self.log.Emit, request, timeout)) if emit_via == "stream" else None

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Closes the publish stream and the channel (if this client opened it)."""
        if self.publisher is not None:
            self.publisher.close()
        if self._owns_channel:
            self.channel.close()

    def emit(
        self,
        type: str,
        data: Optional[Mapping[str, Any]] = None,
        *,
        id: str = "",
        cause: Optional[event_pb2.Cause] = None,
        actor: Optional[Mapping[str, str]] = None,
        stream: Optional[str] = None,
        expected_version: Optional[ExpectedVersion] = None,
        timeout: Optional[float] = None,
    ) -> log_pb2.EmitResponse:
        """Emits one event and returns the EmitResponse (``event``, ``existing``).

        ``id`` makes the emit idempotent; ``cause`` is set by code working under
        a delivery or an action run (the owner then derives the id and actor);
        ``actor`` asserts actor fields (``{"id", "for", "in", "via"}``).
        ``stream`` appends the event to that stream (e.g. ``"order-o-1"``) at its next
        position (``stream_position`` of the answer), checked against ``expected_version``
        (``"no_stream"``, ``"any"`` or the stream's last position) in the commit:
        FAILED_PRECONDITION (reason ``WRONG_EXPECTED_VERSION``, ``metadata["actual_version"]``)
        otherwise; such an emit goes as a unary call.
        On the publish stream (the default) the returned event's data is in
        ``data_json`` (:func:`event_data` reads either form); ``timeout`` bounds
        the wait for the ack.
        """
        if self.publisher is None or stream is not None:
            fields = stream_fields(stream, expected_version)
            request = log_pb2.EmitRequest(type=type, data=to_struct(data, "data"), id=id, cause=cause, actor=actor_from_dict(actor), **fields)
            return self._unary(self.log.Emit, request, timeout)
        stream_fields(stream, expected_version)  # an expected version without a stream is refused
        try:
            return self.publish(type, data, id=id, cause=cause, actor=actor).result(timeout)
        except FutureTimeoutError:
            raise ChronologError(grpc.StatusCode.DEADLINE_EXCEEDED, f"no ack within {timeout} s (the event may still be written; give an id to retry safely)") from None

    def publish(
        self,
        type: str,
        data: Optional[Mapping[str, Any]] = None,
        *,
        id: str = "",
        cause: Optional[event_pb2.Cause] = None,
        actor: Optional[Mapping[str, str]] = None,
    ) -> "Future[log_pb2.EmitResponse]":
        """Emits one event without waiting: a future of its EmitResponse (or of its
        :class:`ChronologError`). Many publishes in flight share the owner's commits;
        they are written in call order. A client made with ``emit_via="unary"`` sends
        an Emit call and returns its answer as a done future."""
        if self.publisher is not None:
            return self.publisher.publish(type, data, id=id, cause=cause, actor=actor_from_dict(actor))
        future: Future = Future()
        try:
            future.set_result(self.emit(type, data, id=id, cause=cause, actor=actor))
        except ChronologError as e:
            future.set_exception(e)
        return future

    def call(
        self,
        action: str,
        input: Optional[Mapping[str, Any]] = None,
        *,
        call_id: str = "",
        cause: Optional[event_pb2.Cause] = None,
        actor: Optional[Mapping[str, str]] = None,
        timeout: Optional[float] = None,
    ) -> CallResult:
        """Calls an action ``plugin.action`` and waits for its output.

        A failed run raises ABORTED with the action's error; no executor within
        the deadline raises UNAVAILABLE.
        """
        request = action_pb2.CallActionRequest(action=action, input=to_struct(input, "input"), call_id=call_id, cause=cause, actor=actor_from_dict(actor))
        response = self._unary(self.actions.CallAction, request, timeout)
        return CallResult(call_id=response.call_id, output=from_struct(response.output), from_log=response.from_log)

    def get_event(self, id: str, *, timeout: Optional[float] = None) -> event_pb2.Event:
        """One event by id; NOT_FOUND when absent."""
        return self._unary(self.log.GetEvent, log_pb2.GetEventRequest(id=id), timeout).event

    def head(self) -> int:
        """The log's last seq."""
        return self._unary(self.log.ReadLog, log_pb2.ReadLogRequest(page_size=1), None).head_seq

    def emit_batch(self, events: Sequence[Mapping[str, Any]], *, timeout: Optional[float] = None) -> list:
        """Emits several events in one commit (all or none), each a mapping of ``type``, ``data`` and
        optionally ``id``, ``stream`` and ``expected_version``: expectations are checked in order (a
        second event to one stream expects the version the first left). Returns the EmitResponses."""
        requests = [
            log_pb2.EmitRequest(type=e["type"], data=to_struct(e.get("data"), "data"), id=e.get("id", ""), **stream_fields(e.get("stream"), e.get("expected_version")))
            for e in events
        ]
        return list(self._unary(self.log.EmitBatch, log_pb2.EmitBatchRequest(events=requests), timeout).results)

    def read_stream(self, stream: str, *, from_position: Optional[int] = None, backwards: bool = False, page_size: int = 100) -> Iterator[StreamEntry]:
        """Yields the events of ``stream`` as :class:`StreamEntry` (``position``, ``event``) in position
        order (newest first with ``backwards``), from ``from_position`` (inclusive) when given, page by page."""
        return read_stream_pages(lambda request: self._unary(self.log.ReadStream, request, None), stream, from_position, backwards, page_size)

    def read(
        self, after_seq: int = 0, types: Sequence[str] = (), where: Optional[Mapping[str, Any]] = None, page_size: int = 500, *, from_first_seq: bool = False
    ) -> Iterator[event_pb2.Event]:
        """Yields every matching event after ``after_seq`` up to the head, page by page.

        When retention removed the events after ``after_seq`` (it is below the log's first seq),
        the read fails with OUT_OF_RANGE (``BEFORE_LOG_START``), or with ``from_first_seq`` starts
        at the log's first kept seq instead.
        """
        token = ""
        while True:
            request = log_pb2.ReadLogRequest(
                after_seq=after_seq,
                types=list(types),
                where=to_struct(where) if where else None,
                page_size=page_size,
                page_token=token,
                from_first_seq=from_first_seq,
            )
            page = self._unary(self.log.ReadLog, request, None)
            yield from page.events
            token = page.next_page_token
            if not token:
                return

    def watch(
        self, after_seq: int = 0, types: Sequence[str] = (), where: Optional[Mapping[str, Any]] = None, *, data_json: bool = True, from_first_seq: bool = False
    ) -> Iterator[event_pb2.Event]:
        """Follows the log: yields matching events after ``after_seq``, then live ones.

        With ``data_json`` (default) each event's data comes as JSON text in
        ``event.data_json`` (read it with :func:`event_data`); False asks for
        the Struct in ``event.data``. The stream is cancelled when the
        generator is closed (``break`` out of the loop, or ``close()`` it).
        With several owners, a watch broken by an owner lost or stopping is
        opened again at the leader, after the last event it gave (no event
        twice), for up to ``failover_timeout_s``. ``from_first_seq``: as for :meth:`read`, and a
        watch that retention overtakes goes on from the log's first kept seq.
        """
        where_struct = to_struct(where) if where else None
        reopening = Reopening(owners_of(self.channel))
        while True:
            stream = self.log.Watch(log_pb2.WatchRequest(after_seq=after_seq, types=list(types), where=where_struct, data_json=data_json, from_first_seq=from_first_seq))
            try:
                for item in stream:
                    reopening.progressed()
                    if item.WhichOneof("message") == "event":
                        after_seq = item.event.seq
                        yield item.event
                return
            except grpc.RpcError as e:
                if reopening.again(e):
                    continue
                if e.code() != grpc.StatusCode.CANCELLED:
                    raise ChronologError.from_rpc_error(e) from None
                return
            finally:
                stream.cancel()

    # collections

    def create_document(
        self,
        collection: str,
        doc: Mapping[str, Any],
        *,
        cause: Optional[event_pb2.Cause] = None,
        actor: Optional[Mapping[str, str]] = None,
        timeout: Optional[float] = None,
    ) -> DocumentWriteResult:
        """Creates a document; ``_id`` is generated when absent (derived under a ``cause``). ALREADY_EXISTS when taken."""
        request = collection_pb2.CreateDocumentRequest(collection=collection, doc=to_struct(doc, "doc"), cause=cause, actor=actor_from_dict(actor))
        return _write_result(self._unary(self.collections.CreateDocument, request, timeout))

    def replace_document(
        self,
        collection: str,
        id: str,
        doc: Mapping[str, Any],
        *,
        cause: Optional[event_pb2.Cause] = None,
        actor: Optional[Mapping[str, str]] = None,
        timeout: Optional[float] = None,
    ) -> DocumentWriteResult:
        """Replaces document ``id``. NOT_FOUND when absent."""
        request = collection_pb2.ReplaceDocumentRequest(collection=collection, id=id, doc=to_struct(doc, "doc"), cause=cause, actor=actor_from_dict(actor))
        return _write_result(self._unary(self.collections.ReplaceDocument, request, timeout))

    def patch_document(
        self,
        collection: str,
        id: str,
        set: Optional[Mapping[str, Any]] = None,
        unset: Sequence[str] = (),
        *,
        cause: Optional[event_pb2.Cause] = None,
        actor: Optional[Mapping[str, str]] = None,
        timeout: Optional[float] = None,
    ) -> DocumentWriteResult:
        """Sets fields (``set``, by dotted path) and removes paths (``unset``) of document ``id``. NOT_FOUND when absent."""
        request = collection_pb2.PatchDocumentRequest(collection=collection, id=id, set=to_struct(set, "set"), unset=list(unset), cause=cause, actor=actor_from_dict(actor))
        return _write_result(self._unary(self.collections.PatchDocument, request, timeout))

    def delete_document(
        self,
        collection: str,
        id: str,
        *,
        cause: Optional[event_pb2.Cause] = None,
        actor: Optional[Mapping[str, str]] = None,
        timeout: Optional[float] = None,
    ) -> DocumentWriteResult:
        """Deletes document ``id``; the result has ``doc`` None and the seq of its ``.deleted`` event (0 when none). NOT_FOUND when absent."""
        request = collection_pb2.DeleteDocumentRequest(collection=collection, id=id, cause=cause, actor=actor_from_dict(actor))
        return DocumentWriteResult(doc=None, seq=self._unary(self.collections.DeleteDocument, request, timeout).seq)

    def get_document(self, collection: str, id: str, *, cause: Optional[event_pb2.Cause] = None, timeout: Optional[float] = None) -> dict:
        """Document ``id``. NOT_FOUND when absent or in a space the caller (or ``cause``'s actor) may not read."""
        response = self._unary(self.collections.GetDocument, collection_pb2.GetDocumentRequest(collection=collection, id=id, cause=cause), timeout)
        return from_struct(response.document.doc)

    def find_documents(
        self,
        collection: str,
        filter: Optional[Mapping[str, Any]] = None,
        sort: Optional[Mapping[str, int]] = None,
        limit: int = 0,
        *,
        cause: Optional[event_pb2.Cause] = None,
        timeout: Optional[float] = None,
    ) -> list:
        """Documents matching a MongoDB ``filter``, sorted (``{"field": 1 or -1}``, default ``_id`` order), at most ``limit`` (default 100, at most 1000)."""
        request = collection_pb2.FindDocumentsRequest(
            collection=collection, filter=to_struct(filter) if filter else None, sort=to_struct(sort) if sort else None, limit=limit, cause=cause
        )
        return [from_struct(d.doc) for d in self._unary(self.collections.FindDocuments, request, timeout).documents]

    # time

    def schedule(
        self,
        action: str,
        input: Optional[Mapping[str, Any]],
        when: Mapping[str, Any],
        *,
        timer_id: str = "",
        overdue: Union[str, Mapping[str, Any]] = "unbounded",
        cancel_on: Sequence[Mapping[str, Any]] = (),
        cause: Optional[event_pb2.Cause] = None,
        actor: Optional[Mapping[str, str]] = None,
        timeout: Optional[float] = None,
    ) -> time_pb2.Timer:
        """Sets a timer calling ``action`` with ``input`` and returns it as stored (its ``next_due``).

        ``when``: ``{"at": moment}``, ``{"cron": expr, "zone": iana}`` or
        ``{"every_ms": n}`` (see :func:`timer_spec`). The same ``timer_id``
        replaces that timer; without one the id is derived under a ``cause``,
        generated otherwise. ``overdue`` bounds how late each occurrence may be
        made (see :func:`overdue_bound`; default unbounded). Errors: NOT_FOUND
        (undeclared action), PERMISSION_DENIED (its ``allow`` excludes the
        caller), INVALID_ARGUMENT (input schema, bad cron or zone, ``at`` in the
        past, ``every_ms`` below 1,000), FAILED_PRECONDITION (the id is a
        delay's or a declared schedule's). ``cancel_on``: events that cancel the timer while it
        is pending (see :func:`cancel_on_entries`).
        """
        request = time_pb2.ScheduleRequest(
            timer_id=timer_id,
            action=action,
            input=to_struct(input, "input"),
            spec=timer_spec(when),
            overdue=overdue_bound(overdue),
            cause=cause,
            actor=actor_from_dict(actor),
            cancel_on=cancel_on_entries(cancel_on),
        )
        return self._unary(self.time.Schedule, request, timeout).timer

    def unschedule(self, timer_id: str, *, cause: Optional[event_pb2.Cause] = None, timeout: Optional[float] = None) -> None:
        """Stops runtime timer ``timer_id``. NOT_FOUND when unknown; FAILED_PRECONDITION for a delay or a declared schedule."""
        self._unary(self.time.Unschedule, time_pb2.UnscheduleRequest(timer_id=timer_id, cause=cause), timeout)

    def delay(
        self,
        action: str,
        input: Optional[Mapping[str, Any]],
        when: Mapping[str, Any],
        overdue: Union[str, Mapping[str, Any]],
        *,
        fresh_chain: bool = False,
        cause: Optional[event_pb2.Cause] = None,
        actor: Optional[Mapping[str, str]] = None,
        delay_id: str = "",
        cancel_on: Sequence[Mapping[str, Any]] = (),
        timeout: Optional[float] = None,
    ) -> DelayResult:
        """Arms one call of ``action`` later: ``when`` is ``{"interval_ms": n}`` from now or ``{"at": moment}``.

        ``overdue`` is required: ``"unbounded"``, ``{"max_lateness_ms": n}`` or
        ``"on_time_or_never"``. Under a ``cause`` the delay id is derived and
        the call continues the cause's chain unless ``fresh_chain``.
        From outside, ``delay_id`` (chosen by the client; no ``/``) makes it
        safe to retry: the same request with the same id returns that
        delay and arms nothing, even after it was made or cancelled; another
        request with it is ALREADY_EXISTS; an id naming a schedule is
        FAILED_PRECONDITION. It must be empty under a ``cause``.
        ``cancel_on``: events that cancel the delay while it is pending, e.g.
        ``[{"type": "order.paid", "match": {"data.order_id": "input.order_id"}}]`` (see
        :func:`cancel_on_entries`). Errors as :meth:`schedule`; FAILED_PRECONDITION past the
        owner's maximum chain depth.
        """
        request = delay_request(action, input, when, overdue, fresh_chain=fresh_chain, cause=cause, actor=actor, delay_id=delay_id, cancel_on=cancel_on)
        response = self._unary(self.time.Delay, request, timeout)
        return DelayResult(delay_id=response.delay_id, due=response.due.ToDatetime(tzinfo=timezone.utc) if response.HasField("due") else None)

    def delay_batch(self, delays: Sequence[Mapping[str, Any]], *, timeout: Optional[float] = None) -> list:
        """Arms up to 10,000 delays in one call, each a mapping of :meth:`delay`'s arguments
        (``action``, ``input``, ``when``, ``overdue`` and optionally ``delay_id``, ``actor``,
        ``cause``, ``fresh_chain``). All are checked, then all commit together or none do (an
        error names the delay, e.g. ``delays[3].delay_id``). Returns a :class:`DelayResult` per
        delay, in order. Give each a ``delay_id`` to make the batch safe to retry.
        """
        requests = []
        for i, d in enumerate(delays):
            unknown = sorted(set(d) - DELAY_KEYS)
            if unknown:
                raise ValueError(f"delays[{i}]: unknown key {unknown[0]!r} (a delay takes {', '.join(sorted(DELAY_KEYS))})")
            try:
                requests.append(delay_request(**d))
            except (TypeError, ValueError) as e:
                raise ValueError(f"delays[{i}]: {e}") from e
        response = self._unary(self.time.DelayBatch, time_pb2.DelayBatchRequest(delays=requests), timeout)
        return [DelayResult(delay_id=r.delay_id, due=r.due.ToDatetime(tzinfo=timezone.utc) if r.HasField("due") else None) for r in response.results]

    def cancel_delay(self, delay_id: str, *, cause: Optional[event_pb2.Cause] = None, timeout: Optional[float] = None) -> None:
        """Cancels a pending delay. NOT_FOUND when unknown or already made."""
        self._unary(self.time.CancelDelay, time_pb2.CancelDelayRequest(delay_id=delay_id, cause=cause), timeout)

    def list_timers(self, kind: Optional[str] = None, page_size: int = 0) -> Iterator[time_pb2.Timer]:
        """Yields every timer the caller may read, pending ones by next due moment first, page by page; ``kind`` is ``"runtime"``, ``"declared"`` or ``"delay"``.

        A timer's ``input`` is there only when the caller may read its action's events (else ``input_withheld``, whoever set it)."""
        if kind is not None and kind not in TIMER_KINDS:
            raise ValueError(f"kind {kind!r}: expected one of {', '.join(TIMER_KINDS)}")
        token = ""
        while True:
            request = time_pb2.ListTimersRequest(kind=TIMER_KINDS.get(kind or "", time_pb2.TIMER_KIND_UNSPECIFIED), page_size=page_size, page_token=token)
            page = self._unary(self.time.ListTimers, request, None)
            yield from page.timers
            token = page.next_page_token
            if not token:
                return

    def get_timer(self, timer_id: str, preview_count: int = 0, *, timeout: Optional[float] = None) -> time_pb2.Timer:
        """Timer ``timer_id`` with its next ``preview_count`` fire times in ``preview`` (at most 100), its input as ``list_timers`` gives it. NOT_FOUND when unknown."""
        return self._unary(self.time.GetTimer, time_pb2.GetTimerRequest(timer_id=timer_id, preview_count=preview_count), timeout).timer

    def register_plugin(self, manifest: "plugin_pb2.PluginManifest | Mapping[str, Any]") -> plugin_pb2.RegisterPluginResponse:
        """Registers (or updates) a plugin manifest, given as a message or in its JSON form (admin only)."""
        if not isinstance(manifest, plugin_pb2.PluginManifest):
            manifest = json_format.ParseDict(dict(manifest), plugin_pb2.PluginManifest())
        return self._unary(self.plugins.RegisterPlugin, plugin_pb2.RegisterPluginRequest(manifest=manifest), None)

    @staticmethod
    def _unary(method, request, timeout: Optional[float]):
        """Runs a unary call, turning a failure into a ChronologError."""
        try:
            return method(request, timeout=timeout)
        except grpc.RpcError as e:
            raise ChronologError.from_rpc_error(e) from None


def _write_result(response: Any) -> DocumentWriteResult:
    """A Create/Replace/PatchDocumentResponse as a DocumentWriteResult."""
    return DocumentWriteResult(doc=from_struct(response.document.doc) if response.HasField("document") else None, seq=response.seq)
