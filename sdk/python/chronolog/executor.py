"""A small Chronolog executor for Python, mirroring the
TypeScript one (sdk/ts/src/executor.ts, action.ts, work.ts).

Declare a :class:`Plugin` with event types, processors and actions, then run
it with :func:`run_executor`::

    shop = Plugin("pyshop", events={"cart.submitted": {"allow": ["*"]}, "cart.checked": {}})

    @shop.action("total")
    def total(ctx, input):
        return {"total": sum(i["price"] * i["qty"] for i in input["items"])}

    @shop.processor("checker", on="cart.submitted")
    def check(ctx):
        result = ctx.call("pyshop.total", {"items": ctx.data["items"]})
        ctx.emit("cart.checked", {"total": result.output["total"]})

    executor = run_executor([shop], url="http://127.0.0.1:50051", token="...")
    executor.run_forever()

The executor opens the bidirectional ``Subscribe`` stream, says hello (its
plugin manifests, processors, actions and credits), then runs each delivery
and invocation on a thread of its own (at most ``credits`` at once, as the
owner never sends more), acknowledges deliveries (ok, error, or terminal
error when the handler raises :class:`TerminalError`), answers invocations
with an ``action_result``, and sends heartbeats at the interval the owner's
welcome asks for. An owner silent for 3 intervals counts as gone. When the
stream breaks it reconnects with backoff (0.25 s doubling up to
``max_backoff_s``); work that was running then is retried by the owner.
Given several owners (``url``: a comma-separated list or a list; one leads,
the others are standbys), it subscribes to the leader: a standby's refusal
sends it to the leader the standby names at once (not reported), and an
owner that cannot be reached to the next one (after each owner had its turn,
with pauses of 0.1 s doubling up to 1 s); the new leader gets the hello and
sends the deliveries (those that ran on the lost stream again).

An owner that refuses the stream itself with UNAUTHENTICATED (a missing or
unknown token), PERMISSION_DENIED (a principal whose role may not
subscribe) or INVALID_ARGUMENT before its welcome (a hello it rejects, e.g.
a plugin manifest that does not register) is not retried: trying again
cannot help. The executor stops at once and keeps the owner's error (a
:class:`ChronologError`) in ``fatal_error``; :meth:`Executor.wait_ready` and
:meth:`Executor.run_forever` raise it. The TypeScript executor does the same
(``ready`` and ``done`` reject).

Work done inside a delivery or an invocation (``ctx.emit``, ``ctx.call``,
``ctx.collections.create/replace/patch/delete``, ``ctx.schedule``,
``ctx.unschedule``, ``ctx.delay``, ``ctx.cancel_delay``) names its cause (the
delivery's event, or the invocation's ``action.started``) and its position
among the calls made under that cause, counted from 0 and shared by all of
them. The owner derives the work's id from them and a hash of the input,
and its actor from the cause: a retried handler that makes the same calls
in the same order finds the events, documents, call results and timers it
made before instead of writing them twice.
"""

from __future__ import annotations

import concurrent.futures
import functools
import queue
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence, Union

import grpc
from google.protobuf import json_format, timestamp_pb2

from chronolog.client import (
    DEFAULT_URL,
    CallResult,
    ChronologError,
    Client,
    DelayResult,
    DocumentWriteResult,
    actor_to_dict,
    event_data,
    from_struct,
    to_struct,
)
from chronolog.gen.chronolog.v1 import event_pb2, executor_pb2, executor_pb2_grpc, plugin_pb2, time_pb2
from chronolog.owners import DEFAULT_FAILOVER_TIMEOUT_S, owner_failure_of, owners_of
from chronolog.stream_clock import StreamClock

__all__ = [
    "TerminalError",
    "Plugin",
    "ProcessorDefinition",
    "ActionDefinition",
    "WorkUnderCause",
    "CauseCollections",
    "DeliveryContext",
    "ActionContext",
    "Scheduled",
    "Executor",
    "run_executor",
]

Outcome = executor_pb2.Outcome


class TerminalError(Exception):
    """Raised by a handler to fail without further tries.

    From a processor the owner records ``processor.failed`` at once; any other
    exception is retried (3 tries in all by default). From an action it is
    reported as a terminal failure (the owner never retries actions by itself).
    """


# --- work under a cause --------------------------------------------------------------------------


class CauseCollections:
    """Collection operations done by code under a cause: ``ctx.collections``.

    Writes take the next position under the cause (shared with emit, call and
    the timer calls): the owner derives the write's id, and a created
    document's ``_id`` when none is given, from the cause, the position and the
    input, so a retried run making the same writes in the same order applies
    them once and gets the same answer. Writes run as the cause's actor.
    Reads take no position; they name the cause too, so when its actor
    has a space they find only that space's documents and those without one.
    Each raises :class:`ChronologError`.
    """

    def __init__(self, work: "WorkUnderCause"):
        """The collection helpers of ``work``."""
        self._work = work

    def create(self, collection: str, doc: Mapping[str, Any]) -> DocumentWriteResult:
        """Creates a document (its ``_id`` derived when absent); returns it with its ``.created`` seq. ALREADY_EXISTS when its ``_id`` is taken (by other work)."""
        return self._work._client.create_document(collection, doc, cause=self._work._next_cause())

    def replace(self, collection: str, id: str, doc: Mapping[str, Any]) -> DocumentWriteResult:
        """Replaces document ``id``; returns it with its ``.updated`` seq. NOT_FOUND when absent."""
        return self._work._client.replace_document(collection, id, doc, cause=self._work._next_cause())

    def patch(self, collection: str, id: str, set: Optional[Mapping[str, Any]] = None, unset: Sequence[str] = ()) -> DocumentWriteResult:
        """Sets fields (``set``, by dotted path) and removes paths (``unset``) of document ``id``. NOT_FOUND when absent."""
        return self._work._client.patch_document(collection, id, set, unset, cause=self._work._next_cause())

    def delete(self, collection: str, id: str) -> DocumentWriteResult:
        """Deletes document ``id`` (``doc`` None, the ``.deleted`` seq). NOT_FOUND when absent."""
        return self._work._client.delete_document(collection, id, cause=self._work._next_cause())

    def get(self, collection: str, id: str) -> dict:
        """Document ``id``, private fields included (code reads them). NOT_FOUND when absent."""
        return self._work._client.get_document(collection, id, cause=self._work._read_cause())

    def find(self, collection: str, filter: Optional[Mapping[str, Any]] = None, sort: Optional[Mapping[str, int]] = None, limit: int = 0) -> list:
        """Documents matching a MongoDB ``filter``, sorted (``{"field": 1 or -1}``), at most ``limit`` (default 100)."""
        return self._work._client.find_documents(collection, filter, sort, limit, cause=self._work._read_cause())


class WorkUnderCause:
    """What code can do under a cause: ``emit``, ``call``,
    ``collections``, ``schedule``, ``unschedule``, ``delay`` and
    ``cancel_delay``.

    Each call names the cause event id and its position among the calls made
    under it (from 0, shared by all of them, thread-safe), so the owner
    derives the same ids and the cause's actor when the work runs
    again.
    """

    def __init__(self, client: Client, cause_event_id: str, cancelled: threading.Event):
        """Work under ``cause_event_id``; ``cancelled`` is set when the run is cancelled or its stream is lost."""
        self._client = client
        self.cause_event_id = cause_event_id
        self.cancelled = cancelled
        self.collections = CauseCollections(self)
        self._position = 0
        self._lock = threading.Lock()

    def _read_cause(self) -> event_pb2.Cause:
        """The cause a read names: the event id, no position taken (only writes derive ids from positions)."""
        return event_pb2.Cause(event_id=self.cause_event_id, position=0)

    def _next_cause(self) -> event_pb2.Cause:
        """The cause for the next call: the event id and the next position."""
        with self._lock:
            position = self._position
            self._position += 1
        return event_pb2.Cause(event_id=self.cause_event_id, position=position)

    def emit(self, type: str, data: Optional[Mapping[str, Any]] = None) -> event_pb2.Event:
        """Emits an event under the cause and returns it as stored.

        Its id is derived by the owner from the cause, this call's position and
        the input: a retried run making the same calls finds the same event
        instead of writing a second one. Raises :class:`ChronologError`.
        """
        return self._client.emit(type, data, cause=self._next_cause()).event

    def call(self, action: str, input: Optional[Mapping[str, Any]] = None) -> CallResult:
        """Calls action ``plugin.action`` under the cause and returns its :class:`CallResult`.

        The call id is derived, so a retried run gets the recorded output
        (``from_log`` true) instead of running the action again. Raises
        :class:`ChronologError` (ABORTED when the action failed).
        """
        return self._client.call(action, input, cause=self._next_cause())

    def schedule(
        self,
        action: str,
        input: Optional[Mapping[str, Any]],
        when: Mapping[str, Any],
        *,
        timer_id: str = "",
        overdue: Union[str, Mapping[str, Any]] = "unbounded",
    ) -> time_pb2.Timer:
        """Sets a timer calling ``action`` with ``input`` and returns it as stored.

        ``when``: ``{"at": moment}`` (a timezone-aware datetime or ms since the
        epoch), ``{"cron": "0 9 * * 1", "zone": "Europe/Berlin"}`` or
        ``{"every_ms": n}``. Its id is derived from the cause and position
        unless ``timer_id`` is given (the same id replaces). It runs as the
        cause's actor. A retried run making the same request at the same
        position is answered from the log (the timer as it set it) and changes
        nothing. ``overdue``: ``"unbounded"`` (default), ``{"max_lateness_ms":
        n}`` or ``"on_time_or_never"``. Raises :class:`ChronologError` like
        :meth:`Client.schedule`.
        """
        return self._client.schedule(action, input, when, timer_id=timer_id, overdue=overdue, cause=self._next_cause())

    def unschedule(self, timer_id: str) -> None:
        """Stops runtime timer ``timer_id``. NOT_FOUND when unknown.

        A retried run making the same request at the same position is answered
        from the log: it succeeds (the first run removed the timer) and removes
        nothing.
        """
        self._client.unschedule(timer_id, cause=self._next_cause())

    def delay(
        self,
        action: str,
        input: Optional[Mapping[str, Any]],
        when: Mapping[str, Any],
        overdue: Union[str, Mapping[str, Any]],
        *,
        fresh_chain: bool = False,
    ) -> DelayResult:
        """Arms one call of ``action`` later and returns its :class:`DelayResult` (``delay_id``, ``due``).

        ``when``: ``{"interval_ms": n}`` from now or ``{"at": moment}``.
        ``overdue`` is required: ``"unbounded"``, ``{"max_lateness_ms": n}`` or
        ``"on_time_or_never"``. The delayed call continues this work's chain
        (depth + 1) unless ``fresh_chain``; past the owner's maximum depth
        it is refused (FAILED_PRECONDITION, recorded as
        ``timer.chain_exceeded``). The delay id is derived from the cause and
        position: a retried run arms it once and gets the first run's id
        and due moment, from the log.
        """
        return self._client.delay(action, input, when, overdue, fresh_chain=fresh_chain, cause=self._next_cause())

    def cancel_delay(self, delay_id: str) -> None:
        """Cancels a pending delay. NOT_FOUND when unknown or already made.

        A retried run making the same request at the same position is answered
        from the log: it succeeds (the first run cancelled it) and changes
        nothing.
        """
        self._client.cancel_delay(delay_id, cause=self._next_cause())


class DeliveryContext(WorkUnderCause):
    """What a processor's handler gets for one delivery.

    Attributes: ``event`` (the generated ``Event`` message), ``data`` (its data
    as a dict), ``processor`` (``plugin.processor``), ``attempt`` (1 for the
    first try), ``retry`` (attempt > 1), ``actor`` (the event's actor as
    ``{"id", "for", "in", "via"}``, None for the system), ``key`` (the lane
    key, "" without one), ``delivery_id``, ``cancelled`` (a
    ``threading.Event`` set when the owner cancels the try (CancelDelivery: its
    ack timeout passed, or another try finished the event) or the stream to the
    owner is lost) and ``cancel_reason``. An OK ack after a cancel still
    finishes the event within the processor's ``timeout_grace_ms`` (or later,
    as long as the event was not recorded failed).
    """

    def __init__(self, client: Client, delivery: executor_pb2.Delivery, cancelled: threading.Event, send: Callable[[executor_pb2.SubscribeRequest], None]):
        """Builds the context of ``delivery``; ``send`` writes to the delivery's stream."""
        super().__init__(client, delivery.event.id, cancelled)
        self.event = delivery.event
        self.data = event_data(delivery.event)
        self.processor = delivery.processor
        self.attempt = delivery.attempt
        self.retry = delivery.attempt > 1
        self.actor = actor_to_dict(delivery.event.actor) if delivery.event.HasField("actor") else None
        self.key = delivery.key
        self.delivery_id = delivery.delivery_id
        self.cancel_reason = ""
        self._send = send

    def progress(self, extend_ms: int = 0) -> None:
        """Extends the ack deadline by ``extend_ms`` (0: the processor's ack timeout)."""
        self._send(executor_pb2.SubscribeRequest(progress=executor_pb2.Progress(work_id=self.delivery_id, extend_ms=extend_ms)))


@dataclass(frozen=True)
class Scheduled:
    """Set on an action context when time made the call: the timer id, when it was due, the occurrence id."""

    timer_id: str
    due: datetime
    occurrence_id: str


class ActionContext(WorkUnderCause):
    """What an action's handler gets for one invocation.

    Attributes: ``action`` (``plugin.action``), ``input`` (the whole input,
    private fields included), ``call_id`` (the same for every attempt),
    ``attempt``, ``retry``, ``actor`` (as a dict, None for the system),
    ``deadline`` (a UTC datetime, or None), ``scheduled`` (a
    :class:`Scheduled` when time made the call, else None), ``chain_depth``,
    ``cancelled`` (a ``threading.Event`` set when the owner cancels the run,
    the caller's deadline passes or the stream is lost) and
    ``cancel_reason``. Work under it names the call's ``action.started`` (or,
    for ``record: false`` actions, the call id) as its cause.
    """

    def __init__(self, client: Client, invocation: executor_pb2.Invocation, cancelled: threading.Event, send: Callable[[executor_pb2.SubscribeRequest], None]):
        """Builds the context of ``invocation``; ``send`` writes to its stream."""
        super().__init__(client, invocation.cause_event_id or invocation.call_id, cancelled)
        self.action = invocation.action
        self.input = from_struct(invocation.input)
        self.call_id = invocation.call_id
        self.attempt = invocation.attempt
        self.retry = invocation.attempt > 1
        self.actor = actor_to_dict(invocation.actor) if invocation.HasField("actor") else None
        self.deadline = invocation.deadline.ToDatetime(tzinfo=timezone.utc) if invocation.HasField("deadline") else None
        self.scheduled = (
            Scheduled(
                timer_id=invocation.scheduled.timer_id,
                due=invocation.scheduled.due.ToDatetime(tzinfo=timezone.utc),
                occurrence_id=invocation.scheduled.occurrence_id,
            )
            if invocation.HasField("scheduled")
            else None
        )
        self.chain_depth = invocation.chain_depth
        self.cancel_reason = ""
        self.invocation_id = invocation.invocation_id
        self._send = send

    def progress(self, extend_ms: int = 0) -> None:
        """Extends the run's timeout by ``extend_ms`` (0: the action's timeout)."""
        self._send(executor_pb2.SubscribeRequest(progress=executor_pb2.Progress(work_id=self.invocation_id, extend_ms=extend_ms)))


# --- plugins -------------------------------------------------------------------------------------


@dataclass
class ProcessorDefinition:
    """A processor in code; times in ms. ``run(ctx)`` handles one delivery: raise to fail it."""

    run: Callable[[DeliveryContext], None]
    on: Sequence[str] = ()
    where: Optional[Mapping[str, Any]] = None
    key: str = ""
    concurrency: int = 0
    ack_timeout_ms: int = 0
    retry_delays_ms: Sequence[int] = ()
    start: Union[str, int] = "end"
    timeout_grace_ms: Optional[int] = None

    def declaration(self) -> dict:
        """The processor's manifest entry (JSON form)."""
        if self.start == "end":
            start: dict = {"end": True}
        elif self.start == "beginning":
            start = {"beginning": True}
        elif isinstance(self.start, int):
            start = {"after_seq": self.start}
        else:
            raise ValueError(f"processor start {self.start!r}: expected 'end', 'beginning' or a seq")
        d: dict = {"on": list(self.on), "key": self.key, "start": start}
        if self.where is not None:
            d["where"] = dict(self.where)
        for name in ("concurrency", "ack_timeout_ms"):
            if getattr(self, name):
                d[name] = getattr(self, name)
        if self.retry_delays_ms:
            d["retry_delays_ms"] = list(self.retry_delays_ms)
        if self.timeout_grace_ms is not None:
            d["timeout_grace_ms"] = self.timeout_grace_ms
        return d


@dataclass
class ActionDefinition:
    """An action in code; times in ms. ``run(ctx, input)`` returns the output (a dict; None means ``{}``)."""

    run: Callable[[ActionContext, dict], Optional[Mapping[str, Any]]]
    input_schema: Optional[Mapping[str, Any]] = None
    private_fields: Sequence[str] = ()
    record: Optional[bool] = None
    allow: Sequence[str] = ()
    timeout_ms: int = 0
    timeout_grace_ms: Optional[int] = None

    def declaration(self) -> dict:
        """The action's manifest entry (JSON form)."""
        d: dict = {"private_fields": list(self.private_fields), "allow": list(self.allow)}
        if self.input_schema is not None:
            d["input_schema"] = dict(self.input_schema)
        if self.record is not None:
            d["record"] = self.record
        if self.timeout_ms:
            d["timeout_ms"] = self.timeout_ms
        if self.timeout_grace_ms is not None:
            d["timeout_grace_ms"] = self.timeout_grace_ms
        return d


class Plugin:
    """A plugin defined in Python: its manifest (event types, collections, ...)
    plus the processors and actions this executor runs.

    ``events`` and ``collections`` take the manifest's JSON form (as in YAML
    manifests: ``{"cart.submitted": {"schema": {...}, "allow": ["*"]}}``);
    ``manifest`` holds any other manifest parts (schedules, pulses, ...).
    Processors and actions are added with the :meth:`processor` and
    :meth:`action` decorators.
    """

    def __init__(
        self,
        name: str,
        version: str = "",
        *,
        events: Optional[Mapping[str, Any]] = None,
        collections: Optional[Mapping[str, Any]] = None,
        manifest: Optional[Mapping[str, Any]] = None,
    ):
        """Declares plugin ``name``; see the class docstring for the arguments."""
        self.name = name
        self.version = version
        self.events = dict(events or {})
        self.collections = dict(collections or {})
        self.extra = dict(manifest or {})
        self.processors: dict[str, ProcessorDefinition] = {}
        self.actions: dict[str, ActionDefinition] = {}

    def processor(
        self,
        name: str,
        *,
        on: Union[str, Sequence[str]] = (),
        where: Optional[Mapping[str, Any]] = None,
        key: str = "",
        concurrency: int = 0,
        ack_timeout_ms: int = 0,
        retry_delays_ms: Sequence[int] = (),
        start: Union[str, int] = "end",
        timeout_grace_ms: Optional[int] = None,
    ) -> Callable[[Callable[[DeliveryContext], None]], Callable[[DeliveryContext], None]]:
        """Decorator: ``fn(ctx)`` becomes processor ``<plugin>.<name>``.

        ``on`` is an event type or a list (empty: every type), ``where`` a
        MongoDB filter on the data, ``key`` a lane key path such as
        ``data.cart_id``, ``retry_delays_ms`` the waits between tries (default
        [1000, 5000]), ``start`` ``"end"`` (default), ``"beginning"`` or a seq.
        ``timeout_grace_ms``: how long past its ack timeout (and cancel) a try
        may still ack before the next try; its key waits meanwhile (default:
        the ack timeout).
        """

        def register(fn: Callable[[DeliveryContext], None]) -> Callable[[DeliveryContext], None]:
            types = [on] if isinstance(on, str) else list(on)
            self.processors[name] = ProcessorDefinition(fn, types, where, key, concurrency, ack_timeout_ms, retry_delays_ms, start, timeout_grace_ms)
            return fn

        return register

    def action(
        self,
        name: str,
        *,
        input_schema: Optional[Mapping[str, Any]] = None,
        private_fields: Sequence[str] = (),
        record: Optional[bool] = None,
        allow: Sequence[str] = (),
        timeout_ms: int = 0,
        timeout_grace_ms: Optional[int] = None,
    ) -> Callable[[Callable[[ActionContext, dict], Any]], Callable[[ActionContext, dict], Any]]:
        """Decorator: ``fn(ctx, input)`` becomes action ``<plugin>.<name>``.

        ``allow`` says who may call it from outside (default: only code under a
        cause); ``record=False`` leaves no events; ``timeout_ms`` bounds one run
        (default 30,000); ``timeout_grace_ms`` is how long past it (and its
        cancel) the run may still answer before the call fails (default:
        ``timeout_ms``).
        """

        def register(fn: Callable[[ActionContext, dict], Any]) -> Callable[[ActionContext, dict], Any]:
            self.actions[name] = ActionDefinition(fn, input_schema, private_fields, record, allow, timeout_ms, timeout_grace_ms)
            return fn

        return register

    def manifest(self) -> plugin_pb2.PluginManifest:
        """The manifest registered on hello: everything but the code."""
        body = dict(self.extra)
        body.update(
            name=self.name,
            version=self.version,
            events=self.events,
            collections={**body.get("collections", {}), **self.collections},
            processors={name: p.declaration() for name, p in self.processors.items()},
            actions={**body.get("actions", {}), **{name: a.declaration() for name, a in self.actions.items()}},
        )
        return json_format.ParseDict(body, plugin_pb2.PluginManifest())


# --- the executor --------------------------------------------------------------------------------


#: Codes with which the owner refuses the Subscribe stream for good: a bad
#: token, or a principal whose role may not subscribe. Retrying cannot help.
#: (INVALID_ARGUMENT counts too, but only before the welcome: see _is_fatal.)
FATAL_CODES = frozenset({grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED})


def _is_fatal(error: BaseException, welcomed: bool) -> bool:
    """True for a stream error the executor must not retry: one of FATAL_CODES,
    or INVALID_ARGUMENT or RESOURCE_EXHAUSTED before the session's welcome (the
    owner rejected the hello: a manifest that does not register, an unknown
    processor, action or pulse, or a hello larger than the owner reads), which
    the same hello would meet again."""
    if not isinstance(error, ChronologError):
        return False
    return error.code() in FATAL_CODES or (not welcomed and error.code() in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED))


def _print_error(error: BaseException, fatal: bool = False) -> None:
    """The default error report: one line on stderr (reconnects repeat it); ``fatal`` says the executor stopped."""
    suffix = " (the executor stopped: not retrying)" if fatal else ""
    print(f"chronolog executor: {_describe(error)}{suffix}", file=sys.stderr, flush=True)


def _describe(error: BaseException) -> str:
    """`CODE: message` for gRPC errors, the message otherwise."""
    if isinstance(error, grpc.RpcError) and hasattr(error, "code"):
        return f"{error.code().name}: {error.details()}"
    return str(error) or type(error).__name__


_CLOSE_WAIT_S = 2.0
"""How long stop() lets the owner end a half-closed stream before cancelling it, s."""


#: The owner's largest message when its welcome does not say (older owners): 4 MiB.
DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024


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


class _Session:
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

    def send(self, request: executor_pb2.SubscribeRequest) -> None:
        """Queues a message; dropped once the stream ended (the owner retries that work)."""
        if not self.ended.is_set():
            self._queue.put(request)

    def requests(self) -> Iterator[executor_pb2.SubscribeRequest]:
        """The request stream grpc consumes."""
        while True:
            item = self._queue.get()
            if item is None:
                return
            yield item

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


class Executor:
    """Hosts the plugins' processors and actions over the Subscribe stream.

    Create it, then :meth:`start` it (or use :func:`run_executor`);
    :meth:`wait_ready` waits for the owner's first welcome, :meth:`stop` lets
    running work finish, then closes the stream. ``last_error`` is the most
    recent connection error or owner notice (also passed to ``on_error``,
    which by default prints one line on stderr).

    Connection errors are retried with backoff, except a refusal of the stream
    with UNAUTHENTICATED or PERMISSION_DENIED (a bad token, a principal whose
    role may not subscribe), or with INVALID_ARGUMENT before the welcome (a
    hello the owner rejects): then the executor reports it once, stops, and
    keeps it in ``fatal_error`` (a :class:`ChronologError` with the owner's
    message), which :meth:`wait_ready` and :meth:`run_forever` raise.
    """

    def __init__(
        self,
        plugins: Sequence[Plugin],
        url: str = DEFAULT_URL,
        token: Optional[str] = None,
        *,
        executor: Optional[str] = None,
        credits: int = 16,
        on_error: Optional[Callable[[BaseException], None]] = None,
        max_backoff_s: float = 5.0,
        root_certificates: Optional[bytes] = None,
        holds: bool = True,
        data_json: bool = True,
        failover_timeout_s: float = DEFAULT_FAILOVER_TIMEOUT_S,
    ):
        """Prepares an executor for ``plugins`` against the owner at ``url`` with bearer ``token``;
        or against the leader among several owners (``url`` a comma-separated list or a list; its
        calls under deliveries follow the leader for up to ``failover_timeout_s``, see :func:`connect`).

        ``executor`` is the name replicas share (default: the first plugin's
        name); ``credits`` the deliveries and invocations accepted at once.
        ``holds`` (default True): take calls of time up to the owner's lookahead
        before their moment, with ``hold_ms``, and start them at it on a worker
        thread that waits meanwhile; False: the owner sends them at the moment.
        ``data_json`` (default True): deliveries carry the event's data as JSON
        text (``ctx.event.data_json``, parsed into ``ctx.data``), not a Struct.
        """
        self.plugins = list(plugins)
        self.name = executor or (self.plugins[0].name if self.plugins else "executor")
        self.credits = max(1, credits)
        self.holds = holds
        self.data_json = data_json
        self.instance_id = str(uuid.uuid4())
        self.client = Client(url, token, root_certificates=root_certificates, failover_timeout_s=failover_timeout_s)
        self.last_error: Optional[BaseException] = None
        self.fatal_error: Optional[ChronologError] = None
        self._on_error = on_error or (lambda error: _print_error(error, fatal=error is self.fatal_error))
        self._max_backoff_s = max_backoff_s
        self._processors = {f"{p.name}.{n}": d for p in self.plugins for n, d in p.processors.items()}
        self._actions = {f"{p.name}.{n}": d for p in self.plugins for n, d in p.actions.items()}
        self._manifests = [p.manifest() for p in self.plugins]
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=self.credits, thread_name_prefix="chronolog-work")
        self._running: set[concurrent.futures.Future] = set()
        self._running_lock = threading.Lock()
        self._ready = threading.Event()
        self._settled = threading.Event()  # welcomed, or stopped for good
        self._stopping = threading.Event()
        self._session: Optional[_Session] = None
        self._thread: Optional[threading.Thread] = None
        self._closed = False

    # lifecycle

    def start(self) -> "Executor":
        """Starts the connection loop on a background thread; returns self."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="chronolog-executor", daemon=True)
            self._thread.start()
        return self

    def wait_ready(self, timeout: Optional[float] = None) -> bool:
        """Waits for the owner's first welcome; False if ``timeout`` (s) passed first (see ``last_error``).

        Raises the owner's :class:`ChronologError` (``fatal_error``) at once
        when the owner refused the stream for good (UNAUTHENTICATED,
        PERMISSION_DENIED, or INVALID_ARGUMENT at hello): the executor has
        stopped and will never be ready.
        """
        self._settled.wait(timeout)
        if self.fatal_error is not None:
            raise self.fatal_error
        return self._ready.is_set()

    @property
    def connected(self) -> bool:
        """True while a welcomed stream is open."""
        session = self._session
        return session is not None and not session.ended.is_set() and self._ready.is_set()

    def stop(self, grace_s: float = 5.0) -> None:
        """Lets held and running deliveries and invocations finish (up to ``grace_s``, work that comes
        meanwhile included), then half-closes the stream after the results and acks so far: the owner
        reads them and ends it (given up to 2 s), so finished work is never run again; what still runs
        then, the owner runs again elsewhere. Safe to call again."""
        self._stopping.set()
        deadline = time.monotonic() + grace_s
        while (left := deadline - time.monotonic()) > 0:
            with self._running_lock:
                running = list(self._running)
            if not running:
                break
            concurrent.futures.wait(running, timeout=left)
        session = self._session
        if session is not None:
            session.close_sends()
            session.ended.wait(_CLOSE_WAIT_S)
            session.end()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        self._pool.shutdown(wait=False, cancel_futures=True)
        with self._running_lock:
            closed, self._closed = self._closed, True
        if not closed:
            self.client.close()

    def run_forever(self) -> None:
        """Starts (if needed) and blocks until :meth:`stop` is called or Ctrl-C (then stops).

        Raises ``fatal_error`` when the owner refused the stream for good
        (UNAUTHENTICATED, PERMISSION_DENIED, or INVALID_ARGUMENT at hello).
        """
        self.start()
        try:
            while not self._stopping.wait(0.5):
                pass
        except KeyboardInterrupt:
            self.stop()
        if self.fatal_error is not None:
            raise self.fatal_error

    # the connection loop

    def _report(self, error: BaseException) -> None:
        """Records and reports a connection error or notice."""
        self.last_error = error
        try:
            self._on_error(error)
        except Exception:  # a failing reporter must not kill the loop
            pass

    def _loop(self) -> None:
        """Opens sessions until stopped, with backoff between them; stops for good when the owner refuses the stream (_is_fatal)."""
        backoff = 0.25
        moves = 0
        owners = owners_of(self.client.channel)
        try:
            while not self._stopping.is_set():
                welcomed = threading.Event()
                pause: Optional[float] = None
                try:
                    self._run_session(welcomed)
                except grpc.RpcError as e:
                    error = ChronologError.from_rpc_error(e)
                    if not self._stopping.is_set():
                        if _is_fatal(error, welcomed.is_set()):
                            # A bad token, a role that may not subscribe or a rejected hello: retrying cannot help.
                            self.fatal_error = error
                            self._report(error)
                            self.stop(grace_s=0)
                            return
                        failure = owner_failure_of(e)
                        if welcomed.is_set():
                            moves = 0
                        if owners is not None and failure is not None and owners.retries(failure):
                            # To the leader a standby named, or the next owner: at once, then with the owners' pauses.
                            moves += 1
                            pause = owners.pause_s(moves)
                        if failure is None or failure.kind != "standby" or failure.leader is None:
                            self._report(error)
                except Exception as e:  # keep reconnecting whatever broke
                    if not self._stopping.is_set():
                        self._report(e)
                if welcomed.is_set():
                    backoff = 0.25
                if self._stopping.wait(backoff if pause is None else pause):
                    return
                if pause is None:
                    backoff = min(backoff * 2, self._max_backoff_s)
        finally:
            self._settled.set()

    def _run_session(self, welcomed: threading.Event) -> None:
        """One stream, from hello to its end."""
        session = _Session()
        self._session = session
        session.send(
            executor_pb2.SubscribeRequest(
                hello=executor_pb2.Hello(
                    executor=self.name,
                    instance_id=self.instance_id,
                    plugins=self._manifests,
                    processors=list(self._processors),
                    actions=list(self._actions),
                    credits=self.credits,
                    batches=False,
                    holds=self.holds,
                    data_json=self.data_json,
                )
            )
        )
        stub = executor_pb2_grpc.ExecutorServiceStub(self.client.channel)
        session.call = stub.Subscribe(session.requests())
        try:
            for response in session.call:
                session.last_heard = time.monotonic()
                kind = response.WhichOneof("message")
                if kind == "welcome":
                    welcomed.set()
                    session.max_message_bytes = response.welcome.max_message_bytes or DEFAULT_MAX_MESSAGE_BYTES
                    self._ready.set()
                    self._settled.set()
                    interval = max(response.welcome.heartbeat_interval_ms, 10) / 1000
                    threading.Thread(target=self._heartbeat, args=(session, interval), name="chronolog-heartbeat", daemon=True).start()
                elif kind == "delivery":
                    self._submit(self._deliver, response.delivery, session)
                elif kind == "deliveries":  # only sent when hello.batches is set; handled anyway
                    for delivery in response.deliveries.deliveries:
                        self._submit(self._deliver, delivery, session)
                elif kind in ("invocation", "invocations"):  # invocations: only sent when hello.invocation_batches is set; handled anyway
                    for invocation in [response.invocation] if kind == "invocation" else response.invocations.invocations:
                        written_at = session.clock.written_at(invocation.written_at_ms, time.monotonic() * 1000) / 1000
                        self._submit(functools.partial(self._invoke, hold_from=written_at), invocation, session)
                elif kind == "cancel_invocation":
                    self._cancel(session, response.cancel_invocation.invocation_id, response.cancel_invocation.reason)
                elif kind == "cancel_delivery":
                    self._cancel(session, response.cancel_delivery.delivery_id, response.cancel_delivery.reason)
                elif kind == "notice":
                    notice = response.notice
                    self._report(RuntimeError(f"owner notice {notice.reason}: {notice.message}"))
        except grpc.RpcError as e:
            if session.ended.is_set() and e.code() == grpc.StatusCode.CANCELLED:
                return  # ended here: by stop() or a silent owner (already reported)
            raise
        finally:
            session.end()
            with session.lock:
                for cancelled, ctx in session.cancels.values():
                    ctx.cancel_reason = ctx.cancel_reason or "stream to the owner lost"
                    cancelled.set()

    def _heartbeat(self, session: _Session, interval: float) -> None:
        """Sends heartbeats every ``interval`` s; ends the stream when the owner was silent for 3 intervals."""
        while not session.ended.wait(interval):
            if time.monotonic() - session.last_heard > 3 * interval:
                if not self._stopping.is_set():
                    self._report(ConnectionError(f"owner silent for {3 * interval:.1f} s (3 heartbeat intervals): reconnecting"))
                session.end()
                return
            now = timestamp_pb2.Timestamp()
            now.GetCurrentTime()
            session.send(executor_pb2.SubscribeRequest(heartbeat=executor_pb2.Heartbeat(at=now)))

    def _submit(self, fn: Callable[..., None], work: Any, session: _Session) -> None:
        """Runs one delivery or invocation on the pool, tracked for stop()."""
        future = self._pool.submit(fn, work, session)
        with self._running_lock:
            self._running.add(future)

        def done(f: concurrent.futures.Future) -> None:
            with self._running_lock:
                self._running.discard(f)

        future.add_done_callback(done)

    # deliveries and invocations

    def _deliver(self, delivery: executor_pb2.Delivery, session: _Session) -> None:
        """Runs a processor's handler for one delivery and acks it: OK, ERROR, or TERMINAL_ERROR."""
        outcome, error = Outcome.OUTCOME_OK, ""
        cancelled = threading.Event()
        ctx = DeliveryContext(self.client, delivery, cancelled, session.send)
        with session.lock:
            if session.ended.is_set():
                return
            session.cancels[delivery.delivery_id] = (cancelled, ctx)
        try:
            definition = self._processors.get(delivery.processor)
            if definition is None:
                raise TerminalError(f"no handler for {delivery.processor}")
            definition.run(ctx)
        except TerminalError as e:
            outcome, error = Outcome.OUTCOME_TERMINAL_ERROR, str(e) or "TerminalError"
        except Exception as e:
            outcome, error = Outcome.OUTCOME_ERROR, _describe(e)
        finally:
            with session.lock:
                session.cancels.pop(delivery.delivery_id, None)
        session.send(executor_pb2.SubscribeRequest(ack=executor_pb2.Ack(delivery_id=delivery.delivery_id, outcome=outcome, error=cut_to_fit(error, session.max_message_bytes))))

    def _invoke(self, invocation: executor_pb2.Invocation, session: _Session, hold_from: float = 0.0) -> None:
        """Runs an action's handler for one invocation and sends its ActionResult (unless the stream ended meanwhile).

        A held invocation (``hold_ms``) starts that long after ``hold_from`` (``time.monotonic()``
        seconds: when the owner wrote it, on our clock, see StreamClock), never before; its result
        reports how many ms after that it started.
        """
        cancelled = threading.Event()
        ctx = ActionContext(self.client, invocation, cancelled, session.send)
        with session.lock:
            if session.ended.is_set():
                return
            session.cancels[invocation.invocation_id] = (cancelled, ctx)
        started_late_ms = 0
        try:
            if invocation.hold_ms:
                start_at = hold_from + invocation.hold_ms / 1000
                while (left := start_at - time.monotonic()) > 0:
                    if cancelled.wait(left):
                        raise RuntimeError(ctx.cancel_reason or "cancelled while held")
                started_late_ms = int((time.monotonic() - start_at) * 1000)
            definition = self._actions.get(invocation.action)
            if definition is None:
                raise TerminalError(f"this executor does not host {invocation.action}")
            output = definition.run(ctx, ctx.input)
            if output is None:
                output = {}
            if not isinstance(output, Mapping):
                raise TypeError(f"{invocation.action} returned {type(output).__name__}: an action's output must be a JSON object (a dict)")
            result = executor_pb2.ActionResult(invocation_id=invocation.invocation_id, outcome=Outcome.OUTCOME_OK, output=to_struct(output, "output"), started_late_ms=started_late_ms)
        except TerminalError as e:
            result = executor_pb2.ActionResult(invocation_id=invocation.invocation_id, outcome=Outcome.OUTCOME_TERMINAL_ERROR, error=str(e) or "TerminalError", started_late_ms=started_late_ms)
        except Exception as e:
            result = executor_pb2.ActionResult(invocation_id=invocation.invocation_id, outcome=Outcome.OUTCOME_ERROR, error=_describe(e), started_late_ms=started_late_ms)
        finally:
            with session.lock:
                session.cancels.pop(invocation.invocation_id, None)
        session.send(executor_pb2.SubscribeRequest(action_result=fitting_result(result, session.max_message_bytes)))

    @staticmethod
    def _cancel(session: _Session, work_id: str, reason: str) -> None:
        """Sets the cancelled event of a running invocation or delivery (CancelInvocation or CancelDelivery)."""
        with session.lock:
            entry = session.cancels.get(work_id)
        if entry is not None:
            cancelled, ctx = entry
            ctx.cancel_reason = f"cancelled by the owner: {reason}"
            cancelled.set()


def run_executor(plugins: Sequence[Plugin], url: str = DEFAULT_URL, token: Optional[str] = None, **options: Any) -> Executor:
    """Creates an :class:`Executor` (same arguments) and starts it."""
    return Executor(plugins, url, token, **options).start()
