"""OpenTelemetry in the SDK, through ``opentelemetry-api`` only.

The application installs a tracer provider (``opentelemetry-sdk`` and an exporter) or none, and
then every span here is a no-op. The owner sends each delivery and invocation with the trace
context of its try (``Delivery.traceparent``, ``Invocation.traceparent``); the SDK runs the
handler in a span under it (``process <processor>``, ``run <action>``), current while it runs, so
the application's own instrumented calls nest under it, and every call the client makes sends the
current context as W3C ``traceparent``/``tracestate`` metadata. Work under a cause continues the
owner's trace even where the application records nothing: the try's context is kept for the
handler's duration and sent when no span of the application is current.
"""

from __future__ import annotations

import contextvars
from contextlib import contextmanager
from typing import Iterator, Mapping, Optional, Tuple, Union

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from chronolog.version import __version__

__all__ = ["handler_span", "current_trace_headers", "delivery_attributes", "SpanKind"]

#: The owner's (traceparent, tracestate) of the delivery or invocation whose handler runs here.
_work_trace: contextvars.ContextVar[Optional[Tuple[str, str]]] = contextvars.ContextVar("chronolog_work_trace", default=None)

Attributes = Mapping[str, Union[str, int]]


@contextmanager
def handler_span(name: str, kind: SpanKind, attributes: Attributes, traceparent: str, tracestate: str) -> Iterator[trace.Span]:
    """A span under the owner's trace context (``traceparent``, ``tracestate``), current inside the block.

    An exception leaving the block is recorded on the span, which then ends.
    """
    if not traceparent and isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        # No tracer provider installed and no trace of the owner's to continue: nothing to record or pass on.
        yield trace.INVALID_SPAN
        return
    carrier = {"traceparent": traceparent, "tracestate": tracestate} if traceparent else {}
    parent = propagate.extract(carrier, context=otel_context.Context()) if traceparent else otel_context.Context()
    tracer = trace.get_tracer("chronolog", __version__)
    work = _work_trace.set((traceparent, tracestate) if traceparent else None)
    try:
        with tracer.start_as_current_span(name, context=parent, kind=kind, attributes=dict(attributes), record_exception=False, set_status_on_exception=False) as span:
            try:
                yield span
            except BaseException as e:
                span.record_exception(e)
                span.set_status(Status(StatusCode.ERROR, str(e)))
                raise
    finally:
        _work_trace.reset(work)


def delivery_attributes(processor: str, event_id: str, event_type: str, attempt: int) -> Attributes:
    """Span attributes of a delivery, by the OpenTelemetry messaging conventions."""
    return {
        "messaging.system": "chronolog",
        "messaging.operation.type": "process",
        "messaging.destination.name": processor,
        "messaging.consumer.group.name": processor,
        "messaging.message.id": event_id,
        "chronolog.event.type": event_type,
        "chronolog.delivery.attempt": attempt,
    }


def current_trace_headers() -> Optional[Tuple[str, str]]:
    """(traceparent, tracestate) current here: the application's span when one is current (through
    its propagator), else the owner's context of the delivery or invocation being handled; None
    when neither is."""
    carrier: dict = {}
    propagate.inject(carrier)
    if carrier.get("traceparent"):
        return carrier["traceparent"], carrier.get("tracestate", "")
    return _work_trace.get()
