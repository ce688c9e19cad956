"""Running one delivery or invocation on an executor's stream: the handler with its context, then
the delivery's ack (OK, ERROR, or TERMINAL_ERROR for a :class:`TerminalError`) or the
invocation's action result, sent on the stream; and the owner's cancellations of running work.
"""

from __future__ import annotations

import threading
import time
from typing import Mapping

import grpc

from chronolog.client import Client
from chronolog.contexts import ActionContext, DeliveryContext
from chronolog.errors import TerminalError
from chronolog.gen.chronolog.v1 import executor_pb2
from chronolog.plugin import ActionDefinition, ProcessorDefinition
from chronolog.session import Session, cut_to_fit, fitting_result
from chronolog.tracing import SpanKind, delivery_attributes, handler_span
from chronolog.values import to_struct

__all__ = ["run_delivery", "run_invocation", "cancel_work", "describe"]

Outcome = executor_pb2.Outcome


def run_delivery(processors: Mapping[str, ProcessorDefinition], client: Client, delivery: executor_pb2.Delivery, session: Session) -> None:
    """Runs a processor's handler for one delivery and acks it: OK, ERROR, or TERMINAL_ERROR."""
    outcome, error = Outcome.OUTCOME_OK, ""
    cancelled = threading.Event()
    ctx = DeliveryContext(client, delivery, cancelled, session.send)
    with session.lock:
        if session.ended.is_set():
            return
        session.cancels[delivery.delivery_id] = (cancelled, ctx)
    try:
        definition = processors.get(delivery.processor)
        if definition is None:
            raise TerminalError(f"no handler for {delivery.processor}")
        attributes = delivery_attributes(delivery.processor, delivery.event.id, delivery.event.type, delivery.attempt)
        with handler_span(f"process {delivery.processor}", SpanKind.CONSUMER, attributes, delivery.traceparent, delivery.tracestate) as span:
            ctx.span = span
            definition.run(ctx)
    except TerminalError as e:
        outcome, error = Outcome.OUTCOME_TERMINAL_ERROR, str(e) or "TerminalError"
    except Exception as e:
        outcome, error = Outcome.OUTCOME_ERROR, describe(e)
    finally:
        with session.lock:
            session.cancels.pop(delivery.delivery_id, None)
    if outcome != Outcome.OUTCOME_OK:
        terminal = ", terminal" if outcome == Outcome.OUTCOME_TERMINAL_ERROR else ""
        session.log(f"{delivery.processor} failed on event {delivery.event.id} (attempt {delivery.attempt}{terminal}): {error}")
    session.send(executor_pb2.SubscribeRequest(ack=executor_pb2.Ack(delivery_id=delivery.delivery_id, outcome=outcome, error=cut_to_fit(error, session.max_message_bytes))))


def run_invocation(actions: Mapping[str, ActionDefinition], client: Client, invocation: executor_pb2.Invocation, session: Session, hold_from: float = 0.0) -> None:
    """Runs an action's handler for one invocation and sends its ActionResult (unless the stream ended meanwhile).

    A held invocation (``hold_ms``) starts that long after ``hold_from`` (``time.monotonic()``
    seconds: when the owner wrote it, on our clock, see StreamClock), never before; its result
    reports how many ms after that it started.
    """
    cancelled = threading.Event()
    ctx = ActionContext(client, invocation, cancelled, session.send)
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
        definition = actions.get(invocation.action)
        if definition is None:
            raise TerminalError(f"this executor does not host {invocation.action}")
        attributes = {"chronolog.action": invocation.action, "chronolog.call_id": invocation.call_id, "chronolog.attempt": invocation.attempt}
        with handler_span(f"run {invocation.action}", SpanKind.SERVER, attributes, invocation.traceparent, invocation.tracestate) as span:
            ctx.span = span
            output = definition.run(ctx, ctx.input)
        if output is None:
            output = {}
        if not isinstance(output, Mapping):
            raise TypeError(f"{invocation.action} returned {type(output).__name__}: an action's output must be a JSON object (a dict)")
        result = executor_pb2.ActionResult(invocation_id=invocation.invocation_id, outcome=Outcome.OUTCOME_OK, output=to_struct(output, "output"), started_late_ms=started_late_ms)
    except TerminalError as e:
        result = executor_pb2.ActionResult(invocation_id=invocation.invocation_id, outcome=Outcome.OUTCOME_TERMINAL_ERROR, error=str(e) or "TerminalError", started_late_ms=started_late_ms)
    except Exception as e:
        result = executor_pb2.ActionResult(invocation_id=invocation.invocation_id, outcome=Outcome.OUTCOME_ERROR, error=describe(e), started_late_ms=started_late_ms)
    finally:
        with session.lock:
            session.cancels.pop(invocation.invocation_id, None)
    if result.outcome != Outcome.OUTCOME_OK:
        terminal = ", terminal" if result.outcome == Outcome.OUTCOME_TERMINAL_ERROR else ""
        session.log(f"{invocation.action} failed (call {invocation.call_id}, attempt {invocation.attempt}{terminal}): {result.error}")
    session.send(executor_pb2.SubscribeRequest(action_result=fitting_result(result, session.max_message_bytes)))


def cancel_work(session: Session, work_id: str, reason: str) -> None:
    """Sets the cancelled event of a running invocation or delivery (CancelInvocation or CancelDelivery)."""
    with session.lock:
        entry = session.cancels.get(work_id)
    if entry is not None:
        cancelled, ctx = entry
        ctx.cancel_reason = f"cancelled by the owner: {reason}"
        cancelled.set()


def describe(error: BaseException) -> str:
    """`CODE: message` for gRPC errors, the message otherwise."""
    if isinstance(error, grpc.RpcError) and hasattr(error, "code"):
        return f"{error.code().name}: {error.details()}"
    return str(error) or type(error).__name__
