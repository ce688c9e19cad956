"""A small Chronolog client for Python: a channel with a bearer token, the
generated service stubs, and helpers for the calls most code makes (emit,
call, read, watch, register a plugin, collection documents, timers and
delays).

Errors are raised as :class:`ChronologError`, a :class:`grpc.RpcError` that
also carries what the owner put in the status details: the stable
``google.rpc.ErrorInfo`` reason (e.g. ``UNDECLARED_EVENT_TYPE``) and the
``google.rpc.BadRequest`` field violations (JSON pointers such as
``data/amount``).

Proto field names that are Python keywords (``Actor.for`` and ``Actor.in``)
are reached with ``getattr(actor, "for")``; :func:`actor_to_dict` does that.
"""

from __future__ import annotations

import collections
import json
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeoutError
from typing import Any, Iterator, Mapping, Optional, Sequence, Union
from urllib.parse import urlsplit

import grpc
from google.protobuf import json_format, struct_pb2, timestamp_pb2
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from chronolog.json_check import non_finite
from chronolog.owners import DEFAULT_FAILOVER_TIMEOUT_S, FollowingChannel, Owners, Reopening, owner_urls, owners_of
from chronolog.publisher import Publisher
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

__all__ = [
    "ChronologError",
    "FieldViolation",
    "CallResult",
    "DocumentWriteResult",
    "DelayResult",
    "Client",
    "connect",
    "to_struct",
    "from_struct",
    "actor_to_dict",
    "actor_from_dict",
    "event_to_dict",
    "event_data",
    "timer_spec",
    "overdue_bound",
]

DEFAULT_URL = "http://127.0.0.1:50051"


# --- JSON <-> google.protobuf.Struct -------------------------------------------------------------


def to_struct(data: Optional[Mapping[str, Any]], field: str = "data") -> struct_pb2.Struct:
    """Converts a JSON object (a dict) to a ``google.protobuf.Struct``.

    Numbers travel as doubles, as in every JSON-over-protobuf client. A float that JSON cannot
    hold (NaN, infinity) raises ``ValueError`` naming its path (``data.v: nan is not a JSON
    number``) before anything is sent: the owner would store it as null.
    """
    struct = struct_pb2.Struct()
    if data:
        problem = non_finite(data, field)
        if problem:
            raise ValueError(problem)
        json_format.ParseDict(dict(data), struct)
    return struct


def _plain(value: Any) -> Any:
    """Turns whole-number floats back into ints (a Struct stores every number as a double)."""
    if isinstance(value, float) and value.is_integer() and math.fabs(value) <= 2**53:
        return int(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def from_struct(struct: Optional[struct_pb2.Struct]) -> dict:
    """Converts a ``google.protobuf.Struct`` to a dict; whole numbers come back as ints."""
    if struct is None:
        return {}
    return _plain(json_format.MessageToDict(struct))


def actor_to_dict(actor: Optional[event_pb2.Actor]) -> Optional[dict]:
    """The actor as ``{"id", "for", "in", "via"}``, or None for none (the system).

    ``for`` and ``in`` are Python keywords, so the message's fields are read
    with getattr.
    """
    if actor is None:
        return None
    return {"id": actor.id, "for": getattr(actor, "for"), "in": getattr(actor, "in"), "via": actor.via}


def actor_from_dict(actor: Optional[Mapping[str, str]]) -> Optional[event_pb2.Actor]:
    """Builds an ``Actor`` message from ``{"id", "for", "in", "via"}`` (any may be missing)."""
    if not actor:
        return None
    return event_pb2.Actor(**{k: v for k, v in actor.items() if k in ("id", "for", "in", "via") and v})


def event_data(event: event_pb2.Event) -> dict:
    """An event's data as a dict, whichever form it came in: JSON text (``data_json``, as Watch,
    deliveries and emits on the publish stream give it by default) or a Struct (``data``)."""
    if event.data_json:
        return json.loads(event.data_json)
    return from_struct(event.data)


def event_to_dict(event: event_pb2.Event) -> dict:
    """An event as plain Python values: seq (int), id, type, data (dict), cause, actor (dict or None), at (datetime, UTC)."""
    return {
        "seq": event.seq,
        "id": event.id,
        "type": event.type,
        "data": event_data(event),
        "cause": event.cause,
        "actor": actor_to_dict(event.actor) if event.HasField("actor") else None,
        "at": event.at.ToDatetime(tzinfo=timezone.utc) if event.HasField("at") else None,
    }


# --- errors --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FieldViolation:
    """One problem named by the owner: the field (a JSON pointer such as ``data/amount``) and what is wrong."""

    field: str
    description: str


class ChronologError(grpc.RpcError):
    """An RPC the owner refused or that failed on the way.

    ``status_code`` is the gRPC status code (e.g. ``grpc.StatusCode.INVALID_ARGUMENT``;
    ``code()`` returns it too, as a ``grpc.RpcError`` does: compare ``e.code() ==
    grpc.StatusCode.NOT_FOUND``, not ``e.code``), ``message`` the owner's message naming the
    problem (``details()`` returns it too), ``reason`` the stable ``google.rpc.ErrorInfo`` reason
    when the owner sent one, and ``field_violations`` the ``google.rpc.BadRequest`` entries.
    """

    def __init__(self, code: grpc.StatusCode, message: str, reason: str = "", field_violations: Sequence[FieldViolation] = ()):
        """Builds the error; usually made by :meth:`from_rpc_error`."""
        super().__init__(f"{code.name}: {message}")
        self.status_code = code
        self.message = message
        self.reason = reason
        self.field_violations = list(field_violations)

    def code(self) -> grpc.StatusCode:  # noqa: D401 - grpc.RpcError's interface
        """The gRPC status code."""
        return self.status_code

    def details(self) -> str:
        """The owner's message."""
        return self.message

    @classmethod
    def from_rpc_error(cls, error: grpc.RpcError) -> "ChronologError":
        """Reads code, message, ErrorInfo reason and BadRequest violations from a failed call."""
        if isinstance(error, ChronologError):
            return error
        code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
        message = (error.details() if hasattr(error, "details") else str(error)) or ""
        reason = ""
        violations: list[FieldViolation] = []
        try:
            status = rpc_status.from_call(error) if hasattr(error, "trailing_metadata") else None
        except ValueError:  # details that disagree with the status: keep code and message
            status = None
        for detail in status.details if status is not None else ():
            if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                info = error_details_pb2.ErrorInfo()
                detail.Unpack(info)
                reason = info.reason
            elif detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
                bad = error_details_pb2.BadRequest()
                detail.Unpack(bad)
                violations.extend(FieldViolation(v.field, v.description) for v in bad.field_violations)
        return cls(code, message, reason, violations)


# --- channel -------------------------------------------------------------------------------------


class _CallDetails(
    collections.namedtuple("_CallDetails", ("method", "timeout", "metadata", "credentials", "wait_for_ready", "compression")),
    grpc.ClientCallDetails,
):
    """Call details with the bearer token added."""


class _Bearer(
    grpc.UnaryUnaryClientInterceptor,
    grpc.UnaryStreamClientInterceptor,
    grpc.StreamUnaryClientInterceptor,
    grpc.StreamStreamClientInterceptor,
):
    """Adds ``authorization: Bearer <token>`` to every call (plaintext channels included)."""

    def __init__(self, token: str):
        self._header = ("authorization", f"Bearer {token}")

    def _details(self, d: grpc.ClientCallDetails) -> _CallDetails:
        metadata = list(d.metadata or []) + [self._header]
        return _CallDetails(d.method, d.timeout, metadata, d.credentials, getattr(d, "wait_for_ready", None), getattr(d, "compression", None))

    def intercept_unary_unary(self, continuation, details, request):
        return continuation(self._details(details), request)

    def intercept_unary_stream(self, continuation, details, request):
        return continuation(self._details(details), request)

    def intercept_stream_unary(self, continuation, details, requests):
        return continuation(self._details(details), requests)

    def intercept_stream_stream(self, continuation, details, requests):
        return continuation(self._details(details), requests)


def connect(
    url: Union[str, Sequence[str]] = DEFAULT_URL,
    token: Optional[str] = None,
    root_certificates: Optional[bytes] = None,
    *,
    failover_timeout_s: float = DEFAULT_FAILOVER_TIMEOUT_S,
) -> grpc.Channel:
    """Opens a gRPC channel to an owner, or to the leader among several.

    ``url`` is ``http://host:port`` (plaintext HTTP/2) or ``https://host:port``
    (TLS; ``root_certificates`` is a PEM bundle for a private CA); or several
    owners (one leads, the others are standbys) as a comma-separated list or a
    list. With a ``token`` every call carries ``authorization: Bearer <token>``.

    Calls go to the leader (see :mod:`chronolog.owners`): a standby's refusal
    (UNAVAILABLE with ``chronolog-leader: <url>``) is followed to the URL it
    names, and an owner that cannot be reached to the next one. A call that
    nothing was done of is made again there for up to ``failover_timeout_s``
    (0: never again); one the owner may have run when it was lost (the
    connection dropped, the owner is stopping) raises, and the next call goes
    to the next owner.
    """
    if not isinstance(failover_timeout_s, (int, float)) or isinstance(failover_timeout_s, bool) or not failover_timeout_s >= 0:
        raise ValueError(f"failover_timeout_s {failover_timeout_s!r}: expected a number of seconds >= 0")
    return FollowingChannel(Owners(owner_urls(url), lambda u: _channel(u, token, root_certificates), float(failover_timeout_s)))


def _channel(url: str, token: Optional[str], root_certificates: Optional[bytes]) -> grpc.Channel:
    """A gRPC channel to the owner at ``url`` (checked by :func:`owner_urls`)."""
    parts = urlsplit(url if "://" in url else f"http://{url}")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    target = f"{host}:{parts.port or (443 if parts.scheme == 'https' else 80)}"
    options = [
        ("grpc.max_receive_message_length", 64 * 1024 * 1024),
        # grpc-core's own reconnect backoff (up to 120 s) would sit under the
        # executor's: keep it short so a restarted owner is found within seconds.
        ("grpc.initial_reconnect_backoff_ms", 200),
        ("grpc.min_reconnect_backoff_ms", 200),
        ("grpc.max_reconnect_backoff_ms", 2000),
        # A connection waiting on a call pings the owner after 5 s without data and is closed
        # (UNAVAILABLE: the next owner is tried) when the ping is not answered within 5 s: a
        # frozen owner (paused, hung, cut off) keeps its TCP connections open.
        ("grpc.keepalive_time_ms", 5000),
        ("grpc.keepalive_timeout_ms", 5000),
        ("grpc.http2.ping_timeout_ms", 5000),
        # grpc-core sends one ping at a time: a bandwidth probe's ping sent with the request and
        # never answered would hold back the keepalive's, and the call would wait forever.
        ("grpc.http2.bdp_probe", 0),
        ("grpc.http2.max_pings_without_data", 0),
    ]
    if parts.scheme == "https":
        channel = grpc.secure_channel(target, grpc.ssl_channel_credentials(root_certificates), options)
    else:
        channel = grpc.insecure_channel(target, options)
    return grpc.intercept_channel(channel, _Bearer(token)) if token else channel


# --- time: when, overdue ------------------------------------------------------------------------

#: A moment: a timezone-aware ``datetime``, or ms since the epoch (int or float; rounded to whole ms).
Moment = Union[datetime, int, float]

_TIMER_KINDS = {
    "runtime": time_pb2.TIMER_KIND_RUNTIME,
    "declared": time_pb2.TIMER_KIND_DECLARED,
    "delay": time_pb2.TIMER_KIND_DELAY,
}


def _timestamp(at: Moment, what: str) -> timestamp_pb2.Timestamp:
    """A moment as a Timestamp of whole ms (naive datetimes are refused: their zone is unknown)."""
    if isinstance(at, datetime):
        if at.tzinfo is None or at.utcoffset() is None:
            raise ValueError(f"{what}: a naive datetime has no time zone; give an aware one (e.g. datetime.now(timezone.utc)) or ms since the epoch")
        ms = round(at.timestamp() * 1000)
    elif isinstance(at, (int, float)) and not isinstance(at, bool):
        ms = round(at)
    else:
        raise TypeError(f"{what}: expected a timezone-aware datetime or ms since the epoch, got {type(at).__name__}")
    return timestamp_pb2.Timestamp(seconds=ms // 1000, nanos=(ms % 1000) * 1_000_000)


def timer_spec(when: Mapping[str, Any]) -> time_pb2.TimerSpec:
    """A ``TimerSpec`` from ``{"at": moment}``, ``{"cron": "0 9 * * 1", "zone": "Europe/Berlin"}``
    (zone optional, default UTC) or ``{"every_ms": n}``."""
    keys = set(when)
    if keys == {"at"}:
        return time_pb2.TimerSpec(at=_timestamp(when["at"], "at"))
    if keys in ({"cron"}, {"cron", "zone"}):
        return time_pb2.TimerSpec(cron=time_pb2.CronSpec(expression=when["cron"], zone=when.get("zone", "")))
    if keys == {"every_ms"}:
        return time_pb2.TimerSpec(every_ms=int(when["every_ms"]))
    raise ValueError(f"when {dict(when)!r}: expected {{'at': moment}}, {{'cron': expr, 'zone': iana}} or {{'every_ms': n}}")


def overdue_bound(overdue: Union[str, Mapping[str, Any]]) -> time_pb2.Overdue:
    """An ``Overdue`` from ``"unbounded"``, ``"on_time_or_never"`` or ``{"max_lateness_ms": n}``."""
    if overdue == "unbounded":
        return time_pb2.Overdue(unbounded=True)
    if overdue == "on_time_or_never":
        return time_pb2.Overdue(on_time_or_never=True)
    if isinstance(overdue, Mapping) and set(overdue) == {"max_lateness_ms"}:
        return time_pb2.Overdue(max_lateness_ms=int(overdue["max_lateness_ms"]))
    raise ValueError(f"overdue {overdue!r}: expected 'unbounded', 'on_time_or_never' or {{'max_lateness_ms': n}}")


# --- client --------------------------------------------------------------------------------------


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
    ):
        """Connects to ``url`` with ``token`` (see :func:`connect`: one owner, or the leader among
        several given as a comma-separated list or a list, with ``failover_timeout_s``), or wraps an
        existing ``channel``.

        ``emit_via``: ``"stream"`` (default) sends emits on one Publish stream (see
        :class:`chronolog.publisher.Publisher`: many in flight share the owner's commits; each
        gets an id here when none is given, so one sent again after a break is written once);
        ``"unary"`` sends one Emit call each.
        """
        if emit_via not in ("stream", "unary"):
            raise ValueError(f"emit_via {emit_via!r}: expected 'stream' or 'unary'")
        self.channel = channel if channel is not None else connect(url, token, root_certificates, failover_timeout_s=failover_timeout_s)
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
        timeout: Optional[float] = None,
    ) -> log_pb2.EmitResponse:
        """Emits one event and returns the EmitResponse (``event``, ``existing``).

        ``id`` makes the emit idempotent; ``cause`` is set by code working under
        a delivery or an action run (the owner then derives the id and actor);
        ``actor`` asserts actor fields (``{"id", "for", "in", "via"}``).
        On the publish stream (the default) the returned event's data is in
        ``data_json`` (:func:`event_data` reads either form); ``timeout`` bounds
        the wait for the ack.
        """
        if self.publisher is None:
            request = log_pb2.EmitRequest(type=type, data=to_struct(data, "data"), id=id, cause=cause, actor=actor_from_dict(actor))
            return self._unary(self.log.Emit, request, timeout)
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

    def read(self, after_seq: int = 0, types: Sequence[str] = (), where: Optional[Mapping[str, Any]] = None, page_size: int = 500) -> Iterator[event_pb2.Event]:
        """Yields every matching event after ``after_seq`` up to the head, page by page."""
        token = ""
        while True:
            request = log_pb2.ReadLogRequest(after_seq=after_seq, types=list(types), where=to_struct(where) if where else None, page_size=page_size, page_token=token)
            page = self._unary(self.log.ReadLog, request, None)
            yield from page.events
            token = page.next_page_token
            if not token:
                return

    def watch(self, after_seq: int = 0, types: Sequence[str] = (), where: Optional[Mapping[str, Any]] = None, *, data_json: bool = True) -> Iterator[event_pb2.Event]:
        """Follows the log: yields matching events after ``after_seq``, then live ones.

        With ``data_json`` (default) each event's data comes as JSON text in
        ``event.data_json`` (read it with :func:`event_data`); False asks for
        the Struct in ``event.data``. The stream is cancelled when the
        generator is closed (``break`` out of the loop, or ``close()`` it).
        With several owners, a watch broken by an owner lost or stopping is
        opened again at the leader, after the last event it gave (no event
        twice), for up to ``failover_timeout_s``.
        """
        where_struct = to_struct(where) if where else None
        reopening = Reopening(owners_of(self.channel))
        while True:
            stream = self.log.Watch(log_pb2.WatchRequest(after_seq=after_seq, types=list(types), where=where_struct, data_json=data_json))
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
        delay's or a declared schedule's).
        """
        request = time_pb2.ScheduleRequest(
            timer_id=timer_id, action=action, input=to_struct(input, "input"), spec=timer_spec(when), overdue=overdue_bound(overdue), cause=cause, actor=actor_from_dict(actor)
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
        Errors as :meth:`schedule`; FAILED_PRECONDITION past the owner's
        maximum chain depth.
        """
        request = _delay_request(action, input, when, overdue, fresh_chain=fresh_chain, cause=cause, actor=actor, delay_id=delay_id)
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
            unknown = sorted(set(d) - _DELAY_KEYS)
            if unknown:
                raise ValueError(f"delays[{i}]: unknown key {unknown[0]!r} (a delay takes {', '.join(sorted(_DELAY_KEYS))})")
            try:
                requests.append(_delay_request(**d))
            except (TypeError, ValueError) as e:
                raise ValueError(f"delays[{i}]: {e}") from e
        response = self._unary(self.time.DelayBatch, time_pb2.DelayBatchRequest(delays=requests), timeout)
        return [DelayResult(delay_id=r.delay_id, due=r.due.ToDatetime(tzinfo=timezone.utc) if r.HasField("due") else None) for r in response.results]

    def cancel_delay(self, delay_id: str, *, cause: Optional[event_pb2.Cause] = None, timeout: Optional[float] = None) -> None:
        """Cancels a pending delay. NOT_FOUND when unknown or already made."""
        self._unary(self.time.CancelDelay, time_pb2.CancelDelayRequest(delay_id=delay_id, cause=cause), timeout)

    def list_timers(self, kind: Optional[str] = None, page_size: int = 0) -> Iterator[time_pb2.Timer]:
        """Yields every timer the caller may read, pending ones by next due moment first, page by page; ``kind`` is ``"runtime"``, ``"declared"`` or ``"delay"``."""
        if kind is not None and kind not in _TIMER_KINDS:
            raise ValueError(f"kind {kind!r}: expected one of {', '.join(_TIMER_KINDS)}")
        token = ""
        while True:
            request = time_pb2.ListTimersRequest(kind=_TIMER_KINDS.get(kind or "", time_pb2.TIMER_KIND_UNSPECIFIED), page_size=page_size, page_token=token)
            page = self._unary(self.time.ListTimers, request, None)
            yield from page.timers
            token = page.next_page_token
            if not token:
                return

    def get_timer(self, timer_id: str, preview_count: int = 0, *, timeout: Optional[float] = None) -> time_pb2.Timer:
        """Timer ``timer_id`` with its next ``preview_count`` fire times in ``preview`` (at most 100). NOT_FOUND when unknown."""
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


_DELAY_KEYS = {"action", "input", "when", "overdue", "fresh_chain", "cause", "actor", "delay_id"}


def _delay_request(
    action: str,
    input: Optional[Mapping[str, Any]],
    when: Mapping[str, Any],
    overdue: Union[str, Mapping[str, Any]],
    *,
    fresh_chain: bool = False,
    cause: Optional[event_pb2.Cause] = None,
    actor: Optional[Mapping[str, str]] = None,
    delay_id: str = "",
) -> time_pb2.DelayRequest:
    """A DelayRequest from :meth:`Client.delay`'s arguments."""
    keys = set(when)
    if keys == {"interval_ms"}:
        timing: dict = {"interval_ms": int(when["interval_ms"])}
    elif keys == {"at"}:
        timing = {"at": _timestamp(when["at"], "at")}
    else:
        raise ValueError(f"when {dict(when)!r}: expected {{'interval_ms': n}} or {{'at': moment}}")
    return time_pb2.DelayRequest(
        action=action, input=to_struct(input, "input"), overdue=overdue_bound(overdue), cause=cause, actor=actor_from_dict(actor), fresh_chain=fresh_chain, delay_id=delay_id, **timing
    )
