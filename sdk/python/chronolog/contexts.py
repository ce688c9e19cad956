"""What a handler gets: a processor's :class:`DeliveryContext` for one delivery, an action's
:class:`ActionContext` for one invocation (with :class:`Scheduled` when time made the call).
Both are work under a cause (:class:`chronolog.work.WorkUnderCause`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable

from opentelemetry import trace

from chronolog.client import Client
from chronolog.gen.chronolog.v1 import executor_pb2
from chronolog.values import actor_to_dict, event_data, from_struct
from chronolog.work import WorkUnderCause

__all__ = ["DeliveryContext", "ActionContext", "Scheduled"]


class DeliveryContext(WorkUnderCause):
    """What a processor's handler gets for one delivery.

    Attributes: ``event`` (the generated ``Event`` message), ``data`` (its data
    as a dict), ``processor`` (``plugin.processor``), ``attempt`` (1 for the
    first try), ``retry`` (attempt > 1), ``actor`` (the event's actor as
    ``{"id", "for", "in", "via"}``, None for the system), ``key`` (the lane
    key, "" without one), ``debounced`` (for a processor that debounces: the
    events of the key this delivery stands for, its event the last; 0
    otherwise), ``delivery_id``, ``cancelled`` (a
    ``threading.Event`` set when the owner cancels the try (CancelDelivery: its
    ack timeout passed, or another try finished the event) or the stream to the
    owner is lost), ``cancel_reason`` and ``span`` (the handler's OpenTelemetry span,
    ``process <processor>`` under the owner's span of this try, current while the handler runs; a
    no-op span without a tracer provider). An OK ack after a cancel still
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
        self.debounced = delivery.debounced
        self.delivery_id = delivery.delivery_id
        self.cancel_reason = ""
        self.span: trace.Span = trace.INVALID_SPAN
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
    the caller's deadline passes or the stream is lost), ``cancel_reason`` and
    ``span`` (the run's OpenTelemetry span, ``run <action>`` under the owner's span of this
    attempt, current while the handler runs). Work under it names the call's ``action.started`` (or,
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
        self.span: trace.Span = trace.INVALID_SPAN
        self._send = send

    def progress(self, extend_ms: int = 0) -> None:
        """Extends the run's timeout by ``extend_ms`` (0: the action's timeout)."""
        self._send(executor_pb2.SubscribeRequest(progress=executor_pb2.Progress(work_id=self.invocation_id, extend_ms=extend_ms)))
